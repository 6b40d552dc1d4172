"""The report pages in a real browser: Debian's Chromium, headless, driven by Playwright, against
the Flask app on a real HTTP server with analyses stored in SQLite.

The analyses are real: the sample pull request of `numcheck demo` analysed by the full pipeline
(static pass, sandboxed search, reproducers, validated fixes), the same code with the static pass
only, one whose findings failed, one that stopped before a result, and an earlier push whose
findings later went away. Checked: the findings render with their code, the download links give
exactly the stored reproducer and patch, each search is plotted with its invalid boundary, the
repository page counts right, nothing is loaded from elsewhere, and an unsigned, tampered or
expired link is refused with 403; accessibility basics (one h1, heading levels in order, a text
alternative for every image and plot, text contrast of at least 4.5:1, measured from the
computed styles). Screenshots go to tests/.artifacts/report-screenshots (or
$NUMCHECK_SCREENSHOT_DIR) for a person to look at.
"""

from __future__ import annotations

import copy
import os
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from app_support import app_env, make_key
from werkzeug.serving import make_server

from analyzers.catalogue import KNOWN_OPS
from analyzers.config import load_config
from analyzers.model import AnalysisResult, Finding, StageError
from analyzers.report.summary import validated_fix
from bot.db import engine_for, session_scope
from bot.demo import build_sample_repo
from bot.models import Analysis
from bot.report import excerpts, signing
from bot.settings import Settings, from_env

CHROMIUM = os.environ.get("NUMCHECK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
]
SCREENSHOTS = Path(
    os.environ.get("NUMCHECK_SCREENSHOT_DIR")
    or Path(__file__).parent / ".artifacts" / "report-screenshots"
)
PUBLIC = "https://numcheck.example.com"
REPO = "octo/demo"


@dataclass
class Site:
    url: str
    settings: Settings
    ids: dict[str, int]
    results: dict[str, AnalysisResult]
    created: dict[str, datetime]

    def link(self, name: str) -> str:
        """The signed link the App would publish, on this server."""
        url = self.settings.report_url(self.ids[name], self.created[name])
        assert url is not None and url.startswith(PUBLIC)
        return self.url + url[len(PUBLIC) :]


def _store(
    settings: Settings,
    *,
    pr: int,
    head: str,
    result: AnalysisResult | None,
    created: datetime,
    status: str = "published",
    error: str = "",
    kept: dict[str, Any] | None = None,
) -> int:
    with session_scope(settings.database_url) as s:
        row = Analysis(
            installation_id=1,
            repo=REPO,
            pr_number=pr,
            head_sha=head,
            base_sha="b" * 40,
            status=status,
            error=error,
            created_at=created,
            timings={"fetch_git": 0.42, "analysis": 31.5},
            result=result.to_json() if result else None,
            publish_state={"excerpts": kept or {}},
        )
        s.add(row)
        s.flush()
        return row.id


