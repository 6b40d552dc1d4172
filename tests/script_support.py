"""Shared by the script-mode tests (PyTorch and TensorFlow): a script written to a temporary
folder, the lines of its op (marked `# the op`), and the script entry built on it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from analyzers.dynamic.script import ScriptConfig, ScriptEntry, build_script_entry

LOADED_MACHINE_RUN_SECONDS = 60.0


def line_of(text: str, line: str) -> int:
    return text.splitlines().index(line) + 1


def make_script(root: Path, body: str, name: str = "run.py") -> tuple[Path, str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(textwrap.dedent(body), encoding="utf-8")
    return root, name


def op_line(root: Path, name: str, marker: str = "# the op") -> frozenset[int]:
    lines = (root / name).read_text(encoding="utf-8").splitlines()
    return frozenset(i + 1 for i, line in enumerate(lines) if marker in line)


def build(
    root: Path, name: str, op: str = "log", framework: str = "torch", **settings: object
) -> ScriptEntry:
    """The entry of `name`'s run (its `args`, then the ScriptConfig `settings`), seed 0.

    The per-run limit defaults to a minute, not the product's 10 s: a fresh-clone CI run on a
    loaded 2-core machine once took over 10 s to import torch and reach line 10 of a 20-line
    script. A test that is about the limit sets its own."""
    settings.setdefault("run_seconds", LOADED_MACHINE_RUN_SECONDS)
    config = ScriptConfig((name, *settings.pop("args", ())), **settings)  # type: ignore[arg-type]
    return build_script_entry(root, config, name, op_line(root, name), op, 0, framework)
