"""The dynamic pass on NumPy code: the harness confirms a NaN/Inf that NumPy flags at the
line (a noise schedule's `np.log(sigma)` in a module that also imports torch, as diffusers'
schedulers do; a plain NumPy normalisation), and writes a NumPy reproducer that fails on its
own in a plain python child, at the flagged line, not at another line's flag."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from harness_support import confirmed_reproducer, run_findings, write_repo

from analyzers.dynamic.entries import framework_of
from analyzers.dynamic.numpy_backend import NumpyProbe, Watched, evaluate_numpy, to_numpy

SEARCH_SECONDS = 10.0

SCHEDULER = """import numpy as np
import torch


class Scheduler:
    def __init__(self, steps=10):
        self.sigmas = torch.linspace(1.0, 0.0, steps)

    def _sigma_to_t(self, sigma, log_sigmas):
        log_sigma = np.log(sigma)
        dists = log_sigma - log_sigmas[:, np.newaxis]
        low_idx = np.cumsum((dists >= 0), axis=0).argmax(axis=0).clip(
            max=log_sigmas.shape[0] - 2)
        low = log_sigmas[low_idx]
        high = log_sigmas[low_idx + 1]
        w = np.clip((low - log_sigma) * (high - low), 0, 1)
        return (1 - w) * low_idx + w * (low_idx + 1)
"""

NORMALISE = '''import numpy as np


def normalise(weights):
    """Weights rescaled to sum to one along the last axis."""
    total = weights.sum(axis=-1, keepdims=True)
    return weights / total
'''


def test_numpy_modules_are_recognised(tmp_path: Path, clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"npnorm/__init__.py": "", "npnorm/weights.py": NORMALISE})
    import sys

    sys.path.insert(0, str(repo))
    try:
        import npnorm.weights  # type: ignore[import-not-found]

        assert framework_of(npnorm.weights.normalise) == "numpy"
    finally:
        sys.path.remove(str(repo))
    assert framework_of(confirmed_reproducer) == "torch"  # a module without NumPy alone


class _Call:
    """An entry as numpy_backend needs it: the inputs already arrays."""

    def __init__(self, fn: object) -> None:
        self.fn = fn

    def call_arrays(self, arrays: list[object]) -> object:
        return self.fn(*arrays)  # type: ignore[operator]


def test_only_the_first_flag_at_the_line_shows(tmp_path: Path) -> None:
    """An earlier flag on another line would stop the reproducer there: no visible trigger;
    a flag at the line with a clipped, finite output shows as "raised"."""
    path = tmp_path / "code.py"
    path.write_text(
        "import numpy as np\n"
        "def first(x):\n"
        "    y = 1.0 / x\n"
        "    return np.clip(np.log(x), -1, 1) + 0 * np.nan_to_num(y)\n"
        "def earlier(x):\n"
        "    return np.clip(np.log(x), -1, 1)\n",
        encoding="utf-8",
    )
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
    zero = [torch.zeros(3)]
    at_log = NumpyProbe(str(path), frozenset({4}), "log")
    flagged_first = evaluate_numpy(at_log, _Call(namespace["first"]), "log", "float32", zero)
    assert flagged_first.forward and flagged_first.visible is None  # 1 / 0 flagged first
    alone = NumpyProbe(str(path), frozenset({6}), "log")
    clipped = evaluate_numpy(alone, _Call(namespace["earlier"]), "log", "float32", zero)
    assert clipped.forward and clipped.visible == "raised"
    ones = evaluate_numpy(alone, _Call(namespace["earlier"]), "log", "float32", [torch.ones(3)])
    assert ones.reached and not ones.forward and ones.loss < float("inf")
    assert isinstance(to_numpy(torch.ones(2)), Watched) and not isinstance(
        np.asarray([1.0]), Watched
    )


def test_a_log_of_a_zero_sigma_in_a_torch_module_is_confirmed(
    tmp_path: Path, clean_modules: object
) -> None:
    repo = write_repo(tmp_path, {"sched/__init__.py": "", "sched/euler.py": SCHEDULER})
    run = run_findings(
        repo,
        "sched/euler.py",
        ["Scheduler._sigma_to_t"],
        finding_timeout=120,
        timeout=300,
        search_seconds=SEARCH_SECONDS,
    )
    source = confirmed_reproducer(repo, run)
    assert "np.errstate(" in source and "import torch" not in source
    assert "makes NaN/Inf" in source


def test_a_division_by_a_sum_is_confirmed(tmp_path: Path, clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"npnorm/__init__.py": "", "npnorm/weights.py": NORMALISE})
    run = run_findings(
        repo,
        "npnorm/weights.py",
        ["normalise"],
        finding_timeout=120,
        timeout=300,
        search_seconds=SEARCH_SECONDS,
    )
    source = confirmed_reproducer(repo, run)
    assert "np.full(" in source or "np.array(" in source
