"""Flax linen Modules as entries (analyzers/dynamic/linen.py): a Module's member runs only
bound, so it is run through `apply` with its parameters made as `init` makes them, in the
search and in the reproducer. The Module below is a dropout whose rate is a dataclass field:
at rate 1 its keep probability, a Python float, is 0, and `inputs / keep_prob` is inf. The
`select` hides that from the output, not from the gradient (0 * inf). Its random stream has
a name of its own (`noise`), which flax refuses to make up.

Real flax, real JAX; the proof goes through the real harness in a child process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("flax")

from harness_support import confirmed_reproducer, run_findings, write_repo  # noqa: E402

from analyzers.dynamic import linen  # noqa: E402
from analyzers.dynamic.writer import PlanError, _linen_lines  # noqa: E402

# JAX's first calls take most of a second: a budget of evaluations' worth, not a timing
SEARCH_SECONDS = 10.0

NOISY_DROPOUT = """\
import jax
import jax.numpy as jnp
import flax.linen as nn


class NoisyDropout(nn.Module):
    rate: float

    @nn.compact
    def __call__(self, inputs):
        scale = self.param("scale", nn.initializers.ones, (inputs.shape[-1],))
        keep_prob = 1.0 - self.rate
        mask = jax.random.bernoulli(self.make_rng("noise"), p=keep_prob, shape=inputs.shape)
        return jax.lax.select(mask, inputs * scale / keep_prob, jnp.zeros_like(inputs))
"""


def test_a_linen_modules_member_is_proven_through_apply(tmp_path: Path) -> None:
    """Confirmed at the division, and the reproducer, alone in a fresh Python, builds the
    Module unbound and runs it through `apply` with the Module's own stream among its keys.
    Called directly, the member raises (an unbound Module has no scope), so without linen.py
    there is no proof at all."""
    repo = write_repo(tmp_path, {"noisy.py": NOISY_DROPOUT})
    run = run_findings(
        repo,
        "noisy.py",
        ["NoisyDropout.__call__"],
        finding_timeout=120,
        timeout=300,
        search_seconds=SEARCH_SECONDS,
        harvest=False,
        fix=False,
    )
    assert run.record("NoisyDropout.__call__")["trigger"]["reaches_output"]
    reproducer = confirmed_reproducer(repo, run)
    # the output is finite (the select hides the inf); the gradient is what fails
    assert "the gradient reaching inputs is NaN/Inf" in reproducer
    assert "obj = NoisyDropout(rate=1.0)" in reproducer
    assert "obj.apply({}, inputs" in reproducer and 'method="__call__"' in reproducer
    assert "'noise'" in reproducer


def test_what_marks_a_linen_module_and_what_it_is_built_with(tmp_path: Path) -> None:
    import flax.linen as nn

    class Scaled(nn.Module):
        factor: float

        def __call__(self, x):  # pragma: no cover - never called here
            return x * self.factor / self.make_rng("jitter")[0]

    class Plain:
        def __init__(self, parent, rate):  # the first linen's dataclass made `parent` required
            self.parent, self.rate = parent, rate

    assert linen.is_linen_module(Scaled) and not linen.is_linen_module(Plain)
    assert not linen.is_linen_module(nn.Module.__call__)
    assert linen.streams(Scaled) == (*linen.BASE_STREAMS, "jitter")
    assert linen.unbound_init(Scaled) == {}  # today's flax gives `parent` a default
    assert linen.unbound_init(Plain) == {"parent": None}


def test_a_forged_stream_name_is_refused() -> None:
    lines = _linen_lines(["params", "noise"], 0, "__call__", "x, **kwargs")
    assert "    streams = ('params', 'noise')" in lines
    with pytest.raises(PlanError):
        _linen_lines(["params", "x'); import os; os.system('id"], 0, "__call__", "x")
