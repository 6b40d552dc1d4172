"""`numcheck`: the command line. Same engine, same output as the App's review.

Exit status (a contract, scripts depend on it): 0 no findings, 1 findings, 2 an error stopped
the run.

The report goes to stdout (or `--output`); everything else goes to stderr: progress per stage
and per finding with elapsed time when stderr is a terminal (never with `--quiet`, in a pipe
or under pre-commit), warnings, and errors that say what to do next. Colour only on a
terminal, and never with NO_COLOR set.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from analyzers import __version__
from analyzers.catalogue import KNOWN_OPS
from analyzers.config import SCOPES, Config, ConfigError, load_config
from analyzers.diffscope import DiffError
from analyzers.model import AnalysisResult, StageError
from analyzers.report import FORMATS, render
from analyzers.trust import counts
from bot.console import color_enabled, dynamic_frameworks, missing_framework_hint, one_line
from bot.demo import build_sample_repo
from bot.progress import Progress
from runners.base import Runner
from runners.pipeline import analyze, default_runner, scan

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

EXAMPLES = """examples:
  numcheck review                          review HEAD against the default branch
  numcheck review . --base origin/main --format markdown
  numcheck review --fix                    also write the validated fixes into the files
  numcheck scan src/model.py --format json
  numcheck scan --static-only src/         fast: nothing is run, findings stay potential
  numcheck action                          in a GitHub Actions step (see action.yml)
  numcheck demo                            build a sample repository and review its PR

exit status: 0 no findings, 1 findings, 2 an error stopped the run
settings: [tool.numcheck] in pyproject.toml or .numcheck.toml (docs/configuration.md);
the ops numcheck knows: docs/ops.md; `numcheck COMMAND --help` for each command
"""

REVIEW_EXAMPLES = """examples:
  numcheck review                              HEAD against the merge base with main/master
  numcheck review --base origin/main --head my-branch
  numcheck review --static-only --format sarif -o numcheck.sarif
  numcheck review --diff > fixes.patch         the validated fixes as one patch
  numcheck review --fix                        write them into the working tree

Progress goes to stderr when it is a terminal (--quiet silences it). Unknown ref? Fetch it
(`git fetch origin main`) or name another with --base.
"""

SCAN_EXAMPLES = """examples:
  numcheck scan model.py losses.py
  numcheck scan --static-only src/             what the `numcheck` pre-commit hook runs
  numcheck scan --fix model.py                 what the `numcheck-fix` pre-commit hook runs
"""

ACTION_HELP = """Run as a step of a GitHub Actions workflow (action.yml calls it). It reviews a
pull_request's diff (base and head from the event payload at GITHUB_EVENT_PATH, fetching
commits the checkout lacks), prints one annotation per finding, writes SARIF for
github/codeql-action/upload-sarif, appends the report to GITHUB_STEP_SUMMARY and writes the
outputs findings, confirmed, errors and sarif to GITHUB_OUTPUT. A push reviews before...after;
other events scan whole files. No token is needed."""

ACTION_EXAMPLES = """examples:
  numcheck action                              inputs from NUMCHECK_INPUT_* (as action.yml sets)
  numcheck action --stages confirm --fail-on confirmed
  numcheck action --paths src/ models/ --sarif-file results.sarif

Each option falls back to its NUMCHECK_INPUT_* variable (PATHS, CONFIG, STAGES, FAIL_ON,
SARIF_FILE). Exit status: 1 when fail-on says the findings fail the step, 2 on an error.
"""

DEMO_EXAMPLES = """examples:
  numcheck demo
  numcheck demo --keep /tmp/sample --format markdown
