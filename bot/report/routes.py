"""The report pages' routes: access first, then the page.

GET /report/<id>?exp=..&sig=..                       the analysis page
GET /report/<id>/<fingerprint>/reproducer.py?...    one finding's reproducer (same signature)
GET /report/<id>/<fingerprint>/fix.diff?...         one finding's validated patch
GET /report/repo/<owner>/<name>?exp=..&sig=..        the repository page

Every answer is refused with 403 unless its link is signed for exactly what it opens and has
not expired (`signing`); an unknown analysis behind a good signature is a 404. Pages are
never cached by shared caches, never indexed, never sent as a Referer, and load nothing from
elsewhere (the Content-Security-Policy allows only the inline stylesheet).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, request
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from sqlalchemy import select

from analyzers.report.jsonout import result_from_json
from bot.db import session_scope
from bot.models import Analysis
from bot.report import signing
from bot.report.pages import Stored, analysis_page, inline_code
from bot.report.repository import repository_page
from bot.settings import Settings

HISTORY_LIMIT = 200  # analyses on a repository page
HEADERS = {
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
}
REFUSED = {
    "unsigned": "This link is not signed.",
    "invalid": "This link's signature does not match what it opens.",
    "expired": "This link has expired.",
}
_FINGERPRINT = re.compile(r"^[0-9a-f]{24}$")

_env = Environment(
    loader=PackageLoader("bot.report", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["inline_code"] = inline_code


def render(template: str, **context: Any) -> str:
    return _env.get_template(template).render(**context)


def _answer(
    body: str, status: int, mimetype: str = "text/html", filename: str | None = None
) -> tuple[Response, int]:
    response = Response(body, mimetype=mimetype)
    response.headers.update(HEADERS)
    if filename:
        response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response, status


def _refused(verdict: str) -> tuple[Response, int]:
    return _answer(
        render(
            "refused.html", title="Link refused", message=REFUSED.get(verdict, REFUSED["invalid"])
        ),
        403,
    )


def _missing(what: str) -> tuple[Response, int]:
    return _answer(render("refused.html", title="Not found", message=f"No such {what}."), 404)


def stored(row: Analysis) -> Stored:
    """The row's data, read while its session is open."""
    excerpts = (row.publish_state or {}).get("excerpts")
    return Stored(
        id=row.id,
        repo=row.repo,
        pr_number=row.pr_number,
        head_sha=row.head_sha,
        base_sha=row.base_sha or "",
        status=row.status,
        error=row.error or "",
        created_at=row.created_at,
        timings=dict(row.timings or {}),
        result=result_from_json(row.result) if row.result else None,
        excerpts=excerpts if isinstance(excerpts, dict) else {},
    )


def web_url(api_url: str) -> str:
    """GitHub's web address for its API's: github.com for api.github.com, HOST for
    GitHub Enterprise's https://HOST/api/v3."""
    parts = urlsplit(api_url)
    if parts.netloc == "api.github.com":
        return "https://github.com"
    return f"{parts.scheme}://{parts.netloc}"


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "numcheck"


def blueprint(settings: Settings) -> Blueprint:
    pages = Blueprint("report", __name__)
    secret = settings.report_secret

    def check(scope: signing.Scope, subject: str) -> str:
        return signing.verify(
            secret, scope, subject, request.args.get("exp"), request.args.get("sig")
        )

    def analysis_links(analysis_id: int, expires: int) -> Callable[[str], str]:
        query = signing.query(secret, "analysis", str(analysis_id), expires)
        return lambda suffix: f"/report/{analysis_id}/{suffix}?{query}"

    @pages.get("/report/<int:analysis_id>")
    def analysis(analysis_id: int) -> tuple[Response, int]:
        verdict = check("analysis", str(analysis_id))
        if verdict != "ok":
            return _refused(verdict)
        expires = int(request.args["exp"])
        with session_scope(settings.database_url) as s:
            row = s.get(Analysis, analysis_id)
            if row is None:
                return _missing("analysis")
            data = stored(row)
        page = analysis_page(
            data,
            link=analysis_links(analysis_id, expires),
            expires=expires,
            repository_url=settings.repository_report_path(data.repo, expires),
            web_url=web_url(settings.github_api_url),
        )
        return _answer(render("analysis.html", page=page, title=page.title), 200)

    @pages.get("/report/<int:analysis_id>/<fingerprint>/<any('reproducer.py', 'fix.diff'):name>")
    def download(analysis_id: int, fingerprint: str, name: str) -> tuple[Response, int]:
        verdict = check("analysis", str(analysis_id))
        if verdict != "ok":
            return _refused(verdict)
        if not _FINGERPRINT.match(fingerprint):
            return _missing("finding")
        with session_scope(settings.database_url) as s:
            row = s.get(Analysis, analysis_id)
            data = stored(row) if row is not None else None
        findings = data.result.findings if data and data.result else []
        finding = next((f for f in findings if f.fingerprint == fingerprint), None)
        if finding is None:
            return _missing("finding")
        stem = _safe_name(
            f"numcheck-{analysis_id}-{finding.op}-"
            f"{finding.path.rsplit('/', 1)[-1].removesuffix('.py')}-"
            f"L{finding.line}"
        )
        if name == "reproducer.py":
            if not finding.reproducer:
                return _missing("reproducer")
            return _answer(finding.reproducer, 200, "text/x-python", f"{stem}.py")
        diff = (
            (finding.fix or {}).get("diff")
            if (finding.fix or {}).get("status", "validated") == "validated"
            else None
        )
        if not isinstance(diff, str) or not diff.strip():
            return _missing("patch")
        return _answer(diff, 200, "text/x-diff", f"{stem}.diff")

    @pages.get("/report/repo/<owner>/<name>")
    def repository(owner: str, name: str) -> tuple[Response, int]:
        repo = f"{owner}/{name}"
        verdict = check("repository", repo)
        if verdict != "ok":
            return _refused(verdict)
        expires = int(request.args["exp"])
        with session_scope(settings.database_url) as s:
            rows = list(
                s.scalars(
                    select(Analysis)
                    .where(Analysis.repo == repo)
                    .order_by(Analysis.created_at.desc(), Analysis.id.desc())
                    .limit(HISTORY_LIMIT)
                )
            )
            analyses = [stored(row) for row in reversed(rows)]
        if not analyses:
            return _missing("repository")

        def link(analysis_id: int) -> str:
            return (
                f"/report/{analysis_id}?"
                f"{signing.query(secret, 'analysis', str(analysis_id), expires)}"
            )

        page = repository_page(repo, analyses, link=link, expires=expires)
        return _answer(render("repository.html", page=page, title=page.title), 200)

    return pages
