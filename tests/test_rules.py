"""Every rule's embedded examples, run through the real static pass (Fixit's manner)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzers.static import scan_source
from analyzers.static.explain import RULE_SEVERITY
from analyzers.static.rules import RULES

VALID = [(rule.id, i, code) for rule in RULES for i, code in enumerate(rule.valid)]
INVALID = [(rule.id, i, code) for rule in RULES for i, code in enumerate(rule.invalid)]


@pytest.mark.parametrize(
    ("rule", "index", "code"), VALID, ids=[f"{r}-valid-{i}" for r, i, _ in VALID]
)
def test_valid_example_is_silent(rule: str, index: int, code: str) -> None:
    scan = scan_source(code, "example.py")
    assert scan.error is None
    assert [(f.line, f.op, f.rule) for f in scan.findings] == []


@pytest.mark.parametrize(
    ("rule", "index", "code"), INVALID, ids=[f"{r}-invalid-{i}" for r, i, _ in INVALID]
)
def test_invalid_example_is_flagged_by_its_rule(rule: str, index: int, code: str) -> None:
    scan = scan_source(code, "example.py")
    assert scan.error is None
    assert rule in {f.rule for f in scan.findings}, [(f.rule, f.why) for f in scan.findings]


def test_every_rule_the_analyser_reports_is_documented() -> None:
    assert {rule.id for rule in RULES} == set(RULE_SEVERITY)


def test_rules_have_examples_both_ways() -> None:
    for rule in RULES:
        assert rule.valid and rule.invalid, rule.id


def test_code_names_rules_by_constant_not_by_string() -> None:
    """A rule id spelled as a string in the analysis would silently stop matching when the id
    changes; code says `RuleId.X`. The ids that are also op or fix names (log1p, expm1,
    log-softmax, log-sigmoid) are skipped where they mean those."""
    root = Path(__file__).resolve().parent.parent
    shared = {"log1p", "expm1", "log-softmax", "log-sigmoid"}
    wanted = [rule.id for rule in RULES if rule.id not in shared]
    found = []
    for path in sorted((root / "analyzers").rglob("*.py")):
        if path.name == "rules.py":
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(root)}: {rid}" for rid in wanted if f'"{rid}"' in text]
    assert found == []
