"""The dynamic pass on JAX code: the harness confirms a NaN/Inf in a JAX function written like
library code (optax's losses, a `jnp.where` gradient leak, a normalisation by a sum) and
writes a jnp reproducer that fails on its own in a plain python child."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_support import Run, confirmed_reproducer, run_findings, run_script, write_repo

from analyzers.dynamic.entries import framework_of
from analyzers.report.summary import proof_sentence
from analyzers.static import scan_source
from analyzers.trust import comment_inline

# A budget of evaluations' worth, not a timing: JAX's first calls take most of a second, and
# on a loaded two-core CI machine the default 3 s ran out before the search reached the
# trigger it finds unloaded in 2 s.
SEARCH_SECONDS = 15.0

KL = '''import jax
import jax.numpy as jnp


@jax.jit
def kl_divergence(log_predictions: jax.Array, targets: jax.Array) -> jax.Array:
    """Kullback-Leibler divergence of a predicted distribution from the targets."""
    loss = targets * (jnp.log(targets) - log_predictions)
    return jnp.sum(loss, axis=-1)
'''

SAFE_LOG = '''import jax.numpy as jnp


def positive_log(x):
    """log where positive, zero elsewhere."""
    return jnp.where(x > 0, jnp.log(x), 0.0)
'''

NORMALISE = '''import jax.numpy as jnp


def normalise(weights):
    """Weights rescaled to sum to one along the last axis."""
    total = jnp.sum(weights, axis=-1, keepdims=True)
    return weights / total
'''

LOG_TARGETS = '''import jax.numpy as jnp


def kl_with_log_targets(log_predictions, target_scores):
    """KL divergence with the targets given as log-probabilities (a name that does not say
    so: `log_targets` would be drawn at most 0 by a made-up call, signatures.named_domain)."""
    return jnp.sum(jnp.exp(target_scores) * (target_scores - log_predictions), axis=-1)


def naive_softplus(x):
    """log(1 + e^x), written out."""
    return jnp.log1p(jnp.exp(x))
'''

LOG_TARGETS_TEST = """import jax
import jax.numpy as jnp

from jlogt.kl import kl_with_log_targets, naive_softplus


def test_a_distribution_is_its_own_nearest():
    log_p = jax.nn.log_softmax(jnp.array([[0.5, -1.0, 2.0], [0.0, 0.1, -0.3]]))
    assert jnp.allclose(kl_with_log_targets(log_p, log_p), 0.0, atol=1e-6)


def test_softplus_is_positive():
    assert (naive_softplus(jnp.array([-2.0, 0.5, 3.0])) > 0).all()
