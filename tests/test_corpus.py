"""The labelled corpus: each snippet's findings must equal its `# expect:` labels.

Labels are parsed by `bench.corpus` (the one parser); the format is described in
tests/corpus/README.md. The analyser is imported inside the scanning test so that the
corpus can be collected, and its format checked, before the analyser exists.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.corpus import (  # noqa: E402
    CORPUS_DIR,
    GROUPS,
    INVALID,
    PATTERN_NUMBERS,
    RULES,
    VALID,
    CorpusCase,
    CorpusError,
    Expectation,
    Found,
    case_id,
    compare,
    corpus_paths,
    findings_of,
    load_case,
    load_corpus,
    parse_labels,
)

PATHS = corpus_paths()
IDS = [case_id(p) for p in PATHS]

MIN_FILES = 130
MIN_PER_RULE = 3
MIN_NON_TORCH = 35  # tf2 + tf1 + numpy_jax together


def _describe(case: CorpusCase, missing: list[Expectation], unexpected: list[Found]) -> str:
    lines = [f"{case.rel}: findings differ from the labels"]
    for exp in missing:
        lines.append(f"  missing    {exp}    | {case.source_line(exp.line)}")
    for hit in unexpected:
        lines.append(f"  unexpected {hit}    | {case.source_line(hit.line)}")
    return "\n".join(lines)


# ------------------------------------------------------------------------ the analyser


HOLDOUT_DIR = CORPUS_DIR.parent / "corpus_holdout"
HOLDOUT_PATHS = corpus_paths(HOLDOUT_DIR)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_snippet_findings_match_labels(path: Path) -> None:
    _check_snippet(path, CORPUS_DIR)


@pytest.mark.parametrize(
    "path", HOLDOUT_PATHS, ids=[case_id(p, HOLDOUT_DIR) for p in HOLDOUT_PATHS]
)
def test_holdout_snippet_findings_match_labels(path: Path) -> None:
    """The held-out set was written blind to the analyser and measured before any tuning
    (see tests/corpus_holdout/README.md); it now guards against regressions."""
    _check_snippet(path, HOLDOUT_DIR)


def test_holdout_set_is_there() -> None:
    assert len(HOLDOUT_PATHS) >= 60


def _check_snippet(path: Path, corpus_dir: Path) -> None:
    from analyzers.static import scan_source

    case = load_case(path, corpus_dir)
    scan = scan_source(case.source, case.rel)
    assert scan.error is None, f"{case.rel}: the analyser could not scan it: {scan.error}"
    result = compare(case.expectations, findings_of(scan))
    assert result.exact, _describe(case, result.missing, result.unexpected)


# ------------------------------------------------------------------------ the corpus


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_snippet_is_well_formed(path: Path) -> None:
    case = load_case(path)  # raises CorpusError on a bad name, place or label
    compile(case.source, case.rel, "exec")
    if case.kind == VALID:
        assert not case.expectations
        assert case.covers
    else:
        assert case.expectations
    n_lines = len(case.source.splitlines())
    assert n_lines <= 40, f"{case.rel}: {n_lines} lines; keep snippets short"
    for exp in case.expectations:
        assert case.source_line(exp.line), f"{case.rel}: label on an empty line {exp.line}"


def test_corpus_size_and_balance() -> None:
    cases = load_corpus()
    assert len(cases) >= MIN_FILES
    valid = sum(c.kind == VALID for c in cases)
    assert 0.4 <= valid / len(cases) <= 0.6, f"{valid} VALID of {len(cases)}"


def test_every_group_is_represented() -> None:
    by_group = Counter(c.group for c in load_corpus())
    for group in GROUPS:
        assert by_group[group] >= 3, f"group {group} has {by_group[group]} files"
    non_torch = by_group["tf2"] + by_group["tf1"] + by_group["numpy_jax"]
    assert non_torch >= MIN_NON_TORCH


def test_every_rule_has_invalid_and_valid_files() -> None:
    invalid: Counter[str] = Counter()
    valid: Counter[str] = Counter()
    for case in load_corpus():
        target = valid if case.kind == VALID else invalid
        rules = case.covers if case.kind == VALID else {e.rule for e in case.expectations}
        target.update(r for r in rules if r)
    short = [
        f"{rule}: {invalid[rule]} INVALID, {valid[rule]} VALID"
        for rule in RULES
        if invalid[rule] < MIN_PER_RULE or valid[rule] < MIN_PER_RULE
    ]
    assert not short, "rules with too few files: " + "; ".join(short)


def test_every_pattern_has_invalid_and_valid_files() -> None:
    seen = {(c.pattern, c.kind) for c in load_corpus() if c.group == "patterns"}
    missing = [
        f"p{n:02d} {kind}"
        for n in PATTERN_NUMBERS
        for kind in (INVALID, VALID)
        if (n, kind) not in seen
    ]
    assert not missing, "patterns without files: " + ", ".join(missing)


def test_valid_files_carry_no_expectations() -> None:
    labelled = [c.id for c in load_corpus() if c.kind == VALID and c.expectations]
    assert not labelled


def test_no_stray_files_in_corpus() -> None:
    allowed = {".py", ".md"}
    stray = [
        p.relative_to(CORPUS_DIR).as_posix()
        for p in CORPUS_DIR.rglob("*")
        if p.is_file() and p.suffix not in allowed and "__pycache__" not in p.parts
    ]
    assert not stray


# ------------------------------------------------------------------------ the runner


def test_parse_labels_reads_comments_only() -> None:
    source = (
        "import torch\n"
        "s = '# expect: log'\n"
        "y = torch.log(x) / z.sum()  # expect: log/unguarded-domain, div\n"
        "# covers: log-softmax\n"
    )
    expectations, covers = parse_labels(source)
    assert expectations == (Expectation(3, "div", None), Expectation(3, "log", "unguarded-domain"))
    assert covers == ("log-softmax",)


@pytest.mark.parametrize(
    "label",
    [
        "# expect: logarithm",
        "# expect: log/no-such-rule",
        "# expect:",
        "# expect: log, log",
        "# covers: nothing-like-this",
        "# expects: log",
    ],
)
def test_parse_labels_rejects_bad_labels(label: str) -> None:
    with pytest.raises(CorpusError):
        parse_labels(f"x = 1  {label}\n")


def test_compare_op_only_and_rule_labels() -> None:
    labels = [Expectation(3, "log", "log-softmax"), Expectation(5, "div")]
    found = [Found(3, "log", "log-softmax"), Found(5, "div", "manual-normalize")]
    assert compare(labels, found).exact


def test_compare_wrong_rule_is_both_missing_and_unexpected() -> None:
    result = compare([Expectation(3, "log", "log-softmax")], [Found(3, "log", "unguarded-domain")])
    assert result.missing == [Expectation(3, "log", "log-softmax")]
    assert result.unexpected == [Found(3, "log", "unguarded-domain")]
    assert not result.matched


def test_compare_counts_duplicate_findings_once() -> None:
    found = [Found(2, "sqrt", "unguarded-domain")] * 2
    assert compare([Expectation(2, "sqrt", "unguarded-domain")], found).exact
