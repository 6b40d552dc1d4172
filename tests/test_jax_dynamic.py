"""The dynamic pass on JAX code: the harness confirms a NaN/Inf in a JAX function written like
library code (optax's losses, a `jnp.where` gradient leak, a normalisation by a sum) and
writes a jnp reproducer that fails on its own in a plain python child."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from harness_support import Run, run_findings, run_script, write_repo

from analyzers.dynamic.entries import framework_of


def _confirmed_reproducer(repo: Path, run: Run) -> str:
    (record,) = [r for r in run.result.records if r.get("stage") is None]
    assert record["status"] == "confirmed", record.get("error")
    check = run_script(repo, record["reproducer"])
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]
    return str(record["reproducer"])


@pytest.fixture
def clean_modules(tmp_path: Path) -> object:
    """Forget the test repository's packages after the test."""
    yield None
    roots = {p.stem for p in tmp_path.iterdir()}
    for name in [n for n in sys.modules if n.split(".")[0] in roots]:
        del sys.modules[name]


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


def test_jax_modules_are_recognised(tmp_path: Path, clean_modules: object) -> None:
    import jax.numpy as jnp

    assert framework_of(jnp.log) == "jax"
    assert framework_of(_confirmed_reproducer) == "torch"


def test_a_jitted_optax_style_kl_divergence_is_confirmed(tmp_path: Path,
                                                         clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"jlosses/__init__.py": "", "jlosses/kl.py": KL})
    run = run_findings(repo, "jlosses/kl.py", ["kl_divergence"], finding_timeout=120,
                       timeout=300)
    source = _confirmed_reproducer(repo, run)
    assert "jnp.array(" in source and "import torch" not in source


def test_a_where_guarded_log_leaks_nan_into_the_gradient(tmp_path: Path,
                                                        clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"jsafe/__init__.py": "", "jsafe/ops.py": SAFE_LOG})
    run = run_findings(repo, "jsafe/ops.py", ["positive_log"], finding_timeout=120,
                       timeout=300)
    source = _confirmed_reproducer(repo, run)
    assert "jax.grad(" in source


def test_a_division_by_a_sum_is_confirmed(tmp_path: Path, clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"jnorm/__init__.py": "", "jnorm/weights.py": NORMALISE})
    run = run_findings(repo, "jnorm/weights.py", ["normalise"], finding_timeout=120,
                       timeout=300)
    _confirmed_reproducer(repo, run)
