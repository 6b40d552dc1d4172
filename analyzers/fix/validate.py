"""Validation of a candidate fix: runs INSIDE the sandbox, on a copy of the PR's code.

A candidate is suggested only if every check holds (the issue's "Validation"):

1. `reproducer`  the finding's reproducer passes on the patched copy (no NaN/Inf, forward and
                 gradient);
2. `search`      the search, run again with its budget on the patched copy, finds no trigger
                 for any risky op the patch leaves on the lines (a fused API that removed the
                 op leaves nothing to watch: recorded as not run, with the reason);
3. `static`      the static pass no longer flags the patched lines;
4. `equivalence` on in-domain inputs the patched outputs match the original's wherever the
                 original was finite (DeepREL's value-equivalence oracle): max absolute and
                 relative deviation (also per input, for the report page's plot), against
                 a tolerance per fix kind (and op);
5. `gradients`   gradients of the patched code are finite on the trigger and on normal inputs.

The harness supplies what needs the PR's code as callables (`Hooks`); this module only judges.
The record (`Validation.to_json()`) says which checks ran, their figures, and why a rejected
candidate was rejected. Checks run cheapest first and stop at the first failure; the rest are
recorded as skipped.

Helpers for the harness (and the tests), all in-process: `load_patched` imports a patched copy
of one module, `rebind` points an `Entry` at it, `sample_inputs` draws from an entry's box,
`run_entry` / `entry_gradients` call an entry (PyTorch or TensorFlow), `reproduce` evaluates a
trigger, `search_hook` wraps a `Searcher` run.
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import math
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.dtypes import limits

if TYPE_CHECKING:
    from analyzers.config import Config
    from analyzers.dynamic.entry import Entry
    from analyzers.dynamic.search import Budget
    from analyzers.fix.candidates import Candidate

CHECKS = ("static", "reproducer", "equivalence", "gradients", "search")

# |patched - original| <= atol + rtol * |original| elementwise, where the original is finite.
# Stable APIs and guards change in-domain values by rounding only. An epsilon moves them by
# design: log(x + eps) by about eps / x (0.016 for a softmax probability of 6e-5 next to
# eps = 1e-6, on a log-probability near -9.7), sqrt(x + eps) by sqrt(eps) = 1e-3 at x = 0;
# an epsilon of 0.1 moves a log-probability by whole units and is rejected.
TOLERANCE: dict[str, tuple[float, float]] = {
    "stable-api": (1e-5, 1e-4),
    "epsilon": (2e-3, 1e-2),
    "clamp": (1e-5, 1e-4),
    "where": (1e-5, 1e-4),
    "masked-fill": (1e-5, 1e-4),
    "upcast": (1e-5, 1e-4),  # float32 scores cast back: float16 rounding (widened per dtype)
}
# The equivalence check's per-input deviations kept for the report page's plot.
SERIES_CAP = 64
ULPS = 8  # the finest tolerance in units of the dtype's machine epsilon
# Per-op overrides: normalize divides by max(norm, 1e-12), so a tiny norm shifts its output.
OP_TOLERANCE: dict[tuple[str, str], tuple[float, float]] = {
    ("stable-api", "div"): (1e-5, 1e-3),
}


def tolerance(kind: str, op: str, dtype: str = "float32") -> tuple[float, float]:
    """(atol, rtol) for a fix kind on an op, never finer than a few units in the last place
    of the dtype (float16: 8 * 2**-10 = 7.8e-3): a coarser dtype rounds more, but a
    tolerance scaled by its epsilon (x8192 for float16) would accept any change at all."""
    atol, rtol = OP_TOLERANCE.get((kind, op), TOLERANCE.get(kind, (1e-5, 1e-4)))
    floor = ULPS * limits(dtype).eps
    return max(atol, floor), max(rtol, floor)


@dataclass
class Check:
    name: str
    ran: bool
    passed: bool
    figures: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ran": self.ran, "passed": self.passed,
                "figures": _jsonable(self.figures), "reason": self.reason}


@dataclass
class Validation:
    kind: str
    name: str
    accepted: bool
    checks: list[Check]
    rejected_because: str | None = None
    seconds: float = 0.0

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "accepted": self.accepted,
                "rejected_because": self.rejected_because, "seconds": round(self.seconds, 4),
                "checks": [c.to_json() for c in self.checks]}


@dataclass
class Hooks:
    """What the harness supplies for one candidate (None: that check cannot run here).

    reproducer()      -> (still_fails, detail): the finding's reproducer on the patched copy
    search(op)        -> {"triggered", "reached", "evaluations", "seconds", ...}: the search
                         for `op` on the patched lines of the patched copy, with its budget
    original(inputs)  -> outputs of the original code; patched(inputs) likewise
    gradients(inputs) -> gradients of the patched code's outputs w.r.t. its float inputs;
    original_gradients(inputs) likewise for the original code
    normal_inputs     -> in-domain inputs (harvested, or sampled from the valid box)
    trigger           -> the inputs the search found on the original code
    """

    reproducer: Callable[[], tuple[bool, str]] | None = None
    search: Callable[[str], Mapping[str, Any]] | None = None
    original: Callable[[Sequence[Any]], Any] | None = None
    patched: Callable[[Sequence[Any]], Any] | None = None
    gradients: Callable[[Sequence[Any]], Sequence[Any]] | None = None
    normal_inputs: Sequence[Sequence[Any]] = ()
    trigger: Sequence[Any] | None = None
    # the original computed in float64: a deviation from the original is excused where the
    # patched value is within tolerance of this one (the original rounded, e.g. through
    # subnormal probabilities, and the fused API did not)
    reference: Callable[[Sequence[Any]], Any] | None = None
    original_source: str | None = None  # the file before the patch, for the static check
    original_gradients: Callable[[Sequence[Any]], Sequence[Any]] | None = None


# ---------------------------------------------------------------------------------- checks

def check_static(candidate: Candidate, config: Config | None = None,
                 original: str | None = None, op: str | None = None) -> Check:
    """The static pass on the patched file flags nothing on the patched lines. Given the
    `original` source and the fixed finding's `op`, the other findings the original had on
    those lines (another op of the same statement, with findings of its own) are left out:
    only the fixed one, or a new one, rejects the candidate; those left (`others_left`) are
    watched by the search check instead, which must not trigger them on the patched code."""
    from collections import Counter

    from analyzers.static import scan_source

    lines = patched_lines(candidate)
    scan = scan_source(candidate.source, candidate.patch.path, config)
    if scan.error:
        return Check("static", True, False, {"lines": sorted(lines)}, scan.error)
    flagged = [f for f in scan.findings if f.line in lines]
    others: Counter[tuple[str, str]] = Counter()
    if original is not None and op is not None:
        before = scan_source(original, candidate.patch.path, config)
        span = range(candidate.patch.start_line, candidate.patch.end_line + 1)
        on_lines = [(f.op, f.rule) for f in before.findings if f.line in span]
        fixed = next((key for key in on_lines if key[0] == op), None)
        if fixed is not None:
            on_lines.remove(fixed)
        others = Counter(on_lines)
    left = [f for f in flagged if others[(f.op, f.rule)] > 0]
    for f in left:
        others[(f.op, f.rule)] -= 1
    flagged = [f for f in flagged if f not in left]
    figures = {"lines": sorted(lines), "flagged": [f"{f.line}:{f.rule}:{f.op}" for f in flagged],
               "others_left": [f"{f.line}:{f.rule}:{f.op}" for f in left]}
    if flagged:
        first = flagged[0]
        return Check("static", True, False, figures,
                     f"the static pass still flags line {first.line} ({first.rule}: "
                     f"{first.why})")
    return Check("static", True, True, figures)


def check_reproducer(run: Callable[[], tuple[bool, str]]) -> Check:
    started = time.perf_counter()
    still_fails, detail = run()
    figures = {"seconds": round(time.perf_counter() - started, 4)}
    if still_fails:
        return Check("reproducer", True, False, figures,
                     "the reproducer still fails on the patched code: " + detail[-300:])
    return Check("reproducer", True, True, figures)


def check_search(search: Callable[[str], Mapping[str, Any]], watch: Sequence[str]) -> Check:
    if not watch:
        return Check("search", False, True, {"watched": []},
                     "no risky op from the catalogue is left on the patched lines")
    runs: dict[str, Any] = {}
    for op in watch:
        result = dict(search(op))
        runs[op] = result
        if result.get("triggered"):
            return Check("search", True, False, {"watched": list(watch), "runs": runs},
                         f"the search still triggers {op} on the patched code "
                         f"({result.get('where', 'forward')}, after "
                         f"{result.get('evaluations', '?')} evaluations)")
    reached = [op for op, r in runs.items() if r.get("reached")]
    reason = "" if reached else "the patched code never reached the watched op"
    return Check("search", True, True, {"watched": list(watch), "runs": runs}, reason)


def check_equivalence(original: Callable[[Sequence[Any]], Any],
                      patched: Callable[[Sequence[Any]], Any],
                      inputs: Iterable[Sequence[Any]], kind: str, op: str,
                      dtype: str = "float32",
                      reference: Callable[[Sequence[Any]], Any] | None = None) -> Check:
    """Elementwise, where the original is finite: |patched - original| within tolerance, or
    |patched - reference| within it where a float64 `reference` of the original exists (the
    deviation then reported is the smaller of the two)."""
    atol, rtol = tolerance(kind, op, dtype)
    referenced = 0
    max_abs = 0.0
    max_rel = 0.0
    compared = 0
    count = 0
    worst: dict[str, Any] = {}
    series: list[dict[str, Any]] = []  # per input: what the report page plots
    for count, sample in enumerate(inputs, 1):
        _seed(count)  # dropout and other draws: the same in both runs
        before = _arrays(original(_copy(sample)))
        _seed(count)
        after = _arrays(patched(_copy(sample)))
        if len(before) != len(after) or any(a.shape != b.shape for a, b in
                                            zip(before, after, strict=True)):
            return Check("equivalence", True, False, {"inputs": count},
                         "the patched code returns outputs of another shape: "
                         f"{[a.shape for a in before]} vs {[b.shape for b in after]}")
        exact = _reference_arrays(reference, sample, count, before)
        referenced += exact is not None
        sample_abs: float | None = None
        sample_rel = 0.0
        for index, (a, b) in enumerate(zip(before, after, strict=True)):
            mask = np.isfinite(a)
            if not mask.any():
                continue
            a_fin, b_fin = a[mask], b[mask]
            if not np.isfinite(b_fin).all():
                return Check("equivalence", True, False, {"inputs": count},
                             "the patched code is non-finite where the original was finite")
            diff = np.abs(b_fin - a_fin)
            if exact is not None:
                r_fin = exact[index][mask]
                closer = np.isfinite(r_fin) & (np.abs(b_fin - r_fin) < diff)
                diff = np.where(closer, np.abs(b_fin - r_fin), diff)
            rel = diff / np.maximum(np.abs(a_fin), limits(dtype).tiny)
            compared += int(mask.sum())
            if diff.size and float(diff.max()) > max_abs:
                max_abs = float(diff.max())
            if diff.size:
                sample_abs = max(sample_abs or 0.0, float(diff.max()))
            significant = np.abs(a_fin) > atol
            if significant.any():
                max_rel = max(max_rel, float(rel[significant].max()))
                sample_rel = max(sample_rel, float(rel[significant].max()))
            bad = diff > atol + rtol * np.abs(a_fin)
            if bad.any() and not worst:
                i = int(np.argmax(diff - (atol + rtol * np.abs(a_fin))))
                worst = {"original": float(a_fin[i]), "patched": float(b_fin[i]),
                         "input": count}
        if sample_abs is not None and len(series) < SERIES_CAP:
            series.append({"input": count, "max_abs": sample_abs, "max_rel": sample_rel})
    figures: dict[str, Any] = {"inputs": count, "compared": compared, "max_abs": max_abs,
                               "max_rel": max_rel, "atol": atol, "rtol": rtol,
                               "float64_reference": referenced, "per_input": series}
    if count == 0 or compared == 0:
        return Check("equivalence", False, False, figures,
                     "no in-domain input where the original was finite to compare on")
    if worst:
        figures["worst"] = worst
        return Check("equivalence", True, False, figures,
                     f"the patch changes in-domain values: max deviation {max_abs:.3g} "
                     f"absolute, {max_rel:.3g} relative, above atol={atol:g} rtol={rtol:g} "
                     f"(e.g. {worst['original']:.6g} -> {worst['patched']:.6g})")
    return Check("equivalence", True, True, figures)


def _reference_arrays(reference: Callable[[Sequence[Any]], Any] | None, sample: Sequence[Any],
                      seed: int, like: list[np.ndarray]) -> list[np.ndarray] | None:
    """The float64 reference's outputs for `sample`, when it runs and matches in shape."""
    if reference is None:
        return None
    try:
        _seed(seed)
        exact = _arrays(reference(_copy(sample)))
    except Exception:  # the code may not run in float64 (dtype-specific code)
        return None
    if len(exact) != len(like) or any(a.shape != b.shape for a, b in
                                      zip(exact, like, strict=True)):
        return None
    return exact


