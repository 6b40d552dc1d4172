"""The harness: runs INSIDE the sandbox, imports the PR's code, confirms findings.

Two processes (runners/supervisor.py): the supervisor reads the job and its nonce and
starts this module again as `--worker`, the process that imports the PR's code, with the job
but not the nonce; it relays what the worker reports, stage by stage, with the nonce added.

Protocol: one JSON job on stdin; one JSON line per finding on stdout, flushed as each one
finishes (so a run killed for time or memory still returns the findings done before), then
a final `{"done": true}` line. A confirmed finding is followed, unless the job says
`"fix": false`, by a second line `{"fingerprint", "stage": "fix", "fix": {...}}`: the fix
stage (candidates validated on a scratch copy of the repository, under `fix_timeout`).
Nothing here may reach the network or see a secret: the runner starts this process with a
scrubbed environment.

    python -I -m runners.harness < job.json

Started isolated (no working directory on sys.path) from numcheck's own packages: the checkout
goes on sys.path only once the harness's own modules are imported (`_own_imports`), so a PR's
`runners/`, `analyzers/` (or `torch/`) never stands in for them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from runners.warm_python import WARM_HELPER, WarmPython

# Keras 3 runs on TensorFlow here
SUPPORTED_FRAMEWORKS = ("torch", "tensorflow", "keras", "jax", "numpy")
# What `confirm` runs on, imported before the checkout is on sys.path (they import torch).
OWN_IMPORTS = (
    "analyzers",
    "analyzers.dynamic.layout",
    "analyzers.dynamic.entries",
    "analyzers.dynamic.localise",
    "analyzers.dynamic.reproducer",
    "analyzers.dynamic.search",
)


# The declared dependencies' folder when the job has one: the reproducer's child Python gets it
# too (`_use_dependencies`).
DEPENDENCY_PATHS: list[str] = []
# Where reproducers run, one script at a time: forked from an interpreter that imported torch.
REPRODUCERS = WarmPython()
REPRODUCER_TIMEOUT = 60.0
_RECORDS: Any = None  # a private duplicate of the original stdout (see _own_stdout)


def _own_stdout() -> None:
    """Keep stdout for our records: the PR's code prints go to stderr from here on, so a
    `print(..., end="")` cannot glue itself onto a record."""
    global _RECORDS
    _RECORDS = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def _emit(record: dict[str, Any]) -> None:
    out = _RECORDS or sys.stdout
    out.write(json.dumps(record) + "\n")
    out.flush()


# The harvest's own limit ends pytest from inside (analyzers/dynamic/harvest.py); the
# supervisor's kill comes this much later.
HARVEST_SLACK = 10.0


class FindingTimeout(BaseException):
    """A BaseException, like KeyboardInterrupt, so `except Exception` in the PR's code (or
    in the search) cannot swallow it."""


class Deadline:
    """Whether a stage's deadline struck. The exception it raises can be swallowed or turned
    into another on its way out. libcst's metadata resolution, interrupted, leaves a table
    half filled and a KeyError follows, which the fix stage reads as "the node is not there":
    the stage then ends with a wrong verdict ("no candidate applies") instead of a timeout.
    The flag cannot be lost, so the stage's result is judged by it as well."""

    def __init__(self) -> None:
        self.struck = False


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[Deadline]:
    """A hard stop for one finding, even when the PR's code loops forever in Python."""
    deadline = Deadline()

    def expire(signum: int, frame: object) -> None:
        deadline.struck = True
        raise FindingTimeout(f"the code did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)  # and again every second if swallowed
    try:
        yield deadline
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_reproducer(repo: Path, source: str) -> tuple[int | None, str]:
    """Run the script once in `repo`: (exit status, None on timeout; stderr's tail). In a
    child of the warm interpreter (runners/warm_python.py), which has imported torch already."""
    from analyzers.dynamic.layout import search_path

    with tempfile.NamedTemporaryFile(
        "w", suffix="_numcheck_repro.py", dir=repo, delete=False
    ) as handle:
        handle.write(source)
        script = Path(handle.name)
    try:
        path = os.pathsep.join([*search_path(repo), *DEPENDENCY_PATHS])
        returncode, stderr = REPRODUCERS.run(script, repo, path, REPRODUCER_TIMEOUT)
    finally:
        script.unlink(missing_ok=True)
    if returncode is None:
        return None, f"the reproducer did not finish within {REPRODUCER_TIMEOUT:.0f} s"
    return returncode, stderr


def _check_reproducer(repo: Path, source: str) -> tuple[bool, str]:
    """Run the script once: it must fail (AssertionError) on the PR head."""
    returncode, stderr = _run_reproducer(repo, source)
    failed = returncode not in (None, 0) and "AssertionError" in stderr
    return failed, stderr


def _reproducer_that_loads(
    repo: Path, entry: Any, inputs: list[Any], target: Any, seed: int
) -> tuple[dict[str, Any], str, bool, str, Any]:
    """(plan, its script, whether it fails as it must, its stderr, the entry as the script
    loads it: the fix stage loads its patched copies the same way). A module the search
    found already imported (the tests' run loaded it) may not import in a fresh process:
    when the script dies before its assertion, it is written again loading the module the
    other ways the search knows (loading.py), the first that fails on its assertion kept.
    The same when the search itself loaded it without its packages' `__init__` files: a
    package the tests left half-imported there (gpytorch's `from .. import libfft` of a
    compiled module) is half-imported in no fresh process, and extraction is tried next.
    First, though, a script that dies importing a module numcheck may stand in for (one the
    half-imported package never asked for again) is written again with a stand-in for it,
    as the search's own loading would have stood in for it (standins.missing_in_traceback)."""
    from analyzers.dynamic.loading import package_base
    from analyzers.dynamic.standins import MAX_STAND_INS, missing_in_traceback

    plan, script = _written(entry, inputs, target, seed)
    fails, stderr = _check_reproducer(repo, script)
    # what the fresh process misses, stood in for as the search's loading would have
    for _ in range(MAX_STAND_INS if hasattr(entry, "stand_ins") else 0):
        missing = (
            None
            if fails or "AssertionError" in stderr
            else missing_in_traceback(stderr, package_base(repo, entry.target.split(":")[0]))
        )
        if missing is None or missing in getattr(entry, "stand_ins", ()):
            break
        entry = dataclasses.replace(entry, stand_ins=tuple(sorted({*entry.stand_ins, missing})))
        plan, script = _written(entry, inputs, target, seed)
        fails, stderr = _check_reproducer(repo, script)
    loading = getattr(entry, "loading", "import")
    if fails or loading == "extracted" or "AssertionError" in stderr:
        return plan, script, fails, stderr, entry
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    why = entry.loading_why if loading != "import" else lines[-1][:200] if lines else "it fails"
    for how in ("package-stubs", "extracted")[1 if loading == "package-stubs" else 0 :]:
        loaded = dataclasses.replace(entry, loading=how, loading_why=why)
        again_plan, again = _written(loaded, inputs, target, seed)
        again_fails, again_stderr = _check_reproducer(repo, again)
        if again_fails:
            return again_plan, again, True, again_stderr, loaded
    return plan, script, fails, stderr, entry


def _recorded_function(repo: Path, key: str) -> Any:
    """The function the harvest recorded calls of (`key` "module:qualname"), unwrapped."""
    from analyzers.dynamic.entries import import_module, resolve_attr

    module_name, _, qualname = key.partition(":")
    fn = resolve_attr(import_module(repo, module_name), qualname)
    return getattr(fn, "__wrapped__", fn)


def _harvested_entry(repo: Path, key: str, call: Any) -> Any:
    from analyzers.dynamic.entries import EntryError
    from analyzers.dynamic.harvest import entry_from_call

    fn = _recorded_function(repo, key)
    try:
        return entry_from_call(key, call, fn)
    except ValueError as exc:
        raise EntryError(f"recorded call of {key} cannot be replayed: {exc}") from exc


def _refitted(
    entry: Any, outcome: Any, path: str, lines: frozenset[int], op: str, seed: int
) -> Any:
    """A synthesised call that never reached the op because of its shapes, with some inputs
    in the shapes the code's own error named (shape_repair.py); None when that is not the
    case or no such call gets further."""
    from analyzers.dynamic.evaluation import Evaluation
    from analyzers.dynamic.shape_repair import is_shape_error, one_call, repaired

    if outcome.reached or entry.source != "synthesised" or not is_shape_error(outcome.error):
        return None
    failure = Evaluation(error=outcome.error, error_lines=outcome.error_lines)
    return repaired(entry, failure, one_call(path, lines, op, seed))


def _at_smaller_sizes(
    searched: tuple[Any, Any, Any],
    path: str,
    lines: frozenset[int],
    op: str,
    seed: int,
    budget: Any,
) -> tuple[Any, Any, Any]:
    """The first search of the synthesised call at smaller sizes that proves the op, when
    the values never moved its operand (sizes.py); else the search as it was."""
    from analyzers.dynamic.sizes import share, smaller_calls
    from analyzers.dynamic.stages import staged_search

    entry, _, searcher = searched
    for smaller in smaller_calls(entry, searcher):
        tried = staged_search(
            smaller, path, lines, op, seed, share(budget), shows_in_entry(smaller)
        )
        if tried[1].triggered:
            return tried
    return searched


def _script_entry(
    repo: Path, table: dict[str, Any], finding: dict[str, Any], lines: frozenset[int], seed: int
) -> Any:
    """Script mode: the configured script, recorded up to the finding's op."""
    from analyzers.dynamic.script import ScriptConfig, build_script_entry

    return build_script_entry(
        repo,
        ScriptConfig.from_json(table),
        finding["path"],
        lines,
        finding["op"],
        seed,
        finding.get("framework", "torch"),
    )


def _minimise(entry: Any, inputs: list[Any], still_fails: Any) -> list[Any]:
    """Script entries shrink toward what the seeded script draws and loads, configured
    weights toward the module's initialised values; others toward plain values."""
    from analyzers.dynamic.minimise import minimise
    from analyzers.dynamic.script import ScriptEntry, minimise_script
    from analyzers.dynamic.weights import minimise_weights

    if isinstance(entry, ScriptEntry):
        return minimise_script(entry, inputs, still_fails)
    if entry.weights:  # configured weight ranges: back toward the module's own values
        return minimise_weights(entry, inputs, still_fails)
    return minimise(inputs, entry.specs, still_fails)


def shows_in_entry(entry: Any) -> bool:
    """Does the reproducer check the entry's output and the gradient reaching its inputs
    (every entry but a script run, whose reproducer checks the op itself)? Then the search
    and the minimiser require a trigger that shows there (`Searcher.accepts`)."""
    from analyzers.dynamic.script import ScriptEntry

    return not isinstance(entry, ScriptEntry)


def minimised_trigger(entry: Any, searcher: Any, outcome: Any) -> tuple[list[Any], str]:
    """The search's trigger minimised with the predicate the reproducer checks
    (`Searcher.still_fails`: the op still fails the same way, and the failure still shows in
    the entry's output or in the gradient reaching its inputs), and where it shows there
    ("output", "gradient"; "" where the script checks the op itself: script mode)."""
    where = outcome.where or "forward"
    small = _minimise(entry, outcome.inputs, lambda trial: searcher.still_fails(trial, where))
    shows = searcher.evaluate(small).visible if searcher.require_visible else None
    return small, shows or ""


def _written(entry: Any, inputs: list[Any], target: Any, seed: int) -> tuple[dict[str, Any], str]:
    """The reproducer's plan, as the host will read it (through JSON), and the text
    `writer.write` makes of it: the very text the host writes again from the record."""
    from analyzers.dynamic.entry import tf_keras_chosen
    from analyzers.dynamic.reproducer import plan
    from analyzers.dynamic.script import ScriptEntry, script_plan
    from analyzers.dynamic.writer import written

    made = (
        script_plan(entry, inputs, target, seed)
        if isinstance(entry, ScriptEntry)
        else plan(entry, inputs, target, seed)
    )
    if tf_keras_chosen() and made.get("framework") == "tensorflow":
        made["keras"] = "2"  # the reader's run must import TensorFlow the way this one did
    return written(made, target)


def confirm(
    job: dict[str, Any],
    finding: dict[str, Any],
    harvested: Any = None,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One finding through entry building, search, minimisation and the reproducer.
    A confirmed finding leaves in `context` what the fix stage needs: its entry, the
    minimised trigger and the reproducer script; one float32 found nothing for, what the
    precision pass resumes (`pending`, `confirm_low_precision`)."""
    from analyzers.dynamic.entries import (
        SHAPE_GUESSES,
        EntryConfig,
        EntryError,
        build_configured,
        module_name_for,
        resolve_device,
        shape_from_message,
        shapes_from_mismatch,
        synthesise,
    )
    from analyzers.dynamic.loading import is_program
    from analyzers.dynamic.search import Budget
    from analyzers.dynamic.stages import staged_search

    repo = Path(job["repo"])
    seed = int(job.get("seed", 0))
    base = {"fingerprint": finding["fingerprint"]}
    if finding["framework"] not in SUPPORTED_FRAMEWORKS:
        return {
            **base,
            "status": "potential",
            "error": f"dynamic confirmation of {finding['framework']} code is not "
            "supported yet; the finding stays a static one",
        }
    try:
        device = resolve_device(str(job.get("device", "auto")))
    except EntryError as exc:
        return {**base, "status": "error", "error": str(exc)}
    path, lines = _op_site(repo, finding)
    module = module_name_for(repo, finding["path"])
    configured = [t for t in job.get("entries", []) if t["target"].split(":", 1)[0] == module]
    key = f"{module}:{finding['function']}"  # as the harvest records calls

    def candidates() -> Iterator[Any]:
        """Configured entries of the finding's module, then calls recorded while the
        repository's tests ran, then a synthesised call, then the configured script run
        with its external values substituted."""
        for table in configured:
            yield lambda table=table: build_configured(
                repo,
                EntryConfig(
                    table["target"],
                    tuple(table["inputs"]),
                    dict(table.get("init", {})),
                    table.get("dtype"),
                    table.get("autocast"),
                    table.get("weights"),
                ),
                seed,
                device,
            )
        for call in harvested.calls.get(key, []) if harvested else []:
            yield lambda call=call: _harvested_entry(repo, key, call)
        operand = str(finding.get("operand", ""))
        yield lambda: synthesise(
            repo,
            finding["path"],
            finding["function"],
            seed,
            device,
            operand=operand,
            line=finding["line"],
        )
        # when the default shape never reaches the op: the shape the code's own error asks
        # for, the feature sizes a shape error names, then common shapes
        asked = shape_from_message(problems[-1]) if problems else None
        sized = shapes_from_mismatch(last_error)
        for shape in ([asked] if asked else []) + sized + list(SHAPE_GUESSES):
            yield lambda shape=shape: synthesise(
                repo,
                finding["path"],
                finding["function"],
                seed,
                device,
                shape,
                operand=operand,
                line=finding["line"],
            )
        if job.get("script"):
            yield lambda: _script_entry(repo, job["script"], finding, lines, seed)
        elif is_program(repo / finding["path"]):  # a script nobody configured: run it as one
            yield lambda: _script_entry(repo, {"command": [finding["path"]]}, finding, lines, seed)

    budget = Budget(seconds=float(job.get("search_seconds", 5.0)))
    last = None
    # a recorded call that reached the op without failing it: the tests' own values hold no
    # trigger, yet a synthesised call may (a loss's exponent the tests fixed at 2, documented
    # down to 0.5); that call goes next, and this outcome stands when it proves nothing
    recorded = None
    problems: list[str] = []
    last_error = ""  # the last candidate's own error, without what numcheck adds
    for build in candidates():
        try:
            entry = build()
        except EntryError as exc:
            problems.append(str(exc))
            last_error = ""
            continue
        except Exception as exc:  # constructing the PR's objects can fail in any way
            problems.append(f"building the entry failed: {type(exc).__name__}: {exc}")
            last_error = ""
            continue
        if recorded is not None and entry.source == "harvested":
            continue  # one recorded call searched is enough to say the tests' values hold
        _numpy_where_flagged(finding, entry)
        entry, outcome, searcher = staged_search(
            entry, path, lines, finding["op"], seed, budget, shows_in_entry(entry)
        )
        fitted = _refitted(entry, outcome, path, lines, finding["op"], seed)
        if fitted is not None:  # some inputs in the shapes the code's error named
            entry, outcome, searcher = staged_search(
                fitted, path, lines, finding["op"], seed, budget, shows_in_entry(fitted)
            )
        if outcome.reached and not outcome.triggered:  # a divisor made of sizes
            entry, outcome, searcher = _at_smaller_sizes(
                (entry, outcome, searcher), path, lines, finding["op"], seed, budget
            )
        last = (entry, outcome, searcher)
        if outcome.reached and not outcome.triggered and entry.source == "harvested":
            recorded = last  # the first: later recorded calls are skipped above
            continue
        if outcome.reached:
            break
        last_error = outcome.error or ""
        problem = outcome.error or f"{entry.target} never reached line {finding['line']}"
        loading = getattr(entry, "loading", "import")
        stood = ", ".join(getattr(entry, "stand_ins", ()))
        if loading != "import" or stood:  # say why it was not simply imported
            how = ("imported" if loading == "import" else loading) + (
                f" with stand-ins for {stood}" if stood else ""
            )
            why = f": {entry.loading_why}" if entry.loading_why else ""
            problem += f" (the module was {how}{why})"
        problems.append(problem)
    if recorded is not None and not (last is not None and last[1].triggered):
        last = recorded  # nothing after it proved the op: the recorded call's search stands
    if not (last is not None and last[1].triggered) and empty_may_fail(finding):
        empty = _emptied_calls(repo, key, finding, harvested, path, lines, seed) or _empty_trial(
            repo, finding, seed, device, path, lines, budget
        )
        last = empty or last
    if last is None or not last[1].reached:
        return {
            **base,
            "status": "error",
            "error": "no entry reaches the op: " + "; ".join(dict.fromkeys(problems)),
        }
    entry, outcome, searcher = last
    if not outcome.triggered and context is not None:
        low = _low_precisions(job, repo, entry)
        if low:  # the precision pass resumes the search in these
            context["pending"] = (entry, outcome, searcher, low)
    record = conclude(job, finding, entry, outcome, searcher, context)
    if entry.source == "synthesised" and isinstance(record.get("box"), dict):
        # a made-up call: the comment says whether the tests had one to offer
        record["box"]["tests"] = harvested.tests_said(key) if harvested else "not-run"
    if (
        recorded is not None
        and last is not recorded
        and isinstance(record.get("box"), dict)
        and _beyond_recorded(entry, outcome, searcher, recorded[0])
    ):
        # the proof is on a made-up call, after the tests' own values held: the comment says so
        record["box"]["recorded_held"] = {
            "target": recorded[0].target,
            "inputs": recorded[0].describe_box(),
            "evaluations": recorded[1].evaluations,
        }
    return record


def _numpy_where_flagged(finding: dict[str, Any], entry: Any) -> None:
    """A NumPy op's entry runs as NumPy: diffusers' scheduler imports torch, but
    `np.log(sigma)` takes an array, so the inputs cross into NumPy (numpy_backend.py)."""
    if finding["framework"] == "numpy" and entry.framework == "torch" and entry.source != "script":
        entry.framework, entry.device = "numpy", "cpu"


def empty_may_fail(finding: dict[str, Any]) -> bool:
    """Does the static pass say the operand is 0 when a loop does not run (static/zeros.py
    ACCUMULATOR: `reference_length` of an empty corpus)? Then an empty batch is the input
    that makes it so, and it is tried."""
    from analyzers.static.zeros import ACCUMULATOR

    return ACCUMULATOR in str(finding.get("why", ""))


EMPTIED_CALLS = 3  # recorded calls whose sequences are emptied, one argument at a time


def _emptied_calls(
    repo: Path,
    key: str,
    finding: dict[str, Any],
    harvested: Any,
    path: str,
    lines: frozenset[int],
    seed: int,
) -> tuple[Any, Any, Any] | None:
    """The tests' recorded calls of the function with one sequence argument emptied
    (analyzers/dynamic/emptied.py), each run once: the first that fails the op, as entry,
    outcome and searcher, else None. These keep every other value the tests chose, so they
    go before the made-up empty batch."""
    from analyzers.dynamic.emptied import emptied_entries
    from analyzers.dynamic.search import Outcome, Searcher

    calls = harvested.calls.get(key, [])[:EMPTIED_CALLS] if harvested else []
    if not calls:
        return None
    try:
        fn = _recorded_function(repo, key)
    except Exception:  # the recorded calls' own candidates already said why
        return None
    framework = "tensorflow" if finding["framework"] == "keras" else finding["framework"]
    for call in calls:
        for entry in emptied_entries(key, call, fn, framework):
            searcher = Searcher(
                entry, path, lines, finding["op"], seed=seed, require_visible=shows_in_entry(entry)
            )
            started = time.perf_counter()
            evaluation = searcher.evaluate([])
            if searcher.accepts(evaluation):
                outcome = Outcome(
                    True,
                    "forward" if evaluation.forward else "backward",
                    "emptied",
                    [],
                    searcher.count,
                    time.perf_counter() - started,
                    True,
                    evaluation.reaches_output,
                    evaluation.loss,
                )
                return entry, outcome, searcher
    return None


def _empty_trial(
    repo: Path,
    finding: dict[str, Any],
    seed: int,
    device: str,
    path: str,
    lines: frozenset[int],
    budget: Any,
) -> tuple[Any, Any, Any] | None:
    """A synthesised call with an empty batch (EMPTY_SHAPE: no rows, so a loop over the
    inputs does not run), searched like the others; its entry, outcome and searcher when it
    triggers the op, else None. The finding's box states the shape, so the reader sees that
    the proof is an empty input."""
    from analyzers.dynamic.entries import EMPTY_SHAPE, synthesise
    from analyzers.dynamic.stages import staged_search

    try:
        entry = synthesise(
            repo,
            finding["path"],
            finding["function"],
            seed,
            device,
            EMPTY_SHAPE,
            operand=str(finding.get("operand", "")),
            line=finding["line"],
        )
    except Exception:  # the main candidates already said why the module does not load
        return None
    _numpy_where_flagged(finding, entry)
    entry, outcome, searcher = staged_search(
        entry, path, lines, finding["op"], seed, budget, shows_in_entry(entry)
    )
    return (entry, outcome, searcher) if outcome.triggered else None


def _beyond_recorded(made_up: Any, outcome: Any, searcher: Any, recorded: Any) -> bool:
    """Does the made-up call's failure need an input the tests pass outside the box their
    recorded values were searched in (matched by parameter name)? The trigger is pulled
    into that box and tried again: when it still fails, what failed is a value the tests
    fixed and the made-up call varied (a focal loss's exponent of 2, documented down to
    0.5), on data the tests' own box holds. When no input can be matched, it cannot be
    told, and the proof counts as beyond."""
    boxes = dict(zip(recorded.param_names, recorded.specs, strict=False))
    names = list(made_up.param_names)[: len(outcome.inputs)]  # the searched inputs come first
    if len(names) != len(outcome.inputs) or not set(names) & set(boxes):
        return True
    inside = [
        x.detach().clamp(boxes[name].lo, boxes[name].hi) if name in boxes else x
        for name, x in zip(names, outcome.inputs, strict=True)
    ]
    try:
        return not searcher.still_fails(inside, outcome.where or "forward")
    except Exception:  # the PR's code, on new values: any failure is no proof inside
        return True


def _op_site(repo: Path, finding: dict[str, Any]) -> tuple[str, frozenset[int]]:
    """The flagged op's file in the checkout and its lines, as the searchers match them."""
    return str(repo / finding["path"]), frozenset(range(finding["line"], finding["end_line"] + 1))


def _low_precisions(job: dict[str, Any], repo: Path, entry: Any) -> list[str]:
    """The low precisions to search an entry in after float32 found nothing, the checkout's
    declared ones first: none when the job turned them off (`low_precision = false`) or the
    entry has no mixed-precision twin."""
    from analyzers.dynamic.precision import declared_precisions, precisions_to_try

    if not job.get("low_precision", True) or not entry.has_mixed_precision():
        return []
    return precisions_to_try(declared_precisions(repo))


def confirm_low_precision(
    job: dict[str, Any], finding: dict[str, Any], context: dict[str, Any]
) -> dict[str, Any]:
    """The precision pass of a finding float32 found nothing for (`context["pending"]`): its
    entry searched again in low precision (analyzers/dynamic/precision.py), then concluded
    as `confirm` does. Its record (stage "precision") replaces the float32 one on the host."""
    from analyzers.dynamic.precision import low_precision_search
    from analyzers.dynamic.search import Budget

    entry, outcome, searcher, precisions = context.pop("pending")
    repo = Path(job["repo"])
    low = low_precision_search(
        entry,
        *_op_site(repo, finding),
        finding["op"],
        int(job.get("seed", 0)),
        Budget(seconds=float(job.get("search_seconds", 5.0))),
        shows_in_entry(entry),
        precisions,
    )
    if low.found is not None:  # the finding counts the float32 runs too
        entry, low_outcome, searcher = low.found
        low_outcome.evaluations += outcome.evaluations
        low_outcome.seconds += outcome.seconds
        outcome = low_outcome
    else:
        outcome.evaluations += low.evaluations
        outcome.seconds += low.seconds
    record = conclude(job, finding, entry, outcome, searcher, context, low.searched)
    return {**record, "stage": "precision"}


def conclude(
    job: dict[str, Any],
    finding: dict[str, Any],
    entry: Any,
    outcome: Any,
    searcher: Any,
    context: dict[str, Any] | None,
    searched: list[str] | None = None,
) -> dict[str, Any]:
    """A search's result as the finding's record: not-triggered with its box and budget
    (and the low precisions `searched` too), or the trigger minimised, localised, checked
    against float32 where it was found in low precision, and proven by a reproducer."""
    from analyzers.dynamic.localise import localise
    from analyzers.dynamic.precision import mark_precision
    from analyzers.dynamic.reproducer import no_reproducer_reason
    from analyzers.dynamic.writer import PlanError, Target

    repo = Path(job["repo"])
    seed = int(job.get("seed", 0))
    base = {"fingerprint": finding["fingerprint"]}
    path, lines = _op_site(repo, finding)
    box: dict[str, Any] = {
        "source": entry.source,
        "target": entry.target,
        "inputs": entry.describe_box(),
    }
    chosen = {
        name: value
        for name, value in getattr(entry, "passed", {}).items()
        if isinstance(value, bool | int | float)
    }
    if chosen:  # values numcheck gave parameters (a fractional exponent, an epsilon): stated
        box["chosen"] = chosen
    if getattr(entry, "emptied", ""):  # a recorded call with an argument emptied: which
        box["emptied"] = {"parameter": entry.emptied, "how": entry.how}
    if not outcome.triggered:
        return {
            **base,
            "status": "not-triggered",
            "box": box,
            "trigger": {
                "seconds": round(outcome.seconds, 4),
                "evaluations": outcome.evaluations,
                "seed": seed,
                "best_loss": outcome.best_loss,
                "device": entry.device,
                "low_precision": searched or [],
                "search_trace": outcome.search_trace,
            },
        }

    small, shows = minimised_trigger(entry, searcher, outcome)
    first = localise(entry, small, str(repo), where=outcome.where or "forward")
    target = Target(
        finding["path"],
        finding["line"],
        finding["op"],
        finding["call"],
        outcome.where or "forward",
        shows,
    )
    trigger = {
        "where": outcome.where,
        "stage": outcome.stage,
        "op": finding["op"],
        "reaches_output": outcome.reaches_output,
        "shows": shows or None,
        "seconds": round(outcome.seconds, 4),
        "evaluations": outcome.evaluations,
        "device": entry.device,
        "seed": seed,
        "inputs": [_summary(x) for x in small],
        "trace": outcome.trace[-50:],
        "first_nonfinite": first,
        "search_trace": outcome.search_trace,  # the report page's plot of the search
    }
    if entry.source == "script":  # the training steps the trigger needs (1: the first)
        trigger["steps"] = searcher.failing_call(small)
    precision = mark_precision(entry, path, lines, finding["op"], small)
    if precision is not None:  # found in float16/bfloat16: what float32 makes of it
        trigger["precision"] = precision
        if context is not None:  # the fix stage makes its candidates for that precision
            context["precision"] = precision
    unscriptable = no_reproducer_reason(entry)
    if unscriptable is not None:  # proof needs a script anyone can run: not confirmed
        return {
            **base,
            "status": "potential",
            "box": box,
            "trigger": trigger,
            "error": "the search triggered it on the module the tests built, but no "
            f"standalone reproducer can rebuild that module: {unscriptable}",
        }
    try:
        plan, script, fails, stderr, entry = _reproducer_that_loads(
            repo, entry, small, target, seed
        )
    except PlanError as exc:  # a name no script can write (a nested function's `<locals>`)
        return {
            **base,
            "status": "potential",
            "box": box,
            "trigger": trigger,
            "error": f"the search triggered it, but no standalone reproducer can be written: {exc}",
        }
    except ValueError as exc:  # a constant the call needs that a script cannot spell
        return {
            **base,
            "status": "potential",
            "box": box,
            "trigger": trigger,
            "error": "the search triggered it, but no standalone reproducer can pass "
            f"the call's constants: one is {exc}, which a script cannot spell",
        }
    if not fails:
        return {
            **base,
            "status": "not-triggered",
            "box": box,
            "trigger": trigger,
            "error": "the search found a trigger but its reproducer did not fail; not "
            f"reported as confirmed ({stderr.strip()[-300:]})",
        }
    if context is not None:
        context.update(entry=entry, inputs=small, reproducer=script)
    # the plan, not the text: the host writes the reproducer again from it (runners/trusted.py)
    return {**base, "status": "confirmed", "box": box, "trigger": trigger, "reproducer_plan": plan}


# ---------------------------------------------------------------------------- the fix stage

NORMAL_SAMPLES = 16  # in-domain inputs for the value comparison (half ordinary, half uniform)
# ... for a script entry, each of whose inputs is a run of the whole program (its training
# steps up to the op), compared and differentiated once per candidate: 16 of them took 16 s
# of a 20 s fix stage on a 40-line tutorial script, over half of that program's review
SCRIPT_NORMAL_SAMPLES = 6
SCRATCH_IGNORE = (".git", "__pycache__", "*.pyc", "*_numcheck_repro.py")


def scratch_copy(repo: Path, into: Path) -> Path:
    """A private copy of the checkout for the patched candidates: the checkout itself is
    never written. Symbolic links are copied as links."""
    shutil.copytree(repo, into, symlinks=True, ignore=shutil.ignore_patterns(*SCRATCH_IGNORE))
    return into


def normal_inputs(entry: Any, seed: int, count: int = NORMAL_SAMPLES) -> list[Any]:
    """In-domain inputs for the value comparison: the recorded (harvested) values where there
    are some, inputs like a training run feeds (standard normal clipped to the box) and
    uniform draws from the box; only those on which the original code is finite somewhere
    (the comparison looks only where it is)."""
    import torch

    from analyzers.dynamic.tensors import TORCH_DTYPES, sample
    from analyzers.dynamic.weights import natural_values
    from analyzers.fix.entry_hooks import run_entry, sample_inputs
    from analyzers.fix.validate import in_domain

    samples: list[list[Any]] = []
    if entry.start is not None:
        samples.append(list(entry.start))
    generator = torch.Generator().manual_seed(seed + 101)
    natural = natural_values(entry)  # configured weights: the module's own values
    for _ in range(count // 2):
        draw: list[Any] = []
        for spec, value in zip(entry.specs, natural, strict=True):
            if value is not None or not spec.is_float:
                draw.append(sample(spec, generator) if value is None else value.clone())
                continue
            values = torch.randn(spec.shape, generator=generator, dtype=torch.float64)
            draw.append(values.clamp(spec.lo, spec.hi).to(TORCH_DTYPES[spec.dtype]))
        samples.append(draw)
    samples += sample_inputs(entry, count - count // 2, seed=seed + 100)
    kept = in_domain(lambda x: run_entry(entry, x), samples, partial=True)
    if len(kept) < 2:  # the whole box is mostly outside the op's domain (x ** p with x < 0
        # anywhere in a pooled window): the magnitudes of those draws, inside the box
        def positive(x: Any, spec: Any) -> Any:
            if not spec.is_float or spec.hi <= 0:
                return x
            return x.abs().clamp(max(spec.lo, 0.0), spec.hi)

        magnitudes = [
            [positive(x, spec) for x, spec in zip(s, entry.specs, strict=True)] for s in samples
        ]
        kept += in_domain(lambda x: run_entry(entry, x), magnitudes, partial=True)
    return kept


def fix_finding(
    repo: Path,
    finding: dict[str, Any],
    entry: Any,
    trigger: list[Any],
    reproducer: str,
    *,
    seed: int = 0,
    search_seconds: float = 5.0,
    dtype: str | None = None,
) -> dict[str, Any]:
    """The fix stage for one confirmed finding: candidates from the op catalogue, each
    validated on a scratch copy of `repo` (the reproducer run there as a script of its own,
    forked from the warm interpreter; the search re-run with its budget, the static re-scan,
    value equivalence and gradients in this process), and `Finding.fix` for the first that
    passes (or every rejection)."""
    from analyzers.dynamic.entries import module_name_for
    from analyzers.dynamic.script import ScriptEntry
    from analyzers.dynamic.search import Budget
    from analyzers.fix import FixRequest, candidates
    from analyzers.fix.entry_hooks import entry_hooks
    from analyzers.fix.validate import Hooks, choose, fix_record

    path = finding["path"]
    source = (repo / path).read_text(encoding="utf-8")
    cands = candidates(source, FixRequest.from_finding(finding))
    if not cands:
        return {
            "status": "none-validated",
            "tried": [],
            "reason": f"no candidate fix from the op catalogue applies to "
            f"`{finding.get('call', '')}`",
        }
    script = isinstance(entry, ScriptEntry)
    budget = Budget(seconds=search_seconds)
    run_dtype = dtype or entry.dtype
    with tempfile.TemporaryDirectory(prefix="numcheck-fix-") as tmp:
        work = Path(tmp)
        scratch = scratch_copy(repo, work / "repo")
        target = scratch / path
        began = time.perf_counter()
        normal = normal_inputs(entry, seed, SCRIPT_NORMAL_SAMPLES if script else NORMAL_SAMPLES)
        normal_seconds = time.perf_counter() - began
        count = iter(range(len(cands)))

        def hooks_for(candidate: Any) -> Hooks:
            directory = work / f"candidate{next(count)}"
            directory.mkdir()

            copy = None
            if script:  # the script runs in a patched copy of its own (ScriptEntry.on_copy)
                copy = scratch_copy(repo, directory / "repo")
                (copy / path).write_text(candidate.source, encoding="utf-8")

            def run_reproducer(file: Path) -> tuple[bool, str]:
                target.unlink(missing_ok=True)
                target.write_text(candidate.source, encoding="utf-8")
                try:
                    returncode, stderr = _run_reproducer(scratch, reproducer)
                finally:
                    target.write_text(source, encoding="utf-8")
                return returncode != 0, stderr  # a timeout's stderr says so already

            return entry_hooks(
                candidate,
                entry,
                path=path,
                module_name=module_name_for(repo, path),
                trigger=trigger,
                normal_inputs=normal,
                directory=directory,
                budget=budget,
                seed=seed,
                dtype=run_dtype,
                reproducer=run_reproducer,
                original_source=source,
                on_copy=copy,
            )

        chosen, records = choose(cands, hooks_for, op=finding["op"], dtype=run_dtype)
        record = fix_record(chosen, records)
    record["normal_inputs"] = len(normal)
    record["normal_inputs_seconds"] = round(normal_seconds, 4)
    return record


def _guarded(
    base: dict[str, Any],
    seconds: float,
    run: Callable[[], dict[str, Any]],
    *,
    exited: str = "",
) -> dict[str, Any]:
    """`run()` under a deadline of `seconds`, timed. Whatever goes wrong becomes `base` with
    status error and the reason: the deadline, memory, the PR's `exit()` or a crash ends this
    stage of this finding, never the harness or the findings after it."""
    started = time.perf_counter()
    failed = {**base, "status": "error"}
    timed_out = f"timeout: the code did not finish within {seconds:g} s"
    try:
        with _deadline(seconds) as deadline:
            record = run()
        if deadline.struck and record.get("status") != "confirmed":
            # a proof is a concrete input that failed, whatever happened after; anything
            # else was cut short, and its verdict is not one
            record = {**failed, "error": timed_out}
    except FindingTimeout as exc:
        record = {**failed, "error": f"timeout: {exc}"}
    except MemoryError:
        record = {**failed, "error": "out-of-memory while running the code"}
    except SystemExit as exc:
        record = {**failed, "error": f"the code exited with status {exc.code!r}{exited}"}
    except Exception as exc:
        # the deadline may strike inside an import or a class body, which wrap it
        record = {
            **failed,
            "error": timed_out
            if _caused_by(exc, FindingTimeout)
            else f"crashed: {type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=5)[-2000:],
        }
    record["elapsed"] = round(time.perf_counter() - started, 4)
    return record


def _fix_stage(
    job: dict[str, Any], finding: dict[str, Any], context: dict[str, Any]
) -> dict[str, Any]:
    """`fix_finding` under its own deadline (`fix_timeout`); whatever goes wrong becomes a
    fix record with status error and the reason, never a lost confirmation."""
    started = time.perf_counter()
    seconds = float(job.get("fix_timeout", 60.0))
    try:
        with _deadline(seconds) as deadline:
            fix = fix_finding(
                Path(job["repo"]),
                finding,
                context["entry"],
                context["inputs"],
                context["reproducer"],
                seed=int(job.get("seed", 0)),
                search_seconds=float(job.get("search_seconds", 5.0)),
            )
        if deadline.struck:  # a verdict reached after the deadline was swallowed is not one
            fix = _fix_timeout(seconds)
    except FindingTimeout:
        fix = _fix_timeout(seconds)
    except MemoryError:
        fix = {"status": "error", "reason": "out-of-memory while validating the fixes"}
    except SystemExit as exc:  # the PR's `exit()` ends the fix stage, not the harness
        fix = {"status": "error", "reason": f"the code exited with status {exc.code!r}"}
    except Exception as exc:
        # the deadline may strike inside an import or a class body, which wrap it
        fix = (
            _fix_timeout(seconds)
            if _caused_by(exc, FindingTimeout)
            else {
                "status": "error",
                "reason": f"crashed: {type(exc).__name__}: {exc}"[:2000],
                "traceback": traceback.format_exc(limit=5)[-2000:],
            }
        )
    fix["seconds"] = round(time.perf_counter() - started, 4)
    return fix


def _fix_timeout(seconds: float) -> dict[str, Any]:
    return {
        "status": "error",
        "reason": f"timeout: the fix stage did not finish within {seconds:g} s",
    }


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _summary(x: Any) -> dict[str, Any]:
    """Small tensors in full; large ones by shape, range and the values that matter."""
    data: dict[str, Any] = {"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
    if x.numel() <= 64:
        data["values"] = x.detach().tolist()
    else:
        flat = x.detach().double().reshape(-1)
        data["min"], data["max"] = float(flat.min()), float(flat.max())
    return data


def _harvest(job: dict[str, Any]) -> Any:
    """Run the repository's tests once, recording calls of every function with a finding."""
    if not job.get("harvest", True):
        return None
    try:
        from analyzers.dynamic.harvest import harvest

        targets = [(f["path"], f["function"]) for f in job["findings"]]
        return harvest(Path(job["repo"]), targets, float(job.get("harvest_seconds", 60.0)))
    except (Exception, SystemExit, KeyboardInterrupt):  # the tests are the PR's code too:
        return None  # any failure (an `exit()`, the limit arriving late) leaves synthesis


def _choose_keras(version: Any) -> None:
    """`tf.keras` as Keras 2 (tf_keras) for a job whose code was written for it
    (runners/keras_generation.py). TensorFlow reads TF_USE_LEGACY_KERAS when it is first
    imported, so this comes before anything can import it; the reproducers' interpreters
    inherit it. Without tf_keras installed, Keras 3 stays."""
    if version == "2" and importlib.util.find_spec("tf_keras") is not None:
        os.environ["TF_USE_LEGACY_KERAS"] = "1"


def _own_imports() -> None:
    """numcheck's modules (and torch, through them) from numcheck's installation, before
    anything of the checkout's can be found on sys.path; a failure here is left to the
    finding that needs the module, as before."""
    for name in OWN_IMPORTS:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _enter_checkout(repo: str) -> None:
    """The checkout as the working directory and first on sys.path (where `python -m` from
    inside it would have put it)."""
    from analyzers.dynamic.layout import on_sys_path

    root = os.path.realpath(repo)
    os.chdir(root)
    on_sys_path(Path(root))


def _use_dependencies(site: str | None) -> None:
    """The repository's declared dependencies (runners/dependencies.py), last on sys.path:
    they add modules and never replace numcheck's own (torch and the rest)."""
    if site and os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)
        DEPENDENCY_PATHS.append(site)


def _begin(fingerprint: str | None, stage: str, seconds: float) -> None:
    """Tell the supervisor which stage starts and its limit: it kills this process when the
    stage outlives it, and accepts records only for that stage."""
    _emit({"begin": fingerprint, "stage": stage, "seconds": seconds})


def work() -> int:
    """The worker (`--worker`): where the PR's code runs. It never sees the nonce; its records
    go to the supervisor (runners/supervisor.py), which checks each against the stage this
    process announced and adds the nonce itself."""
    REPRODUCERS.adopt(os.environ.pop(WARM_HELPER, ""))  # forked by the boot, if it could
    job = json.load(sys.stdin)
    _own_stdout()
    _choose_keras(job.get("keras"))
    _own_imports()
    _enter_checkout(job["repo"])
    _use_dependencies(job.get("dependencies"))
    if job.get("harvest", True):
        _begin(None, "harvest", float(job.get("harvest_seconds", 60.0)) + HARVEST_SLACK)
    harvested = _harvest(job)
    confirmed: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (finding, its context)
    pending: list[tuple[dict[str, Any], dict[str, Any]]] = []  # for the precision pass
    seconds = float(job.get("finding_timeout", 60.0))
    for finding in job["findings"]:
        context: dict[str, Any] = {}
        _begin(finding["fingerprint"], "confirm", seconds)
        record = _guarded(
            {"fingerprint": finding["fingerprint"]},
            seconds,
            functools.partial(confirm, job, finding, harvested, context),
            exited=" before the op ran",
        )
        _emit(record)
        if record.get("status") == "confirmed" and job.get("fix", True) and context:
            confirmed.append((finding, context))
        elif record.get("status") == "not-triggered" and "pending" in context:
            pending.append((finding, context))
    # The low-precision searches only once every finding has had its float32 search: a
    # second search must never cost a later finding its first (the run's wall clock is shared)
    for finding, context in pending:  # the finding's deadline again: a search as long again
        _begin(finding["fingerprint"], "precision", seconds)
        record = _guarded(
            {"fingerprint": finding["fingerprint"], "stage": "precision"},
            seconds,
            functools.partial(confirm_low_precision, job, finding, context),
        )
        _emit(record)
        if record.get("status") == "confirmed" and job.get("fix", True):
            confirmed.append((finding, context))
    # Fixes only once every finding has had its confirmation: a slow fix stage must never
    # cost a later finding its proof (the run's wall clock is shared).
    for finding, context in confirmed:
        _begin(finding["fingerprint"], "fix", float(job.get("fix_timeout", 60.0)))
        if "precision" in context:  # as the host will read the finding (FixRequest)
            finding = {**finding, "trigger": {"precision": context["precision"]}}
        _emit(
            {
                "fingerprint": finding["fingerprint"],
                "stage": "fix",
                "fix": _fix_stage(job, finding, context),
            }
        )
    _emit({"done": True})
    return 0


def main() -> int:
    if sys.argv[-1:] == ["--worker"]:
        return work()
    from runners.supervisor import main as supervise

    return supervise()


if __name__ == "__main__":
    raise SystemExit(main())
