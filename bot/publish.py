"""Publishing an AnalysisResult on a pull request: one check run per head SHA, one review.

Everything here is safe to run again after a failure part-way (the task retries it):

* the check run is found again by head SHA and name before one is created;
* annotation batches already sent are counted in `state` (persisted by the caller after each
  step), so a retry resumes instead of appending them twice;
* every inline comment carries a hidden fingerprint marker, and the review carries the head
  SHA; before posting, the existing comments and reviews are read back, so a finding already
  commented is edited (when its text changed) rather than posted again, and a review already
  posted for this head is not posted twice;
* a finding that is gone gets one "resolved in <sha>" reply; nothing is ever deleted.

With a report page (`details_url`, a signed link whose expiry is dated from the analysis, so
a retry writes the same link), the check run links to it and every comment links to its
finding's section there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from analyzers.model import AnalysisResult, Finding
from analyzers.report import comment_range, inline_comment, review_body
from analyzers.report.markdown import REVIEW_MARKER, settings_notes
from analyzers.report.mdescape import truncate
from analyzers.report.summary import anchor_lines, sorted_findings
from analyzers.trust import comment_inline, comment_on, held_back_sentence, is_credible_proof
from bot.github import GitHubClient
from bot.report import finding_anchor

TEXT_LIMIT = 65535
ANNOTATION_BATCH = 50
FINGERPRINT_RE = re.compile(r"<!-- numcheck:fingerprint=([0-9A-Za-z_-]+) -->")
RESOLVED_RE = re.compile(r"<!-- numcheck:resolved=([0-9A-Za-z_-]+) -->")
HEAD_RE = re.compile(r"<!-- numcheck:head=([0-9a-f]{7,64}) -->")
_LEVEL = {"error": "failure", "warning": "warning", "note": "notice"}

State = dict[str, Any]
Save = Callable[[State], None]


def commentable_lines(files: Iterable[dict[str, Any]]) -> dict[str, set[int]]:
    """RIGHT-side lines of each file's patch, the only lines a review comment may sit on."""
    lines: dict[str, set[int]] = {}
    for item in files:
        patch = item.get("patch")
        if not patch:
            continue
        right: set[int] = set()
        new = 0
        for text in str(patch).splitlines():
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", text)
            if m:
                new = int(m.group(1))
            elif text.startswith(("-", "\\")):
                continue
            else:
                right.add(new)
                new += 1
        lines[str(item["filename"])] = right
    return lines


def encode_lines(lines: dict[str, set[int]]) -> dict[str, list[list[int]]]:
    """Commentable lines as [first, last] ranges (compact enough to keep in the database)."""
    out: dict[str, list[list[int]]] = {}
    for path, numbers in lines.items():
        ranges: list[list[int]] = []
        for n in sorted(numbers):
            if ranges and ranges[-1][1] == n - 1:
                ranges[-1][1] = n
            else:
                ranges.append([n, n])
        out[path] = ranges
    return out


def decode_lines(data: dict[str, list[list[int]]]) -> dict[str, set[int]]:
    return {
        path: {n for lo, hi in ranges for n in range(lo, hi + 1)} for path, ranges in data.items()
    }


def conclusion(result: AnalysisResult) -> str:
    """neutral for findings (they are potential problems to look at), success when clean;
    failure only for a confirmed finding, and only where the repository's config asks
    (`check_failure = "confirmed"`): a suspicion never blocks a merge."""
    if not result.findings:
        return "success"
    if result.config.get("check_failure") == "confirmed" and any(
        is_credible_proof(f) for f in result.findings
    ):
        return "failure"
    return "neutral"


def _title(result: AnalysisResult) -> str:
    n = len(result.findings)
    if not n:
        return "No NaN/Inf risks in the changed code"
    confirmed = sum(f.status == "confirmed" for f in result.findings)
    title = f"{n} potential NaN/Inf risk{'s' if n != 1 else ''}"
    return title + (f", {confirmed} confirmed" if confirmed else "")


