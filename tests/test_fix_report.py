"""How a validated fix is reported: SARIF `fixes` that reproduce the patch when applied, the
text format's diff, and the JSON contract's `fix` object (real candidates from the fix pass)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from analyzers.fix import FixRequest, candidates
from analyzers.fix.candidates import Candidate
from analyzers.fix.validate import Check, Validation, fix_record
from analyzers.model import AnalysisResult, Finding
from analyzers.report.jsonout import load_schema
from analyzers.report.sarif import diff_replacements, to_sarif
from analyzers.report.text import render_text
from analyzers.static import scan_source

SARIF_SCHEMA = Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0.json"
SOURCE = '''\
"""Losses."""
import torch


def gap(x, y):
    return torch.log(x + 1e-12) - torch.log(y)


def cosine(a, b):
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))
'''
IMPORTING = '''\
"""Doc."""
from torch import log, softmax


def logp(z):
    return log(softmax(z, dim=-1))
'''


def apply_replacements(text: str, replacements: list[dict[str, Any]]) -> str:
    """What a SARIF consumer does: whole-line regions (column 1 to column 1), last first."""
    lines = text.splitlines(keepends=True)
    for r in sorted(replacements, key=lambda r: -r["deletedRegion"]["startLine"]):
        region = r["deletedRegion"]
        assert region["startColumn"] == region["endColumn"] == 1
        inserted = r.get("insertedContent", {}).get("text", "")
        lines[region["startLine"] - 1 : region["endLine"] - 1] = inserted.splitlines(keepends=True)
    return "".join(lines)


def validated(candidate: Candidate) -> dict[str, Any]:
    record = Validation(
        candidate.kind,
        candidate.name,
        True,
        [Check("reproducer", True, True), Check("search", True, True, {"runs": {}})],
    )
    return fix_record(candidate, [record])


def finding_with_fix(function: str, kind: str | None = None) -> tuple[Finding, Candidate]:
    (finding,) = [
        f for f in scan_source(SOURCE, "pkg/losses.py").findings if f.function == function
    ][:1]
    cands = candidates(SOURCE, FixRequest.from_finding(finding), strict=True)
    candidate = next(c for c in cands if kind is None or c.kind == kind)
    finding.status = "confirmed"
    finding.fix = validated(candidate)
    return finding, candidate


def test_sarif_fixes_reproduce_the_patch_and_follow_the_schema() -> None:
    first, one = finding_with_fix("gap")
    second, other = finding_with_fix("cosine")
    assert not other.patch.suggestion_complete or other.patch.imports == ()
    log = to_sarif(AnalysisResult(".", None, None, {}, findings=[first, second]))
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    results = log["runs"][0]["results"]
    for result, candidate in zip(results, (one, other), strict=True):
        (fix,) = result["fixes"]
        (change,) = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == "pkg/losses.py"
        assert apply_replacements(SOURCE, change["replacements"]) == candidate.source
        assert result["properties"]["fixStatus"] == "validated"


def test_a_fix_that_adds_an_import_is_a_sarif_fix_and_a_markdown_diff() -> None:
    (finding,) = scan_source(IMPORTING, "p.py").findings
    candidate = candidates(IMPORTING, FixRequest.from_finding(finding))[0]
    assert candidate.patch.imports == ("import torch",)
    assert not candidate.patch.suggestion_complete
    finding.fix = validated(candidate)
    result = AnalysisResult(".", None, None, {}, findings=[finding])
    (sarif_result,) = to_sarif(result)["runs"][0]["results"]
    (change,) = sarif_result["fixes"][0]["artifactChanges"]
    assert len(change["replacements"]) == 2
    assert apply_replacements(IMPORTING, change["replacements"]) == candidate.source
    from analyzers.report.markdown import render_markdown

    markdown = render_markdown(result)
    assert "```suggestion" not in markdown
    assert "it also adds an import" in markdown and "+import torch" in markdown
    from analyzers.fix.apply import apply_to_source

    assert apply_to_source("p.py", IMPORTING, [finding]).after == candidate.source


def test_diff_replacements_cover_insertions_and_deletions() -> None:
    before = "a\nb\nc\nd\n"
    after = "import x\na\nB\nB2\nc\n"
    from analyzers.fix.patch import unified_diff

    replacements = diff_replacements(unified_diff("f.py", before, after))
    assert apply_replacements(before, replacements) == after
    assert replacements[0]["deletedRegion"] == {
        "startLine": 1,
        "startColumn": 1,
        "endLine": 1,
        "endColumn": 1,
    }


def test_no_sarif_fix_without_a_validated_one() -> None:
    finding, _ = finding_with_fix("gap")
    finding.fix = {"status": "none-validated", "tried": [], "reason": "no candidate"}
    (result,) = to_sarif(AnalysisResult(".", None, None, {}, findings=[finding]))["runs"][0][
        "results"
    ]
    assert "fixes" not in result and result["properties"]["fixStatus"] == "none-validated"


def test_text_shows_the_diff_and_json_follows_the_contract() -> None:
    finding, candidate = finding_with_fix("gap")
    result = AnalysisResult(".", None, None, {}, findings=[finding])
    text = render_text(result)
    minus = next(line for line in candidate.patch.diff.splitlines() if line.startswith("-    "))
    plus = next(line for line in candidate.patch.diff.splitlines() if line.startswith("+    "))
    assert minus in text and plus in text and "--- a/pkg/losses.py" in text
    validator = jsonschema.validators.validator_for(load_schema())(load_schema())
    validator.validate(result.to_json())
    broken = AnalysisResult(".", None, None, {}, findings=[finding])
    finding.fix = {**(finding.fix or {}), "kind": "stable API"}  # not a kind of the contract
    assert not validator.is_valid(broken.to_json())
