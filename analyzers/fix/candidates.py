"""Candidate fixes for one finding, in the order they should be tried.

    candidates(source, FixRequest.from_finding(finding)) -> [Candidate, ...]

Each candidate is the whole patched file (for the sandbox to validate), the same file without
the imports it adds (for the suggestion block), and its `Patch`. Candidates come in developers'
order (docs/numerics.md, the issue): a fused stable API, the pattern's own fix (double `where`,
masked fill with finfo.min), an epsilon sized for the dtype, a clamp from the op's invalid
domain, a `where`. The first one the validation accepts is the one suggested.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import libcst as cst

from analyzers.catalogue import FixKind
from analyzers.config import Config
from analyzers.fix.kinds import edits_for, rank
from analyzers.fix.patch import Patch, make_patch
from analyzers.fix.site import Edit, FixRequest, Site, parse_site
from analyzers.static import scan_source

# Fixes are suggested only once validated, and the sandbox runs PyTorch and TensorFlow code.
FRAMEWORKS = ("torch", "tensorflow")


@dataclass(frozen=True)
class Candidate:
    kind: FixKind
    name: str
    description: str
    source: str  # the patched file, imports included: what the sandbox runs
    patch: Patch
    watch: tuple[str, ...]  # risky ops left on the patched lines (the re-search watches them)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "description": self.description,
            "watch": list(self.watch),
            "patch": self.patch.to_json(),
        }


def add_imports(module: cst.Module, statements: tuple[str, ...]) -> cst.Module:
    """After the last top-level import (else after the docstring and __future__ imports)."""
    if not statements:
        return module
    body = list(module.body)
    index = 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body
        ):
            index = i + 1
    if (
        index == 0
        and body
        and isinstance(body[0], cst.SimpleStatementLine)
        and isinstance(body[0].body[0], cst.Expr)
        and isinstance(body[0].body[0].value, cst.SimpleString)
    ):
        index = 1
    new = [cst.parse_statement(s + "\n") for s in statements]
    return module.with_changes(body=body[:index] + new + body[index:])


def apply(module: cst.Module, edit: Edit) -> tuple[str, str]:
    """(rewritten, rewritten with imports)."""
    rewritten = module.deep_replace(edit.old, edit.new)
    assert isinstance(rewritten, cst.Module)
    return rewritten.code, add_imports(rewritten, edit.imports).code


MAX_SIBLINGS = 4


def _span(start: tuple[int, int], text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (line, column) range `text` covers when written at `start`."""
    lines = text.split("\n")
    end_column = (start[1] if len(lines) == 1 else 0) + len(lines[-1])
    return start, (start[0] + len(lines) - 1, end_column)


def _start(site: Site, node: cst.CSTNode, request: FixRequest) -> tuple[int, int]:
    """Where `node` starts in the file the site parsed (an edit's text starts there too)."""
    where = site.positions.get(node)
    return (
        (where.start.line, where.start.column)
        if where is not None
        else (request.line, request.column)
    )


def _siblings(
    rewritten: str, edit: Edit, start: tuple[int, int], request: FixRequest, strict: bool
) -> tuple[str, tuple[str, ...]]:
    """The same edit applied to the other calls of the op on the finding's lines.

    The static pass reports one finding per line and op, so `digamma(s) - digamma(a)` or
    `log(-log(u))` is one finding with two calls; a fix of one leaves the line as dangerous as
    before (the search and the static check would reject it). A sibling is a call the static
    pass flags on the patched file, with the finding's op and lines, that does not start
    inside the text an edit wrote (an edit keeps its node's start: a fixed call flagged again
    is never fixed twice, an outer call around it is fixed too)."""
    imports = list(edit.imports)
    written = [_span(start, cst.Module([]).code_for_node(edit.new))]
    for _ in range(MAX_SIBLINGS):
        scan = scan_source(rewritten, request.path, Config(dtype=request.dtype))
        sibling = next(
            (
                f
                for f in scan.findings
                if f.op == request.op
                and request.line <= f.line <= request.end_line
                and not any(lo <= (f.line, f.column) < hi for lo, hi in written)
            ),
            None,
        )
        if sibling is None:
            break
        sub = replace(FixRequest.from_finding(sibling), dtype=request.dtype)
        try:
            site = parse_site(rewritten, sub)
        except (LookupError, cst.ParserSyntaxError, SyntaxError):
            break
        same = next(
            (e for e in edits_for(site, strict) if (e.kind, e.name) == (edit.kind, edit.name)), None
        )
        if same is None:
            break
        changed = site.module.deep_replace(same.old, same.new)
        assert isinstance(changed, cst.Module)
        if changed.code == rewritten:
            break
        rewritten = changed.code
        written.append(_span(_start(site, same.old, sub), cst.Module([]).code_for_node(same.new)))
        imports += [i for i in same.imports if i not in imports]
    return rewritten, tuple(imports)


def candidates(source: str, request: FixRequest, strict: bool = False) -> list[Candidate]:
    """Every candidate that applies, best first; [] when the finding's node is not found.
    `strict`: a transform that crashes raises instead of being skipped (for the tests)."""
    if request.framework not in FRAMEWORKS:
        return []
    try:
        site = parse_site(source, request)
    except (LookupError, cst.ParserSyntaxError, SyntaxError):
        return []
    edits = edits_for(site, strict)
    # stable APIs first; pattern fixes (double where, masked fill) next; then eps/clamp/where
    ordered = sorted(enumerate(edits), key=lambda item: (rank(item[1].kind, item[1].name), item[0]))
    out: list[Candidate] = []
    seen: set[str] = set()
    for _, edit in ordered:
        try:
            rewritten, _ = apply(site.module, edit)
            rewritten, imports = _siblings(
                rewritten, edit, _start(site, edit.old, request), request, strict
            )
            full = add_imports(cst.parse_module(rewritten), imports).code
            cst.parse_module(full)
        except (cst.ParserSyntaxError, ValueError):
            continue
        if full == source or full in seen:
            continue
        seen.add(full)
        patch = make_patch(
            request.path,
            source,
            rewritten,
            full,
            line=request.line,
            end_line=request.end_line,
            kind=edit.kind,
            name=edit.name,
            description=edit.description,
            imports=imports,
        )
        out.append(Candidate(edit.kind, edit.name, edit.description, full, patch, edit.watch))
    return out


def first_of_kind(
    source: str, request: FixRequest, kind: str, strict: bool = False
) -> Candidate | None:
    return next((c for c in candidates(source, request, strict) if c.kind == kind), None)
