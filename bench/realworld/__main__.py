"""python -m bench.realworld: review every bug's introducing commit and print the figures.

    python -m bench.realworld                      # static pass only (about a minute)
    python -m bench.realworld --dynamic            # with the sandboxed dynamic pass
    python -m bench.realworld -k kornia --json bench/out/realworld.json
    python -m bench.realworld --unjudged           # list the findings no one has read yet

Exit status 0 when it ran (the targets are reported, not enforced), 2 when the bug list, the
judgements or the causes of unproven bugs cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from bench.realworld.corpus import (
    BUGS,
    JUDGEMENTS,
    UNPROVEN,
    Scored,
    load_bugs,
    load_judgements,
    load_unproven,
    per_pull_request,
)
from bench.realworld.review import default_mirrors, rescored, review

TARGETS = {
    "recall": 0.90,
    "proven": 0.60,
    "inline_proven_or_definite": 0.90,
    "inline_noise": 0.10,
    "median_inline": 2,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.realworld", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--mirrors",
        type=Path,
        default=None,
        help="folder of full-history clones (default: $NUMCHECK_MIRRORS or bench/out/mirrors)",
    )
    parser.add_argument("--bugs", type=Path, default=BUGS)
    parser.add_argument("--judgements", type=Path, default=JUDGEMENTS)
    parser.add_argument(
        "--unproven", type=Path, default=UNPROVEN, help="why each bug was not proven, by hand"
    )
    parser.add_argument(
        "-k",
        dest="only",
        action="append",
        default=[],
        help="only bugs whose id contains this text (repeatable)",
    )
    parser.add_argument(
        "--dynamic", action="store_true", help="run the dynamic pass too (each PR in the sandbox)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="the sandboxed run's wall clock per pull request (dynamic_timeout, less 30 s), "
        "seconds (default 600); a review is stopped 600 s past it",
    )
    parser.add_argument("--search-seconds", type=float, default=5.0)
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    parser.add_argument(
        "--reviews",
        type=Path,
        default=None,
        help="keep each review's whole JSON report here, as BUG.json: the proofs, inputs "
        "and reproducers, for reading a finding by hand",
    )
    parser.add_argument(
        "--rescore",
        type=Path,
        default=None,
        metavar="DIR",
        help="run no review: score the reviews an earlier run kept in DIR (--reviews) with "
        "the judgements as they are now (a bug with none kept is missing)",
    )
    parser.add_argument(
        "--unjudged", action="store_true", help="also list the findings that have no judgement yet"
    )
    return parser


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else f"{n}/0"


def _scrubbed(text: str) -> str:
    """Reasons quote tracebacks; the stored results must not name this machine's paths."""
    for path, name in (
        (sys.prefix, "<venv>"),
        (sys.base_prefix, "<python>"),
        (str(Path(__file__).resolve().parents[2]), "<repo>"),
    ):
        text = text.replace(path, name)
    return text


def _row(s: Scored) -> str:
    if s.state != "reviewed":
        return f"{s.bug.id:<40} {s.state:<8} {_scrubbed(s.reason)}"
    at = f"{s.bug_status or '-':<13}" + ("" if s.op_agrees or not s.flagged else " (other op)")
    row = (
        f"{s.bug.id:<40} {'flagged' if s.flagged else 'MISSED':<8} {at:<24} "
        f"findings {s.findings:>3}  inline {s.inline:>2}  {s.seconds:6.1f} s"
    )
    return row + (f"\n    {_scrubbed(s.bug_reason)[:200]}" if s.bug_reason else "")