def check_gradients(gradients: Callable[[Sequence[Any]], Sequence[Any]],
                    trigger: Sequence[Any] | None, normal: Iterable[Sequence[Any]],
                    original: Callable[[Sequence[Any]], Sequence[Any]] | None = None) -> Check:
    """Finite gradients at the trigger, and at every normal input where the original code's
    gradients were finite: a non-finite gradient the original already had there comes from
    another op of the function (another finding's, or a gradient that is infinite by nature)
    and is counted as inherited, not blamed on this patch."""
    checked = inherited = 0
    labelled: list[tuple[str, Sequence[Any]]] = []
    if trigger is not None:
        labelled.append(("trigger", trigger))
    labelled += [(f"normal input {i}", x) for i, x in enumerate(normal, 1)]
    for label, sample in labelled:
        grads = gradients(_copy(sample))
        checked += 1
        bad = _first_non_finite(grads)
        if bad is None:
            continue
        if label != "trigger" and original is not None \
                and _first_non_finite(original(_copy(sample))) is not None:
            inherited += 1
            continue
        return Check("gradients", True, False, {"inputs": checked},
                     f"the gradient w.r.t. input {bad} is not finite on the {label}")
    if checked == 0:
        return Check("gradients", False, False, {}, "no inputs to take gradients at")
    return Check("gradients", True, True, {"inputs": checked, "inherited": inherited,
                                           "trigger": trigger is not None})


