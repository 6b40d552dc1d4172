"""`analyze_diff(repo_dir, base_ref, head_ref, config)`: the static pass over a diff, and
`scan_paths` over whole files. Front ends do not call these directly: they call
`runners.pipeline.analyze` / `scan`, which add the dynamic pass (it needs a runner, so the
whole pipeline lives one layer up).

`analyze_diff` reads files at the head commit straight from git (no checkout needed), scopes
findings to the lines the diff adds, and records a per-file error for anything it cannot
analyse. A stage that fails is recorded in `errors`; what earlier stages found stays in the
result.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from analyzers import __version__
from analyzers.config import Config
from analyzers.diffscope import (
    ChangedFile,
    DiffError,
    changed_lines,
    default_branch_base,
    read_file_at,
    resolve_ref,
)
from analyzers.model import AnalysisResult, StageError
from analyzers.static import FileScan, scan_bytes


def analyze_diff(
    repo_dir: Path, base_ref: str | None, head_ref: str | None, config: Config
) -> AnalysisResult:
    """Review the diff base...head of a local git checkout. Raises DiffError only when the
    diff itself cannot be computed (unknown ref, not a repository): nothing to report then."""
    repo_dir = Path(repo_dir)
    head_ref = head_ref or "HEAD"
    started = time.perf_counter()
    base_ref = base_ref or default_branch_base(repo_dir)
    base_sha, head_sha = resolve_ref(repo_dir, base_ref), resolve_ref(repo_dir, head_ref)
    changed = changed_lines(
        repo_dir, base_sha, head_sha, mode=config.scope, context=config.context_lines
    )
    result = AnalysisResult(
        repo=str(repo_dir.resolve()),
        base=base_sha,
        head=head_sha,
        config=config.to_json(),
        tool_version=__version__,
    )
    result.timings["diff"] = round(time.perf_counter() - started, 4)
    started = time.perf_counter()
    try:
        _static_stage(repo_dir, head_sha, changed.values(), config, result)
    except (DiffError, OSError) as exc:  # keep whatever files were done
        result.errors.append(StageError("static", f"static pass stopped: {exc}"))
    result.timings["static"] = round(time.perf_counter() - started, 4)
    return result


def _static_stage(
    repo_dir: Path,
    head_sha: str,
    changed: Iterable[ChangedFile],
    config: Config,
    result: AnalysisResult,
) -> None:
    for item in sorted(changed, key=lambda c: c.path):
        if not config.path_selected(item.path):
            continue
        if item.status == "deleted":
            result.errors.append(
                StageError("static", "deleted in this diff; nothing to analyse", item.path)
            )
            continue
        if item.binary:
            result.errors.append(StageError("static", "binary file; skipped", item.path))
            continue
        if not item.whole_file and not item.lines:
            continue  # a pure rename or a deletion-only change: no new lines to review
        try:
            data = read_file_at(repo_dir, head_sha, item.path)
        except DiffError as exc:
            result.errors.append(StageError("static", str(exc), item.path))
            continue
        scan = scan_bytes(data, item.path, config, None if item.whole_file else item.lines)
        _collect(scan, result)


def scan_paths(paths: Iterable[Path], config: Config, root: Path | None = None) -> AnalysisResult:
    """`numcheck scan`: whole files, no git. Directories are walked for selected .py files."""
    root = (root or Path.cwd()).resolve()
    result = AnalysisResult(
        repo=str(root), base=None, head=None, config=config.to_json(), tool_version=__version__
    )
    started = time.perf_counter()
    for path in _expand(paths, root, config, result):
        try:
            data = path.read_bytes()
        except OSError as exc:
            result.errors.append(
                StageError("static", f"cannot read: {exc.strerror}", _relative(path, root))
            )
            continue
        _collect(scan_bytes(data, _relative(path, root), config), result)
    result.timings["static"] = round(time.perf_counter() - started, 4)
    return result


def _expand(
    paths: Iterable[Path], root: Path, config: Config, result: AnalysisResult
) -> Iterable[Path]:
    for path in paths:
        path = Path(path)
        if path.is_dir():
            for child in sorted(path.rglob("*.py")):
                if config.path_selected(_relative(child, root)):
                    yield child
        elif path.exists():
            yield path
        else:
            result.errors.append(StageError("static", "no such file or directory", str(path)))


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _collect(scan: FileScan, result: AnalysisResult) -> None:
    if scan.error:
        result.errors.append(StageError("static", scan.error, scan.path))
        return
    result.files_analyzed += 1
    result.lines_analyzed += scan.lines
    result.findings.extend(scan.findings)
