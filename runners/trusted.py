"""The fix a review suggests is numcheck's own text, never the sandbox's.

The fix stage runs inside the sandbox, in the same process as the PR's code, which can reach
the job and its nonce (`sys._getframe()`) and print any record it likes. A forged fix record
would put the PR author's text in a one-click `suggestion` block under numcheck's name, and
`numcheck review --fix` would write it into the working tree. So the host keeps from a fix
record only the verdict: which candidate passed and the numbers behind it. The candidate
itself is made again here, from the head's file as exported before the run and the op
catalogue (`analyzers.fix.candidates`, deterministic), and a record whose patch is not one of
those candidates is rejected. What the sandbox reports stays evidence; the code is ours.
"""

from __future__ import annotations

from typing import Any

from analyzers.fix import FixRequest, candidates
from analyzers.model import Finding

# What fix_record copies from the chosen candidate's patch (analyzers/fix/patch.py): the
# fields that are code or say where code goes. They must equal a candidate made here.
PATCH_FIELDS = ("kind", "name", "path", "diff", "start_line", "end_line", "replacement",
                "original", "suggestion_complete", "imports", "suggestion")

NOT_TRUSTED = ("the sandbox's fix record was not trusted: its patch is not one numcheck "
               "makes from the op catalogue for this finding, so nothing is suggested")


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
            return {**record, **{key: ours[key] for key in PATCH_FIELDS if key in ours},
                    "description": candidate.description}
    return _rejected(NOT_TRUSTED)


def _same(theirs: Any, ours: Any) -> bool:
    if isinstance(ours, tuple | list):
        return isinstance(theirs, tuple | list) and list(theirs) == list(ours)
    return bool(theirs == ours)


def _rejected(reason: str) -> dict[str, Any]:
    return {"status": "error", "reason": reason, "tried": []}
