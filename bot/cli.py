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
    common(review)

    scan = commands.add_parser("scan", help="analyse whole files or directories, no git")
    scan.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    common(scan)

    demo = commands.add_parser("demo", help="build a sample repository with a PR and review it")
    demo.add_argument("--keep", type=Path, metavar="DIR",
                      help="build the sample repository in DIR and keep it")
    common(demo)
    return parser


def _config(args: argparse.Namespace, repo: Path) -> Config:
    config = load_config(repo, args.config, known_ops=KNOWN_OPS)
    if getattr(args, "dtype", None):
        config = replace(config, dtype=args.dtype)
    if getattr(args, "scope", None):
        config = replace(config, scope=args.scope)
    if args.static_only:
        config = replace(config, dynamic=False)
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    missing: list[str] = []
    try:
        if args.command == "review":
            config = _config(args, args.repo)
            result = analyze(args.repo, args.base, args.head, config)
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