def _renamed(finding: Finding, call: str) -> Finding:
    """The same finding with another call text: another fingerprint."""
    data = {**finding.__dict__, "call": call, "fingerprint": ""}
    return Finding(**copy.deepcopy(data))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("report-pages")
    key, _ = make_key(tmp)
    database = f"sqlite:///{tmp / 'numcheck.db'}"
    settings = from_env(
        app_env(
            key_path=key,
            api_url="https://api.github.com",
            database_url=database,
            broker_url="memory://",
            NUMCHECK_PUBLIC_URL=PUBLIC,
            NUMCHECK_REPORT_SECRET="pages-secret",
        )
    )
    from runners.pipeline import analyze

    repo, base, head = build_sample_repo(tmp / "sample")
    config = load_config(repo, known_ops=KNOWN_OPS)
    full = analyze(repo, base, head, config)  # static, search, reproducers, fixes
    static = analyze(repo, base, head, replace(config, dynamic=False))
    for result in (full, static):
        result.repo = REPO
    kept = excerpts.collect(repo, full.findings)
    assert {f.status for f in full.findings} >= {"confirmed", "not-triggered"}
    assert any(validated_fix(f) for f in full.findings)

    # a finding whose analysis failed, next to a stage error
    broken = _renamed(static.findings[0], "torch.log(unreached)")
    broken.status, broken.error = "error", "no entry reaches the op: `loss` needs a `config`"
    failed = AnalysisResult(
        repo=REPO,
        base=base,
        head=head,
        config={},
        findings=[broken],
        errors=[StageError("dynamic", "sandbox: no user namespaces")],
        files_analyzed=1,
    )
    # an earlier push: one finding with a validated fix, one without, both gone since
    fixed = next(f for f in full.findings if validated_fix(f))
    earlier = AnalysisResult(
        repo=REPO,
        base=base,
        head="e" * 40,
        config={},
        findings=[
            *copy.deepcopy(full.findings),
            _renamed(fixed, "torch.softmax(old_scores, -1)"),
            _renamed(static.findings[0], "torch.log(old)"),
        ],
    )
    now = datetime.now(UTC)
    created = {
        "earlier": now - timedelta(days=2),
        "full": now - timedelta(hours=3),
        "static": now - timedelta(hours=2),
        "error": now - timedelta(hours=1),
        "stopped": now - timedelta(minutes=30),
    }
    heads = {
        "earlier": "e" * 40,
        "full": full.head or "f" * 40,
        "static": "5" * 40,
        "error": "9" * 40,
        "stopped": "7" * 40,
    }
    from bot.web import create_app

    app = create_app(settings)
    ids = {
        "earlier": _store(
            settings, pr=7, head=heads["earlier"], result=earlier, created=created["earlier"]
        ),
        "full": _store(
            settings, pr=7, head=heads["full"], result=full, created=created["full"], kept=kept
        ),
        "static": _store(
            settings,
            pr=8,
            head=heads["static"],
            result=static,
            created=created["static"],
            kept=kept,
        ),
        "error": _store(
            settings, pr=9, head=heads["error"], result=failed, created=created["error"]
        ),
        "stopped": _store(
            settings,
            pr=10,
            head=heads["stopped"],
            result=None,
            created=created["stopped"],
            status="failed",
            error="numcheck.toml: unknown key `dtyp` (did you mean `dtype`?)",
        ),
    }
    results = {"earlier": earlier, "full": full, "static": static, "error": failed}
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_port}", settings, ids, results, created)
    finally:
        server.shutdown()
        engine_for(database).dispose()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: the report page tests need Debian's Chromium. "
            "Install it with `apt-get install -y chromium chromium-driver` (as root; "
            "`scripts/setup --dev` does it), or point NUMCHECK_CHROMIUM at a Chromium."
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.fail(f"Playwright for Python is missing ({exc}): run `scripts/setup --dev`")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    print(f"\nreport page screenshots: {SCREENSHOTS}")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, site: Site) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    tab = context.new_page()
    elsewhere: list[str] = []
    tab.on(
        "request",
        lambda r: elsewhere.append(r.url) if not r.url.startswith((site.url, "data:")) else None,
    )
    yield tab
    context.close()
    assert elsewhere == [], f"the page loaded something from elsewhere: {elsewhere}"


# --- accessibility ----------------------------------------------------------------------------
A11Y = """() => {
  const levels = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')]
    .map(h => ({level: Number(h.tagName[1]), text: h.textContent.trim()}));
  const unlabelled = [];
  for (const img of document.querySelectorAll('img')) {
    if (!(img.getAttribute('alt') || '').trim()) unlabelled.push('img ' + img.src);
  }
  for (const svg of document.querySelectorAll('svg')) {
    if (svg.parentElement.closest('svg')) continue;
    const by = (svg.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean)
      .map(id => (document.getElementById(id) || {}).textContent || '').join(' ').trim();
    const title = svg.querySelector(':scope > title');
    const name = (svg.getAttribute('aria-label') || '').trim() || by ||
      (title ? title.textContent.trim() : '');
    if (!name || svg.getAttribute('role') !== 'img') unlabelled.push('svg ' + svg.id);
  }
  const rgba = s => { const m = s.match(/[\\d.]+/g).map(Number);
                      return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((acc, v, i) => acc + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
                            return (x + 0.05) / (y + 0.05); };
  const background = el => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let out = [255, 255, 255];
    for (const c of layers.reverse()) out = out.map((v, i) => c[i] * c[3] + v * (1 - c[3]));
    return out;
  };
  const low = [];
  let checked = 0;
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    let fg, bg;
    if (el.closest('svg')) {   // plot text: its fill, on the plot's white background
      if (el.tagName.toLowerCase() !== 'text') continue;
      fg = rgba(style.fill); bg = [255, 255, 255];
    } else {
      fg = rgba(style.color); bg = background(el);
    }
    const c = fg[3] < 1 ? fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3]))
                        : fg.slice(0, 3);
    checked += 1;
    const r = ratio(c, bg);
    if (r < 4.5) low.push(`${el.tagName} "${el.textContent.trim().slice(0, 40)}" ` +
                          `${r.toFixed(2)}:1`);
  }
  return {levels, unlabelled, low, checked, lang: document.documentElement.lang};
}"""


