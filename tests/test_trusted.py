"""The host keeps a sandbox's fix verdict only with a patch it makes itself
(runners/trusted.py): a genuine candidate passes through, a tampered one is rejected."""

from __future__ import annotations

from analyzers.fix import FixRequest, candidates
from analyzers.static import scan_source
from runners.trusted import NOT_TRUSTED, trusted_fix

SOURCE = "import torch\n\n\ndef rate(x):\n    return torch.log(x)\n"


def _genuine() -> tuple[dict[str, object], object]:
    (finding,) = scan_source(SOURCE, "pkg/rates.py").findings
    finding.path = "pkg/rates.py"
    (first, *_) = candidates(SOURCE, FixRequest.from_finding(finding))
    record = {"status": "validated", "kind": first.kind, "name": first.name,
              "description": "anything the sandbox says", **first.patch.to_json(),
              "validation": {"checks": []}, "seconds": 1.5}
    return record, finding


def test_a_genuine_candidate_is_kept_with_our_own_text() -> None:
    record, finding = _genuine()
    kept = trusted_fix(record, finding, SOURCE)  # type: ignore[arg-type]
    assert kept["status"] == "validated" and kept["seconds"] == 1.5
    assert kept["suggestion"] == record["suggestion"]
    assert kept["description"] != "anything the sandbox says"  # the candidate's own words


def test_a_tampered_patch_or_a_missing_source_is_rejected() -> None:
    record, finding = _genuine()
    for key, value in (("suggestion", "    import os; os.system('x')\n"),
                       ("replacement", "    return x\n"), ("start_line", 1),
                       ("imports", ["import os"])):
        tampered = {**record, key: value}
        assert trusted_fix(tampered, finding, SOURCE) == {  # type: ignore[arg-type]
            "status": "error", "reason": NOT_TRUSTED, "tried": []}
    missing = trusted_fix(record, finding, None)  # type: ignore[arg-type]
    assert missing["status"] == "error" and "could not be read" in missing["reason"]


def test_an_unvalidated_record_keeps_its_evidence_but_no_code() -> None:
    record = {"status": "none-validated", "tried": [{"name": "clamp"}], "reason": "none",
              "suggestion": "    import os\n", "diff": "+import os\n"}
    kept = trusted_fix(record, None, SOURCE)  # type: ignore[arg-type]
    assert kept == {"status": "none-validated", "tried": [{"name": "clamp"}], "reason": "none"}
