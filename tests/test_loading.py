"""Modules that will not import in the sandbox are still reached (analyzers/dynamic/loading.py).

Real repositories' modules failed to import for reasons that have nothing to do with the
flagged function: a package `__init__` importing a file generated at build time, or a
dependency the sandbox lacks. Each case runs the real harness, and the reproducer it writes
fails on its own in a plain `python` child, the way the search loaded the module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness_support import confirmed_reproducer, run_findings, run_script, write_repo

from analyzers.dynamic.loading import load

LOSS = (
    "import torch\n\n\n"
    "def rate(counts: torch.Tensor, total: torch.Tensor) -> torch.Tensor:\n"
    "    return torch.log(counts / total)\n"
)


def test_a_package_init_that_fails_is_skipped(tmp_path: Path, clean_modules: object) -> None:
    repo = write_repo(
        tmp_path,
        {
            "gpkg/__init__.py": "from .version import __version__  # generated at build time\n",
            "gpkg/metrics.py": LOSS,
        },
    )
    loaded = load(repo, "gpkg.metrics")
    assert loaded.how == "package-stubs" and "gpkg.version" in loaded.why
    assert callable(loaded.module.rate)

    run = run_findings(repo, "gpkg/metrics.py", ["rate", "rate"], finding_timeout=120, timeout=300)
    record = next(r for r in run.result.records if r["status"] == "confirmed")
    source = record["reproducer"]
    assert "fails here (ModuleNotFoundError: No module named 'gpkg.version')" in source
    check = run_script(repo, source)
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]


def test_a_missing_dependency_leaves_the_function_extracted(
    tmp_path: Path, clean_modules: object
) -> None:
    repo = write_repo(
        tmp_path,
        {
            "xpkg/__init__.py": "",
            "xpkg/layers.py": (
                "import numcheck_absent_dependency as nad  # not installed\n"
                "from .helpers import SCALE\n"
                + LOSS
                + "\n\nMODEL = nad.build() + 1  # computes with it: no stand-in "
                "will do\n"
            ),
            "xpkg/helpers.py": "SCALE = 2.0\n",
        },
    )
    loaded = load(repo, "xpkg.layers")
    assert loaded.how == "extracted" and "numcheck_absent_dependency" in loaded.why
    assert "numcheck_absent_dependency" in loaded.stand_ins  # tried, and kept for the rest
    assert loaded.module.SCALE == 2.0  # a relative import that works is kept
    assert not hasattr(loaded.module, "MODEL")  # work at import time is not run

    run = run_findings(repo, "xpkg/layers.py", ["rate", "rate"], finding_timeout=120, timeout=300)
    record = next(r for r in run.result.records if r["status"] == "confirmed")
    source = record["reproducer"]
    assert "statement by statement" in source and "(extracted)" in source
    check = run_script(repo, source)
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]


@pytest.mark.parametrize(
    ("message", "shape"),
    [
        ("ValueError: Input size must be a (*, 3, 3) tensor. Got torch.Size([4, 8])", (2, 3, 3)),
        ("Invalid input shape, we expect BxCx*. Got: (4, 8)", (2, 3, 8, 8)),
        ("Input must be Nx3x3, got (4, 8)", (2, 3, 3)),
        ("expected (B, C, H, W)", (2, 3, 8, 8)),
        ("index 5 is out of bounds for dimension 0 with size 4", None),
    ],
)
def test_the_shape_a_function_asks_for_in_its_error(
    message: str, shape: tuple[int, ...] | None
) -> None:
    from analyzers.dynamic.entries import shape_from_message

    assert shape_from_message(message) == shape


@pytest.mark.parametrize(
    ("message", "shapes"),
    [
        ("RuntimeError: size mismatch, got input (4), mat (4x8), vec (784)", [(4, 784)]),
        (
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 784x500)",
            [(4, 784), (4, 500)],
        ),
        (
            "RuntimeError: The size of tensor a (8) must match the size of tensor b (30) at "
            "non-singleton dimension 1",
            [(4, 30)],
        ),
        ("ValueError: probs must be non-negative, 12 were not", []),  # not a shape error
        ("RuntimeError: size mismatch (4x8 and 8x4)", []),  # names no size the call lacked
    ],
)
def test_the_feature_size_a_shape_error_names(message: str, shapes: list[tuple[int, ...]]) -> None:
    from analyzers.dynamic.entries import shapes_from_mismatch

    assert shapes_from_mismatch(message) == shapes


def test_a_method_whose_weights_fix_the_input_width_is_called_with_it(
    tmp_path: Path, clean_modules: object
) -> None:
    """An energy model's weights fix its input width and nothing in the signature says so:
    the default (4, 8) call fails on `v.mv(self.v_bias)`, the error names 30, and the call
    with (4, 30) reaches and overflows the exp."""
    repo = write_repo(
        tmp_path,
        {
            "epkg/__init__.py": "",
            "epkg/energy.py": (
                "import torch\nfrom torch import nn\n\n\n"
                "class Energy(nn.Module):\n"
                "    def __init__(self, n_vis=30, n_hid=5):\n"
                "        super().__init__()\n"
                "        self.W = nn.Parameter(torch.randn(n_hid, n_vis) * 0.1)\n"
                "        self.v_bias = nn.Parameter(torch.zeros(n_vis))\n"
                "        self.h_bias = nn.Parameter(torch.zeros(n_hid))\n\n"
                "    def free_energy(self, v):\n"
                "        vbias_term = v.mv(self.v_bias)\n"
                "        wx_b = torch.nn.functional.linear(v, self.W, self.h_bias)\n"
                "        hidden_term = torch.log1p(wx_b.exp()).sum(1)\n"
                "        return (-hidden_term - vbias_term).mean()\n"
            ),
        },
    )
    run = run_findings(
        repo,
        "epkg/energy.py",
        ["Energy.free_energy"],
        finding_timeout=120,
        timeout=300,
        search_seconds=3.0,
        harvest=False,
    )
    source = confirmed_reproducer(repo, run)
    assert "torch.Size([4, 30])" in source or "(4, 30)" in source, source


def test_parameters_without_defaults_get_a_value_from_their_annotation(
    tmp_path: Path, clean_modules: object
) -> None:
    repo = write_repo(
        tmp_path,
        {
            "kpkg/__init__.py": "",
            "kpkg/kl.py": (
                "from typing import Literal, Optional\n\nimport torch\n\n\n"
                "def kl(p: torch.Tensor, q: torch.Tensor, log_prob: bool,\n"
                "       reduction: Optional[Literal['mean', 'sum']]) -> torch.Tensor:\n"
                "    assert reduction == 'mean' and log_prob is False\n"
                "    return (p * torch.log(p.abs() + q.abs())).mean()\n"
            ),
        },
    )
    run = run_findings(
        repo, "kpkg/kl.py", ["kl"], finding_timeout=120, timeout=300, search_seconds=2.0
    )
    assert "kl(p, q, log_prob=False, reduction='mean')" in confirmed_reproducer(repo, run)


def test_a_module_whose_constructor_needs_sizes_is_built_with_them(
    tmp_path: Path, clean_modules: object
) -> None:
    repo = write_repo(
        tmp_path,
        {
            "mpkg/__init__.py": "",
            "mpkg/attn.py": (
                "import torch\nfrom torch import nn\n\n\n"
                "class LinearAttention(nn.Module):\n"
                "    def __init__(self, in_channels, out_channels, heads: int):\n"
                "        super().__init__()\n"
                "        self.proj = nn.Linear(in_channels, out_channels * heads)\n\n"
                "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                "        v = self.proj(x)\n"
                "        return v / v.sum(dim=-1, keepdim=True)\n"
            ),
        },
    )
    run = run_findings(
        repo,
        "mpkg/attn.py",
        ["LinearAttention.forward"],
        finding_timeout=120,
        timeout=300,
        search_seconds=4.0,  # a wall-clock budget: room for a loaded machine; ends at the trigger
        fix=False,
    )
    assert "LinearAttention(in_channels=8, out_channels=8, heads=2)" in confirmed_reproducer(
        repo, run
    )


def test_optional_tensors_and_tensors_after_constants_keep_their_defaults(
    tmp_path: Path, clean_modules: object
) -> None:
    """kornia's `binary_focal_loss_with_logits(input, target, alpha=0.25, ...,
    pos_weight: Optional[Tensor] = None)`: passing `pos_weight` by position after the
    keyword constants was `got multiple values for argument 'alpha'`."""
    repo = write_repo(
        tmp_path,
        {
            "fpkg/__init__.py": "",
            "fpkg/focal.py": (
                "from typing import Optional\n\nimport torch\nfrom torch import Tensor\n\n\n"
                "def focal(input: Tensor, target: Tensor, alpha: float = 0.25,\n"
                "          pos_weight: Optional[Tensor] = None) -> Tensor:\n"
                "    if pos_weight is None:\n"
                "        pos_weight = torch.ones(input.shape[-1])\n"
                "    return -(alpha * pos_weight * target * input.sigmoid().log()).mean()\n"
            ),
        },
    )
    run = run_findings(
        repo, "fpkg/focal.py", ["focal"], finding_timeout=120, timeout=300, search_seconds=2.0
    )
    assert "focal(input, target)" in confirmed_reproducer(repo, run)


def test_unannotated_numbers_are_tried_as_scalars(tmp_path: Path, clean_modules: object) -> None:
    """kornia's `normal_transform_pixel(height, width)`: sizes passed as numbers. A (4, 8)
    tensor for `width` fails in the function's own indexing; a scalar reaches the division
    and `width == 1` makes it inf."""
    repo = write_repo(
        tmp_path,
        {
            "gpkg/__init__.py": "",
            "gpkg/warp.py": (
                "import torch\n\n\n"
                "def normal_transform_pixel(height, width):\n"
                "    tr_mat = torch.Tensor([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0], [0.0, 0.0, 1.0]])\n"
                "    tr_mat[0, 0] = tr_mat[0, 0] * 2.0 / (width - 1.0)\n"
                "    tr_mat[1, 1] = tr_mat[1, 1] * 2.0 / (height - 1.0)\n"
                "    return tr_mat.unsqueeze(0)\n"
            ),
        },
    )
    run = run_findings(
        repo,
        "gpkg/warp.py",
        ["normal_transform_pixel"] * 2,
        finding_timeout=120,
        timeout=300,
        search_seconds=2.0,
    )
    records = [r for r in run.result.records if r.get("stage") is None]
    assert [r["status"] for r in records] == ["confirmed", "confirmed"], records
    for record in records:
        assert "normal_transform_pixel(height, width)" in record["reproducer"]
        check = run_script(repo, record["reproducer"])
        assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]


def test_the_reproducer_keeps_what_the_failed_import_loaded(
    tmp_path: Path, clean_modules: object
) -> None:
    """torchmetrics: the package `__init__` defines `_logger`, imports a helper that takes
    `_logger` from the package, then fails on a missing dependency. The search's process kept
    the helper the failed import loaded; the reproducer has to make the same attempt, or the
    helper's `from tpkg import _logger` fails against the bare stub package."""
    repo = write_repo(
        tmp_path,
        {
            "tpkg/__init__.py": (
                "_logger = 'log'\nfrom tpkg.utils import prints\n"
                "import numcheck_absent_dependency\n"
            ),
            "tpkg/utils/__init__.py": "",
            "tpkg/utils/prints.py": (
                "from tpkg import _logger\n\n\ndef warn():\n    return _logger\n"
            ),
            "tpkg/kl.py": (
                "import torch\nfrom tpkg.utils.prints import warn\n\n\n"
                "def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:\n"
                "    warn()\n"
                "    return torch.sum(p * torch.log(p.abs() + q.abs()), axis=-1)\n"
            ),
        },
    )
    run = run_findings(
        repo,
        "tpkg/kl.py",
        ["kl"],
        finding_timeout=120,
        timeout=300,
        search_seconds=4.0,  # a wall-clock budget: room for a loaded machine; ends at the trigger
        fix=False,
    )
    assert "without its packages' __init__ files" in confirmed_reproducer(repo, run)


def test_the_fix_stage_loads_a_patched_extracted_module_the_same_way(
    tmp_path: Path, clean_modules: object
) -> None:
    """lightning's IoU module would not import (`from collections import Sequence`); the
    search extracted it, and the fix stage's patched copy has to be extracted too, or every
    candidate ends `setup: the patched copy could not be loaded`."""
    repo = write_repo(
        tmp_path,
        {
            "wpkg/__init__.py": "",
            "wpkg/warp.py": (
                "import numcheck_absent_dependency  # not installed\n"
                "import torch\n\n"
                "SCALE = numcheck_absent_dependency.SCALE * 2  # no stand-in will do\n\n\n"
                "def normal_transform_pixel(height, width):\n"
                "    tr_mat = torch.Tensor([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0], [0.0, 0.0, 1.0]])\n"
                "    tr_mat[0, 0] = tr_mat[0, 0] * 2.0 / (width - 1.0)\n"
                "    return tr_mat.unsqueeze(0)\n"
            ),
        },
    )
    run = run_findings(
        repo,
        "wpkg/warp.py",
        ["normal_transform_pixel"],
        finding_timeout=120,
        timeout=300,
        search_seconds=4.0,  # a wall-clock budget: room for a loaded machine
    )
    assert "(extracted)" in confirmed_reproducer(repo, run)
    (fix,) = [r["fix"] for r in run.result.records if r.get("stage") == "fix"]
    assert fix["status"] == "validated", fix
    assert "torch.where(width - 1.0 < 0" in fix["suggestion"]


@pytest.mark.parametrize(
    ("source", "work"),
    [
        # what libraries do at import: not work
        (
            "import warnings\nimport logging\nimport torch\nwarnings.filterwarnings('ignore')\n"
            "log = logging.getLogger(__name__)\ntorch.manual_seed(0)\nEPS = torch.finfo().eps\n"
            "def f(x):\n    return x\n",
            None,
        ),
        (
            "def main():\n    pass\n\n\nif __name__ == '__main__':\n    main()\n"
            "    for i in range(3):\n        pass\n",
            None,
        ),
        (
            "import logging\ndef _table():\n    return {}\nTABLE = _table()\n"
            "log = logging.getLogger()\nlog.setLevel(10)\n",
            None,
        ),
        # what programs do
        ("import torch\nfor epoch in range(10):\n    pass\n", "line 2: a loop at the top level"),
        ("import torch\nwith torch.no_grad():\n    pass\n", "line 2: a `with` block"),
        ("def train():\n    pass\n\n\ntrain()\n", "line 5: a call of train()"),
        (
            "import keras\nmodel = keras.Sequential()\nmodel.fit(x, y)\n",
            "line 3: a call of model.fit()",
        ),
        ("print('starting')\n", "line 1: a call of print()"),
    ],
)
def test_top_level_work_tells_programs_from_libraries(source: str, work: str | None) -> None:
    from analyzers.dynamic.loading import top_level_work

    found = top_level_work(source)
    assert (found is None) if work is None else (found is not None and found.startswith(work))


@pytest.mark.parametrize("init", ["", "from .version import __version__  # generated\n"])
def test_a_src_layout_package_is_reached_by_its_own_name(
    tmp_path: Path, clean_modules: object, init: str
) -> None:
    """torchmetrics' layout: `src/spkg/metrics.py` is `spkg.metrics`, whose absolute imports
    of its own package work only with `src` on the path; the reproducer puts it there itself
    (the child here gets nothing but the repository root)."""
    repo = write_repo(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "spkg"\n',
            "src/spkg/__init__.py": init,
            "src/spkg/scale.py": "FACTOR = 1.0\n",
            "src/spkg/metrics.py": "from spkg.scale import FACTOR\n"
            + LOSS.replace("counts / total", "counts / total * FACTOR"),
            "tests/test_metrics.py": (
                "import torch\nfrom spkg.metrics import rate\n\n\n"
                "def test_rate():\n"
                "    assert rate(torch.tensor([1.0, 2.0]), "
                "torch.tensor(4.0)).shape == (2,)\n"
            ),
        },
    )
    record = _confirmed_and_failing(repo, "src/spkg/metrics.py", ["rate", "rate"])
    assert record["reproducer_plan"]["module"] == "spkg.metrics"
    assert "'src'))" in record["reproducer"]
    assert ("without its packages' __init__ files" in record["reproducer"]) == bool(init)


def test_a_numpy_flag_in_an_extracted_src_module_fails_its_reproducer(
    tmp_path: Path, clean_modules: object
) -> None:
    """diffusers' scheduler: `src/` layout, a module numcheck extracts (compiled under its
    relative path; here for its work at import) and `np.log(sigmas)`. The reproducer's
    floating-point flag is raised at a frame named `src/.../sched.py`, relative: it is still
    the flagged line, and the reproducer fails with its assertion."""
    repo = write_repo(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "npkg"\n',
            "src/npkg/__init__.py": "",
            "src/npkg/sched.py": (
                "import numpy as np\n"
                "TABLE = []\n"
                "for i in range(3):  # work at import: numcheck extracts the module\n"
                "    TABLE.append(i)\n\n\n"
                "def log_sigmas(sigmas: np.ndarray) -> np.ndarray:\n"
                "    return np.log(sigmas)\n"
            ),
        },
    )
    record = _confirmed_and_failing(repo, "src/npkg/sched.py", ["log_sigmas"])
    assert "(extracted)" in record["reproducer"]


def _confirmed_and_failing(repo: Path, path: str, functions: list[str]) -> dict[str, Any]:
    """Every finding of `path` confirmed; the first one's record, after checking that its
    reproducer fails on its own in a plain python child."""
    run = run_findings(repo, path, functions, finding_timeout=120, timeout=300)
    records = [r for r in run.result.records if r.get("stage") is None]
    assert {r["status"] for r in records} == {"confirmed"}, records
    check = run_script(repo, records[0]["reproducer"])
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]
    return records[0]


PROBS = (
    "import torch\n\n\n"
    "def get_probs_and_logits(ps=None, logits=None, is_multidimensional=True):\n"
    "    if is_multidimensional:\n"
    "        if ps is None:\n"
    "            ps = torch.softmax(logits, -1)\n"
    "        else:\n"
    "            logits = ps.clamp(min=1e-6).log()\n"
    "    else:\n"
    "        if ps is None:\n"
    "            ps = torch.sigmoid(logits)\n"
    "        else:\n"
    "            logits = torch.log(ps) - torch.log1p(-ps)\n"
    "    return ps, logits\n"
)


def test_a_flag_under_which_the_op_sits_is_set_for_the_call(
    tmp_path: Path, clean_modules: object
) -> None:
    """pyro's get_probs_and_logits (pyro-probs-to-logits-log): the op runs only with
    `is_multidimensional=False`, which the synthesised call and its reproducer pass."""
    repo = write_repo(tmp_path, {"ppkg/__init__.py": "", "ppkg/util.py": PROBS})
    record = _confirmed_and_failing(repo, "ppkg/util.py", ["get_probs_and_logits"] * 2)
    assert "is_multidimensional=False" in record["reproducer"]


JACCARD = (
    "from typing import Literal, Optional\n\n"
    "import torch\nfrom torch import Tensor\n\n\n"
    "def _jaccard_index_reduce(\n"
    "    confmat: Tensor,\n"
    '    average: Optional[Literal["micro", "macro", "weighted", "none", "binary"]],\n'
    ") -> Tensor:\n"
    "    confmat = confmat.float()\n"
    '    if average == "binary":\n'
    "        return confmat[1, 1] / (confmat[0, 1] + confmat[1, 0] + confmat[1, 1])\n"
    "    return confmat.sum(0)\n"
)


def test_a_mode_under_which_the_op_sits_is_passed_for_the_call(
    tmp_path: Path, clean_modules: object
) -> None:
    """torchmetrics' binary Jaccard index (torchmetrics-binary-jaccard-div): the division
    runs only with `average="binary"`, which the synthesised call and its reproducer pass."""
    repo = write_repo(tmp_path, {"jpkg/__init__.py": "", "jpkg/jaccard.py": JACCARD})
    record = _confirmed_and_failing(repo, "jpkg/jaccard.py", ["_jaccard_index_reduce"])
    assert "average='binary'" in record["reproducer"]


def test_a_missing_dependency_the_function_never_uses_gets_a_stand_in(
    tmp_path: Path, clean_modules: object
) -> None:
    """allennlp's metrics import spacy through their package; a layer subclasses a missing
    library's base class and registers itself with its decorator: with stand-ins for the
    missing modules the module imports as it is, and so does the reproducer."""
    repo = write_repo(
        tmp_path,
        {
            "spkg/__init__.py": "from .common import registry\n",
            "spkg/common.py": (
                "import numcheck_absent_nlp\n\nregistry = numcheck_absent_nlp.Registry\n"
            ),
            "spkg/metrics.py": (
                "import torch\nimport numcheck_absent_nlp.tokens as tokens\n\n"
                "from .common import registry\n\n\n"
                "@registry.register('rate')\n"
                "class Rate(tokens.Base):\n"
                "    def score(self, hits):\n"
                "        return hits / hits.sum()\n\n\n"
                "def rate(hits):\n"
                "    return Rate().score(hits)\n"
            ),
        },
    )
    loaded = load(repo, "spkg.metrics")
    # every stand-in this process has: earlier tests' too, as a job's earlier modules'
    assert loaded.how == "import" and "numcheck_absent_nlp" in loaded.stand_ins
    assert "No module named 'numcheck_absent_nlp'" in loaded.why
    run = run_findings(repo, "spkg/metrics.py", ["Rate.score"], finding_timeout=120, timeout=300)
    source = confirmed_reproducer(repo, run)
    (note,) = [line for line in source.splitlines() if "numcheck stood in for" in line]
    assert "numcheck_absent_nlp" in note.partition("cannot:")[2]
    (fix,) = [r["fix"] for r in run.result.records if r.get("stage") == "fix"]
    assert fix["status"] == "validated", fix  # the patched copy loads with them too


def test_a_file_imported_by_its_bare_name_from_beside_it_is_found_there(
    tmp_path: Path, clean_modules: object
) -> None:
    """optax's segmentation loss (as its PR had it) says `from classification import ...`
    with `classification.py` in the same folder: that folder goes last on sys.path, not a
    stand-in (which would only fail at the call), and the reproducer appends it too."""
    import sys

    from analyzers.dynamic import siblings

    repo = write_repo(
        tmp_path,
        {
            "bpkg/__init__.py": "",
            "bpkg/losses/__init__.py": "",
            "bpkg/losses/numcheck_sibling_ce.py": (
                "import torch\n\n\ndef ce(x):\n    return x * 2.0\n"
            ),
            "bpkg/losses/focal.py": (
                "import torch\nfrom numcheck_sibling_ce import ce\n\n\n"
                "def focal(x: torch.Tensor) -> torch.Tensor:\n"
                "    return torch.log(ce(x))\n"
            ),
        },
    )
    folder = str((repo / "bpkg" / "losses").resolve())
    try:
        loaded = load(repo, "bpkg.losses.focal")
        assert loaded.how == "import" and loaded.script_dirs == ("bpkg/losses",)
        assert "numcheck_sibling_ce" not in loaded.stand_ins
        assert sys.path[-1] == folder  # last: it shadows nothing installed
        run = run_findings(
            repo, "bpkg/losses/focal.py", ["focal"], finding_timeout=120, timeout=300
        )
        source = confirmed_reproducer(repo, run)
        assert (
            "sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "
            "'bpkg/losses'))" in source
        )
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
        siblings._ADDED.clear()
        sys.modules.pop("numcheck_sibling_ce", None)


# collections.abc's since Python 3.3, gone from collections in 3.10
OLD_COLLECTIONS_HELPER = """from collections import Iterable


def as_list(values):
    return list(values) if isinstance(values, Iterable) else [values]
"""

OLD_COLLECTIONS = '''import collections

import torch

from ocoll.helpers import as_list


def mean_log(values):
    """The mean log of the given tensors; a mapping's values when given one."""
    if isinstance(values, collections.Mapping):  # read only when the function runs
        values = list(values.values())
    logs = [torch.log(v) for v in as_list(values)]
    return sum(logs) / len(logs)
'''


def test_collections_abc_names_of_before_python_3_10_are_bound_to_their_new_place(
    tmp_path: Path, clean_modules: object
) -> None:
    """`from collections import Iterable` in a module the flagged one imports (an import
    error), and `collections.Mapping` read only when the flagged function runs (no error until
    the search): both are the same classes of collections.abc, bound under their old names in
    the search and, by the reproducer, before it imports the code."""
    import collections
    import collections.abc

    from analyzers.dynamic import moved

    repo = write_repo(
        tmp_path,
        {
            "ocoll/__init__.py": "",
            "ocoll/helpers.py": OLD_COLLECTIONS_HELPER,
            "ocoll/losses.py": OLD_COLLECTIONS,
        },
    )
    try:
        loaded = load(repo, "ocoll.losses")
        # stand-ins are process-wide: another test's may be listed, never one for collections
        assert loaded.how == "import"
        assert not [name for name in loaded.stand_ins if name.startswith("collections")]
        assert {"collections.Iterable", "collections.Mapping"} <= set(loaded.moved)
        assert collections.Iterable is collections.abc.Iterable  # type: ignore[attr-defined]
        run = run_findings(repo, "ocoll/losses.py", ["mean_log"], finding_timeout=120, timeout=300)
        # the reproducer runs in a fresh python, where collections has neither name
        source = confirmed_reproducer(repo, run)
        assert "collections.Iterable = collections.abc.Iterable" in source
        assert "collections.Mapping = collections.abc.Mapping" in source
    finally:
        for name in ("Iterable", "Mapping"):
            if name in vars(collections):
                delattr(collections, name)
        moved._MADE.clear()


@pytest.mark.parametrize(
    ("name", "lo", "hi"),
    [
        ("log_probs", -100.0, 0.0),
        ("keep_prob", 0.0, 1.0),
        ("confmat", 0.0, 100.0),
        ("step", 0.0, 100.0),  # Keras's schedules at a negative step were noise
        ("global_step", 0.0, 100.0),
        ("decay_steps", 0.0, 100.0),  # 0 stays in: a schedule of 0 steps divides by it
        ("stddev", 0.0, 100.0),  # a Laplacian kernel of negative width was noise
        ("sigma", 0.0, 100.0),
        ("steps_per_epoch_ratio", -100.0, 100.0),  # only a name that ends so
        ("x", -100.0, 100.0),
    ],
)
def test_a_parameters_name_keeps_it_on_its_side_of_0(name: str, lo: float, hi: float) -> None:
    from analyzers.dynamic.signatures import named_domain
    from analyzers.dynamic.specs import default_spec

    spec = named_domain(name, default_spec((4,)))
    assert (spec.lo, spec.hi) == (lo, hi)