"""


def test_jax_modules_are_recognised(tmp_path: Path, clean_modules: object) -> None:
    import jax.numpy as jnp

    assert framework_of(jnp.log) == "jax"
    assert framework_of(confirmed_reproducer) == "torch"  # a module without JAX


def test_a_jitted_optax_style_kl_divergence_is_confirmed(
    tmp_path: Path, clean_modules: object
) -> None:
    repo = write_repo(tmp_path, {"jlosses/__init__.py": "", "jlosses/kl.py": KL})
    run = run_findings(
        repo,
        "jlosses/kl.py",
        ["kl_divergence"],
        finding_timeout=120,
        timeout=300,
        search_seconds=SEARCH_SECONDS,
    )
    source = confirmed_reproducer(repo, run)
    assert "jnp.array(" in source and "import torch" not in source


def test_a_where_guarded_log_leaks_nan_into_the_gradient(
    tmp_path: Path, clean_modules: object
) -> None:
    repo = write_repo(tmp_path, {"jsafe/__init__.py": "", "jsafe/ops.py": SAFE_LOG})
    run = run_findings(
        repo,
        "jsafe/ops.py",
        ["positive_log"],
        finding_timeout=120,
        timeout=300,
        search_seconds=SEARCH_SECONDS,
    )
    source = confirmed_reproducer(repo, run)
    assert "jax.grad(" in source


def test_a_division_by_a_sum_is_confirmed(tmp_path: Path, clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"jnorm/__init__.py": "", "jnorm/weights.py": NORMALISE})
    run = run_findings(
        repo,
        "jnorm/weights.py",
        ["normalise"],
        finding_timeout=120,
        timeout=300,
        search_seconds=SEARCH_SECONDS,
    )
    confirmed_reproducer(repo, run)


MOVED_TREE = '''import jax.numpy as jnp
from jax import tree_map  # gone from jax since 0.4.26: jax.tree_util.tree_map


def normalise_all(weights):
    """Magnitudes rescaled to sum to one along the last axis."""
    weights = tree_map(jnp.abs, weights)
    total = jnp.sum(weights, axis=-1, keepdims=True)
    return weights / total
'''


def _proven_with_the_move(repo: Path, path: str, function: str, binding: str) -> Any:
    """The module at `path`, loaded with the move `binding` makes (`old = new`) made, not
    stood in for; its one finding, in `function`, confirmed by a reproducer that makes the
    same move and fails alone."""
    from analyzers.dynamic.loading import load

    name = binding.split(" = ")[0]
    loaded = load(repo, path.removesuffix(".py").replace("/", "."))
    assert name in loaded.moved and name not in loaded.stand_ins
    run = run_findings(
        repo,
        path,
        [function],
        finding_timeout=120,
        timeout=300,
        search_seconds=SEARCH_SECONDS,
    )
    assert binding in confirmed_reproducer(repo, run)
    return loaded.module


def test_a_moved_framework_function_is_bound_to_its_new_place(
    tmp_path: Path, clean_modules: object
) -> None:
    """numpyro's `from jax import lax, ops, tree_map`: a stand-in would return a stand-in
    from `tree_map(f, x)`; the old name is bound to jax.tree_util.tree_map instead, in the
    search and in the reproducer, so the division is the framework's real arithmetic."""
    import jax

    from analyzers.dynamic import moved

    repo = write_repo(tmp_path, {"jmoved/__init__.py": "", "jmoved/norm.py": MOVED_TREE})
    try:
        module = _proven_with_the_move(
            repo, "jmoved/norm.py", "normalise_all", "jax.tree_map = jax.tree_util.tree_map"
        )
        assert module.tree_map is jax.tree_util.tree_map
    finally:
        if "tree_map" in vars(jax):
            delattr(jax, "tree_map")
        moved._MADE.clear()


# JAX of before 0.4.1: a helper module of the package tests its arrays against DeviceArray,
# and only when it runs (as flax's first linen Module did in the module every Module is built
# through), not in the flagged module and not at import
OLD_ARRAYS = """import jax
import numpy as np


def as_array(value):
    if isinstance(value, (np.ndarray, jax.interpreters.xla.DeviceArray)):
        return value
    raise TypeError(f"not an array: {type(value)}")
"""

OLD_SHARES = '''import jax.numpy as jnp

from jdevice.arrays import as_array


def shares(counts):
    """Each count's share of its row."""
    counts = as_array(counts)
    return counts / jnp.sum(counts, axis=-1, keepdims=True)
'''


def test_a_moved_class_another_module_reads_when_it_runs_is_bound_too(
    tmp_path: Path, clean_modules: object
) -> None:
    """`jax.interpreters.xla.DeviceArray`, read in a sibling module's function: bound to
    `jax.Array` when the flagged module is loaded, in the search and in the reproducer."""
    import jax

    from analyzers.dynamic import moved

    repo = write_repo(
        tmp_path,
        {
            "jdevice/__init__.py": "",
            "jdevice/arrays.py": OLD_ARRAYS,
            "jdevice/share.py": OLD_SHARES,
        },
    )
    try:
        _proven_with_the_move(
            repo, "jdevice/share.py", "shares", "jax.interpreters.xla.DeviceArray = jax.Array"
        )
        assert jax.interpreters.xla.DeviceArray is jax.Array
    finally:
        vars(jax.interpreters.xla).pop("DeviceArray", None)
        moved._MADE.clear()


OLD_CLIP = '''import jax.numpy as jnp


def bond_strength(order, exponent):
    """A bond order clipped at zero, raised to a fitted exponent (jax-md's ReaxFF)."""
    base = jnp.clip(order, a_min=0.0)  # NumPy's keyword; JAX takes `min=` since 0.4.27
    return base**exponent
'''