def _first_non_finite(grads: Sequence[Any]) -> int | None:
    """The index of the first gradient with a NaN or inf in it, or None."""
    for index, grad in enumerate(grads):
        if grad is None:
            continue
        array = _arrays(grad)
        if array and not all(np.isfinite(a).all() for a in array):
            return index
    return None


# ---------------------------------------------------------------------------------- driver

def validate(candidate: Candidate, hooks: Hooks, *, op: str, dtype: str = "float32",
             config: Config | None = None, required: Sequence[str] = CHECKS,
             checks_to_run: Sequence[str] = CHECKS) -> Validation:
    """The checks for one candidate, in `checks_to_run` order (default: all, cheapest first);
    the first failure rejects it and skips the rest. A check in `required` whose hook is
    missing rejects the candidate too (nothing unchecked is ever suggested)."""
    started = time.perf_counter()
    checks: list[Check] = []
    rejected: str | None = None
    normal = list(hooks.normal_inputs)
    for name in checks_to_run:
        if rejected is not None:
            checks.append(Check(name, False, False, {}, "skipped: already rejected"))
            continue
        if name == "search":  # other flagged ops the static check let stand: searched too
            static = next((c for c in checks if c.name == "static"), None)
            left = [entry.rsplit(":", 1)[-1] for entry in
                    (static.figures.get("others_left", []) if static else [])]
            extra = tuple(dict.fromkeys(o for o in left if o not in candidate.watch))
            if extra:
                candidate = replace(candidate, watch=candidate.watch + extra)
        check = _run_check(name, candidate, hooks, normal, op, dtype, config)
        checks.append(check)
        if not check.passed and (check.ran or name in required):
            rejected = f"{name}: {check.reason}"
    return Validation(candidate.kind, candidate.name, rejected is None, checks, rejected,
                      time.perf_counter() - started)


