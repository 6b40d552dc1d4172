"""Closures a factory returns as entries (analyzers/dynamic/factories.py): a loss wrapper's
inner function and an optimiser's update are reached by calling the factory, with a stand-in
for each function it is given; a proof never rests on that stand-in; through the real
harness, and the reproducer fails on its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from harness_support import run_findings, run_script, write_repo

from analyzers.dynamic.factories import FactoryCall, factory_call, passes_through
from analyzers.dynamic.signatures import EntryError

WRAPPERS = """\
from typing import NamedTuple

import torch


def masked_objective(fn):
    \"\"\"A per-element loss averaged over the unmasked elements (Keras 2's wrapper).\"\"\"

    def masked(y_true, y_pred, mask):
        score = fn(y_true, y_pred)
        score = score * mask
        return score.sum() / torch.mean(mask)

    return masked


def logged_objective(fn):
    def logged(y_true, y_pred):
        score = fn(y_true, y_pred)
        return torch.log(score)

    return logged


class Transformation(NamedTuple):
    init: object
    update: object


def scale_by_rms(decay=0.9):
    \"\"\"An optax-style transformation: two closures in a NamedTuple.\"\"\"

    def init(params):
        return torch.zeros_like(params)

    def update(updates, state):
        return updates / state.sum(-1, keepdim=True)

    return Transformation(init, update)


def registered(fn):
    def inner(x):
        return torch.log(x)

    REGISTRY.append(inner)
    return fn


REGISTRY = []
"""


def test_the_closure_is_reached_through_what_the_factory_returns(
    tmp_path: Path, clean_modules: None
) -> None:
    repo = write_repo(tmp_path / "repo", {"wrappers.py": WRAPPERS})
    sys.path.insert(0, str(repo))
    try:
        import wrappers  # type: ignore[import-not-found]

        masked = factory_call(wrappers.masked_objective, "masked", "torch.mean(mask)")
        assert masked == FactoryCall(wrappers.masked_objective, "masked", (), {}, ("fn",))
        assert masked.made().__name__ == "masked" and masked.made() is not masked.made()
        rms = factory_call(wrappers.scale_by_rms, "update", "state.sum(-1, keepdim=True)")
        assert rms is not None and rms.path == (("index", 1),) and rms.init == {}
        # the closure is defined but not what the factory returns: not a factory's call
        assert factory_call(wrappers.registered, "inner", "x") is None
        with pytest.raises(EntryError, match="comes from score"):
            factory_call(wrappers.logged_objective, "logged", "score")
    finally:
        sys.path.remove(str(repo))
    assert passes_through(1, 2, key=3) == 2


def test_a_factorys_closure_is_confirmed_and_its_reproducer_fails_alone(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"wrappers.py": WRAPPERS})
    run = run_findings(
        repo,
        "wrappers.py",
        [
            "logged_objective.logged",
            "masked_objective.masked",
            "registered.inner",
            "scale_by_rms.update",
        ],
        finding_timeout=60,
        timeout=300,
        harvest=False,
    )
    for function in ("masked_objective.masked", "scale_by_rms.update"):
        record = run.record(function)
        assert record["status"] == "confirmed", (function, record)
        source = record["reproducer"]
        proc = run_script(repo, source)
        assert proc.returncode != 0 and "AssertionError" in proc.stderr, proc.stderr[-2000:]
    assert run.record("masked_objective.masked", "fix")["fix"]["status"] == "validated"
    masked = run.record("masked_objective.masked")["reproducer"]
    assert "made = masked_objective(fn=_passes_through)" in masked
    assert "out = made(y_true, y_pred, mask)" in masked
    assert "made = scale_by_rms()[1]" in run.record("scale_by_rms.update")["reproducer"]
    # the log's operand is the stand-in's own result: nothing is claimed about it
    logged = run.record("logged_objective.logged")
    assert logged["status"] == "error" and "comes from score" in logged["error"], logged
