"""`numcheck action`: the GitHub Action's entry point (`action.yml` runs it in a composite step).

It needs no token and calls no API, so it works the same on fork PRs: it only reads the
workspace and the event payload, prints workflow commands and writes files.

What it reviews depends on the event (GITHUB_EVENT_NAME, payload at GITHUB_EVENT_PATH):

- `pull_request`, `pull_request_target`: the PR's diff, `pull_request.base.sha`...
  `pull_request.head.sha` (three-dot, like the App; files are read from git, so the
  checked-out commit does not matter);
- `merge_group`: `merge_group.base_sha`...`merge_group.head_sha`;
- `push`: `before`...`after`, the commits pushed;
- anything else (`workflow_dispatch`, `schedule`, a new branch's first push, a force-push
  whose `before` cannot be fetched, ...): whole files, like `numcheck scan`, of `paths`
  (default: the whole workspace), with a notice saying so.

A commit the checkout lacks (the default `fetch-depth: 1`) is fetched from `origin`, and a
shallow history is deepened until the merge base is there; `fetch-depth: 0` avoids both.

Then: one workflow annotation per finding (`::warning file=...,line=...::`, escaped as GitHub
requires), the SARIF file for `github/codeql-action/upload-sarif`, the markdown report appended
to GITHUB_STEP_SUMMARY, and the outputs `findings`, `confirmed`, `errors` and `sarif` written
to GITHUB_OUTPUT. Exit status: 1 when `fail-on` says the findings fail the step, 2 when an
error stopped the run, else 0.

Inputs come from the options of `numcheck action` or, as action.yml passes them (through the
environment, never interpolated into a script), from NUMCHECK_INPUT_PATHS,
NUMCHECK_INPUT_CONFIG, NUMCHECK_INPUT_STAGES, NUMCHECK_INPUT_FAIL_ON and
NUMCHECK_INPUT_SARIF_FILE.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from analyzers import __version__
from analyzers.catalogue import KNOWN_OPS
from analyzers.config import Config, ConfigError, glob_match, load_config
from analyzers.diffscope import DiffError
from analyzers.model import AnalysisResult, Finding, StageError
from analyzers.report import render_markdown, review_body, to_sarif_text
from analyzers.report.summary import (
    plural,
    proof_sentence,
    sorted_findings,
    status_counts,
    validated_fix,
    validation_summary,
)
from analyzers.trust import comment_inline, comment_on, counts, is_credible_proof
from bot.console import dynamic_frameworks, missing_framework_hint
from bot.progress import Progress
from runners.base import Runner
from runners.local import LocalRunner
from runners.pipeline import analyze, keep_paths, scan

STAGES = ("static", "confirm")
FAIL_ON = ("none", "confirmed", "any")
INPUT_ENV = {
    "paths": "NUMCHECK_INPUT_PATHS",
    "config": "NUMCHECK_INPUT_CONFIG",
    "stages": "NUMCHECK_INPUT_STAGES",
    "fail_on": "NUMCHECK_INPUT_FAIL_ON",
    "sarif_file": "NUMCHECK_INPUT_SARIF_FILE",
}
INPUT_NAMES = {
    "paths": "paths",
    "config": "config",
    "stages": "stages",
    "fail_on": "fail-on",
    "sarif_file": "sarif-file",
}
DEFAULTS = {"stages": "static", "fail_on": "any"}
PR_EVENTS = ("pull_request", "pull_request_target")
SUMMARY_LIMIT = 1_000_000  # GitHub refuses a step summary over 1 MiB
MESSAGE_LIMIT = 4000
ZERO_SHA = re.compile(r"^0+$")
SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")
FETCH_DEPTHS = (50, 1000)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class ActionError(Exception):
    """The run cannot go on; the message says what to change."""


# ---------------------------------------------------------------- workflow commands


def escape_data(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped, so it stays one command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(
    command: str, message: str, properties: Mapping[str, object] | None = None
) -> str:
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (properties or {}).items()
        if value is not None
    )
    return f"::{command}{' ' + props if props else ''}::{escape_data(message)}"


LEVEL_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}


def _finding_message(finding: Finding) -> str:
    lines = [finding.why.strip() or f"{finding.op} can produce NaN or Inf."]
    proof = proof_sentence(finding)
    if proof:
        lines.append(f"{finding.status.capitalize()}: {proof}")
    if finding.status == "error" and finding.error and finding.error not in proof:
        lines.append(f"Analysis error: {finding.error}")
    fix = validated_fix(finding)
    if fix is not None:
        checked = validation_summary(fix)
        lines.append(
            f"Validated fix ({fix.get('kind', 'fix')}): "
            f"{fix.get('description') or 'see the step summary or the SARIF fixes'}"
            + (f" (checked: {checked})" if checked else "")
        )
    elif finding.suggestion:
        lines.append(f"Suggestion: {finding.suggestion.strip()}")
    if finding.reproducer:
        lines.append("The reproducer is in the step summary.")
    text = "\n".join(lines)
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def finding_annotation(finding: Finding, held_back: bool = False) -> str:
    """A workflow annotation; one the publishing policy holds back from inline comments
    (analyzers/trust.py) is a notice, so an unproven suspicion does not read as a warning."""
    end_line = max(finding.end_line, finding.line)
    properties: dict[str, object] = {
        "file": finding.path,
        "line": finding.line,
        "endLine": end_line,
    }
    if end_line == finding.line:  # columns only mean something on one line
        properties["col"] = finding.column + 1
        properties["endColumn"] = max(finding.end_column, finding.column) + 1
    properties["title"] = f"numcheck: {finding.op} ({finding.status})"
    level = "notice" if held_back else LEVEL_COMMAND.get(finding.severity, "warning")
    return workflow_command(level, _finding_message(finding), properties)


def error_annotation(error: StageError) -> str:
    properties: dict[str, object] = {}
    if error.path:
        properties["file"] = error.path
    properties["title"] = f"numcheck: {error.stage} stage"
    return workflow_command("warning", error.message, properties)


def workflow_annotations(result: AnalysisResult) -> list[str]:
    policy = comment_on(result.config)
    return [
        *(
            finding_annotation(f, not comment_inline(f, policy))
            for f in sorted_findings(result.findings)
        ),
        *(error_annotation(e) for e in result.errors),
    ]


# ---------------------------------------------------------------- outputs and summary


def write_outputs(path: Path, values: Mapping[str, str]) -> None:
    """GITHUB_OUTPUT in the multi-line-safe form: name<<DELIMITER, value, DELIMITER."""
    with path.open("a", encoding="utf-8") as handle:
        for name, value in values.items():
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            while delimiter in value:
                delimiter = f"ghadelimiter_{uuid.uuid4()}"
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def summary_markdown(
    result: AnalysisResult, target: Target, inputs: Inputs, sarif_path: Path | None
) -> str:
    facts = [target.description, f"stages: {inputs.stages}", f"fail-on: {inputs.fail_on}"]
    if inputs.paths:
        facts.append("paths: " + ", ".join(f"`{p}`" for p in inputs.paths))
    if sarif_path is not None:
        facts.append(f"SARIF: `{sarif_path.name}`")
    footer = f"\n\n---\n<sub>numcheck {__version__} · {' · '.join(facts)}</sub>\n"
    body = render_markdown(result)
    if len(body.encode("utf-8")) + len(footer) > SUMMARY_LIMIT:
        body = review_body(result) + (
            "\n\n_The comments with reproducers and fixes do not "
            "fit in a step summary; the SARIF file has every "
            "finding._"
        )
    return body.rstrip("\n") + footer


# ---------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Inputs:
    paths: tuple[str, ...] = ()
    config: Path | None = None
    stages: str = DEFAULTS["stages"]
    fail_on: str = DEFAULTS["fail_on"]
    sarif_file: Path | None = None

    @classmethod
    def resolve(cls, given: Mapping[str, Any], environ: Mapping[str, str]) -> Inputs:
        """Options given on the command line win; else the NUMCHECK_INPUT_* variables; an
        empty variable means the input's default."""

        def value(key: str) -> Any:
            if given.get(key) not in (None, [], ()):
                return given[key]
            raw = environ.get(INPUT_ENV[key], "").strip()
            return raw or None

        paths = value("paths")
        if isinstance(paths, str):
            paths = paths.split()
        stages = str(value("stages") or DEFAULTS["stages"]).strip().lower()
        fail_on = str(value("fail_on") or DEFAULTS["fail_on"]).strip().lower()
        for key, chosen, choices in (("stages", stages, STAGES), ("fail_on", fail_on, FAIL_ON)):
            if chosen not in choices:
                raise ActionError(
                    f"input '{INPUT_NAMES[key]}' is {chosen!r}; use one of {', '.join(choices)}"
                )
        config, sarif = value("config"), value("sarif_file")
        return cls(
            paths=tuple(str(p) for p in paths or ()),
            config=Path(config) if config else None,
            stages=stages,
            fail_on=fail_on,
            sarif_file=Path(sarif) if sarif else None,
        )