def with_report_link(body: str, url: str) -> str:
    """A comment with a link to its finding on the report page, above the hidden marker
    (which must stay last); unchanged where the link would not fit GitHub's limit."""
    line = (
        f"[Report page: how the search found it, the trigger, the reproducer and the patch]({url})"
    )
    at = body.rfind("<!-- numcheck:fingerprint=")
    if at < 0 or len(body) + len(line) + 2 > TEXT_LIMIT:
        return body
    return f"{body[:at]}{line}\n\n{body[at:]}"


def _summary(result: AnalysisResult, head: str, details_url: str | None = None) -> str:
    ops: dict[str, int] = {}
    for f in result.findings:
        ops[f.op] = ops.get(f.op, 0) + 1
    parts = [f"numcheck analysed {result.files_analyzed} changed file(s) at `{head[:12]}`."]
    if ops:
        parts.append("By op: " + ", ".join(f"`{op}` × {n}" for op, n in sorted(ops.items())) + ".")
    notes = settings_notes(result)
    if notes:
        parts.append(notes)
    held = held_back_sentence(result.findings, comment_on(result.config))
    if held:
        parts.append(held + " They are the notice annotations; the list is below.")
    if result.errors:
        parts.append(f"{len(result.errors)} stage error(s); see the details below.")
    if details_url:
        parts.append(
            f"[The report page]({details_url}) shows each finding's code and "
            "reasoning and, where the code ran, the search, the reproducer and the "
            "checked fix."
        )
    return truncate("\n\n".join(parts), TEXT_LIMIT - 100)


def _commented_lines(finding: Finding, commentable: set[int]) -> tuple[int, int]:
    """The fix's range when its suggestion block needs more lines than the finding's own and
    GitHub lets us comment on all of them; else the finding's lines (the comment then shows
    the fix as a diff instead of a block)."""
    own = anchor_lines(finding)
    start, end = comment_range(finding)
    if (start, end) != own and all(n in commentable for n in range(start, end + 1)):
        return start, end
    return own


def annotation(finding: Finding, held_back: bool = False) -> dict[str, Any]:
    """A check-run annotation; a finding the publishing policy holds back from inline comments
    is a notice, whatever its severity, so that it does not read as a proven problem."""
    level = "notice" if held_back else _LEVEL.get(finding.severity, "warning")
    item: dict[str, Any] = {
        "path": finding.path,
        "start_line": finding.line,
        "end_line": max(finding.end_line, finding.line),
        "annotation_level": level,
        "title": truncate(f"numcheck: {finding.op} ({finding.status})", 255),
        "message": truncate(finding.why or finding.call, 60000),
        "raw_details": truncate(finding.call, 60000),
    }
    if finding.line == item["end_line"] and finding.end_column > finding.column:
        item["start_column"], item["end_column"] = finding.column, finding.end_column
    return item


def in_progress_body(head: str, name: str, text: str) -> dict[str, Any]:
    return {
        "name": name,
        "head_sha": head,
        "status": "in_progress",
        "output": {
            "title": "numcheck is analysing this push",
            "summary": truncate(text, TEXT_LIMIT - 100),
        },
    }


def ensure_check_run(
    client: GitHubClient, repo: str, head: str, name: str, text: str, known_id: int | None
) -> int:
    """The check run for `head`: the known one, or one found by name, or a new one; set
    in_progress with `text`."""
    run_id = known_id
    if run_id is None:
        existing = client.check_runs_for(repo, head, name)
        mine = [r for r in existing if r.get("name") == name]
        run_id = int(mine[0]["id"]) if mine else None
    body = in_progress_body(head, name, text)
    if run_id is None:
        return int(client.create_check_run(repo, body)["id"])
    client.update_check_run(repo, run_id, {k: v for k, v in body.items() if k != "head_sha"})
    return run_id