def assert_accessible(tab: Any, least: int = 20) -> dict[str, Any]:
    """One h1, no skipped heading level, a name for every image and plot, and every text
    element (of at least `least`) at 4.5:1 or more against what is behind it."""
    report = tab.evaluate(A11Y)
    levels = [h["level"] for h in report["levels"]]
    assert levels and levels[0] == 1 and levels.count(1) == 1, report["levels"]
    skips = [(a, b) for a, b in zip(levels, levels[1:], strict=False) if b > a + 1]
    assert not skips, f"heading levels skip: {skips} in {report['levels']}"
    assert report["unlabelled"] == [], report["unlabelled"]
    assert report["checked"] >= least and report["low"] == [], report["low"]
    assert report["lang"] == "en"
    return report


def shot(tab: Any, name: str, *, full: bool = True) -> Path:
    path = SCREENSHOTS / f"{name}.png"
    tab.screenshot(path=str(path), full_page=full)
    assert path.stat().st_size > 10_000
    return path


# --- the analysis page ------------------------------------------------------------------------
def test_the_analysis_page_shows_every_finding_with_its_code_search_and_fix(
    page: Any, site: Site
) -> None:
    response = page.goto(site.link("full"))
    assert response.status == 200
    assert response.headers["cache-control"] == "private, no-store"
    assert response.headers["referrer-policy"] == "no-referrer"
    result = site.results["full"]
    assert page.locator("h1").inner_text() == f"numcheck report: {REPO} #7"
    assert (result.head or "")[:12] in page.locator("header.page").inner_text()
    assert "fetch git" in page.locator("section[aria-labelledby=timings]").inner_text()
    articles = page.locator("article.finding")
    assert articles.count() == len(result.findings)
    for finding in result.findings:
        article = page.locator(f"#finding-{finding.fingerprint}")
        heading = article.locator("h3").inner_text()
        assert f"Line {finding.line}" in heading and finding.op in heading
        assert finding.status in heading
        # the excerpt holds the flagged line, marked, with lines around it
        flagged = article.locator("pre.code .line.flagged")
        assert flagged.count() >= 1
        first_line = finding.call.splitlines()[0].strip()
        assert first_line in flagged.first.inner_text()
        assert article.locator("pre.code .line").count() > flagged.count()
        assert article.locator("pre.code mark").count() >= 1
        assert finding.why.replace("`", "") in article.locator("dl.facts").inner_text()
        if finding.interval is not None:
            assert finding.interval.dtype in article.locator("dl.facts").inner_text()
        plot = article.locator("svg.plot-search")
        trace = (finding.trigger or {}).get("search_trace")
        if finding.status in ("confirmed", "not-triggered"):
            assert trace and trace["points"], finding.status
            assert plot.count() == 1
            assert plot.locator("line.boundary").count() == 1
            assert "boundary" in plot.locator("text.boundary-label").text_content()
            restarts = sum(p["restart"] for p in trace["points"] if p["value"] is not None)
            assert plot.locator("path.restart").count() == restarts > 0
            assert plot.locator("path.trigger").count() == (finding.status == "confirmed")
            assert "Valid box" in article.inner_text()
        if finding.status == "confirmed":
            assert article.locator("a.reproducer-link").count() == 1
            assert "NaN/Inf in the" in article.inner_text()
        fix = validated_fix(finding)
        if fix is not None:
            assert article.locator("a.patch-link").count() == 1
            assert article.locator("pre.diff .diff-add").count() >= 1
            assert article.locator("table.checks tr").count() >= 5
            assert article.locator("svg.plot-deviation line.tolerance").count() == 1
            assert fix["kind"] in article.inner_text()
        elif finding.fix is not None:
            assert "no candidate fix passed validation" in article.inner_text()
    assert_accessible(page)
    shot(page, "analysis-confirmed")
    confirmed = next(f for f in result.findings if validated_fix(f))
    page.locator(f"#finding-{confirmed.fingerprint}").screenshot(
        path=str(SCREENSHOTS / "finding-confirmed-with-fix.png")
    )
    quiet = next(f for f in result.findings if f.status == "not-triggered")
    page.locator(f"#finding-{quiet.fingerprint}").screenshot(
        path=str(SCREENSHOTS / "finding-not-triggered.png")
    )


