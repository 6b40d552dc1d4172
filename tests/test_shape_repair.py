"""A synthesised call that fails on its shapes gets some inputs in the shapes the code's own
error names, one input at a time, while the call gets further (shape_repair.py); through the
real harness, each such finding is confirmed with a reproducer that fails on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from harness_support import run_findings, run_script, write_repo

from analyzers.dynamic.entries import synthesise
from analyzers.dynamic.shape_repair import (
    changes,
    is_shape_error,
    one_call,
    ranks_indexed,
    repaired,
    shapes_named,
)
from analyzers.dynamic.specs import default_spec

CASES = (
    Path(__file__).parent / "fixtures" / "dynamic" / "dynfix" / "mixed_rank_cases.py"
).read_text(encoding="utf-8")


def _message(add: Any, a: Any, b: Any) -> str:
    try:
        add(a, b)
    except Exception as exc:  # what the framework itself says
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError("the shapes broadcast")


def test_the_shapes_each_framework_names_are_read_from_its_own_error() -> None:
    import jax.numpy as jnp

    numpy_error = _message(np.add, np.ones((4, 8)), np.ones(4))
    jax_error = _message(jnp.add, jnp.ones((4, 8)), jnp.ones((4, 4)))
    assert shapes_named(numpy_error) == [(4, 8), (4,)], numpy_error
    assert shapes_named(jax_error) == [(4, 8), (4, 4)], jax_error
    torch_error = _message(torch.add, torch.ones(4, 8), torch.ones(4))
    assert is_shape_error(torch_error) and shapes_named(torch_error) == [(8,), (4,)]
    # torch names sizes: an input with one of them at that dimension loses it or swaps it
    assert changes([default_spec((4, 8)), default_spec((4,))], torch_error)[:2] == [
        (0, (4,)),
        (0, (4, 4)),
    ]
    # named shapes: each input of one of them takes the others; then any input one
    # dimension short, each change once
    specs = [default_spec((4, 8)), default_spec((4, 8)), default_spec((2, 3))]
    assert changes(specs, numpy_error) == [(0, (4,)), (1, (4,)), (2, (2,))]
    assert not is_shape_error("TypeError: forward() missing 1 required positional argument")


def test_tensorflow_names_both_shapes() -> None:
    import tensorflow as tf

    error = _message(tf.add, tf.ones((4, 8)), tf.ones((4,)))
    assert is_shape_error(error) and shapes_named(error)[:2] == [(4, 8), (4,)], error


def test_an_index_past_an_arrays_rank_gives_an_input_of_that_rank_more_dimensions() -> None:
    import jax.numpy as jnp
    import tensorflow as tf

    index = np.zeros(4, dtype=np.int64)
    said = {
        "numpy": _message(lambda a, i: a[i, i], np.ones(4), index),
        "jax": _message(lambda a, i: a[i], jnp.ones(()), jnp.asarray(index)),
        "torch": _message(lambda a, i: a[i], torch.ones(()), torch.from_numpy(index)),
        "tensorflow": _message(lambda a, i: a[i], tf.ones(()), 0),
        "numpy scalar": _message(lambda a, i: a[i], np.float32(1.0), 0),
    }
    assert all(is_shape_error(error) for error in said.values()), said
    assert ranks_indexed(said["numpy"]) == (1, 2)  # it names both ranks, as JAX does
    assert ranks_indexed(said["jax"]) == (0, 1)
    assert ranks_indexed(said["torch"]) == ranks_indexed(said["tensorflow"]) == (0, 1), said
    assert ranks_indexed(said["numpy scalar"]) == (0, 1)
    assert ranks_indexed("TypeError: forward() missing 1 required positional argument") is None
    # a 0-d input takes the shapes of rank 1 the others have, the most common first, then
    # DEFAULT_BATCH; inputs of other ranks are left alone
    specs = [default_spec(shape) for shape in [(4, 8), (), (3,), (4,), (4,)]]
    assert changes(specs, said["jax"]) == [(1, (4,)), (1, (3,))]
    # two indices into a 0-d table by type and type: the (4, 8) the pairs have, then square
    two = "IndexError: Too many indices: array is 0-dimensional, but 2 were indexed"
    assert changes(specs, two) == [(1, (4, 8)), (1, (4, 4))]


@pytest.fixture
def repo(tmp_path: Path, clean_modules: None) -> Path:
    # the module at the top of tmp_path, so clean_modules forgets it after each test
    return write_repo(tmp_path, {"mixed_rank_cases.py": CASES})


def _first_failure(repo: Path, function: str, marker: str) -> tuple[Any, Any, frozenset[int]]:
    line = next(i for i, text in enumerate(CASES.splitlines(), 1) if marker in text)
    entry = synthesise(repo, "mixed_rank_cases.py", function, 0)
    lines = frozenset({line})
    probe = one_call(str(repo / "mixed_rank_cases.py"), lines, "log", 0)
    return entry, probe(entry), lines


def test_the_per_atom_input_loses_its_last_dimension(repo: Path) -> None:
    entry, failure, lines = _first_failure(repo, "mean_pair_energy", "@mean-pair-energy")
    assert is_shape_error(failure.error) and failure.error_lines == (min(lines),)
    probe = one_call(str(repo / "mixed_rank_cases.py"), lines, "log", 0)
    fitted = repaired(entry, failure, probe)
    # the first change that runs: the energies lose their neighbours (a total over atoms
    # divided by every count, whose log is then taken) before the counts would
    assert fitted is not None and probe(fitted).error is None
    assert [s.shape for s in fitted.specs] == [(4,), (4, 8)]
    assert [s.shape for s in entry.specs] == [(4, 8)] * 2  # the entry itself is left as it was


def test_a_change_that_does_not_get_the_call_further_is_not_kept(repo: Path) -> None:
    entry, failure, lines = _first_failure(repo, "charge_weighted_log", "@charge-weighted-log")
    helper = next(i for i, t in enumerate(CASES.splitlines(), 1) if "expand_as" in t)
    # raised in the helper below, called from the line above the op
    assert failure.error_lines[-1] == helper and failure.error_lines[0] < min(lines)
    probe = one_call(str(repo / "mixed_rank_cases.py"), lines, "log", 0)
    fitted = repaired(entry, failure, probe)
    assert fitted is not None and [s.shape for s in fitted.specs] == [(4,), (4, 8)]
    # a probe whose every call fails where it did gets nothing kept
    assert repaired(entry, failure, lambda trial: failure) is None


def test_a_constant_read_whole_and_then_indexed_gains_a_dimension(repo: Path) -> None:
    entry, failure, lines = _first_failure(repo, "type_scaled_log", "@type-scaled-log")
    # `params.strength`, read without a subscript, is synthesised 0-d, and indexed by type
    assert [s.shape for s in entry.specs] == [(4,), (4, 8), (), ()]
    assert ranks_indexed(failure.error or "") == (0, 1), failure.error
    probe = one_call(str(repo / "mixed_rank_cases.py"), lines, "log", 0)
    fitted = repaired(entry, failure, probe)
    # one of the two constants per type is enough for the where, and the call runs
    assert fitted is not None and probe(fitted).error is None
    assert [s.shape for s in fitted.specs] == [(4,), (4, 8), (4,), ()]


def test_each_is_confirmed_with_a_reproducer_in_the_repaired_shapes(repo: Path) -> None:
    run = run_findings(
        repo,
        "mixed_rank_cases.py",
        ["charge_weighted_log", "mean_pair_energy", "type_scaled_log"],
        finding_timeout=90,
        timeout=300,
    )
    for function, shapes in {
        "mean_pair_energy": [[4], [4, 8]],
        "charge_weighted_log": [[4], [4, 8]],
        "type_scaled_log": [[4], [4, 8], [4], []],
    }.items():
        record = run.record(function)
        assert record["status"] == "confirmed", (function, record.get("error"))
        assert [i["shape"] for i in record["box"]["inputs"]] == shapes
        proc = run_script(repo, record["reproducer"])
        assert proc.returncode != 0 and "AssertionError" in proc.stderr, proc.stderr[-1500:]
    # its parameter `types` is written `types_`: as `types` it hid the module that spells
    # the namespace (`types.SimpleNamespace(strength=..., fallback=...)`)
    reproducer = run.record("type_scaled_log")["reproducer"]
    assert "types_ = " in reproducer and "types.SimpleNamespace(" in reproducer, reproducer
