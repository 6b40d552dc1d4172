"""The dynamic pass on JAX code: the harness confirms a NaN/Inf in a JAX function written like
library code (optax's losses, a `jnp.where` gradient leak, a normalisation by a sum) and
writes a jnp reproducer that fails on its own in a plain python child."""

from __future__ import annotations

from pathlib import Path

from harness_support import confirmed_reproducer, run_findings, write_repo

from analyzers.dynamic.entries import framework_of

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


def test_jax_modules_are_recognised(tmp_path: Path, clean_modules: object) -> None:
    import jax.numpy as jnp

    assert framework_of(jnp.log) == "jax"
    assert framework_of(confirmed_reproducer) == "torch"  # a module without JAX


def test_a_jitted_optax_style_kl_divergence_is_confirmed(tmp_path: Path,
                                                         clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"jlosses/__init__.py": "", "jlosses/kl.py": KL})
    run = run_findings(repo, "jlosses/kl.py", ["kl_divergence"], finding_timeout=120,
                       timeout=300, search_seconds=SEARCH_SECONDS)
    source = confirmed_reproducer(repo, run)
    assert "jnp.array(" in source and "import torch" not in source


def test_a_where_guarded_log_leaks_nan_into_the_gradient(tmp_path: Path,
                                                        clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"jsafe/__init__.py": "", "jsafe/ops.py": SAFE_LOG})
    run = run_findings(repo, "jsafe/ops.py", ["positive_log"], finding_timeout=120,
                       timeout=300, search_seconds=SEARCH_SECONDS)
    source = confirmed_reproducer(repo, run)
    assert "jax.grad(" in source


def test_a_division_by_a_sum_is_confirmed(tmp_path: Path, clean_modules: object) -> None:
    repo = write_repo(tmp_path, {"jnorm/__init__.py": "", "jnorm/weights.py": NORMALISE})
    run = run_findings(repo, "jnorm/weights.py", ["normalise"], finding_timeout=120,
                       timeout=300, search_seconds=SEARCH_SECONDS)
    confirmed_reproducer(repo, run)