def _run_check(name: str, candidate: Candidate, hooks: Hooks, normal: list[Sequence[Any]],
               op: str, dtype: str, config: Config | None) -> Check:
    try:
        if name == "static":
            return check_static(candidate, config, hooks.original_source, op)
        if name == "reproducer":
            if hooks.reproducer is None:
                return Check(name, False, False, {}, "no reproducer supplied")
            return check_reproducer(hooks.reproducer)
        if name == "equivalence":
            if hooks.original is None or hooks.patched is None or not normal:
                return Check(name, False, False, {}, "no in-domain inputs or callables")
            return check_equivalence(hooks.original, hooks.patched, normal, candidate.kind, op,
                                     dtype, hooks.reference)
        if name == "gradients":
            if hooks.gradients is None:
                return Check(name, False, False, {}, "no gradient callable supplied")
            return check_gradients(hooks.gradients, hooks.trigger, normal,
                                   hooks.original_gradients)
        if hooks.search is None:
            if not candidate.watch:
                return check_search(lambda op: {}, ())
            return Check(name, False, False, {}, "no search supplied")
        return check_search(hooks.search, candidate.watch)
    except Exception as exc:  # the patched PR code may raise anywhere
        return Check(name, True, False, {}, f"the patched code raised {type(exc).__name__}: "
                                            f"{str(exc)[:300]}")