def test_a_comments_link_lands_on_its_finding(page: Any, site: Site) -> None:
    finding = site.results["full"].findings[-1]
    page.goto(f"{site.link('full')}#finding-{finding.fingerprint}")
    assert page.evaluate("document.querySelector(':target').id") == f"finding-{finding.fingerprint}"
    assert page.locator(f"#finding-{finding.fingerprint}").is_visible()


def test_the_download_links_give_exactly_the_stored_reproducer_and_patch(
    page: Any, site: Site
) -> None:
    page.goto(site.link("full"))
    result = site.results["full"]
    with_files = [f for f in result.findings if f.reproducer]
    assert with_files
    for finding in with_files:
        article = page.locator(f"#finding-{finding.fingerprint}")
        link = article.locator("a.reproducer-link")
        with page.expect_download() as info:
            link.click()
        download = info.value
        assert Path(download.path()).read_text(encoding="utf-8") == finding.reproducer
        assert download.suggested_filename.endswith(".py")
        assert finding.op in download.suggested_filename
        fix = validated_fix(finding)
        if fix is None:
            assert article.locator("a.patch-link").count() == 0
            continue
        answer = page.request.get(site.url + article.locator("a.patch-link").get_attribute("href"))
        assert answer.status == 200 and answer.text() == fix["diff"]
        assert answer.headers["content-type"].startswith("text/x-diff")
        assert 'attachment; filename="' in answer.headers["content-disposition"]
        # the patch applies to the file the page shows: its removed lines are in the excerpt
        removed = [
            line[1:]
            for line in fix["diff"].splitlines()
            if line.startswith("-") and not line.startswith("---")
        ]
        code = article.locator("pre.code").inner_text()
        assert all(line.strip() in code for line in removed)
    # a download for a finding of another analysis, under this analysis's signature: 404
    other = site.results["earlier"].findings[-2]
    href = article.locator("a.reproducer-link").get_attribute("href")
    wrong = href.replace(href.split("/")[3], other.fingerprint)
    assert page.request.get(site.url + wrong).status == 404


def test_a_static_only_analysis_and_a_failed_one_render_what_they_have(
    page: Any, site: Site
) -> None:
    page.goto(site.link("static"))
    static = site.results["static"]
    assert page.locator("article.finding").count() == len(static.findings)
    assert page.locator("svg").count() == 0 and page.locator("a.download").count() == 0
    assert page.locator(".badge.potential").count() >= len(static.findings)
    assert all(
        f.call.splitlines()[0].strip()
        in page.locator(f"#finding-{f.fingerprint} pre.code").inner_text()
        for f in static.findings
    )
    assert_accessible(page)
    shot(page, "analysis-static-only")

    page.goto(site.link("error"))
    text = page.locator("main").inner_text()
    assert "Stage errors" in text and "sandbox: no user namespaces" in text
    assert "no entry reaches the op: loss needs a config" in text
    # the file was not kept: the call alone, said so
    assert "surrounding lines were not kept" in text
    assert_accessible(page)
    shot(page, "analysis-error")

    page.goto(site.link("stopped"))
    assert "No result is stored for this analysis" in page.locator("main").inner_text()
    assert "unknown key" in page.locator("main").inner_text()
    assert_accessible(page, least=8)