def path_filter(patterns: Sequence[str]) -> Callable[[str], bool]:
    """`paths` as a predicate on repository-relative paths: each entry is a glob (`**`
    crosses directories), a directory (everything below it) or a file."""
    cleaned = [p.strip().strip("/") or "." for p in patterns if p.strip()]
    if not cleaned or "." in cleaned:
        return lambda path: True

    def selected(path: str) -> bool:
        return any(glob_match(p, path) or glob_match(f"{p}/**", path) for p in cleaned)

    return selected


# ---------------------------------------------------------------- what to review


@dataclass(frozen=True)
class Target:
    mode: str  # "review" or "scan"
    base: str | None = None
    head: str | None = None
    description: str = ""
    notice: str | None = None  # said as ::notice:: when the event is not a diff
    scan_if_unreachable: bool = False  # push: a force-push's `before` may be gone


def event_target(event_name: str, event: Mapping[str, Any]) -> Target:
    """What to review for this event; see the module's docstring."""
    pull = event.get("pull_request")
    if event_name in PR_EVENTS or (not event_name and isinstance(pull, Mapping)):
        if not isinstance(pull, Mapping):
            raise ActionError(
                f"the {event_name} event payload has no pull_request object; "
                "is GITHUB_EVENT_PATH the event's payload?"
            )
        base = _sha(pull.get("base"), "pull_request.base.sha")
        head = _sha(pull.get("head"), "pull_request.head.sha")
        number = pull.get("number", event.get("number"))
        number = number if isinstance(number, int) and not isinstance(number, bool) else "?"
        return Target(
            "review", base, head, f"pull request #{number}: `{base[:12]}`...`{head[:12]}`"
        )
    if event_name == "merge_group" and isinstance(event.get("merge_group"), Mapping):
        group = event["merge_group"]
        base, head = str(group.get("base_sha", "")), str(group.get("head_sha", ""))
        if SHA.match(base) and SHA.match(head):
            return Target("review", base, head, f"merge group: `{base[:12]}`...`{head[:12]}`")
    if event_name == "push":
        before, after = str(event.get("before") or ""), str(event.get("after") or "")
        if SHA.match(before) and SHA.match(after) and not ZERO_SHA.match(before):
            return Target(
                "review",
                before,
                after,
                f"push: `{before[:12]}`...`{after[:12]}`",
                scan_if_unreachable=True,
            )
        return Target(
            "scan",
            description="push of a new branch: whole files",
            notice=f"the push event has no previous commit to diff against "
            f"(before = {before or 'missing'}); numcheck scans whole files "
            "instead",
        )
    name = event_name or "unknown"
    return Target(
        "scan",
        description=f"{name} event: whole files",
        notice=f"the {name} event is not a pull request, merge group or push, so "
        "there is no diff to review; numcheck scans whole files instead "
        "(set `paths` to limit them)",
    )