def test_a_keyword_the_framework_renamed_is_taken_again_under_its_new_name(
    tmp_path: Path, clean_modules: object
) -> None:
    """jax-md's `jnp.clip(boa, a_min=0)` raises on today's JAX (`unexpected keyword
    argument 'a_min'`) before the flagged pow; clip is wrapped to take `a_min` as `min`,
    in the search and in the reproducer; a module that passes no old keyword changes nothing."""
    import jax.numpy

    from analyzers.dynamic import moved
    from analyzers.dynamic.loading import load

    original = jax.numpy.clip
    repo = write_repo(tmp_path, {"jclip/__init__.py": "", "jclip/bonds.py": OLD_CLIP})
    try:
        loaded = load(repo, "jclip.bonds")
        assert loaded.moved == ("jax.numpy.clip",)
        assert float(loaded.module.jnp.clip(jax.numpy.array(-1.0), a_min=0.0)) == 0.0
        run = run_findings(
            repo,
            "jclip/bonds.py",
            ["bond_strength"],
            finding_timeout=120,
            timeout=300,
            search_seconds=SEARCH_SECONDS,
        )
        source = confirmed_reproducer(repo, run)
        assert "jax.numpy.clip = _old_keywords(jax.numpy.clip, {'a_min': 'min'" in source
    finally:
        jax.numpy.clip = original
        moved._MADE.clear()
    assert moved.accept_old_keywords("jnp.clip(x, 0, 1)") == []  # no old keyword passed
    assert jax.numpy.clip is original


def test_a_proof_on_a_made_up_call_says_the_recorded_one_held(
    tmp_path: Path, clean_modules: object
) -> None:
    """The repository's test passes log-probabilities (<= 0): the harvest records that JAX
    call, and its boxes keep the sign, so exp(target_scores) is searched where it cannot
    overflow. Synthesised in the default box next, exp(89) is "proven", a proof on a
    log-probability no caller passes: confirmed, and its comment says that the recorded
    search stayed finite and in which box."""
    files = {
        "jlogt/__init__.py": "",
        "jlogt/kl.py": LOG_TARGETS,
        "tests/test_kl.py": LOG_TARGETS_TEST,
    }

    def run_kl(folder: str, harvest: bool) -> Run:
        return run_findings(
            write_repo(tmp_path / folder, files),
            "jlogt/kl.py",
            ["kl_with_log_targets", "naive_softplus"],
            finding_timeout=120,
            timeout=300,
            search_seconds=SEARCH_SECONDS,
            harvest=harvest,
        )

    run = run_kl("harvested", harvest=True)
    repo = run.repo
    # a recorded input seen on both sides of 0 widens to both: exp(89) is a real input there,
    # and the reproducer replays the recorded call in jnp
    softplus = run.record("naive_softplus")
    assert softplus["status"] == "confirmed" and softplus["box"]["source"] == "harvested"
    check = run_script(repo, softplus["reproducer"])
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]
    source = str(softplus["reproducer"])
    assert "naive_softplus(" in source and "import torch" not in source
    # the recorded log-probabilities, searched on their side of 0, hold; exp(89) is proven
    # only on a made-up call next, and its comment says so
    record = run.record("kl_with_log_targets")
    assert record["status"] == "confirmed" and record["box"]["source"] == "synthesised", record
    held = record["box"]["recorded_held"]
    assert held["target"] == "jlogt.kl:kl_with_log_targets" and held["evaluations"] > 0
    assert [(i["lo"], i["hi"], i.get("keeps_sign")) for i in held["inputs"]] == [
        (-100.0, 0.0, True),
        (-100.0, 0.0, True),
    ]
    (finding,) = [
        f
        for f in scan_source(LOG_TARGETS, "jlogt/kl.py").findings
        if f.op == "exp" and f.function == "kl_with_log_targets"
    ]
    finding.status = "confirmed"
    finding.trigger = {**record["trigger"], "box": record["box"]}
    assert comment_inline(finding, "proven")  # stated, for the reader to weigh; not hidden
    assert "the repository's tests call it too, and searched from their values in " in (
        proof_sentence(finding)
    )
    assert "[-100, 0], [-100, 0] (" in proof_sentence(finding)
    run = run_kl("synthesised", harvest=False)
    assert run.record("naive_softplus")["status"] == "confirmed"
    record = run.record("kl_with_log_targets")
    assert record["status"] == "confirmed" and record["box"]["source"] == "synthesised", record
    assert "recorded_held" not in record["box"]  # no tests ran: an ordinary proof, commented
