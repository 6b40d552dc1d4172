"""`analyze()`: the static pass, then the dynamic pass in a sandboxed runner: the one pipeline
every front end (CLI, Action, App, pre-commit) calls.

It lives in `runners/` as it needs a runner (docs/architecture.md: imports run bot -> runners ->
analyzers). A failing dynamic stage is recorded in `errors` and never costs the static
findings.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from analyzers.config import SCRIPT_RUN_SECONDS, Config
from analyzers.dynamic.layout import PACKAGING_FILES, source_roots
from analyzers.dynamic.loading import is_program
from analyzers.model import AnalysisResult, Finding, StageError
from analyzers.pipeline import analyze_diff, scan_paths
from analyzers.trust import proving_order
from runners.base import Runner, RunResult
from runners.declared import Declared, declared_requirements
from runners.dependencies import DependencyError, Environment, prepare
from runners.keras_generation import KerasChoice, keras_for
from runners.local import LocalRunner
from runners.trusted import trusted_fix, trusted_reproducer, trusted_trigger

# building the entry, minimising, and the reproducer run (the first one starts the warm
# interpreter, which imports torch: seconds on a loaded 2-core machine) on top of the search
# budget
FINDING_SECONDS_SLACK = 45.0
SCRIPT_RUNS_SLACK = 3  # script mode: the recording run, localising and the reproducer's run
# The fix stage per confirmed finding: candidates' reproducer runs (a script each) and
# the search re-run with its budget on the patched lines of each candidate that gets that far
# (in script mode with the script's runs too: a loaded 2-core CI machine took over 39 s for
# a fix whose stage takes 15 s unloaded).
FIX_SECONDS_SLACK = 30.0
FIX_SEARCH_RUNS = 3


def default_runner() -> Runner:
    """The runner of the command line and of a call without one: the hardened local runner
    (looked up when called, so a test can put its own in its place)."""
    return LocalRunner()


def analyze(
    repo_dir: Path,
    base_ref: str | None,
    head_ref: str | None,
    config: Config,
    runner: Runner | None = None,
    selected: Callable[[str], bool] | None = None,
) -> AnalysisResult:
    """`selected`: a predicate on repository-relative paths (the Action's `paths` input);
    findings and file errors elsewhere are dropped before the dynamic pass spends time."""
    result = analyze_diff(repo_dir, base_ref, head_ref, config)
    if selected is not None:
        keep_paths(result, selected)
    if config.dynamic and result.findings and result.head:
        confirm(Path(repo_dir), result, config, runner or default_runner())
    return result


def keep_paths(result: AnalysisResult, selected: Callable[[str], bool]) -> None:
    result.findings = [f for f in result.findings if selected(f.path)]
    result.errors = [e for e in result.errors if e.path is None or selected(e.path)]


def scan(
    paths: list[Path],
    config: Config,
    root: Path,
    runner: Runner | None = None,
    whole_root: bool = True,
) -> AnalysisResult:
    """`numcheck scan`: whole files; the dynamic pass runs on a copy of the Python files
    under `root` (the code the findings import), or of `paths` alone when `whole_root` is
    False (files outside the working directory: their folder may be /tmp or a home)."""
    result = scan_paths(paths, config, root)
    if config.dynamic and result.findings:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="numcheck-scan-") as workspace:
            try:
                _copy_python_tree([root] if whole_root else paths, root, Path(workspace), config)
            except OSError as exc:
                result.errors.append(StageError("dynamic", f"could not copy {root}: {exc}"))
            else:
                runner = runner or default_runner()
                checkout = root if whole_root else Path(workspace)
                declared = read_declared(checkout, config)
                environment = dependencies(checkout, config, runner, result, None, declared)
                keras = keras_for(checkout, config.keras, commit_time(root, "HEAD"), declared)
                job = _job(
                    Path(workspace), result.findings, config, result.repo, environment, keras
                )
                sources = _sources(Path(workspace), result.findings)
                roots = source_roots(Path(workspace))
                _merge(
                    result,
                    runner.run(job, timeout=config.dynamic_timeout),
                    sources,
                    job.get("script"),
                    roots,
                )
                name_missing(result, environment)
        result.timings["dynamic"] = round(time.perf_counter() - started, 4)
    return result


def _copy_python_tree(sources: list[Path], root: Path, into: Path, config: Config) -> None:
    """The selected Python files of `sources` (files, or folders walked) under `root`, at
    their paths relative to it, and the root's packaging files when the root is copied.
    The workspace is never copied into itself, however the sources enclose it."""
    root, target_root = root.resolve(), into.resolve()
    for source in (Path(s).resolve() for s in sources):
        files = sorted(source.rglob("*.py")) if source.is_dir() else [source]
        for path in files:
            path = path.resolve()
            if (
                path.is_relative_to(target_root)
                or not path.is_relative_to(root)
                or not path.is_file()
            ):
                continue
            rel = path.relative_to(root).as_posix()
            if config.path_selected(rel):
                target = into / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(path.read_bytes())
    for name in PACKAGING_FILES:  # where its packages live (a `src/` layout)
        packaging = root / name
        if (
            root in [Path(s).resolve() for s in sources]
            and packaging.is_file()
            and not packaging.is_symlink()
        ):
            (into / name).write_bytes(packaging.read_bytes())


def confirm(repo_dir: Path, result: AnalysisResult, config: Config, runner: Runner) -> None:
    """Run the dynamic pass on the head commit, exported to a private workspace."""
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="numcheck-head-") as workspace:
            left_out = export(repo_dir, result.head or "HEAD", Path(workspace))
            if left_out:
                result.errors.append(StageError("dynamic", _left_out_sentence(left_out)))
            committed = commit_time(repo_dir, result.head or "HEAD")
            declared = read_declared(Path(workspace), config)
            environment = dependencies(Path(workspace), config, runner, result, committed, declared)
            keras = keras_for(Path(workspace), config.keras, committed, declared)
            job = _job(Path(workspace), result.findings, config, result.repo, environment, keras)
            sources = _sources(Path(workspace), result.findings)  # before the PR's code runs
            roots = source_roots(Path(workspace))
            run = runner.run(job, timeout=config.dynamic_timeout)
            _merge(result, run, sources, job.get("script"), roots)
            name_missing(result, environment)
    except (OSError, subprocess.CalledProcessError, ExportError) as exc:
        result.errors.append(StageError("dynamic", f"could not prepare the workspace: {exc}"))
    result.timings["dynamic"] = round(time.perf_counter() - started, 4)


def read_declared(checkout: Path, config: Config) -> Declared | None:
    """What the checkout declares, read once for the two steps that need it: the dependency
    install and the Keras choice (`keras = "auto"`). None when neither does, or when it
    cannot be read: each step then reads it itself and fails the way it does."""
    if not config.dependencies and config.keras != "auto":
        return None
    try:
        return declared_requirements(checkout)
    except (OSError, ValueError):
        return None


def dependencies(
    checkout: Path,
    config: Config,
    runner: Runner,
    result: AnalysisResult,
    as_of: datetime | None = None,
    declared: Declared | None = None,
) -> Environment:
    """The checkout's declared dependencies, installed for the run (runners/dependencies.py)
    as of the reviewed commit's time; a failure costs the findings that need a missing
    package, never the run. `declared`: what the checkout declares, if read already."""
    if not config.dependencies:
        return Environment()
    started = time.perf_counter()
    try:
        environment = prepare(
            checkout, getattr(runner, "python", None), as_of=as_of, declared=declared
        )
    except (DependencyError, OSError) as exc:
        result.errors.append(StageError("dependencies", f"not installed: {exc}"))
        return Environment()
    result.timings["dependencies"] = round(time.perf_counter() - started, 4)
    if environment.failed:
        result.errors.append(StageError("dependencies", environment.failed_sentence()))
    return environment


def name_missing(result: AnalysisResult, environment: Environment) -> None:
    """A finding that could not import a module is told which declared dependencies could not
    be installed: the reader then knows what to add to the sandbox's image."""
    if not environment.failed:
        return
    for finding in result.findings:
        if finding.status == "error" and finding.error and "No module named" in finding.error:
            finding.error += f" ({environment.failed_sentence()})"


# What the dynamic pass exports of the head: a file above FILE_BUDGET that is not Python is
# left out (a dataset or a checkpoint committed to the repository), and the export stops past
# HEAD_BUDGET. Files are read one at a time from git's object store, so memory does not grow
# with the head, and a blob the clone lacks (a partial or shallow clone, a large file a
# mirror left out) costs that file, not the whole dynamic pass.
FILE_BUDGET = 64 * 2**20
HEAD_BUDGET = 512 * 2**20
CHUNK = 1 << 16


class ExportError(Exception):
    """The head cannot be exported within the budget."""


def commit_time(repo_dir: Path, ref: str) -> datetime | None:
    """When `ref` was committed (the committer's time, with its offset); None when git cannot
    say. The dependency step resolves an old commit's requirements as of then."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo_dir), "log", "-1", "--format=%cI", "--end-of-options", ref],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return datetime.fromisoformat(proc.stdout.strip()) if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def export(
    repo_dir: Path,
    ref: str,
    into: Path,
    file_budget: int = FILE_BUDGET,
    head_budget: int = HEAD_BUDGET,
) -> list[tuple[str, str]]:
    """The head's committed files written into `into` (no .git, no local changes), as
    `git archive` would. Returns (path, why) for each file left out: too large, or missing
    from the clone."""
    listing = subprocess.run(
        ["git", "-C", str(repo_dir), "ls-tree", "-r", "-l", "-z", ref],
        check=True,
        capture_output=True,
    ).stdout
    wanted: list[tuple[str, str, Path, bool]] = []  # (sha, path, target, executable)
    left_out: list[tuple[str, str]] = []
    total = 0
    for entry in filter(None, listing.split(b"\0")):
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, sha, size = meta.decode().split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind != "blob" or mode == "120000":  # submodules and symbolic links stay out
            continue
        parts = Path(path).parts
        if Path(path).is_absolute() or ".." in parts:
            continue
        if not size.isdigit():  # git could not read the blob to size it
            left_out.append((path, "missing from the clone"))
            continue
        if int(size) > file_budget and not path.endswith(".py"):
            left_out.append((path, f"{int(size) / 2**20:.0f} MiB"))
            continue
        total += int(size)
        if total > head_budget:
            raise ExportError(
                f"the head's files pass {head_budget // 2**20} MiB; the dynamic "
                "pass does not export it"
            )
        wanted.append((sha, path, into.joinpath(*parts), mode == "100755"))
    if wanted:
        left_out += _write_blobs(repo_dir, wanted)
    return left_out


def _write_blobs(
    repo_dir: Path, wanted: list[tuple[str, str, Path, bool]]
) -> list[tuple[str, str]]:
    """Each blob through one `git cat-file --batch`, copied to its file in chunks."""
    missing: list[tuple[str, str]] = []
    proc = subprocess.Popen(
        ["git", "-C", str(repo_dir), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    feeder = threading.Thread(
        target=_feed_shas, args=(proc.stdin, [w[0] for w in wanted]), daemon=True
    )
    feeder.start()
    try:
        for _, path, target, executable in wanted:
            header = proc.stdout.readline().decode().split()
            if len(header) != 3 or header[1] != "blob":
                missing.append((path, "missing from the clone"))
                continue
            left = int(header[2])
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                while left:
                    chunk = proc.stdout.read(min(CHUNK, left))
                    if not chunk:
                        raise OSError("git cat-file ended early")
                    out.write(chunk)
                    left -= len(chunk)
            proc.stdout.read(1)  # the newline after each object
            if executable:
                target.chmod(0o755)
    except BaseException:
        proc.kill()
        raise
    finally:
        proc.stdout.close()
        if proc.wait(timeout=30) != 0 and not missing:
            raise subprocess.CalledProcessError(proc.returncode, "git cat-file --batch")
        feeder.join(timeout=5)
    return missing


def _feed_shas(stdin: IO[bytes], shas: list[str]) -> None:
    """The object names, written beside the reader so neither pipe fills up."""
    try:
        for sha in shas:
            stdin.write(f"{sha}\n".encode())
        stdin.close()
    except (BrokenPipeError, ValueError):
        pass


def _left_out_sentence(left_out: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{path} ({why})" for path, why in left_out[:5])
    more = f" and {len(left_out) - 5} more" if len(left_out) > 5 else ""
    return (
        f"left out of the sandbox's copy (non-Python files over {FILE_BUDGET // 2**20} "
        f"MiB, or blobs the clone lacks): {shown}{more}; code that reads them will fail "
        "there"
    )


def _job(
    workspace: Path,
    findings: list[Finding],
    config: Config,
    repository: str = "",
    environment: Environment | None = None,
    keras: KerasChoice | None = None,
) -> dict[str, Any]:
    site = environment.site if environment is not None else None
    programs = any(is_program(workspace / path) for path in {f.path for f in findings})
    # a flagged file that does work at import runs as a script with the default limit when no
    # script is configured (runners/harness.py)
    script_runs = SCRIPT_RUNS_SLACK * (
        config.script["run_seconds"] if config.script else SCRIPT_RUN_SECONDS if programs else 0.0
    )
    return {
        "repo": str(workspace),
        # the declared dependencies' folder, appended to the job's sys.path (read-only)
        "dependencies": os.path.realpath(site) if site is not None else None,
        # the code under review before candidates and tests, files in turn (one wall clock)
        "findings": [f.to_json() for f in proving_order(findings)],
        "entries": [dict(e) for e in config.entries],
        "seed": config.seed,
        "harvest": config.harvest,
        "harvest_seconds": config.harvest_seconds,
        "device": config.device,
        "search_seconds": config.search_seconds,
        # the Keras `tf.keras` is for the PR's code: "2" runs it on tf_keras (keras_generation)
        "keras": keras.version if keras else "2" if config.keras == "2" else "3",
        # search again in bfloat16/float16 what float32 found nothing for (precision.py)
        "low_precision": config.low_precision,
        "script": _script_job(config),
        # each stage's own limit: the float32 search, and the precision pass's search again
        "finding_timeout": config.search_seconds + FINDING_SECONDS_SLACK + script_runs,
        "fix": config.fix,
        # each candidate that gets as far as the search re-runs the script like a finding does
        "fix_timeout": FIX_SECONDS_SLACK + FIX_SEARCH_RUNS * (config.search_seconds + script_runs),
        # read by the Docker runner, which picks the image; never by the PR's code
        "runner_image": config.runner_image,
        "repository": repository,
    }


def _script_job(config: Config) -> dict[str, Any] | None:
    """Script mode's settings as plain JSON (the job crosses a process boundary)."""
    return None if config.script is None else config.to_json()["script"]


def _sources(workspace: Path, findings: list[Finding]) -> dict[str, str]:
    """The flagged files as exported, read before the sandbox (which may write the
    checkout) runs: what trusted fixes are made from (runners/trusted.py)."""
    sources = {}
    for path in {f.path for f in findings}:
        try:
            sources[path] = (workspace / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return sources


def _merge(
    result: AnalysisResult,
    run: RunResult,
    sources: dict[str, str],
    script: dict[str, Any] | None = None,
    roots: tuple[str, ...] = (),
) -> None:
    """The run's records onto the findings they name (`script`: the job's script settings,
    what a script reproducer may run; `roots`: the checkout's source roots, read before its
    code ran)."""
    by_fingerprint = {f.fingerprint: f for f in result.findings}
    for record in run.records:
        finding = by_fingerprint.get(record.get("fingerprint", ""))
        if finding is None:
            continue
        if record.get("stage") == "fix":  # the fix stage's line, after the confirmation's
            if isinstance(record.get("fix"), dict):
                finding.fix = trusted_fix(record["fix"], finding, sources.get(finding.path))
                seconds = record["fix"].get("seconds")
                if isinstance(seconds, int | float) and seconds >= 0:  # part of "dynamic"
                    result.timings["fix"] = round(result.timings.get("fix", 0.0) + seconds, 4)
            continue
        if record.get("stage") == "precision" and record.get("status") == "error":
            # the second search, in low precision, failed: the float32 verdict stands
            finding.error = f"the mixed-precision search did not finish: {record.get('error')}"
            continue
        # a precision record (the search again in low precision) replaces the float32 one
        finding.status = record.get("status", finding.status)
        if isinstance(record.get("trigger"), dict):
            finding.trigger = {**trusted_trigger(record["trigger"]), "box": record.get("box")}
        elif record.get("box") is not None:
            finding.trigger = {"box": record["box"]}
        finding.error = record.get("error")
        finding.reproducer, refused = trusted_reproducer(record, finding, script, roots)
        if refused is not None:  # no reproducer numcheck can write: not proven
            finding.status = "potential"
            finding.error = refused
    for warning in run.warnings:  # a protection this machine could not give: say so
        result.errors.append(StageError("dynamic", f"sandbox: {warning}"))
    if run.outcome != "ok":
        done = {r.get("fingerprint") for r in run.records}
        for finding in result.findings:
            if finding.fingerprint not in done:
                finding.status = "error"
                finding.error = f"{run.outcome}: {run.reason}"
        result.errors.append(
            StageError(
                "dynamic",
                f"{run.outcome}: {run.reason}"
                + (f"; stderr: {run.stderr[-500:]}" if run.stderr else ""),
            )
        )