def _sha(side: Any, name: str) -> str:
    sha = side.get("sha") if isinstance(side, Mapping) else None
    if not isinstance(sha, str) or not SHA.match(sha):
        raise ActionError(f"{name} is missing from the event payload or is not a commit SHA")
    return sha


# ---------------------------------------------------------------- git


def _git(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
    }
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ActionError(f"git {' '.join(args[:2])} failed: {exc}") from exc


def _has_commit(repo: Path, sha: str) -> bool:
    return _git(repo, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


def _has_merge_base(repo: Path, base: str, head: str) -> bool:
    return _git(repo, "merge-base", base, head).returncode == 0


def _is_shallow(repo: Path) -> bool:
    out = _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip()
    return out == "true"


def _fetch(repo: Path, say: Callable[[str], None], *args: str) -> None:
    say(f"git fetch {' '.join(args)}")
    proc = _git(repo, "fetch", "--no-tags", "--quiet", *args)
    if proc.returncode != 0:
        raise ActionError(
            f"`git fetch {' '.join(args)}` failed: "
            f"{proc.stderr.strip() or proc.returncode}; check out the "
            "repository with actions/checkout and `fetch-depth: 0`"
        )


def ensure_commits(repo: Path, base: str, head: str, say: Callable[[str], None]) -> None:
    """Fetch base and head from origin when the checkout lacks them, and deepen a shallow
    history until they have a merge base (the diff is taken from it, like GitHub's)."""
    if _git(repo, "rev-parse", "--git-dir").returncode != 0:
        raise ActionError(
            f"{repo} is not a git repository; run actions/checkout before this action"
        )
    missing = [sha for sha in dict.fromkeys((base, head)) if not _has_commit(repo, sha)]
    if missing:
        say(
            "the checkout lacks "
            + ", ".join(s[:12] for s in missing)
            + "; fetching (actions/checkout with fetch-depth: 0 avoids this)"
        )
        _fetch(repo, say, "--depth=1", "origin", *missing)
    if _has_merge_base(repo, base, head) or not _is_shallow(repo):
        return
    for depth in FETCH_DEPTHS:
        _fetch(repo, say, f"--depth={depth}", "origin", base, head)
        if _has_merge_base(repo, base, head):
            return
    _fetch(repo, say, "--unshallow", "origin", base, head)
    if not _has_merge_base(repo, base, head):
        raise ActionError(
            f"{base[:12]} and {head[:12]} have no common ancestor, even with "
            "the whole history fetched"
        )


# ---------------------------------------------------------------- the run


@dataclass
class Environment:
    """The GITHUB_* variables the Action reads."""

    workspace: Path
    event_name: str
    event_path: Path | None
    output: Path | None
    step_summary: Path | None
    runner_temp: Path | None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Environment:
        def path(name: str) -> Path | None:
            value = environ.get(name, "").strip()
            return Path(value) if value else None

        return cls(
            workspace=path("GITHUB_WORKSPACE") or Path.cwd(),
            event_name=environ.get("GITHUB_EVENT_NAME", "").strip(),
            event_path=path("GITHUB_EVENT_PATH"),
            output=path("GITHUB_OUTPUT"),
            step_summary=path("GITHUB_STEP_SUMMARY"),
            runner_temp=path("RUNNER_TEMP"),
        )

    def event(self) -> dict[str, Any]:
        if self.event_path is None:
            return {}
        try:
            data = json.loads(self.event_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ActionError(
                f"cannot read the event payload GITHUB_EVENT_PATH={self.event_path}: {exc}"
            ) from exc
        if not isinstance(data, dict):
            raise ActionError(f"the event payload {self.event_path} is not a JSON object")
        return data

    def sarif_path(self, inputs: Inputs) -> Path:
        if inputs.sarif_file is not None:
            chosen = inputs.sarif_file
            return (chosen if chosen.is_absolute() else self.workspace / chosen).resolve()
        return ((self.runner_temp or self.workspace) / "numcheck.sarif").resolve()


def _analyse(
    env: Environment,
    target: Target,
    inputs: Inputs,
    config: Config,
    runner: Runner,
    say: Callable[[str], None],
    notice: Callable[[str], None],
) -> AnalysisResult:
    selected = path_filter(inputs.paths)
    if target.mode == "review" and target.base and target.head:
        try:
            ensure_commits(env.workspace, target.base, target.head, say)
        except ActionError as exc:
            if not target.scan_if_unreachable:
                raise
            notice(f"cannot diff the push ({exc}); numcheck scans whole files instead")
            return _analyse(env, Target("scan"), inputs, config, runner, say, notice)
        return analyze(env.workspace, target.base, target.head, config, runner, selected)
    plain = [p for p in inputs.paths if not any(c in p for c in "*?[")]
    if plain and len(plain) == len(inputs.paths):
        paths = [env.workspace / p for p in plain]
    else:
        paths = [env.workspace]
    result = scan(paths, config, env.workspace, runner)
    keep_paths(result, selected)
    return result


def _fails(result: AnalysisResult, fail_on: str) -> bool:
    if fail_on == "any":
        return any(counts(f) for f in result.findings)  # not unconfirmed candidates
    if fail_on == "confirmed":
        return any(is_credible_proof(f) for f in result.findings)
    return False


def run(
    inputs: Inputs,
    environ: Mapping[str, str],
    out: TextIO,
    err: TextIO,
    progress: Progress | None = None,
    runner: Runner | None = None,
    quiet: bool = False,
) -> int:
    """The whole step; returns its exit status. Workflow commands go to `out`, the log's
    prose to `err` (errors always, the rest unless `quiet`)."""
    env = Environment.from_environ(environ)
    progress = progress or Progress(None)

    def say(text: str) -> None:
        if not quiet:
            err.write(f"numcheck: {text}\n")
            err.flush()

    try:
        if not env.workspace.is_dir():
            raise ActionError(f"GITHUB_WORKSPACE={env.workspace} is not a directory")
        target = event_target(env.event_name, env.event())
        if target.notice:
            out.write(
                workflow_command("notice", f"numcheck: {target.notice}", {"title": "numcheck"})
                + "\n"
            )
        config = load_config(env.workspace, _config_path(env, inputs), known_ops=KNOWN_OPS)
        config = replace(config, dynamic=inputs.stages == "confirm")
        unrun: str | None = None
        if config.dynamic and not dynamic_frameworks():
            unrun = missing_framework_hint()
            config = replace(config, dynamic=False)
        say(f"{target.description}; stages: {inputs.stages}; fail-on: {inputs.fail_on}")

        def notice(text: str) -> None:
            out.write(workflow_command("notice", f"numcheck: {text}", {"title": "numcheck"}) + "\n")

        result = _analyse(
            env, target, inputs, config, progress.runner(runner or LocalRunner()), say, notice
        )
        if unrun and result.findings:
            result.errors.append(
                StageError(
                    "dynamic",
                    f"not run: {unrun} (the action installs PyTorch when stages is confirm)",
                )
            )
    except (ActionError, ConfigError, DiffError) as exc:
        out.write(workflow_command("error", f"numcheck: {exc}", {"title": "numcheck"}) + "\n")
        err.write(f"numcheck: error: {exc}\n")
        return EXIT_ERROR

    for line in workflow_annotations(result):
        out.write(line + "\n")
    out.flush()
    sarif_path = env.sarif_path(inputs)
    try:
        sarif_path.parent.mkdir(parents=True, exist_ok=True)
        sarif_path.write_text(to_sarif_text(result), encoding="utf-8")
        if env.step_summary is not None:
            with env.step_summary.open("a", encoding="utf-8") as handle:
                handle.write(summary_markdown(result, target, inputs, sarif_path))
        confirmed = sum(1 for f in result.findings if f.status == "confirmed")
        if env.output is not None:
            write_outputs(
                env.output,
                {
                    "findings": str(len(result.findings)),
                    "confirmed": str(confirmed),
                    "errors": str(len(result.errors)),
                    "sarif": str(sarif_path),
                },
            )
    except OSError as exc:
        out.write(
            workflow_command(
                "error", f"numcheck: cannot write the results: {exc}", {"title": "numcheck"}
            )
            + "\n"
        )
        return EXIT_ERROR
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(result.findings))
    say(
        (
            f"{plural(len(result.findings), 'finding')} ({counts})"
            if result.findings
            else "no findings"
        )
        + f"; SARIF written to {sarif_path}"
    )
    if _fails(result, inputs.fail_on):
        what = "confirmed findings" if inputs.fail_on == "confirmed" else "findings"
        out.write(
            workflow_command(
                "error",
                f"numcheck: {plural(len(result.findings), 'finding')} ({counts}); "
                f"fail-on is '{inputs.fail_on}', so {what} fail this step",
                {"title": "numcheck"},
            )
            + "\n"
        )
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _config_path(env: Environment, inputs: Inputs) -> Path | None:
    if inputs.config is None:
        return None
    return inputs.config if inputs.config.is_absolute() else env.workspace / inputs.config


def main(
    given: Mapping[str, Any],
    environ: Mapping[str, str],
    out: TextIO,
    err: TextIO,
    progress: Progress | None = None,
    quiet: bool = False,
) -> int:
    """`numcheck action` from the parsed options (`paths`, `config`, `stages`, `fail_on`,
    `sarif_file`; None for the ones not given)."""
    try:
        inputs = Inputs.resolve(given, environ)
    except ActionError as exc:
        out.write(workflow_command("error", f"numcheck: {exc}", {"title": "numcheck"}) + "\n")
        err.write(f"numcheck: error: {exc}\n")
        return EXIT_ERROR
    return run(inputs, environ, out, err, progress, quiet=quiet)