def choose(candidates: Sequence[Candidate], hooks_for: Callable[[Candidate], Hooks], *,
           op: str, dtype: str = "float32", config: Config | None = None,
           required: Sequence[str] = CHECKS) -> tuple[Candidate | None, list[Validation]]:
    """The first candidate (in the order given: developers' preference) that passes every
    check, and the records of all candidates tried. None when none passes: the finding keeps
    its reproducer and says so."""
    records: list[Validation] = []
    for candidate in candidates:
        try:
            hooks = hooks_for(candidate)
        except Exception as exc:  # importing the patched copy can fail
            records.append(Validation(candidate.kind, candidate.name, False, [],
                                      f"setup: the patched copy could not be loaded "
                                      f"({type(exc).__name__}: {str(exc)[:300]})"))
            continue
        record = validate(candidate, hooks, op=op, dtype=dtype, config=config,
                          required=required)
        records.append(record)
        if record.accepted:
            return candidate, records
    return None, records


def fix_record(chosen: Candidate | None, records: Sequence[Validation]) -> dict[str, Any]:
    """The `fix` field of a Finding: the patch and its validation, or why there is none."""
    tried = [r.to_json() for r in records]
    if chosen is None:
        return {"status": "none-validated", "tried": tried,
                "reason": "no candidate passed validation" if records else "no candidate"}
    accepted = records[-1]
    equivalence = accepted.check("equivalence")
    return {"status": "validated", "kind": chosen.kind, "name": chosen.name,
            "description": chosen.description, **chosen.patch.to_json(),
            "watch": list(chosen.watch),
            "validation": accepted.to_json(),
            "max_abs_deviation": equivalence.figures.get("max_abs") if equivalence else None,
            "max_rel_deviation": equivalence.figures.get("max_rel") if equivalence else None,
            "rejected": tried[:-1]}


# ---------------------------------------------------------------------------------- wiring