"""


def _parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="numcheck",
        description="Find, prove and fix NaN/Inf bugs in deep-learning code.",
        epilog=EXAMPLES,
        formatter_class=raw,
    )
    parser.add_argument("--version", action="version", version=f"numcheck {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def quiet(
        sub: argparse.ArgumentParser,
        what: str = "no progress on stderr (shown only on a terminal anyway)",
    ) -> None:
        sub.add_argument("--quiet", "-q", action="store_true", help=what)

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--format", choices=FORMATS, default="text", help="output format (default: text)"
        )
        sub.add_argument(
            "--config",
            type=Path,
            metavar="FILE",
            help="settings file (default: .numcheck.toml or [tool.numcheck] in pyproject.toml)",
        )
        sub.add_argument(
            "--dtype",
            choices=("float16", "bfloat16", "float32", "float64"),
            help="dtype the analysis assumes (overrides the config)",
        )
        sub.add_argument(
            "--output",
            "-o",
            type=Path,
            metavar="FILE",
            help="write the report to FILE instead of stdout",
        )
        sub.add_argument(
            "--static-only", action="store_true", help="skip the dynamic pass (no code is run)"
        )
        quiet(sub)

    review = commands.add_parser(
        "review",
        help="review the diff between two git refs",
        description="Review the lines a branch adds, like a PR.",
        epilog=REVIEW_EXAMPLES,
        formatter_class=raw,
    )
    review.add_argument(
        "repo", nargs="?", type=Path, default=Path("."), help="git checkout (default: .)"
    )
    review.add_argument(
        "--base", metavar="REF", help="base ref (default: merge base with the default branch)"
    )
    review.add_argument("--head", metavar="REF", default="HEAD", help="head ref (default: HEAD)")
    review.add_argument(
        "--scope", choices=SCOPES, help="which lines count: added (default), diff_context, file"
    )
    review.add_argument(
        "--config-from",
        choices=("base", "head"),
        help="read the settings committed at a ref, not the working tree: "
        "base = as the App does (the keys that decide how a change is "
        "judged from the base, entries, script and keras from the head); "
        "head = everything from the head",
    )
    fixes = review.add_mutually_exclusive_group()
    fixes.add_argument(
        "--fix",
        action="store_true",
        help="write the validated fixes into the working tree (the head must "
        "be checked out, the files free of uncommitted changes)",
    )
    fixes.add_argument(
        "--diff",
        action="store_true",
        help="print the validated fixes as one unified diff (the report goes to --output only)",
    )
    fixes.add_argument(
        "--no-fix",
        action="store_true",
        help="skip the fix stage (no candidate fixes are validated)",
    )
    common(review)

    scan_ = commands.add_parser(
        "scan",
        help="analyse whole files or directories, no git",
        description="Analyse whole files (every line), without git.",
        epilog=SCAN_EXAMPLES,
        formatter_class=raw,
    )
    scan_.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    scan_.add_argument(
        "--fix",
        action="store_true",
        help="write the validated fixes into the files (needs the dynamic "
        "pass, so PyTorch or TensorFlow)",
    )
    common(scan_)

    action = commands.add_parser(
        "action",
        help="run as a GitHub Actions step",
        description=ACTION_HELP,
        epilog=ACTION_EXAMPLES,
        formatter_class=raw,
    )
    action.add_argument(
        "--paths",
        nargs="+",
        metavar="PATH",
        help="only these files, directories or globs (default: all)",
    )
    action.add_argument(
        "--config", type=Path, metavar="FILE", help="settings file, relative to GITHUB_WORKSPACE"
    )
    action.add_argument(
        "--stages",
        choices=("static", "confirm"),
        help="static: the static pass only (default); confirm: also run "
        "the code to confirm findings and validate fixes",
    )
    action.add_argument(
        "--fail-on",
        choices=("none", "confirmed", "any"),
        help="which findings fail the step (default: any)",
    )
    action.add_argument(
        "--sarif-file",
        type=Path,
        metavar="FILE",
        help="where the SARIF goes (default: $RUNNER_TEMP/numcheck.sarif)",
    )
    quiet(action, "no progress or log lines on stderr (errors and workflow commands stay)")

    demo = commands.add_parser(
        "demo",
        help="build a sample repository with a PR and review it",
        epilog=DEMO_EXAMPLES,
        formatter_class=raw,
    )
    demo.add_argument(
        "--keep", type=Path, metavar="DIR", help="build the sample repository in DIR and keep it"
    )
    common(demo)

    serve = commands.add_parser(
        "serve",
        help="run the GitHub App: web and worker in one process tree",
        description="The App's webhook endpoint and one worker, with an embedded broker and "
        "SQLite (no Redis or database server). NUMCHECK_APP_ID, "
        "NUMCHECK_PRIVATE_KEY and NUMCHECK_WEBHOOK_SECRET must be set.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="broker messages and the SQLite file (default: ~/.local/share/numcheck)",
    )
    return parser


def _committed_config(args: argparse.Namespace, repo: Path) -> Config:
    """`review --config-from base|head`: the settings committed at the refs (the base as
    `analyze` resolves it), with a note on stderr for each head setting that was ignored."""
    from analyzers.diffscope import default_branch_base
    from analyzers.policy import config_at, merge_policy

    if args.config_from == "head":
        return config_at(repo, args.head, KNOWN_OPS)
    base = args.base or default_branch_base(repo)
    config = merge_policy(config_at(repo, base, KNOWN_OPS), config_at(repo, args.head, KNOWN_OPS))
    for note in config.notes:
        print(f"numcheck: note: {note}", file=sys.stderr)
    return config


def _config(args: argparse.Namespace, repo: Path) -> Config:
    if getattr(args, "config_from", None):
        config = _committed_config(args, repo)
    else:
        config = load_config(repo, args.config, known_ops=KNOWN_OPS)
    if getattr(args, "dtype", None):
        config = replace(config, dtype=args.dtype)
    if getattr(args, "scope", None):
        config = replace(config, scope=args.scope)
    if args.static_only:
        config = replace(config, dynamic=False)
    if getattr(args, "no_fix", False):
        config = replace(config, fix=False)
    return config


def _exit_status(result: AnalysisResult, config: Config) -> int:
    if config.fail_on == "none":
        return EXIT_CLEAN
    findings = [f for f in result.findings if counts(f)]  # not unconfirmed candidates
    if config.fail_on == "error":
        return EXIT_FINDINGS if any(f.severity == "error" for f in findings) else EXIT_CLEAN
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _emit(result: AnalysisResult, args: argparse.Namespace) -> None:
    """Print or write the report; OSError from --output is the caller's to report."""
    color = args.format == "text" and args.output is None and color_enabled(sys.stdout)
    text = render(result, args.format, color=color)
    if args.output is not None:
        args.output.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")
    else:
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))


