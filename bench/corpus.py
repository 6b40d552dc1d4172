"""The labelled NaN/Inf corpus: loading, scoring and a report.

Run from the repository root::

    python -m bench.corpus            # tables per group and per rule, then every miss
    python -m bench.corpus --strict   # extra findings in INVALID files also fail
    python -m bench.corpus --json bench/out/corpus.json

The corpus lives in ``tests/corpus/<group>/`` (format: ``tests/corpus/README.md``). This
module is the ONE place that parses its labels; ``tests/test_corpus.py`` imports it.

Labels:

* ``# expect: <op>`` or ``# expect: <op>/<rule>`` ends the line on which the risky node
  starts; several on one line are separated by commas (``# expect: log, div``).
  Without a rule only the op is compared.
* ``# covers: <rule>, ...`` names the rules a VALID file is a near miss for (it is how a
  VALID file counts towards a rule); INVALID files may carry it too.

Exit status: 0 when every INVALID expectation was found and every VALID file is silent,
1 otherwise (also when a file could not be scanned), 2 when the analyser or the corpus
could not be loaded.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzers.catalogue import KNOWN_OPS
from analyzers.static.rules import RULES as RULE_REGISTRY

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = REPO_ROOT / "tests" / "corpus"

GROUPS: tuple[str, ...] = (
    "torch",
    "tf2",
    "tf1",
    "numpy_jax",
    "patterns",
    "guards",
    "ineffective",
    "plain_python",
)

# Canonical op names of the analyser's contract.
OPS: frozenset[str] = KNOWN_OPS  # labels name ops as the catalogue does

# Rule ids of the analyser's contract, in report order.
# the rules the corpus scores: candidates are the dynamic pass's to prove (findings_of)
RULES: tuple[str, ...] = tuple(rule.id for rule in RULE_REGISTRY if not rule.candidate)

PATTERN_NUMBERS: tuple[int, ...] = tuple(range(1, 16))

VALID = "valid"
INVALID = "invalid"

_EXPECT_RE = re.compile(r"^#\s*expect:(?P<items>.*)$")
_COVERS_RE = re.compile(r"^#\s*covers:(?P<items>.*)$")
_ITEM_RE = re.compile(r"^(?P<op>[a-z][a-z0-9_]*)(?:/(?P<rule>[a-z][a-z0-9-]*))?$")
_NAME_RE = re.compile(r"^(?:p(?P<pattern>\d{2})_)?(?P<kind>valid|invalid)_[a-z0-9_]+\.py$")


class CorpusError(ValueError):
    """A corpus file that breaks the labelling format."""


# ------------------------------------------------------------------------------- labels


@dataclass(frozen=True, order=True)
class Expectation:
    """One labelled risky node: the line it starts on, its op, and optionally its rule."""

    line: int
    op: str
    rule: str | None = None

    def matches(self, found: Found) -> bool:
        if found.line != self.line or found.op != self.op:
            return False
        return self.rule is None or found.rule == self.rule

    def __str__(self) -> str:
        label = self.op if self.rule is None else f"{self.op}/{self.rule}"
        return f"line {self.line}: {label}"


@dataclass(frozen=True, order=True)
class Found:
    """The part of an analyser finding the corpus compares: (line, op, rule)."""

    line: int
    op: str
    rule: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.op}/{self.rule}"


@dataclass(frozen=True)
class CorpusCase:
    """One snippet with its labels."""

    path: Path
    rel: str  # path relative to the repository root, POSIX separators
    id: str  # path relative to the corpus directory: "<group>/<name>.py"
    group: str
    kind: str  # VALID or INVALID
    pattern: int | None
    expectations: tuple[Expectation, ...]
    covers: tuple[str, ...]
    source: str

    @property
    def is_valid(self) -> bool:
        return self.kind == VALID

    @property
    def rules(self) -> frozenset[str]:
        """Rules this file exercises: those of its expectations plus its `covers` list."""
        named = {e.rule for e in self.expectations if e.rule is not None}
        return frozenset(named | set(self.covers))

    def source_line(self, line: int) -> str:
        lines = self.source.splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _split_items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_labels(
    source: str, where: str = "<corpus>"
) -> tuple[tuple[Expectation, ...], tuple[str, ...]]:
    """Return the `# expect:` labels and the `# covers:` rules of a snippet.

    Only real comments count (a `# expect:` inside a string does not): the source is
    tokenised, so it must be valid Python.
    """
    expectations: list[Expectation] = []
    covers: list[str] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise CorpusError(f"{where}: cannot tokenise: {exc}") from exc
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        line = tok.start[0]
        comment = tok.string.strip()
        expect = _EXPECT_RE.match(comment)
        if expect:
            items = _split_items(expect.group("items"))
            if not items:
                raise CorpusError(f"{where}:{line}: empty `# expect:` label")
            for item in items:
                expectations.append(_parse_item(item, line, where))
            continue
        cover = _COVERS_RE.match(comment)
        if cover:
            rules = _split_items(cover.group("items"))
            if not rules:
                raise CorpusError(f"{where}:{line}: empty `# covers:` label")
            for rule in rules:
                if rule not in RULES:
                    raise CorpusError(f"{where}:{line}: unknown rule {rule!r} in `# covers:`")
                covers.append(rule)
            continue
        if re.match(r"^#\s*(expect|cover)\w*\s*[:=]", comment):
            raise CorpusError(f"{where}:{line}: malformed label {comment!r}")
    keys = [(e.line, e.op) for e in expectations]
    duplicates = sorted({k for k, n in Counter(keys).items() if n > 1})
    if duplicates:
        shown = ", ".join(f"line {ln} {op}" for ln, op in duplicates)
        raise CorpusError(
            f"{where}: an op is labelled twice on one line ({shown}); the "
            "analyser reports one finding per (line, op)"
        )
    return tuple(sorted(expectations)), tuple(dict.fromkeys(covers))


def _parse_item(item: str, line: int, where: str) -> Expectation:
    match = _ITEM_RE.match(item)
    if not match:
        raise CorpusError(f"{where}:{line}: malformed expectation {item!r}")
    op, rule = match.group("op"), match.group("rule")
    if op not in OPS:
        raise CorpusError(f"{where}:{line}: unknown op {op!r}")
    if rule is not None and rule not in RULES:
        raise CorpusError(f"{where}:{line}: unknown rule {rule!r}")
    return Expectation(line, op, rule)


# ------------------------------------------------------------------------------- loading


def corpus_paths(corpus_dir: Path = CORPUS_DIR) -> list[Path]:
    """Every snippet file, sorted (``__init__.py`` and helpers starting with ``_`` excluded)."""
    return sorted(
        p
        for p in corpus_dir.rglob("*.py")
        if not p.name.startswith("_") and "__pycache__" not in p.parts
    )


def case_id(path: Path, corpus_dir: Path = CORPUS_DIR) -> str:
    return path.relative_to(corpus_dir).as_posix()


def load_case(path: Path, corpus_dir: Path = CORPUS_DIR) -> CorpusCase:
    """Read one snippet and check that its name, place and labels follow the format."""
    ident = case_id(path, corpus_dir)
    parts = ident.split("/")
    if len(parts) != 2:
        raise CorpusError(f"{ident}: snippets live directly in tests/corpus/<group>/")
    group, name = parts
    if group not in GROUPS:
        raise CorpusError(f"{ident}: unknown group {group!r} (groups: {', '.join(GROUPS)})")
    match = _NAME_RE.match(name)
    if not match:
        raise CorpusError(f"{ident}: name must be [pNN_](valid|invalid)_<words>.py")
    kind = match.group("kind")
    pattern = int(match.group("pattern")) if match.group("pattern") else None
    if group == "patterns" and pattern is None:
        raise CorpusError(f"{ident}: files in patterns/ start with the pattern number, pNN_")
    if group != "patterns" and pattern is not None:
        raise CorpusError(f"{ident}: only files in patterns/ carry a pattern number")
    if pattern is not None and pattern not in PATTERN_NUMBERS:
        raise CorpusError(f"{ident}: no pattern {pattern} in docs/numerics.md (1..15)")
    source = path.read_text(encoding="utf-8")
    expectations, covers = parse_labels(source, ident)
    if kind == INVALID and not expectations:
        raise CorpusError(f"{ident}: an INVALID file needs at least one `# expect:` label")
    if kind == VALID and expectations:
        raise CorpusError(f"{ident}: a VALID file carries no `# expect:` label")
    if kind == VALID and not covers:
        raise CorpusError(f"{ident}: a VALID file names its rules with `# covers:`")
    try:
        rel = path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        rel = path.as_posix()
    return CorpusCase(
        path=path,
        rel=rel,
        id=ident,
        group=group,
        kind=kind,
        pattern=pattern,
        expectations=expectations,
        covers=covers,
        source=source,
    )


def load_corpus(corpus_dir: Path = CORPUS_DIR) -> list[CorpusCase]:
    return [load_case(p, corpus_dir) for p in corpus_paths(corpus_dir)]


# ------------------------------------------------------------------------------- scoring


@dataclass
class Comparison:
    """Expectations against findings for one file."""

    matched: list[tuple[Expectation, Found]] = field(default_factory=list)
    missing: list[Expectation] = field(default_factory=list)  # false negatives
    unexpected: list[Found] = field(default_factory=list)  # false positives

    @property
    def exact(self) -> bool:
        return not self.missing and not self.unexpected


def compare(expectations: Iterable[Expectation], found: Iterable[Found]) -> Comparison:
    """Match findings to labels: a labelled rule must match exactly, an op-only label
    matches any rule. Each finding satisfies at most one label; leftovers are false
    positives. Duplicate findings (same line, op and rule) count once."""
    pool = sorted(set(found))
    used: set[Found] = set()
    result = Comparison()
    ordered = sorted(expectations, key=lambda e: (e.rule is None, e.line, e.op, e.rule or ""))
    for exp in ordered:
        hit = next((f for f in pool if f not in used and exp.matches(f)), None)
        if hit is None:
            result.missing.append(exp)
        else:
            used.add(hit)
            result.matched.append((exp, hit))
    result.unexpected = [f for f in pool if f not in used]
    result.matched.sort()
    result.missing.sort()
    return result


CANDIDATE_RULES = frozenset(rule.id for rule in RULE_REGISTRY if rule.candidate)


def findings_of(scan: Any) -> list[Found]:
    """(line, op, rule) of every finding of a `FileScan`, candidates left out: they are the
    dynamic pass's to prove, never reported unconfirmed (analyzers/static/rules.py), and
    `candidates_of` counts them apart."""
    return [
        Found(int(f.line), str(f.op), str(f.rule))
        for f in scan.findings
        if f.rule not in CANDIDATE_RULES
    ]


def candidates_of(scan: Any) -> list[Found]:
    return [
        Found(int(f.line), str(f.op), str(f.rule))
        for f in scan.findings
        if f.rule in CANDIDATE_RULES
    ]


ScanSource = Callable[..., Any]


@dataclass
class CaseResult:
    case: CorpusCase
    comparison: Comparison
    found: list[Found]
    error: str | None = None
    candidates: list[Found] = field(default_factory=list)  # not scored (findings_of)

    @property
    def passed(self) -> bool:
        """Exact agreement: what tests/test_corpus.py demands."""
        return self.error is None and self.comparison.exact

    @property
    def acceptable(self) -> bool:
        """What the exit status demands: INVALID labels all found, VALID files silent."""
        if self.error is not None:
            return False
        if self.case.is_valid:
            return not self.found
        return not self.comparison.missing


def scan_case(case: CorpusCase, scan_source: ScanSource) -> CaseResult:
    """Scan one snippet; an exception or a scan error is recorded, not raised."""
    try:
        scan = scan_source(case.source, case.rel)
    except Exception as exc:  # noqa: BLE001 - the report must go on
        return CaseResult(case, compare(case.expectations, []), [], f"{type(exc).__name__}: {exc}")
    found = findings_of(scan)
    error = getattr(scan, "error", None)
    return CaseResult(case, compare(case.expectations, found), found, error, candidates_of(scan))


def load_scanner() -> ScanSource:
    from analyzers.static import scan_source

    return scan_source


# ------------------------------------------------------------------------------- report


@dataclass
class Tally:
    expected: int = 0
    found: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    invalid_files: int = 0
    invalid_complete: int = 0
    valid_files: int = 0
    valid_silent: int = 0
    errors: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def add_file(self, result: CaseResult) -> None:
        comp = result.comparison
        self.expected += len(result.case.expectations)
        self.found += len(set(result.found))
        self.tp += len(comp.matched)
        self.fp += len(comp.unexpected)
        self.fn += len(comp.missing)
        self.errors += result.error is not None
        if result.case.is_valid:
            self.valid_files += 1
            self.valid_silent += result.acceptable
        else:
            self.invalid_files += 1
            self.invalid_complete += result.acceptable

    def to_json(self) -> dict[str, Any]:
        return {
            "expected": self.expected,
            "found": self.found,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": self.precision,
            "recall": self.recall,
            "invalid_files": self.invalid_files,
            "invalid_complete": self.invalid_complete,
            "valid_files": self.valid_files,
            "valid_silent": self.valid_silent,
            "errors": self.errors,
        }


UNSPECIFIED = "(op only)"


def tally_by_group(results: Sequence[CaseResult]) -> dict[str, Tally]:
    tallies = {g: Tally() for g in GROUPS if any(r.case.group == g for r in results)}
    for result in results:
        tallies[result.case.group].add_file(result)
    return tallies


def tally_by_rule(results: Sequence[CaseResult]) -> dict[str, Tally]:
    """Per rule: labels and findings attributed to their rule; an op-only label counts
    under the rule of the finding that matched it, or under "(op only)" when missed.
    File counts: INVALID files with a label of the rule, VALID files covering it."""
    tallies: dict[str, Tally] = {rule: Tally() for rule in RULES}

    def get(rule: str) -> Tally:
        return tallies.setdefault(rule, Tally())

    for result in results:
        comp = result.comparison
        for exp, hit in comp.matched:
            tally = get(exp.rule or hit.rule)
            tally.expected += 1
            tally.found += 1
            tally.tp += 1
        for exp in comp.missing:
            tally = get(exp.rule or UNSPECIFIED)
            tally.expected += 1
            tally.fn += 1
        for hit in comp.unexpected:
            tally = get(hit.rule)
            tally.found += 1
            tally.fp += 1
        case = result.case
        if case.is_valid:
            for rule in case.covers:
                get(rule).valid_files += 1
                get(rule).valid_silent += result.acceptable
        else:
            for rule in sorted({e.rule for e in case.expectations if e.rule}):
                tally = get(rule)
                tally.invalid_files += 1
                rule_missed = any(e.rule == rule for e in comp.missing)
                tally.invalid_complete += result.error is None and not rule_missed
    return tallies


def overall(results: Sequence[CaseResult]) -> Tally:
    total = Tally()
    for result in results:
        total.add_file(result)
    return total


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:5.1f}%"


def _ratio(good: int, total: int) -> str:
    return f"{good}/{total}" if total else "-"


def format_table(title: str, tallies: dict[str, Tally], total: Tally | None = None) -> str:
    header = (
        "expected",
        "found",
        "TP",
        "FP",
        "FN",
        "precision",
        "recall",
        "INVALID found",
        "VALID silent",
    )
    rows: list[tuple[str, ...]] = []
    for name, t in tallies.items():
        rows.append(
            (
                name,
                str(t.expected),
                str(t.found),
                str(t.tp),
                str(t.fp),
                str(t.fn),
                _pct(t.precision),
                _pct(t.recall),
                _ratio(t.invalid_complete, t.invalid_files),
                _ratio(t.valid_silent, t.valid_files),
            )
        )
    if total is not None:
        rows.append(
            (
                "TOTAL",
                str(total.expected),
                str(total.found),
                str(total.tp),
                str(total.fp),
                str(total.fn),
                _pct(total.precision),
                _pct(total.recall),
                _ratio(total.invalid_complete, total.invalid_files),
                _ratio(total.valid_silent, total.valid_files),
            )
        )
    widths = [max(len(title), *(len(r[0]) for r in rows))]
    widths += [max(len(h), *(len(r[i + 1]) for r in rows)) for i, h in enumerate(header)]
    lines = [
        "  ".join(
            [title.ljust(widths[0])] + [h.rjust(w) for h, w in zip(header, widths[1:], strict=True)]
        )
    ]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        if row[0] == "TOTAL":
            lines.append("  ".join("-" * w for w in widths))
        lines.append(
            "  ".join(
                [row[0].ljust(widths[0])]
                + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            )
        )
    return "\n".join(lines)


def format_details(results: Sequence[CaseResult], strict: bool) -> str:
    out: list[str] = []
    for result in results:
        case = result.case
        if result.error is not None:
            out.append(f"ERROR {case.rel}: {result.error}")
            continue
        for exp in result.comparison.missing:
            out.append(
                f"MISSED  {case.rel}:{exp.line}: expected {exp.op}"
                f"{'/' + exp.rule if exp.rule else ''}    {case.source_line(exp.line)}"
            )
        for hit in result.comparison.unexpected:
            label = "FLAGGED" if case.is_valid else ("EXTRA  " if strict else "extra  ")
            out.append(
                f"{label} {case.rel}:{hit.line}: found {hit.op}/{hit.rule}    "
                f"{case.source_line(hit.line)}"
            )
    return "\n".join(out)


def failed(results: Sequence[CaseResult], strict: bool = False) -> bool:
    if strict:
        return not all(r.passed for r in results)
    return not all(r.acceptable for r in results)


def run(results: Sequence[CaseResult], strict: bool = False, details: bool = True) -> str:
    total = overall(results)
    parts = [
        f"numcheck corpus: {len(results)} files "
        f"({total.invalid_files} INVALID, {total.valid_files} VALID), "
        f"{total.expected} expected findings",
        "",
        format_table("group", tally_by_group(results), total),
        "",
        format_table(
            "rule",
            {
                k: v
                for k, v in tally_by_rule(results).items()
                if v.expected or v.found or v.valid_files
            },
        ),
        "",
        f"snippets: INVALID with every expectation found "
        f"{total.invalid_complete}/{total.invalid_files}; VALID silent "
        f"{total.valid_silent}/{total.valid_files}; exact "
        f"{sum(r.passed for r in results)}/{len(results)}; scan errors {total.errors}",
        f"overall: precision {_pct(total.precision).strip()}, recall {_pct(total.recall).strip()}",
        f"candidates (not scored: the dynamic pass's to prove, never shown unconfirmed): "
        f"{sum(len(r.candidates) for r in results)}, of which in VALID files "
        f"{sum(len(r.candidates) for r in results if r.case.is_valid)}",
    ]
    if details:
        text = format_details(results, strict)
        if text:
            parts += ["", text]
    return "\n".join(parts)


def to_json(results: Sequence[CaseResult]) -> dict[str, Any]:
    return {
        "overall": overall(results).to_json(),
        "groups": {k: v.to_json() for k, v in tally_by_group(results).items()},
        "rules": {k: v.to_json() for k, v in tally_by_rule(results).items()},
        "files": [
            {
                "path": r.case.rel,
                "kind": r.case.kind,
                "error": r.error,
                "passed": r.passed,
                "missing": [vars(e) for e in r.comparison.missing],
                "unexpected": [vars(f) for f in r.comparison.unexpected],
            }
            for r in results
        ],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.corpus",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="corpus directory")
    parser.add_argument(
        "--group", action="append", choices=GROUPS, help="only these groups (repeatable)"
    )
    parser.add_argument(
        "--strict", action="store_true", help="also fail on extra findings in INVALID files"
    )
    parser.add_argument(
        "--no-details", action="store_true", help="do not list each missed or unexpected finding"
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)

    try:
        cases = load_corpus(args.corpus)
    except CorpusError as exc:
        print(f"corpus error: {exc}", file=sys.stderr)
        return 2
    if args.group:
        cases = [c for c in cases if c.group in args.group]
    if not cases:
        print("no corpus files", file=sys.stderr)
        return 2
    try:
        scan_source = load_scanner()
    except ImportError as exc:
        print(f"cannot import analyzers.static.scan_source: {exc}", file=sys.stderr)
        return 2

    results = [scan_case(case, scan_source) for case in cases]
    print(run(results, strict=args.strict, details=not args.no_details))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(to_json(results), indent=2), encoding="utf-8")
    return 1 if failed(results, strict=args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