def entry_hooks(candidate: Candidate, entry: Entry, *, path: str, module_name: str,
                trigger: Sequence[Any] | None, normal_inputs: Sequence[Sequence[Any]],
                directory: Path | None = None, budget: Budget | None = None, seed: int = 0,
                dtype: str = "float32",
                reproducer: Callable[[Path], tuple[bool, str]] | None = None,
                original_source: str | None = None,
                on_copy: Path | None = None) -> Hooks:
    """`Hooks` for one candidate of a finding confirmed on `entry`, in this process: the
    patched module is loaded from its own file, the entry rebound to it (same inputs, box and
    weights), and the search re-run with the same budget on the patched lines. `on_copy`, a
    copy of the repository with the candidate written in it, is where a script entry runs
    instead (`ScriptEntry.on_copy`). `reproducer` (patched file) -> (still fails, detail)
    replaces the in-process stand-in, e.g. with the rendered script run against a patched
    copy of the repository."""
    if on_copy is not None:
        file = on_copy / path
        patched = entry.on_copy(on_copy)  # type: ignore[attr-defined]
    else:
        module, file = load_patched(candidate.source, path, module_name, directory,
                                    extracted=getattr(entry, "loading", "") == "extracted")
        patched = rebind(entry, module)
    if reproducer is not None:
        run_reproducer: Callable[[], tuple[bool, str]] = lambda: reproducer(file)  # noqa: E731
    elif trigger is not None:
        run_reproducer = lambda: reproduce(patched, trigger)  # noqa: E731
    else:
        run_reproducer = lambda: (True, "no trigger to reproduce")  # noqa: E731
    return Hooks(
        reproducer=run_reproducer,
        search=search_hook(patched, str(file), patched_lines(candidate), dtype=dtype,
                           seed=seed, budget=budget, start=entry.start),
        original=lambda x: run_entry(entry, x),
        patched=lambda x: run_entry(patched, x),
        gradients=lambda x: entry_gradients(patched, x),
        original_gradients=lambda x: entry_gradients(entry, x),
        normal_inputs=normal_inputs, trigger=trigger, reference=float64_reference(entry),
        original_source=original_source)


def in_domain(original: Callable[[Sequence[Any]], Any],
              samples: Iterable[Sequence[Any]], partial: bool = False) -> list[Sequence[Any]]:
    """The samples on which the original code's outputs are all finite (draws from the box
    that the op's own domain rejects are no basis for a value comparison). `partial` keeps
    those with some finite output too (the comparison only looks where the original was
    finite): acos on 32 draws from [-3, 3] is almost never finite everywhere."""
    kept: list[Sequence[Any]] = []
    for sample in samples:
        try:
            outputs = _arrays(original(_copy(sample)))
        except Exception:  # the PR's code may raise on any input
            continue
        if all(np.isfinite(a).all() for a in outputs) or (
                partial and outputs and any(np.isfinite(a).any() for a in outputs)):
            kept.append(sample)
    return kept


# ---------------------------------------------------------------------------------- helpers

def patched_lines(candidate: Candidate) -> frozenset[int]:
    """The 1-based lines of the patched file that hold the suggestion's new text."""
    patch = candidate.patch
    offset = 0 if patch.suggestion_complete else len(patch.imports)
    count = max(1, patch.replacement.count("\n"))
    start = patch.start_line + offset
    return frozenset(range(start, start + count))


_LOADED = itertools.count()
PATCHED_SUFFIX = "__numcheck_fix_"  # patched modules: `<original>__numcheck_fix_<n>`


def load_patched(source: str, path: str, module_name: str,
                 directory: Path | None = None,
                 extracted: bool = False) -> tuple[ModuleType, Path]:
    """Import a patched copy of one module from a file of its own (the probes watch it by
    file and line). It is named inside the original's package, so relative imports resolve
    against the real package. `extracted`: the original would not import and was built
    statement by statement (analyzers/dynamic/loading.py); so is the copy."""
    directory = directory or Path(tempfile.mkdtemp(prefix="numcheck_fix_"))
    file = directory / Path(path).name
    file.write_text(source, encoding="utf-8")
    package = module_name.rpartition(".")[0]
    name = f"{module_name}{PATCHED_SUFFIX}{next(_LOADED)}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[name] = module
    try:
        if extracted:
            from analyzers.dynamic.loading import define

            define(module, source, str(file))
        else:
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module, file