class _Run:
    """One analysis with progress, and the dynamic pass skipped (with the reason in the
    result and on stderr) when this Python has neither PyTorch nor TensorFlow."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.progress = Progress.for_cli(args.quiet)
        self.unrun: str | None = None  # why the dynamic pass could not run
        # --fix / --diff end with an error that says it; no warning before it
        self.warn = not (getattr(args, "fix", False) or getattr(args, "diff", False))

    def __call__(
        self, config: Config, analysis: Callable[[Config, Runner], AnalysisResult]
    ) -> AnalysisResult:
        if config.dynamic and not dynamic_frameworks():
            self.unrun = missing_framework_hint()
            config = replace(config, dynamic=False)
        result = analysis(config, self.progress.runner(default_runner()))
        if self.unrun is not None and result.findings:
            result.errors.append(StageError("dynamic", f"not run: {self.unrun}"))
            if self.warn:
                print(f"numcheck: warning: {self.unrun}", file=sys.stderr)
        else:
            self.unrun = None  # nothing needed confirming: nothing was lost
        self.progress.finished(result)
        return result


def _no_fix_message(result: AnalysisResult, config: Config, run: _Run, verb: str) -> int:
    """No validated fix to apply or show: say why; exit 2 when a missing framework is why."""
    if run.unrun is not None:
        print(f"numcheck: error: no fix can be validated: {run.unrun}", file=sys.stderr)
        return EXIT_ERROR
    why = " (the fix stage needs the dynamic pass)" if not config.dynamic else ""
    print(f"numcheck: no validated fix to {verb}{why}", file=sys.stderr)
    return _exit_status(result, config)


def _fixes(result: AnalysisResult, args: argparse.Namespace, config: Config, run: _Run) -> int:
    """`review --fix` / `--diff`: the validated fixes written to the working tree, or printed
    as one unified diff (the report then goes to --output only)."""
    from analyzers.fix.apply import FixRefused, combined_diff, validated, write_fixes

    if args.fix or args.output is not None:
        _emit(result, args)
    head = result.head or args.head
    if not validated(result.findings):
        return _no_fix_message(result, config, run, "apply" if args.fix else "show")
    try:
        if args.diff:
            diff, files = combined_diff(args.repo, head, result.findings)
            sys.stdout.write(diff)
        else:
            files = write_fixes(args.repo, head, result.findings)
    except FixRefused as exc:
        print(f"numcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    refused = False
    for fixed in files:
        if fixed.applied and args.fix:
            print(
                f"numcheck: fixed {len(fixed.applied)} finding"
                f"{'s' if len(fixed.applied) != 1 else ''} in {fixed.path}",
                file=sys.stderr,
            )
        for why in dict.fromkeys(why for _, why in fixed.skipped):
            refused = True
            print(
                f"numcheck: error: not {'applied' if args.fix else 'shown'}: {why}", file=sys.stderr
            )
    return EXIT_ERROR if refused else _exit_status(result, config)


def scan_root(paths: list[Path]) -> Path:
    """The folder `scan` treats as the repository: the working directory, as for `git`, unless
    a path lies outside it (`numcheck scan /tmp/model.py`); then the paths' common folder, so
    findings are named relative to it and the dynamic pass imports the file as a module of
    its own folder (copying only the paths given: that folder may be /tmp)."""
    cwd = Path.cwd().resolve()
    resolved = [p.resolve() for p in paths if p.exists()]
    if all(p.is_relative_to(cwd) for p in resolved):
        return cwd
    return Path(os.path.commonpath([p if p.is_dir() else p.parent for p in resolved]))


def _scan_fixes(result: AnalysisResult, config: Config, root: Path, run: _Run) -> int:
    """`scan --fix`: the validated fixes written into the files as they are on disk (the
    dynamic pass ran on a copy of exactly that text), one after another per file."""
    from analyzers.fix.apply import by_path, fix_file, validated

    if not validated(result.findings):
        return _no_fix_message(result, config, run, "apply")
    refused = False
    root = root.resolve()
    for path, group in sorted(by_path(result.findings).items()):
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            refused = True
            print(
                f"numcheck: error: not applied: {one_line(path)} is not a file under {root}",
                file=sys.stderr,
            )
            continue
        fixed = fix_file(target, path, group)
        if fixed.applied:
            print(
                f"numcheck: fixed {len(fixed.applied)} finding"
                f"{'s' if len(fixed.applied) != 1 else ''} in {one_line(path)}",
                file=sys.stderr,
            )
        for why in dict.fromkeys(why for _, why in fixed.skipped):
            refused = True
            print(f"numcheck: error: not applied: {why}", file=sys.stderr)
    return EXIT_ERROR if refused else _exit_status(result, config)


def _diff_error(exc: DiffError, args: argparse.Namespace) -> str:
    message = str(exc)
    if "unknown git ref" in message and args.command == "review":
        message += (
            "; or name the base with --base REF (default: the merge base with the "
            "default branch) and the head with --head REF"
        )
    return message


def _action(args: argparse.Namespace) -> int:
    from bot import action

    given = {
        "paths": args.paths,
        "config": args.config,
        "stages": args.stages,
        "fail_on": args.fail_on,
        "sarif_file": args.sarif_file,
    }
    progress = Progress(None if args.quiet else sys.stderr)  # the workflow log wants it
    return action.main(given, os.environ, sys.stdout, sys.stderr, progress, quiet=args.quiet)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from bot.serve import serve

        return serve(args.host, args.port, args.data_dir)
    if args.command == "action":
        return _action(args)
    missing: list[str] = []
    run = _Run(args)
    try:
        if args.command == "review":
            if args.config is not None and args.config_from is not None:
                print(
                    "numcheck: error: --config FILE and --config-from are exclusive: one "
                    "names a file, the other reads the settings committed at a ref",
                    file=sys.stderr,
                )
                return EXIT_ERROR
            config = _config(args, args.repo)
            if args.fix:  # refused before minutes of analysis, not after
                from analyzers.fix.apply import FixRefused, check_head

                try:
                    check_head(args.repo, args.head)
                except FixRefused as exc:
                    print(f"numcheck: error: {exc}", file=sys.stderr)
                    return EXIT_ERROR
            run.progress.stage(
                "reviewing",
                f"{args.base or 'the default branch'}...{args.head} in {one_line(str(args.repo))}",
            )
            result = run(config, lambda c, r: analyze(args.repo, args.base, args.head, c, r))
            if args.fix or args.diff:
                return _fixes(result, args, config, run)
        elif args.command == "scan":
            root = scan_root(args.paths)
            config = _config(args, root)
            run.progress.stage("scanning", ", ".join(one_line(str(p)) for p in args.paths))
            whole = root == Path.cwd().resolve()
            result = run(config, lambda c, r: scan(args.paths, c, root, r, whole_root=whole))
            missing = [str(p) for p in args.paths if not p.exists()]
            if args.fix:
                _emit(result, args)
                status = _scan_fixes(result, config, root, run)
                return EXIT_ERROR if missing else status
        elif args.keep is not None:
            repo, base, head = build_sample_repo(args.keep)
            config = _config(args, repo)
            run.progress.stage("demo", f"reviewing {base}...{head} in {repo}")
            result = run(config, lambda c, r: analyze(repo, base, head, c, r))
        else:
            with tempfile.TemporaryDirectory(prefix="numcheck-demo-") as where:
                repo, base, head = build_sample_repo(Path(where) / "sample")
                config = _config(args, repo)
                run.progress.stage("demo", f"reviewing {base}...{head} of a sample repository")
                result = run(config, lambda c, r: analyze(repo, base, head, c, r))
        _emit(result, args)
    except ConfigError as exc:
        print(
            f"numcheck: error: {exc}; every key is described in numcheck's docs/configuration.md",
            file=sys.stderr,
        )
        return EXIT_ERROR
    except DiffError as exc:
        print(f"numcheck: error: {_diff_error(exc, args)}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"numcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if missing:  # a typo in a CI script must not pass as "no findings"
        print(f"numcheck: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_ERROR
    return _exit_status(result, config)


if __name__ == "__main__":
    raise SystemExit(main())
