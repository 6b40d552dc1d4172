"""The fix pass: candidate patches for a finding, and their validation in the sandbox.

    from analyzers.fix import FixRequest, candidates
    for candidate in candidates(source, FixRequest.from_finding(finding)):
        candidate.patch.diff, candidate.patch.suggestion()

`candidates`, `kinds` (the transforms), `patch` and `bounds` are pure (libcst, no framework
imported); `validate` runs inside the harness, with the PR's code, and imports torch when it
needs it.
"""

from analyzers.fix.candidates import Candidate, candidates, first_of_kind
from analyzers.fix.patch import Patch, apply_suggestion, make_patch
from analyzers.fix.site import FixRequest

__all__ = [
    "Candidate",
    "FixRequest",
    "Patch",
    "apply_suggestion",
    "candidates",
    "first_of_kind",
    "make_patch",
]
