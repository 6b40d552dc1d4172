"""Validated fixes applied to files: `numcheck review --fix` (the working tree) and `--diff`
(one unified diff).

Each fix carries the original text of its lines and their replacement (`start_line..end_line`,
see patch.py), plus the imports it needs. Several fixes in one file are applied one after
another: each is re-located after the previous ones (at its line shifted by what they added or
removed, else at the nearest place its original lines still stand), and a fix whose lines are
no longer there is skipped with the reason. Imports go after the last top-level import. The
result must still parse.

`write_fixes` refuses, with a message, a head that is not the checked-out commit and a file with
uncommitted changes: the fixes were validated against the head's text.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzers.fix.patch import unified_diff
from analyzers.model import Finding


@dataclass
class FileFixes:
    path: str
    before: str
    after: str
    applied: list[str] = field(default_factory=list)  # fingerprints
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (fingerprint, why)

    @property
    def diff(self) -> str:
        return unified_diff(self.path, self.before, self.after) if self.after != self.before else ""


class FixRefused(Exception):
    """The working tree cannot take the fixes (the message says why)."""


def validated(findings: Iterable[Finding]) -> list[Finding]:
    """Findings with a validated fix that has text to apply."""
    return [
        f
        for f in findings
        if isinstance(f.fix, dict)
        and f.fix.get("status") == "validated"
        and isinstance(f.fix.get("original"), str)
        and _replacement(f.fix) is not None
        and isinstance(f.fix.get("start_line"), int)
    ]


def _replacement(fix: dict[str, Any]) -> str | None:
    value = fix.get("replacement")
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return "".join(line + "\n" for line in value)
    return value if isinstance(value, str) else None


def _locate(lines: list[str], block: list[str], expected: int) -> int | None:
    """0-based index where `block` stands in `lines`: at `expected` if it is there, else the
    nearest occurrence."""
    n = len(block)
    if 0 <= expected <= len(lines) - n and lines[expected : expected + n] == block:
        return expected
    found = [i for i in range(len(lines) - n + 1) if lines[i : i + n] == block]
    return min(found, key=lambda i: abs(i - expected)) if found else None


def _add_imports(text: str, statements: Sequence[str]) -> str:
    """Each statement not already in the file, after the last top-level import (else after
    the module docstring)."""
    lines = text.splitlines(keepends=True)
    present = {line.strip() for line in lines}
    missing = [s for s in statements if s.strip() not in present]
    if not missing:
        return text
    index = 0
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                index = node.end_lineno or node.lineno
        if (
            index == 0
            and tree.body
            and isinstance(tree.body[0], ast.Expr)
            and isinstance(tree.body[0].value, ast.Constant)
            and isinstance(tree.body[0].value.value, str)
        ):
            index = tree.body[0].end_lineno or 1
    if index and index <= len(lines) and not lines[index - 1].endswith("\n"):
        lines[index - 1] += "\n"
    return "".join(lines[:index] + [s.rstrip("\n") + "\n" for s in missing] + lines[index:])


def apply_to_source(path: str, source: str, findings: Sequence[Finding]) -> FileFixes:
    """The validated fixes of `findings` (all in `path`) applied to `source` in line order."""
    out = FileFixes(path, source, source)
    lines = source.splitlines(keepends=True)
    offset = 0
    imports: list[str] = []
    for finding in sorted(validated(findings), key=lambda f: (f.fix or {})["start_line"]):
        fix = finding.fix or {}
        block = str(fix["original"]).splitlines(keepends=True)
        replacement = (_replacement(fix) or "").splitlines(keepends=True)
        at = _locate(lines, block, int(fix["start_line"]) - 1 + offset) if block else None
        if at is None:
            out.skipped.append(
                (
                    finding.fingerprint,
                    f"the lines of the fix for {finding.op} "
                    f"at line {finding.line} are no longer "
                    "in the file",
                )
            )
            continue
        lines[at : at + len(block)] = replacement
        offset += len(replacement) - len(block)
        imports += [s for s in fix.get("imports") or [] if isinstance(s, str)]
        out.applied.append(finding.fingerprint)
    text = "".join(lines)
    if imports:
        text = _add_imports(text, list(dict.fromkeys(imports)))
    try:
        ast.parse(text)
    except SyntaxError as exc:
        out.skipped += [(fp, f"the fixes together do not parse: {exc}") for fp in out.applied]
        out.applied = []
        return out
    out.after = text
    return out


def by_path(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = {}
    for finding in validated(findings):
        grouped.setdefault(str((finding.fix or {}).get("path") or finding.path), []).append(finding)
    return grouped


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise FixRefused(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def combined_diff(
    repo: Path, head: str, findings: Iterable[Finding]
) -> tuple[str, list[FileFixes]]:
    """One unified diff of every validated fix, against the files at `head` (read from git,
    so the working tree does not matter)."""
    files: list[FileFixes] = []
    for path, group in sorted(by_path(findings).items()):
        source = _git(repo, "cat-file", "blob", f"{head}:{path}")
        files.append(apply_to_source(path, source, group))
    return "".join(f.diff for f in files), files


def check_head(repo: Path, head: str) -> None:
    """FixRefused unless `head` is the checked-out commit (the fixes are validated against
    the head's text, and written into the working tree)."""
    checked_out = _git(repo, "rev-parse", "HEAD").strip()
    wanted = _git(repo, "rev-parse", "--verify", f"{head}^{{commit}}").strip()
    if checked_out != wanted:
        raise FixRefused(
            f"--fix writes to the working tree, but the head reviewed "
            f"({head}, {wanted[:12]}) is not the checked-out commit "
            f"({checked_out[:12]}); check it out first, or use --diff"
        )


def write_fixes(repo: Path, head: str, findings: Iterable[Finding]) -> list[FileFixes]:
    """Write the validated fixes into the working tree of `repo`. Refuses (FixRefused) when
    `head` is not the checked-out commit; a file with uncommitted changes is left alone and
    reported in `skipped`."""
    root = Path(_git(repo, "rev-parse", "--show-toplevel").strip())
    check_head(repo, head)
    files: list[FileFixes] = []
    for path, group in sorted(by_path(findings).items()):
        status = _git(root, "status", "--porcelain", "--", path)
        if status.strip():
            fixes = FileFixes(path, "", "")
            fixes.skipped = [
                (
                    f.fingerprint,
                    f"{path} has uncommitted changes; commit or "
                    "stash them first, the fix was validated "
                    "against the committed text",
                )
                for f in group
            ]
            files.append(fixes)
            continue
        files.append(fix_file(root / path, path, group))
    return files


def fix_file(target: Path, path: str, findings: Iterable[Finding]) -> FileFixes:
    """Apply the validated fixes of `findings` (all in `path`) to the file `target` as it is
    on disk, one after another; the file is rewritten only when something changed."""
    with open(target, encoding="utf-8", newline="") as handle:  # keep CRLF as it is
        source = handle.read()
    fixes = apply_to_source(path, source, list(findings))
    if fixes.after != source:
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(fixes.after)
    return fixes