def rebind(entry: Entry, module: ModuleType) -> Entry:
    """The same entry (inputs, box, constants, weights) calling the patched module."""
    import torch

    from analyzers.dynamic.entries import resolve_attr
    from analyzers.dynamic.objects import ObjectCall

    qualname = entry.target.partition(":")[2]

    def like(old: torch.nn.Module, cls: Any) -> torch.nn.Module:
        instance = cls(**entry.init)
        params = list(old.parameters())
        if params:
            instance = instance.to(dtype=params[0].dtype)
        instance.load_state_dict(old.state_dict())
        instance.train(old.training)
        return instance.to(entry.device) if entry.device != "cpu" else instance

    replay: Any = entry.fn
    if isinstance(replay, ObjectCall):  # a member of a plain class: the patched class
        return replace(entry, fn=replay.with_owner(
            resolve_attr(module, qualname.rpartition(".")[0])))
    if entry.is_method and hasattr(replay, "rebound"):
        # a recorded Keras layer method call (harvest_keras.KerasReplay): a layer of the
        # patched class, built like the recorded one, holding its variables
        return replace(entry, fn=replay.rebound(resolve_attr(module, qualname.rpartition(".")[0])))
    if entry.is_method and hasattr(replay, "module") and hasattr(replay, "method"):
        # a recorded nn.Module method call (harvest.ModuleReplay): the recorded module as the
        # tests left it, its classes from this file swapped for their patched versions
        patched = copy.deepcopy(replay.module)
        original = module.__name__.split(PATCHED_SUFFIX, 1)[0]
        for sub in patched.modules():
            if type(sub).__module__ == original:
                sub.__class__ = resolve_attr(module, type(sub).__qualname__)
        return replace(entry, fn=type(replay)(patched, replay.method, replay.fresh,
                                              replay.seed))
    if entry.is_method and entry.framework == "tensorflow":  # a synthesised Keras layer
        instance = resolve_attr(module, qualname.rpartition(".")[0])(**entry.init)
        return replace(entry, fn=_keras_clone(entry.fn, instance))
    if entry.is_method:  # a synthesised nn.Module method: a fresh instance, the same weights
        owner_name, _, method = qualname.rpartition(".")
        old = getattr(entry.fn, "__self__", None)
        if not isinstance(old, torch.nn.Module):
            raise TypeError(f"cannot rebind {entry.target}")
        return replace(entry, fn=getattr(like(old, resolve_attr(module, owner_name)), method))
    obj = resolve_attr(module, qualname)
    if isinstance(entry.fn, torch.nn.Module):
        return replace(entry, fn=like(entry.fn, obj))
    if entry.framework == "tensorflow" and not hasattr(entry.fn, "__code__"):
        instance = obj(**entry.init)  # a Keras layer or model: same weights once built
        return replace(entry, fn=_keras_clone(entry.fn, instance))
    return replace(entry, fn=obj)


def _keras_clone(old: Any, new: Any) -> Any:
    copied = [False]

    def call(*args: Any, **kwargs: Any) -> Any:
        if not copied[0]:
            new(*args, **kwargs)  # build
            new.set_weights(old.get_weights())
            copied[0] = True
        return new(*args, **kwargs)

    return call


def sample_inputs(entry: Entry, count: int, seed: int = 0,
                  box: Sequence[tuple[float, float] | None] | None = None) -> list[list[Any]]:
    """In-domain inputs: draws from the entry's box, or from `box` per input (None keeps
    the entry's). The harness passes harvested values where it has them."""
    import torch

    from analyzers.dynamic.tensors import sample

    generator = torch.Generator().manual_seed(seed)
    specs = list(entry.specs)
    if box is not None:
        specs = [replace(s, lo=b[0], hi=b[1]) if b is not None and s.is_float else s
                 for s, b in zip(specs, box, strict=True)]
    return [[sample(spec, generator) for spec in specs] for _ in range(count)]


