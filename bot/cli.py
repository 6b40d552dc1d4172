"""`numcheck`: the command line. Same engine, same output as the App's review.

Exit status (a contract, scripts depend on it): 0 no findings, 1 findings, 2 an error stopped
the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from analyzers import __version__
from analyzers.catalogue import KNOWN_OPS
from analyzers.config import SCOPES, Config, ConfigError, load_config
from analyzers.diffscope import DiffError
from analyzers.model import AnalysisResult
from analyzers.report import FORMATS, render
from bot.demo import build_sample_repo
from runners.pipeline import analyze, scan

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

EXAMPLES = """examples:
  numcheck review                          review HEAD against the default branch
  numcheck review . --base origin/main --format markdown
  numcheck scan src/model.py --format json
  numcheck demo                            build a sample repository and review its PR
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="numcheck", description="Find NaN/Inf bugs in deep-learning code.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"numcheck {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--format", choices=FORMATS, default="text",
                         help="output format (default: text)")
        sub.add_argument("--config", type=Path, metavar="FILE",
                         help="settings file (default: .numcheck.toml or [tool.numcheck] in "
                              "pyproject.toml)")
        sub.add_argument("--dtype", choices=("float16", "bfloat16", "float32", "float64"),
                         help="dtype the analysis assumes (overrides the config)")
        sub.add_argument("--output", "-o", type=Path, metavar="FILE",
                         help="write the report to FILE instead of stdout")
        sub.add_argument("--static-only", action="store_true",
                         help="skip the dynamic pass (no code is run)")

    review = commands.add_parser("review", help="review the diff between two git refs",
                                 description="Review the lines a branch adds, like a PR.")
    review.add_argument("repo", nargs="?", type=Path, default=Path("."),
                        help="git checkout (default: .)")
    review.add_argument("--base", metavar="REF",
                        help="base ref (default: merge base with the default branch)")
    review.add_argument("--head", metavar="REF", default="HEAD", help="head ref (default: HEAD)")
    review.add_argument("--scope", choices=SCOPES,
                        help="which lines count: added (default), diff_context, file")
    fixes = review.add_mutually_exclusive_group()
    fixes.add_argument("--fix", action="store_true",
                       help="write the validated fixes into the working tree (the head must "
                            "be checked out, the files free of uncommitted changes)")
    fixes.add_argument("--diff", action="store_true",
                       help="print the validated fixes as one unified diff (the report goes "
                            "to --output only)")
    fixes.add_argument("--no-fix", action="store_true",
                       help="skip the fix stage (no candidate fixes are validated)")
    common(review)

    scan = commands.add_parser("scan", help="analyse whole files or directories, no git")
    scan.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    common(scan)

    demo = commands.add_parser("demo", help="build a sample repository with a PR and review it")
    demo.add_argument("--keep", type=Path, metavar="DIR",
                      help="build the sample repository in DIR and keep it")
    common(demo)

    serve = commands.add_parser(
        "serve", help="run the GitHub App: web and worker in one process tree",
        description="The App's webhook endpoint and one worker, with an embedded broker and "
                    "SQLite (no Redis or database server). NUMCHECK_APP_ID, "
                    "NUMCHECK_PRIVATE_KEY and NUMCHECK_WEBHOOK_SECRET must be set.")
    serve.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument("--data-dir", type=Path, metavar="DIR",
                       help="broker messages and the SQLite file (default: "
                            "~/.local/share/numcheck)")
    return parser


def _config(args: argparse.Namespace, repo: Path) -> Config:
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
    if config.fail_on == "error":
        return EXIT_FINDINGS if any(f.severity == "error" for f in result.findings) \
            else EXIT_CLEAN
    return EXIT_FINDINGS if result.findings else EXIT_CLEAN


def _emit(result: AnalysisResult, args: argparse.Namespace) -> None:
    """Print or write the report; OSError from --output is the caller's to report."""
    color = args.format == "text" and args.output is None and sys.stdout.isatty() \
        and "NO_COLOR" not in os.environ
    text = render(result, args.format, color=color)
    if args.output is not None:
        args.output.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")
    else:
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))


def _fixes(result: AnalysisResult, args: argparse.Namespace, config: Config) -> int:
    """`review --fix` / `--diff`: the validated fixes written to the working tree, or printed
    as one unified diff (the report then goes to --output only)."""
    from analyzers.fix.apply import FixRefused, combined_diff, validated, write_fixes

    if args.fix or args.output is not None:
        _emit(result, args)
    head = result.head or args.head
    if not validated(result.findings):
        why = " (the fix stage needs the dynamic pass)" if not config.dynamic else ""
        print(f"numcheck: no validated fix to {'apply' if args.fix else 'show'}{why}",
              file=sys.stderr)
        return _exit_status(result, config)
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
            print(f"numcheck: fixed {len(fixed.applied)} finding"
                  f"{'s' if len(fixed.applied) != 1 else ''} in {fixed.path}", file=sys.stderr)
        for why in dict.fromkeys(why for _, why in fixed.skipped):
            refused = True
            print(f"numcheck: error: not {'applied' if args.fix else 'shown'}: {why}",
                  file=sys.stderr)
    return EXIT_ERROR if refused else _exit_status(result, config)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from bot.serve import serve

        return serve(args.host, args.port, args.data_dir)
    missing: list[str] = []
    try:
        if args.command == "review":
            config = _config(args, args.repo)
            if args.fix:  # refused before minutes of analysis, not after
                from analyzers.fix.apply import FixRefused, check_head

                try:
                    check_head(args.repo, args.head)
                except FixRefused as exc:
                    print(f"numcheck: error: {exc}", file=sys.stderr)
                    return EXIT_ERROR
            result = analyze(args.repo, args.base, args.head, config)
            if args.fix or args.diff:
                return _fixes(result, args, config)
        elif args.command == "scan":
            config = _config(args, Path.cwd())
            result = scan(args.paths, config, Path.cwd())
            missing = [str(p) for p in args.paths if not p.exists()]
        elif args.keep is not None:
            repo, base, head = build_sample_repo(args.keep)
            config = _config(args, repo)
            result = analyze(repo, base, head, config)
        else:
            with tempfile.TemporaryDirectory(prefix="numcheck-demo-") as where:
                repo, base, head = build_sample_repo(Path(where) / "sample")
                config = _config(args, repo)
                result = analyze(repo, base, head, config)
        _emit(result, args)
    except (ConfigError, DiffError, OSError) as exc:
        print(f"numcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if missing:  # a typo in a CI script must not pass as "no findings"
        print(f"numcheck: error: no such file or directory: {', '.join(missing)}",
              file=sys.stderr)
        return EXIT_ERROR
    return _exit_status(result, config)


if __name__ == "__main__":
    raise SystemExit(main())