def progress(client: GitHubClient, repo: str, run_id: int, text: str) -> None:
    client.update_check_run(
        repo,
        run_id,
        {
            "status": "in_progress",
            "output": {
                "title": "numcheck is analysing this push",
                "summary": truncate(text, TEXT_LIMIT - 100),
            },
        },
    )


def finish_check_run(
    client: GitHubClient,
    repo: str,
    run_id: int,
    *,
    conclusion: str,
    title: str,
    summary: str,
    text: str = "",
) -> None:
    client.update_check_run(
        repo,
        run_id,
        {
            "status": "completed",
            "conclusion": conclusion,
            "output": {
                "title": truncate(title, 255),
                "summary": truncate(summary, TEXT_LIMIT - 100),
                "text": truncate(text, TEXT_LIMIT - 100),
            },
        },
    )


@dataclass
class Published:
    check_run_id: int
    review_id: int | None = None
    new_comments: int = 0
    edited_comments: int = 0
    resolved: int = 0
    body_only: list[str] = field(default_factory=list)  # fingerprints not placed inline
    comment_ids: dict[str, int] = field(default_factory=dict)


def publish(
    client: GitHubClient,
    *,
    repo: str,
    number: int,
    result: AnalysisResult,
    check_run_id: int,
    lines: dict[str, set[int]],
    state: State,
    save: Save,
    bot_login: str,
    max_inline: int = 30,
    details_url: str | None = None,
) -> Published:
    if not bot_login:
        raise ValueError(
            "publish needs the App's bot login (<slug>[bot]) to tell its own "
            "reviews and comments from anyone else's"
        )
    head = result.head or ""
    out = Published(check_run_id=check_run_id)
    findings = sorted_findings(result.findings)
    policy = comment_on(result.config)

    # 1. Review comments: read back what is there, edit what changed, post what is new. Only
    # what the policy lets be inline (proven or definite, by default) is placed; a finding
    # commented earlier under another policy or status is still edited, not left stale.
    existing, replied, resolved = _existing_comments(client, repo, number, bot_login)
    placed: list[Finding] = []
    for f in findings:
        if f.fingerprint in existing or (
            comment_inline(f, policy) and set(anchor_lines(f)) <= lines.get(f.path, set())
        ):
            placed.append(f)
    new_comments: list[dict[str, Any]] = []
    inline: set[str] = set()
    for f in placed:
        start, end = _commented_lines(f, lines.get(f.path, set()))
        body = inline_comment(f, (start, end))
        if details_url:
            body = with_report_link(body, f"{details_url}#{finding_anchor(f.fingerprint)}")
        if f.fingerprint in existing:
            comment = existing[f.fingerprint]
            inline.add(f.fingerprint)
            out.comment_ids[f.fingerprint] = int(comment["id"])
            if comment.get("body") != body:
                client.edit_review_comment(repo, int(comment["id"]), body)
                out.edited_comments += 1
            continue
        if len(inline) >= max_inline:
            continue  # over the cap: listed in the review body instead
        comment = {"path": f.path, "line": end, "side": "RIGHT", "body": body}
        if end > start:
            comment.update(start_line=start, start_side="RIGHT")
        new_comments.append(comment)
        inline.add(f.fingerprint)
    out.body_only = [
        f.fingerprint for f in findings if f.fingerprint not in inline and comment_inline(f, policy)
    ]

    reviews = client.reviews(repo, number)
    # The App's own reviews only: anyone can write the marker and a head SHA into a review.
    ours = [
        r for r in reviews if REVIEW_MARKER in str(r.get("body") or "") and _is_ours(r, bot_login)
    ]
    already = next((r for r in ours if _head_of(r) == head), None)
    if already is not None:
        out.review_id = int(already["id"])
    elif new_comments or not ours:
        body = review_body(result, inline=inline)
        if details_url:
            body += f"\n\n[The report page]({details_url}) has the details of every finding."
        body += f"\n<!-- numcheck:head={head} -->"
        review = client.create_review(
            repo,
            number,
            {"commit_id": head, "body": body, "event": "COMMENT", "comments": new_comments},
        )
        out.review_id = int(review["id"])
        out.new_comments = len(new_comments)
    state["review_id"] = out.review_id
    save(state)
    if out.new_comments:  # read back the ids GitHub gave the new comments
        existing, replied, resolved = _existing_comments(client, repo, number, bot_login)
    out.comment_ids.update({fp: int(c["id"]) for fp, c in existing.items()})

    # 2. Findings that are gone: one "resolved" reply each, never a deletion.
    current = {f.fingerprint for f in findings}
    failed_paths = {e.path for e in result.errors if e.path}
    stage_failed = any(e.path is None and e.stage == "static" for e in result.errors)
    for fingerprint, comment in existing.items():
        if fingerprint in current or fingerprint in resolved:
            continue
        if stage_failed or comment.get("path") in failed_paths:
            continue  # not analysed this time (a parse error, say): gone is not fixed
        note = (
            f"Resolved in {head[:12]}: numcheck no longer finds this risk."
            f"\n\n<!-- numcheck:resolved={fingerprint} -->"
        )
        client.reply_to_review_comment(repo, number, int(comment["id"]), note)
        out.resolved += 1
    del replied  # kept for callers that want to know; replies never block anything here

    # 3. The check run: annotations in batches of 50, then completed.
    batches = [
        [annotation(f, not comment_inline(f, policy)) for f in findings[i : i + ANNOTATION_BATCH]]
        for i in range(0, len(findings), ANNOTATION_BATCH)
    ]
    title, summary = _title(result), _summary(result, head, details_url)
    text = review_body(result)
    sent = int(state.get("annotation_batches", 0))
    for index in range(sent, max(len(batches) - 1, 0)):
        client.update_check_run(
            repo,
            check_run_id,
            {"output": {"title": title, "summary": summary, "annotations": batches[index]}},
        )
        state["annotation_batches"] = index + 1
        save(state)
    final: dict[str, Any] = {
        "status": "completed",
        "conclusion": conclusion(result),
        "output": {"title": title, "summary": summary, "text": truncate(text, TEXT_LIMIT - 100)},
    }
    if details_url:
        final["details_url"] = details_url
    if batches and int(state.get("annotation_batches", 0)) < len(batches):
        final["output"]["annotations"] = batches[-1]
    if not state.get("check_completed"):
        client.update_check_run(repo, check_run_id, final)
        state["annotation_batches"] = len(batches)
        state["check_completed"] = True
        save(state)
    return out


