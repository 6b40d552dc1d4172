"""The import contract: `bot` -> `runners` -> `analyzers`, and no import cycle.

Every import counts, including those inside functions and under `TYPE_CHECKING`: a lazy import
hides a cycle from the interpreter, not from the next reader. Two modules that need the same
thing get it from a third (docs/architecture.md names the seams).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"analyzers": 0, "runners": 1, "bot": 2}  # a module may import its own layer or lower


def _modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports anywhere in its text."""

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [f"{base}.{alias.name}" for alias in node.names]
            edges[name] |= {t for t in map(owner, targets) if t is not None and t != name}
    return edges


def _cycles(edges: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def test_imports_run_from_bot_to_runners_to_analyzers() -> None:
    edges = _imports(_modules())
    upward = sorted(
        f"{source} imports {target}"
        for source, targets in edges.items()
        for target in targets
        if LAYERS[target.split(".")[0]] > LAYERS[source.split(".")[0]]
    )
    assert upward == []


def test_no_import_cycle() -> None:
    cycles = sorted(sorted(c) for c in _cycles(_imports(_modules())))
    assert cycles == [], "an import cycle: move what both sides need into a third module"


def test_the_cycle_finder_finds_lazy_and_type_only_cycles(tmp_path: Path) -> None:
    """The check itself: a cycle closed by an import inside a function, or under
    TYPE_CHECKING, still counts; a one-way import does not."""
    files = {
        "analyzers/__init__.py": "",
        "analyzers/a.py": "from analyzers import b\n",
        "analyzers/b.py": "def f():\n    from analyzers.c import g\n",
        "analyzers/c.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
        ),
        "analyzers/d.py": "import analyzers.a\n",
    }
    modules = {}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
        modules[".".join(Path(rel).with_suffix("").parts).removesuffix(".__init__")] = (
            tmp_path / rel
        )
    assert _cycles(_imports(modules)) == {frozenset({"analyzers.a", "analyzers.b", "analyzers.c"})}