# --- the repository page ----------------------------------------------------------------------
def test_the_repository_page_counts_analyses_ops_statuses_and_fixes(page: Any, site: Site) -> None:
    page.goto(site.link("full"))
    page.get_by_role("link", name=f"All analyses of {REPO}").click()
    assert page.locator("h1").inner_text() == f"numcheck report: {REPO}"
    latest = [site.results["full"], site.results["static"], site.results["error"]]
    expected: Counter[tuple[str, str]] = Counter(
        (f.op, f.status) for r in latest for f in r.findings
    )
    table = page.locator("table.by-op")
    statuses = [t.strip() for t in table.locator("thead th").all_inner_texts()][1:-1]
    shown: Counter[tuple[str, str]] = Counter()
    for row in table.locator("tbody tr").all():
        cells = [c.strip() for c in row.locator("td").all_inner_texts()]
        for status, value in zip(statuses, cells[1:-1], strict=True):
            if int(value):
                shown[(cells[0], status)] = int(value)
        assert int(cells[-1]) == sum(int(v) for v in cells[1:-1])
    assert shown == expected
    suggested = len(
        {
            f.fingerprint
            for r in (site.results["earlier"], site.results["full"])
            for f in r.findings
            if validated_fix(f)
        }
    )
    assert page.locator("#count-suggested").inner_text() == str(suggested)
    assert page.locator("#count-fixed").inner_text() == "1"
    assert page.locator("#count-otherwise").inner_text() == "1"
    assert page.locator("#count-open").inner_text() == str(sum(len(r.findings) for r in latest))
    rows = page.locator("table.analyses tbody tr")
    assert rows.count() == len(site.ids)
    assert "#10" in rows.first.inner_text()  # newest first
    chart = page.locator("svg.plot-history")
    assert chart.count() == 1
    assert chart.locator("rect.bar").count() >= len(site.results)
    assert_accessible(page)
    shot(page, "repository")
    # its links open the analyses, signed
    rows.nth(1).locator("a").click()
    assert page.locator("h1").inner_text() == f"numcheck report: {REPO} #9"


# --- access -----------------------------------------------------------------------------------
def test_unsigned_tampered_and_expired_links_are_refused(page: Any, site: Site) -> None:
    good = site.link("full")
    base, query = good.split("?", 1)
    params = dict(part.split("=", 1) for part in query.split("&"))
    analysis = site.ids["full"]
    expired = int((datetime.now(UTC) - timedelta(minutes=1)).timestamp())
    past = signing.query(b"pages-secret", "analysis", str(analysis), expired)
    flipped = params["sig"][:-1] + ("0" if params["sig"][-1] != "0" else "1")
    refused = {
        "unsigned": base,
        "tampered signature": f"{base}?exp={params['exp']}&sig={flipped}",
        "longer life": f"{base}?exp={int(params['exp']) + 86400}&sig={params['sig']}",
        "another analysis": good.replace(f"/report/{analysis}?", f"/report/{site.ids['static']}?"),
        "expired": f"{base}?{past}",
        "old format": f"{base}?sig={params['sig'][:32]}",
        "repository with an analysis signature": f"{site.url}/report/repo/{REPO}?{query}",
        "download unsigned": f"{base}/{site.results['full'].findings[0].fingerprint}/reproducer.py",
    }
    for why, url in refused.items():
        response = page.goto(url)
        assert response is not None and response.status == 403, why
        assert page.locator("h1").inner_text() == "Link refused", why
        assert REPO not in page.content(), why  # nothing of the private repository
        if why == "expired":
            assert "expired" in page.locator("main").inner_text()
            assert_accessible(page, least=3)
            shot(page, "refused-expired", full=False)
    assert page.goto(good).status == 200
    missing = signing.query(b"pages-secret", "analysis", "999999", int(params["exp"]))
    assert page.goto(f"{site.url}/report/999999?{missing}").status == 404