def summary(
    rows: Sequence[Scored], dynamic: bool, causes: Mapping[str, str] | None = None
) -> list[str]:
    done = [s for s in rows if s.state == "reviewed"]
    lines = [
        f"bugs {len(rows)} from {len({s.bug.repo for s in rows})} repositories; "
        f"reviewed {len(done)}, missing {sum(s.state == 'missing' for s in rows)}, "
        f"errors {sum(s.state == 'error' for s in rows)}"
    ]
    if not done:
        return lines
    flagged = sum(s.flagged for s in done)
    lines.append(f"recall at the line:          {_pct(flagged, len(done))}   target >= 90 %")
    lines.append(f"  ... naming the bug's op:   {_pct(sum(s.op_agrees for s in done), len(done))}")
    proven = sum(s.proven for s in done)
    with_fix = sum(s.proven and s.fix_validated for s in done)
    lines.append(
        f"proven (confirmed):          {_pct(proven, len(done))}"
        f"{'' if dynamic else '   (static only: nothing can be proven)'}"
        f"   target >= 60 %"
    )
    lines.append(f"  ... with a validated fix:  {_pct(with_fix, len(done))}")
    if dynamic:
        lines.append(_unproven_line(done, causes or {}))
    statuses = Counter(s.bug_status for s in done if s.flagged)
    lines.append(
        "status at the bug's line:    " + ", ".join(f"{n} {k}" for k, n in statuses.most_common())
    )
    # inline comments are counted per pull request: bugs that one commit introduced share it
    prs = per_pull_request(done)
    inline = [s.inline for s in prs]
    every = [s.findings for s in prs]
    lines.append(
        f"inline comments per PR:      median {statistics.median(inline):g}, "
        f"mean {statistics.mean(inline):.2f}, max {max(inline)} ({len(prs)} pull requests)"
        "   target median <= 2"
    )
    lines.append(
        f"  commenting on every finding would post: median "
        f"{statistics.median(every):g}, mean {statistics.mean(every):.2f}, "
        f"max {max(every)}"
    )
    total_inline = sum(inline)
    lines.append(
        f"inline proven or definite:   "
        f"{_pct(sum(s.inline_proven_or_definite for s in prs), total_inline)}"
        "   target >= 90 %"
    )
    judged = Counter[str]()
    for s in prs:
        judged.update(s.inline_judged)
    unjudged = sum(len(s.inline_unjudged) for s in prs)
    read = sum(judged.values())
    lines.append(
        f"inline comments read:        {read} of {total_inline} "
        f"({', '.join(f'{n} {k}' for k, n in judged.most_common()) or 'none'}); "
        f"noise {_pct(judged['noise'], read)}   target < 10 %"
        + (f"; {unjudged} unread" if unjudged else "")
    )
    others = Counter[str]()
    for s in done:
        others.update(s.others_judged)
    n_others = sum(len(s.others) for s in done)
    lines.append(
        f"other findings (held back or not at the bug): {n_others}; read "
        f"{sum(others.values())}: "
        + (", ".join(f"{n} {k}" for k, n in others.most_common()) or "none")
    )
    return lines


def _unproven_line(done: Sequence[Scored], causes: Mapping[str, str]) -> str:
    """The bugs not proven in this run, by the cause read by hand (corpus.CAUSES); a bug with
    no cause on record, or one proven now that has one, is counted apart: the file is stale."""
    unproven = [s for s in done if not s.proven]
    by_cause = Counter(causes[s.bug.id] for s in unproven if s.bug.id in causes)
    unread = sum(s.bug.id not in causes for s in unproven)
    stale = sum(s.proven and s.bug.id in causes for s in done)
    return (
        "  ... not proven, by cause:  "
        + (", ".join(f"{n} {k}" for k, n in by_cause.most_common()) or "none")
        + (f"; {unread} with no cause read" if unread else "")
        + (f"; {stale} proven now that unproven.tsv lists" if stale else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        bugs = load_bugs(args.bugs)
        judgements = load_judgements(args.judgements)
        causes = load_unproven(args.unproven)
    except (OSError, ValueError) as exc:
        print(f"bench.realworld: {exc}", file=sys.stderr)
        return 2
    if args.only:
        bugs = [b for b in bugs if any(k in b.id for k in args.only)]
    mirrors = args.mirrors or default_mirrors()
    shown = (  # a result file quotes no path of one machine
        "not read (--rescore)"
        if args.rescore is not None
        else "$NUMCHECK_MIRRORS"
        if os.environ.get("NUMCHECK_MIRRORS") == str(mirrors)
        else mirrors
    )
    print(f"mirrors: {shown}; pass: {'static + dynamic' if args.dynamic else 'static'}", flush=True)
    rows = []
    for bug in bugs:
        scored = (
            rescored(bug, args.rescore, judgements)
            if args.rescore is not None
            else review(
                bug,
                mirrors,
                judgements,
                dynamic=args.dynamic,
                timeout=args.timeout,
                search_seconds=args.search_seconds,
                keep=args.reviews,
            )
        )
        rows.append(scored)
        print(_row(scored), flush=True)
    print()
    for line in summary(rows, args.dynamic, causes):
        print(line)
    if args.unjudged:
        print("\nunread findings (bug, path, line, op, rule, status):")
        for s in rows:
            for f in s.inline_unjudged + [o for o in s.others if o not in s.inline_unjudged]:
                key = (s.bug.id, f.path, f.line, f.op)
                if key not in judgements:
                    print("\t".join((s.bug.id, f.path, str(f.line), f.op, f.rule, f.status)))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                [
                    {
                        **{
                            k: v
                            for k, v in asdict(s).items()
                            if k not in ("others", "inline_unjudged", "inline_verdicts")
                        },
                        "others": [
                            f"{f.path}:{f.line} {f.op} {f.rule} {f.status}" for f in s.others
                        ],
                    }
                    for s in rows
                ],
                indent=1,
                default=str,
            ),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