def _head_of(review: dict[str, Any]) -> str | None:
    m = HEAD_RE.search(str(review.get("body") or ""))
    return m.group(1) if m else None


def _is_ours(item: dict[str, Any], bot_login: str) -> bool:
    """Posted by the App itself (a review or a comment): its login, not just any bot's."""
    user = item.get("user") or {}
    return bool(user.get("login") == bot_login and user.get("type") == "Bot")


def _existing_comments(
    client: GitHubClient, repo: str, number: int, bot_login: str
) -> tuple[dict[str, dict[str, Any]], set[int], set[str]]:
    """(fingerprint -> our top-level comment, ids of comments someone replied to,
    fingerprints already answered as resolved)."""
    comments = client.review_comments(repo, number)
    ours: dict[str, dict[str, Any]] = {}
    replied: set[int] = set()
    resolved: set[str] = set()
    for c in comments:
        body = str(c.get("body") or "")
        if c.get("in_reply_to_id"):
            replied.add(int(c["in_reply_to_id"]))
            m = RESOLVED_RE.search(body)
            if m and _is_ours(c, bot_login):
                resolved.add(m.group(1))
            continue
        m = FINGERPRINT_RE.search(body)
        if m and _is_ours(c, bot_login):
            ours.setdefault(m.group(1), c)
    return ours, replied, resolved
