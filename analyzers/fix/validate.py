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

The callables come from `entry_hooks.py`, which loads the patched copy and calls the PR's code
(in the sandbox); the value helpers both use are in `values.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.dtypes import limits
from analyzers.fix.values import copied, float_arrays, jsonable, seed_all

if TYPE_CHECKING:
    from analyzers.config import Config
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
    seconds: float = 0.0  # what the check took (the fix stage's time goes mostly to runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ran": self.ran,
            "passed": self.passed,
            "figures": jsonable(self.figures),
            "reason": self.reason,
            "seconds": round(self.seconds, 4),
        }


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
        return {
            "kind": self.kind,
            "name": self.name,
            "accepted": self.accepted,
            "rejected_because": self.rejected_because,
            "seconds": round(self.seconds, 4),
            "checks": [c.to_json() for c in self.checks],
        }


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


def check_static(
    candidate: Candidate,
    config: Config | None = None,
    original: str | None = None,
    op: str | None = None,
) -> Check:
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
    figures = {
        "lines": sorted(lines),
        "flagged": [f"{f.line}:{f.rule}:{f.op}" for f in flagged],
        "others_left": [f"{f.line}:{f.rule}:{f.op}" for f in left],
    }
    if flagged:
        first = flagged[0]
        return Check(
            "static",
            True,
            False,
            figures,
            f"the static pass still flags line {first.line} ({first.rule}: {first.why})",
        )
    return Check("static", True, True, figures)


def check_reproducer(run: Callable[[], tuple[bool, str]]) -> Check:
    started = time.perf_counter()
    still_fails, detail = run()
    figures = {"seconds": round(time.perf_counter() - started, 4)}
    if still_fails:
        return Check(
            "reproducer",
            True,
            False,
            figures,
            "the reproducer still fails on the patched code: " + detail[-300:],
        )
    return Check("reproducer", True, True, figures)


def check_search(search: Callable[[str], Mapping[str, Any]], watch: Sequence[str]) -> Check:
    if not watch:
        return Check(
            "search",
            False,
            True,
            {"watched": []},
            "no risky op from the catalogue is left on the patched lines",
        )
    runs: dict[str, Any] = {}
    for op in watch:
        result = dict(search(op))
        runs[op] = result
        if result.get("triggered"):
            return Check(
                "search",
                True,
                False,
                {"watched": list(watch), "runs": runs},
                f"the search still triggers {op} on the patched code "
                f"({result.get('where', 'forward')}, after "
                f"{result.get('evaluations', '?')} evaluations)",
            )
    reached = [op for op, r in runs.items() if r.get("reached")]
    reason = "" if reached else "the patched code never reached the watched op"
    return Check("search", True, True, {"watched": list(watch), "runs": runs}, reason)


def check_equivalence(
    original: Callable[[Sequence[Any]], Any],
    patched: Callable[[Sequence[Any]], Any],
    inputs: Iterable[Sequence[Any]],
    kind: str,
    op: str,
    dtype: str = "float32",
    reference: Callable[[Sequence[Any]], Any] | None = None,
) -> Check:
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
        seed_all(count)  # dropout and other draws: the same in both runs
        before = float_arrays(original(copied(sample)))
        seed_all(count)
        after = float_arrays(patched(copied(sample)))
        if len(before) != len(after) or any(
            a.shape != b.shape for a, b in zip(before, after, strict=True)
        ):
            return Check(
                "equivalence",
                True,
                False,
                {"inputs": count},
                "the patched code returns outputs of another shape: "
                f"{[a.shape for a in before]} vs {[b.shape for b in after]}",
            )
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
                return Check(
                    "equivalence",
                    True,
                    False,
                    {"inputs": count},
                    "the patched code is non-finite where the original was finite",
                )
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
                worst = {"original": float(a_fin[i]), "patched": float(b_fin[i]), "input": count}
        if sample_abs is not None and len(series) < SERIES_CAP:
            series.append({"input": count, "max_abs": sample_abs, "max_rel": sample_rel})
    figures: dict[str, Any] = {
        "inputs": count,
        "compared": compared,
        "max_abs": max_abs,
        "max_rel": max_rel,
        "atol": atol,
        "rtol": rtol,
        "float64_reference": referenced,
        "per_input": series,
    }
    if count == 0 or compared == 0:
        return Check(
            "equivalence",
            False,
            False,
            figures,
            "no in-domain input where the original was finite to compare on",
        )
    if worst:
        figures["worst"] = worst
        return Check(
            "equivalence",
            True,
            False,
            figures,
            f"the patch changes in-domain values: max deviation {max_abs:.3g} "
            f"absolute, {max_rel:.3g} relative, above atol={atol:g} rtol={rtol:g} "
            f"(e.g. {worst['original']:.6g} -> {worst['patched']:.6g})",
        )
    return Check("equivalence", True, True, figures)


def _reference_arrays(
    reference: Callable[[Sequence[Any]], Any] | None,
    sample: Sequence[Any],
    seed: int,
    like: list[np.ndarray],
) -> list[np.ndarray] | None:
    """The float64 reference's outputs for `sample`, when it runs and matches in shape."""
    if reference is None:
        return None
    try:
        seed_all(seed)
        exact = float_arrays(reference(copied(sample)))
    except Exception:  # the code may not run in float64 (dtype-specific code)
        return None
    if len(exact) != len(like) or any(a.shape != b.shape for a, b in zip(exact, like, strict=True)):
        return None
    return exact


def check_gradients(
    gradients: Callable[[Sequence[Any]], Sequence[Any]],
    trigger: Sequence[Any] | None,
    normal: Iterable[Sequence[Any]],
    original: Callable[[Sequence[Any]], Sequence[Any]] | None = None,
) -> Check:
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
        grads = gradients(copied(sample))
        checked += 1
        bad = _first_non_finite(grads)
        if bad is None:
            continue
        if (
            label != "trigger"
            and original is not None
            and _first_non_finite(original(copied(sample))) is not None
        ):
            inherited += 1
            continue
        return Check(
            "gradients",
            True,
            False,
            {"inputs": checked},
            f"the gradient w.r.t. input {bad} is not finite on the {label}",
        )
    if checked == 0:
        return Check("gradients", False, False, {}, "no inputs to take gradients at")
    return Check(
        "gradients",
        True,
        True,
        {"inputs": checked, "inherited": inherited, "trigger": trigger is not None},
    )


def _first_non_finite(grads: Sequence[Any]) -> int | None:
    """The index of the first gradient with a NaN or inf in it, or None."""
    for index, grad in enumerate(grads):
        if grad is None:
            continue
        array = float_arrays(grad)
        if array and not all(np.isfinite(a).all() for a in array):
            return index
    return None


# ---------------------------------------------------------------------------------- driver


def validate(
    candidate: Candidate,
    hooks: Hooks,
    *,
    op: str,
    dtype: str = "float32",
    config: Config | None = None,
    required: Sequence[str] = CHECKS,
    checks_to_run: Sequence[str] = CHECKS,
) -> Validation:
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
            left = [
                entry.rsplit(":", 1)[-1]
                for entry in (static.figures.get("others_left", []) if static else [])
            ]
            extra = tuple(dict.fromkeys(o for o in left if o not in candidate.watch))
            if extra:
                candidate = replace(candidate, watch=candidate.watch + extra)
        began = time.perf_counter()
        check = _run_check(name, candidate, hooks, normal, op, dtype, config)
        check.seconds = time.perf_counter() - began
        checks.append(check)
        if not check.passed and (check.ran or name in required):
            rejected = f"{name}: {check.reason}"
    return Validation(
        candidate.kind,
        candidate.name,
        rejected is None,
        checks,
        rejected,
        time.perf_counter() - started,
    )


def _run_check(
    name: str,
    candidate: Candidate,
    hooks: Hooks,
    normal: list[Sequence[Any]],
    op: str,
    dtype: str,
    config: Config | None,
) -> Check:
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
            return check_equivalence(
                hooks.original, hooks.patched, normal, candidate.kind, op, dtype, hooks.reference
            )
        if name == "gradients":
            if hooks.gradients is None:
                return Check(name, False, False, {}, "no gradient callable supplied")
            return check_gradients(hooks.gradients, hooks.trigger, normal, hooks.original_gradients)
        if hooks.search is None:
            if not candidate.watch:
                return check_search(lambda op: {}, ())
            return Check(name, False, False, {}, "no search supplied")
        return check_search(hooks.search, candidate.watch)
    except Exception as exc:  # the patched PR code may raise anywhere
        return Check(
            name, True, False, {}, f"the patched code raised {type(exc).__name__}: {str(exc)[:300]}"
        )


def choose(
    candidates: Sequence[Candidate],
    hooks_for: Callable[[Candidate], Hooks],
    *,
    op: str,
    dtype: str = "float32",
    config: Config | None = None,
    required: Sequence[str] = CHECKS,
) -> tuple[Candidate | None, list[Validation]]:
    """The first candidate (in the order given: developers' preference) that passes every
    check, and the records of all candidates tried. None when none passes: the finding keeps
    its reproducer and says so. A candidate rejected because the original code is finite on
    none of the in-domain inputs (`nothing_to_compare`) ends the tries: that is a fact of the
    original, so every other candidate would be rejected the same way (on a training script,
    after seconds of whole-program runs each)."""
    records: list[Validation] = []
    for candidate in candidates:
        try:
            hooks = hooks_for(candidate)
        except Exception as exc:  # importing the patched copy can fail
            records.append(
                Validation(
                    candidate.kind,
                    candidate.name,
                    False,
                    [],
                    f"setup: the patched copy could not be loaded "
                    f"({type(exc).__name__}: {str(exc)[:300]})",
                )
            )
            continue
        record = validate(candidate, hooks, op=op, dtype=dtype, config=config, required=required)
        records.append(record)
        if record.accepted:
            return candidate, records
        if nothing_to_compare(record):
            break
    return None, records


def nothing_to_compare(record: Validation) -> bool:
    """Was `record` rejected because the original was finite on no in-domain input, so that
    the value comparison had nothing to look at whatever the candidate?"""
    check = record.check("equivalence")
    return (
        check is not None
        and not check.passed
        and (check.figures.get("inputs") == 0 or check.figures.get("compared") == 0)
    )


def fix_record(chosen: Candidate | None, records: Sequence[Validation]) -> dict[str, Any]:
    """The `fix` field of a Finding: the patch and its validation, or why there is none."""
    tried = [r.to_json() for r in records]
    if chosen is None:
        reason = "no candidate passed validation" if records else "no candidate"
        if records and nothing_to_compare(records[-1]):
            reason = (
                "the original code is finite on none of the in-domain inputs, so no "
                "candidate's values can be compared with it (the others were not tried)"
            )
        return {"status": "none-validated", "tried": tried, "reason": reason}
    accepted = records[-1]
    equivalence = accepted.check("equivalence")
    return {
        "status": "validated",
        "kind": chosen.kind,
        "name": chosen.name,
        "description": chosen.description,
        **chosen.patch.to_json(),
        "watch": list(chosen.watch),
        "validation": accepted.to_json(),
        "max_abs_deviation": equivalence.figures.get("max_abs") if equivalence else None,
        "max_rel_deviation": equivalence.figures.get("max_rel") if equivalence else None,
        "rejected": tried[:-1],
    }


# ---------------------------------------------------------------------------------- inputs


def in_domain(
    original: Callable[[Sequence[Any]], Any],
    samples: Iterable[Sequence[Any]],
    partial: bool = False,
) -> list[Sequence[Any]]:
    """The samples on which the original code's outputs are all finite (draws from the box
    that the op's own domain rejects are no basis for a value comparison). `partial` keeps
    those with some finite output too (the comparison only looks where the original was
    finite): acos on 32 draws from [-3, 3] is almost never finite everywhere."""
    kept: list[Sequence[Any]] = []
    for sample in samples:
        try:
            outputs = float_arrays(original(copied(sample)))
        except Exception:  # the PR's code may raise on any input
            continue
        if all(np.isfinite(a).all() for a in outputs) or (
            partial and outputs and any(np.isfinite(a).any() for a in outputs)
        ):
            kept.append(sample)
    return kept


def patched_lines(candidate: Candidate) -> frozenset[int]:
    """The 1-based lines of the patched file that hold the suggestion's new text."""
    patch = candidate.patch
    offset = 0 if patch.suggestion_complete else len(patch.imports)
    count = max(1, patch.replacement.count("\n"))
    start = patch.start_line + offset
    return frozenset(range(start, start + count))
