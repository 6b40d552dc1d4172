"""The fix and the reproducer a review shows are numcheck's own text, never the sandbox's.

The fix stage runs inside the sandbox, in the same process as the PR's code, which can reach
the job and its nonce (`sys._getframe()`) and print any record it likes. A forged fix record
would put the PR author's text in a one-click `suggestion` block under numcheck's name, and
`numcheck review --fix` would write it into the working tree. So the host keeps from a fix
record only the verdict: which candidate passed and the numbers behind it. The candidate
itself is made again here, from the head's file as exported before the run and the op
catalogue (`analyzers.fix.candidates`, deterministic), and a record whose patch is not one of
those candidates is rejected.

The reproducer is the same: the record carries its plan (names and numbers, no code), and the
text is written here by `analyzers.dynamic.writer`, with the finding's own path, line, op and
call. A record that carries reproducer text instead is not believed, and a plan the writer
refuses leaves the finding unconfirmed. What the sandbox reports stays evidence; the code is
ours.
"""

from __future__ import annotations

import sys
from typing import Any

from analyzers.config import script_argv
from analyzers.dtypes import FLOAT32_VERDICTS, LOW_PRECISIONS, PRECISION_MODES
from analyzers.dynamic.layout import module_of
from analyzers.dynamic.writer import PlanError, Target, write
from analyzers.fix import FixRequest, candidates
from analyzers.model import Finding

# What fix_record copies from the chosen candidate's patch (analyzers/fix/patch.py): the
# fields that are code or say where code goes. They must equal a candidate made here.
PATCH_FIELDS = (
    "kind",
    "name",
    "path",
    "diff",
    "start_line",
    "end_line",
    "replacement",
    "original",
    "suggestion_complete",
    "imports",
    "suggestion",
)

NOT_TRUSTED = (
    "the sandbox's fix record was not trusted: its patch is not one numcheck "
    "makes from the op catalogue for this finding, so nothing is suggested"
)


def trusted_fix(record: dict[str, Any], finding: Finding, source: str | None) -> dict[str, Any]:
    """The `Finding.fix` to keep for the sandbox's fix `record`: a validated one only when
    its patch is a candidate made here from `source` (the head's file, read before the run),
    with every code field taken from that candidate."""
    if record.get("status") != "validated":
        return {key: value for key, value in record.items() if key not in PATCH_FIELDS}
    if source is None:
        return _rejected("the head's copy of the file could not be read to check it")
    for candidate in candidates(source, FixRequest.from_finding(finding)):
        ours = {"kind": candidate.kind, "name": candidate.name, **candidate.patch.to_json()}
        if all(_same(record.get(key), ours.get(key)) for key in PATCH_FIELDS):
            return {
                **record,
                **{key: ours[key] for key in PATCH_FIELDS if key in ours},
                "description": candidate.description,
            }
    return _rejected(NOT_TRUSTED)


# A precision block's words (analyzers/dynamic/precision.py; the schema's trigger.precision)
PRECISION_WORDS = {
    "dtype": LOW_PRECISIONS,
    "mode": PRECISION_MODES,
    "float32": FLOAT32_VERDICTS,
}


def trusted_trigger(trigger: dict[str, Any]) -> dict[str, Any]:
    """The sandbox's trigger with its precision block, and the precisions it says it searched,
    kept only in numcheck's own words: they say which bug a reader is shown (mixed precision
    or not), so nothing else in them is passed on."""
    low = trigger.get("low_precision")
    if low is not None:  # the precisions searched as well, by name
        trigger = {
            **trigger,
            "low_precision": [d for d in low if d in LOW_PRECISIONS]
            if isinstance(low, list)
            else [],
        }
    block = trigger.get("precision")
    if block is None:
        return trigger
    kept = {key: block.get(key) for key in PRECISION_WORDS} if isinstance(block, dict) else {}
    if kept and all(kept[key] in words for key, words in PRECISION_WORDS.items()):
        return {**trigger, "precision": kept}
    return {key: value for key, value in trigger.items() if key != "precision"}


def _same(theirs: Any, ours: Any) -> bool:
    if isinstance(ours, tuple | list):
        return isinstance(theirs, tuple | list) and list(theirs) == list(ours)
    return bool(theirs == ours)


def _rejected(reason: str) -> dict[str, Any]:
    return {"status": "error", "reason": reason, "tried": []}


def trusted_reproducer(
    record: dict[str, Any],
    finding: Finding,
    script: dict[str, Any] | None = None,
    roots: tuple[str, ...] = (),
) -> tuple[str | None, str | None]:
    """(the reproducer written here from the record's plan, or None; why there is none when
    a confirmation came without one this side can write). `script`: the job's script
    settings, the only command a script reproducer may run (else the flagged file itself,
    which the harness runs as a program); `roots`: the checkout's source roots, read here
    before its code ran (layout.py)."""
    plan = record.get("reproducer_plan")
    if plan is None:
        if record.get("status") == "confirmed":
            return None, "the sandbox confirmed it without a reproducer plan; not believed"
        return None, None
    try:
        expected_plan(plan, finding, script, roots)
        return written_reproducer(
            record, finding.path, finding.line, finding.op, finding.call
        ), None
    except (PlanError, LookupError, SyntaxError, OSError) as exc:
        return None, f"the sandbox's reproducer plan was not written: {exc}"


def expected_plan(
    plan: Any, finding: Finding, script: dict[str, Any] | None, roots: tuple[str, ...] = ()
) -> None:
    """PlanError unless the plan reproduces this finding: an entry of the finding's own
    module, or a run of the job's command watching lines of the finding. Names alone could
    otherwise make a reproducer of `subprocess.Popen(args=..., shell=True)`; so could a PR
    file named after a standard module (`subprocess.py`): the reproducer's import would get
    the standard one, already loaded."""
    if not isinstance(plan, dict):
        raise PlanError("the plan is not an object")
    if plan.get("kind") == "entry":
        module = module_of(finding.path, roots)
        if plan.get("module") != module:
            raise PlanError("the plan's module is not the finding's")
        if module.split(".")[0] in sys.stdlib_module_names:
            raise PlanError(
                f"the finding's module is named like the standard library's {module.split('.')[0]}"
            )
    elif plan.get("kind") == "script":
        command = script["command"] if script else [finding.path]
        if plan.get("argv") != list(script_argv(command)):
            raise PlanError("the plan's command is not the job's")
        lines = plan.get("lines")
        if (
            plan.get("path") != finding.path
            or not isinstance(lines, list)
            or not all(type(n) is int and finding.line <= n <= finding.end_line for n in lines)
        ):
            raise PlanError("the plan watches other lines than the finding's")
    else:
        raise PlanError("the plan is neither an entry's nor a script run's")


def written_reproducer(record: dict[str, Any], path: str, line: int, op: str, call: str) -> str:
    """The reproducer of a record's plan, for the finding at `path:line` (its op and call
    as the static pass found them); PlanError when the plan is not one numcheck makes."""
    trigger = record.get("trigger")
    trigger = trigger if isinstance(trigger, dict) else {}
    target = Target(
        path,
        line,
        op,
        call,
        str(trigger.get("where") or "forward"),
        str(trigger.get("shows") or ""),
    )
    return write(record.get("reproducer_plan"), target)