def float64_reference(entry: Entry) -> Callable[[Sequence[Any]], Any] | None:
    """The original entry computed in float64 (PyTorch: float inputs, float constants and a
    copy of the module in double), or None where that cannot be done faithfully (TensorFlow,
    autocast, CUDA, recorded modules)."""
    import copy

    import torch

    if entry.framework != "torch" or entry.autocast is not None or entry.device != "cpu":
        return None

    def double(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.detach().double()
        return value

    fn: Any = entry.fn
    if isinstance(fn, torch.nn.Module):
        fn = copy.deepcopy(fn).double()
    elif entry.is_method:
        owner = getattr(fn, "__self__", None)
        if not isinstance(owner, torch.nn.Module):
            return None
        fn = getattr(copy.deepcopy(owner).double(), getattr(fn, "__name__", ""))
    elif not callable(fn) or not hasattr(fn, "__code__"):
        return None
    wide = replace(entry, fn=fn, constants={k: double(v) for k, v in entry.constants.items()},
                   template=None if entry.template is None else
                   [double(v) for v in entry.template],
                   template_kwargs={k: double(v) for k, v in entry.template_kwargs.items()})
    return lambda inputs: wide.call([double(x) for x in inputs])


def run_entry(entry: Entry, inputs: Sequence[Any]) -> Any:
    if entry.framework == "tensorflow":
        import tensorflow as tf

        return entry.call([tf.constant(_numpy(x)) for x in inputs])
    return entry.call(list(inputs))


def entry_gradients(entry: Entry, inputs: Sequence[Any]) -> list[Any]:
    """d(sum of the finite float outputs) / d(each float input)."""
    if entry.framework == "tensorflow":
        import tensorflow as tf

        tensors = [tf.constant(_numpy(x)) for x in inputs]
        with tf.GradientTape() as tape:
            for t in tensors:
                if t.dtype.is_floating:
                    tape.watch(t)
            output = entry.call(tensors)
            outs = [o for o in tf.nest.flatten(output)
                    if isinstance(o, tf.Tensor) and o.dtype.is_floating]
            total = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float64)) for o in outs])
        return list(tape.gradient(total, [t for t in tensors if t.dtype.is_floating]))
    import torch

    from analyzers.dynamic.probe import tensors_in

    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    output = entry.call(leaves)
    outs = [o for o in tensors_in(output) if o.is_floating_point() and o.requires_grad]
    floats = [x for x in leaves if x.requires_grad]
    if not outs or not floats:
        return []
    total = torch.stack([o.sum().to(torch.float64) for o in outs]).sum()
    return list(torch.autograd.grad(total, floats, allow_unused=True))


def reproduce(entry: Entry, trigger: Sequence[Any]) -> tuple[bool, str]:
    """In-process stand-in for the reproducer script: (still fails, detail). It fails when
    an output, or the gradient of the outputs, is not finite at the trigger."""
    outputs = _arrays(run_entry(entry, trigger))
    if not all(np.isfinite(a).all() for a in outputs):
        return True, "the output is not finite at the trigger"
    grads = entry_gradients(entry, trigger)
    for index, grad in enumerate(grads):
        if grad is not None and not all(np.isfinite(a).all() for a in _arrays(grad)):
            return True, f"the gradient w.r.t. input {index} is not finite at the trigger"
    return False, "finite output and gradient at the trigger"


def search_hook(entry: Entry, path: str, lines: frozenset[int], *, dtype: str = "float32",
                seed: int = 0, budget: Budget | None = None,
                start: list[Any] | None = None) -> Callable[[str], dict[str, Any]]:
    """`Hooks.search` for an entry on the patched copy: the real Searcher, per op."""
    from analyzers.dynamic.search import Searcher

    def run(op: str) -> dict[str, Any]:
        searcher = Searcher(entry, path, lines, op, dtype=dtype, seed=seed, budget=budget)
        outcome = searcher.run(start)
        return {"triggered": outcome.triggered, "reached": outcome.reached,
                "where": outcome.where, "stage": outcome.stage,
                "evaluations": outcome.evaluations, "seconds": round(outcome.seconds, 4),
                "best_loss": outcome.best_loss, "error": outcome.error}

    return run


def _seed(seed: int) -> None:
    """Seed the random generators the code may draw from (only frameworks already loaded)."""
    np.random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
    if "tensorflow" in sys.modules:
        tf = sys.modules["tensorflow"]
        if hasattr(tf, "random"):
            tf.random.set_seed(seed)


def _numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _copy(sample: Sequence[Any]) -> list[Any]:
    """The code under test may write into its inputs (masked_fill_): each run gets its own."""
    out = []
    for x in sample:
        out.append(x.detach().clone() if hasattr(x, "detach") else x)
    return out


def _arrays(value: Any) -> list[np.ndarray]:
    """Every float array in an output: tensors (torch, TF), arrays, nested containers."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v)]
    if isinstance(value, float):
        return [np.asarray(value, dtype=np.float64)]
    try:
        array = _numpy(value)
    except Exception:  # not array-like: nothing to compare
        return []
    if array.dtype.kind not in "fc":
        return []
    return [array.astype(np.float64)]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    return value
