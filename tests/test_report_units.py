"""The report pages' parts one at a time: signed links, the search trace the dynamic pass
records, the fix's deviation series, the SVG plots, the code excerpts and the links that
publishing puts in check runs and comments. The pages themselves are tested in a real browser
in test_report_pages.py."""

from __future__ import annotations

import math
import re
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from app_support import APP_ID, app_env, make_key
from conftest import GitRepo, GitRepoFactory
from github_fake import FakeGitHub, FakePull

from analyzers.dynamic.searchtrace import BOUNDARY, SearchTrace
from analyzers.fix.validate import check_equivalence
from analyzers.model import AnalysisResult, Finding
from analyzers.report import inline_comment
from analyzers.report.jsonout import load_schema
from bot.report import excerpts, signing
from bot.report.highlight import excerpt_lines, highlight
from bot.report.svg import Scale, deviation_plot, history_chart, search_plot, value_scale
from bot.settings import from_env

SVG = "{http://www.w3.org/2000/svg}"
SECRET = b"report-secret"


# --- signed links -----------------------------------------------------------------------------
def test_a_signed_link_opens_exactly_what_it_was_signed_for_until_it_expires() -> None:
    now = 1_800_000_000
    expires = now + 3600
    sig = signing.signature(SECRET, "analysis", "42", expires)
    assert len(sig) == 64 and re.fullmatch(r"[0-9a-f]{64}", sig)
    assert signing.verify(SECRET, "analysis", "42", str(expires), sig, now=now) == "ok"
    # another analysis, another scope (a repository link replayed), another key
    assert signing.verify(SECRET, "analysis", "43", str(expires), sig, now=now) == "invalid"
    assert signing.verify(SECRET, "repository", "42", str(expires), sig, now=now) == "invalid"
    assert signing.verify(b"other", "analysis", "42", str(expires), sig, now=now) == "invalid"
    # a tampered signature or a longer life
    tampered = sig[:-1] + ("0" if sig[-1] != "0" else "1")
    assert signing.verify(SECRET, "analysis", "42", str(expires), tampered, now=now) == "invalid"
    assert signing.verify(SECRET, "analysis", "42", str(expires + 86400), sig, now=now) == "invalid"
    # expired: said only of a genuine signature
    assert signing.verify(SECRET, "analysis", "42", str(expires), sig, now=expires) == "expired"
    assert (
        signing.verify(SECRET, "analysis", "42", str(expires), tampered, now=expires) == "invalid"
    )
    for exp, given in ((None, sig), (str(expires), None), ("", ""), (str(expires), "")):
        assert signing.verify(SECRET, "analysis", "42", exp, given, now=now) == "unsigned"
    assert signing.verify(SECRET, "analysis", "42", "12e9", sig, now=now) == "invalid"
    assert signing.verify(SECRET, "analysis", "42", "１２", sig, now=now) == "invalid"
    assert signing.verify(b"", "analysis", "42", str(expires), sig, now=now) == "unsigned"


def test_expiry_is_dated_from_what_the_link_opens() -> None:
    created = datetime(2026, 1, 1, 12, 0)
    assert signing.expiry(created, 30) == signing.expiry(created.replace(tzinfo=UTC), 30)
    assert signing.expiry(created, 30) == int(datetime(2026, 1, 31, 12, 0, tzinfo=UTC).timestamp())


def test_settings_sign_report_links_with_a_configurable_lifetime(tmp_path: Path) -> None:
    key, _ = make_key(tmp_path)
    env = app_env(
        key_path=key,
        api_url="https://api.github.com",
        database_url="sqlite:///x.db",
        broker_url="memory://",
        NUMCHECK_PUBLIC_URL="https://nc.example.com/",
        NUMCHECK_REPORT_SECRET="s3cret",
        NUMCHECK_REPORT_LINK_DAYS="2",
    )
    settings = from_env(env)
    assert settings.report_link_days == 2.0
    created = datetime.now(UTC) - timedelta(hours=1)
    url = settings.report_url(7, created)
    assert url is not None and url == settings.report_url(7, created)  # a retry: the same
    match = re.fullmatch(r"https://nc\.example\.com/report/7\?exp=(\d+)&sig=([0-9a-f]{64})", url)
    assert match is not None
    expires = int(match.group(1))
    assert abs(expires - (created + timedelta(days=2)).timestamp()) < 1
    assert signing.verify(b"s3cret", "analysis", "7", match.group(1), match.group(2)) == "ok"
    path = settings.repository_report_path("octo/numlib", expires)
    query = dict(part.split("=") for part in path.split("?", 1)[1].split("&"))
    assert path.startswith("/report/repo/octo/numlib?")
    assert (
        signing.verify(b"s3cret", "repository", "octo/numlib", query["exp"], query["sig"]) == "ok"
    )
    # without a public URL there is no link; a lifetime that is not a number is refused
    assert from_env({**env, "NUMCHECK_PUBLIC_URL": ""}).report_url(7) is None
    from bot.settings import SettingsError

    with pytest.raises(SettingsError, match="NUMCHECK_REPORT_LINK_DAYS"):
        from_env({**env, "NUMCHECK_REPORT_LINK_DAYS": "a month"})


# --- the search trace -------------------------------------------------------------------------
def test_the_trace_thins_itself_but_keeps_restarts_stage_changes_and_the_trigger() -> None:
    trace = SearchTrace("x", cap=100)
    losses = [1.0 / (1 + i) for i in range(5000)]
    for i, loss in enumerate(losses, 1):
        stage = "restarts" if i <= 32 else ("gradient" if i <= 3000 else "evolution")
        trace.add(i, i * 1e-4, loss, stage, restart=i <= 32 or i in (1000, 2000))
    trace.add(5001, 0.5001, -0.25, "evolution", last=True)
    data = trace.to_json(triggered=True)
    points = data["points"]
    assert len(points) <= 100 and data["evaluations_seen"] == 5001
    assert data["kept_every"] > 1 and data["kept_every"] & (data["kept_every"] - 1) == 0
    evaluations = [p["evaluation"] for p in points]
    assert evaluations == sorted(evaluations)
    restarts = {p["evaluation"] for p in points if p["restart"]}
    assert restarts == set(range(1, 33)) | {1000, 2000}
    assert {3001} <= set(evaluations)  # the change to evolution
    assert points[-1] == {
        "evaluation": 5001,
        "seconds": 0.5001,
        "value": -0.25,
        "best": -0.25,
        "stage": "evolution",
        "restart": False,
    }
    bests = [p["best"] for p in points]
    assert all(a >= b for a, b in zip(bests, bests[1:], strict=False))
    assert data["boundary"] == BOUNDARY == 0.0 and data["objective"] == "x"
    # the ordinary points kept are spread over the whole search, not bunched at its start
    ordinary = [p["evaluation"] for p in points if not p["restart"]]
    assert max(ordinary) > 4000 and min(ordinary) < 500
    # a value the search could not compute is kept as null, never as NaN
    other = SearchTrace("x")
    other.add(1, 0.0, math.inf, "restarts", restart=True)
    assert other.to_json(triggered=False)["points"][0]["value"] is None


MODULE = textwrap.dedent("""\
    import torch


    def shifted_log(x):
        return torch.log(x + 0.999).sum()  # @log


    def bounded_exp(x):
        return torch.exp(x).sum()  # @exp
    """)


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reportcases")
    for name in [n for n in sys.modules if n.startswith("reportcases")]:
        del sys.modules[name]
    (root / "reportcases").mkdir()
    (root / "reportcases" / "__init__.py").write_text("", encoding="utf-8")
    (root / "reportcases" / "cases.py").write_text(MODULE, encoding="utf-8")
    return root


def _search(
    root: Path, function: str, marker: str, op: str, spec: str, evaluations: int = 3000
) -> Any:
    from analyzers.dynamic.entries import EntryConfig, build_configured
    from analyzers.dynamic.search import Budget, Searcher

    entry = build_configured(root, EntryConfig(f"reportcases.cases:{function}", (spec,)), seed=0)
    text = (root / "reportcases" / "cases.py").read_text(encoding="utf-8").splitlines()
    lines = frozenset(n for n, line in enumerate(text, 1) if line.endswith(f"# {marker}"))
    searcher = Searcher(
        entry,
        str(root / "reportcases" / "cases.py"),
        lines,
        op,
        seed=0,
        budget=Budget(seconds=30, evaluations=evaluations),
    )
    return searcher.run()


def test_a_confirmed_search_records_its_trace_up_to_the_trigger(cases: Path) -> None:
    outcome = _search(cases, "shifted_log", "@log", "log", "float32[8] in [-1, 1]")
    assert outcome.triggered
    trace = outcome.search_trace
    assert trace is not None and trace["triggered"] and trace["objective"] == "x"
    points = trace["points"]
    first, last = points[0], points[-1]
    assert first["stage"] == "restarts" and first["restart"] and first["value"] > 0
    assert last["evaluation"] == outcome.evaluations and last["value"] <= BOUNDARY
    assert last["stage"] == outcome.stage
    seconds = [p["seconds"] for p in points]
    assert seconds == sorted(seconds) and seconds[-1] <= outcome.seconds + 1e-4  # rounded
    # the trigger goes into the result as JSON the schema accepts
    finding = Finding(
        path="reportcases/cases.py",
        line=5,
        column=11,
        end_line=5,
        end_column=30,
        function="shifted_log",
        op="log",
        framework="torch",
        call="torch.log(x + 0.999)",
        operand="x + 0.999",
        why="x + 0.999 can be 0",
        rule="unguarded-domain",
        status="confirmed",
        trigger={"where": outcome.where, "search_trace": trace},
    )
    data = AnalysisResult(repo="r", base="a", head="b", config={}, findings=[finding]).to_json()
    jsonschema.validators.validator_for(load_schema())(load_schema()).validate(data)
    broken = dict(trace, points=[{**first, "value": "low"}])
    data["findings"][0]["trigger"]["search_trace"] = broken
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validators.validator_for(load_schema())(load_schema()).validate(data)


def test_a_search_that_finds_nothing_still_has_a_trace(cases: Path) -> None:
    started = time.perf_counter()
    outcome = _search(
        cases, "bounded_exp", "@exp", "exp", "float32[8] in [-10, 10]", evaluations=600
    )
    assert not outcome.triggered and outcome.reached
    trace = outcome.search_trace
    assert trace is not None and not trace["triggered"]
    assert trace["objective"] == "threshold - x"
    values = [p["value"] for p in trace["points"]]
    assert all(v is not None and v > 70 for v in values)  # exp(10) is far from overflow
    assert min(p["best"] for p in trace["points"]) == pytest.approx(outcome.best_loss, rel=1e-5)
    assert len(trace["points"]) <= 200 and trace["evaluations_seen"] > 200
    assert time.perf_counter() - started < 30


# --- the fix's deviation series ---------------------------------------------------------------
def test_the_equivalence_check_keeps_each_inputs_deviation() -> None:
    inputs = [[np.array([0.5, 1.0, 2.0]) * k] for k in (1.0, 2.0, 3.0, 4.0)]
    shifted = check_equivalence(
        lambda x: np.log(x[0]), lambda x: np.log(x[0] + 1e-3), inputs, "epsilon", "log"
    )
    series = shifted.figures["per_input"]
    assert [s["input"] for s in series] == [1, 2, 3, 4]
    assert max(s["max_abs"] for s in series) == shifted.figures["max_abs"]
    assert series[0]["max_abs"] == pytest.approx(math.log(0.501) - math.log(0.5))
    assert series[0]["max_abs"] > series[-1]["max_abs"] > 0  # smaller x, larger shift
    assert all(s["max_rel"] > 0 for s in series)
    same = check_equivalence(
        lambda x: np.log(x[0]), lambda x: np.log(x[0]), inputs, "stable-api", "log"
    )
    assert same.passed and [s["max_abs"] for s in same.figures["per_input"]] == [0.0] * 4


# --- SVG plots --------------------------------------------------------------------------------
def _trace(values: list[float], restarts: int, triggered: bool) -> dict[str, Any]:
    points = []
    best = math.inf
    for i, value in enumerate(values, 1):
        best = min(best, value)
        points.append(
            {
                "evaluation": i * 3,
                "seconds": i * 0.01,
                "value": value,
                "best": best,
                "stage": "restarts" if i <= restarts else "gradient",
                "restart": i <= restarts,
            }
        )
    return {
        "objective": "x",
        "boundary": 0.0,
        "triggered": triggered,
        "evaluations_seen": len(values),
        "kept_every": 1,
        "points": points,
    }


def _svg(text: str) -> ET.Element:
    return ET.fromstring(text)  # well-formed XML, or this raises


def test_the_search_plot_draws_the_boundary_restarts_and_the_trigger() -> None:
    values = [0.9, 0.5, 0.3, 0.2, 0.1, 1e-3, 1e-5, 1e-7, -0.01]
    svg = search_plot(_trace(values, restarts=4, triggered=True), op="log", where="forward")
    assert svg is not None
    root = _svg(svg)
    assert root.get("role") == "img" and root.get("aria-label")
    assert root.find(f"{SVG}title") is not None and root.find(f"{SVG}desc") is not None
    desc = root.find(f"{SVG}desc").text or ""
    assert "symmetric-log" in desc and "crossed the boundary" in desc
    boundary = root.find(f".//{SVG}line[@class='boundary']")
    assert boundary is not None and boundary.get("stroke-dasharray")
    label = root.find(f".//{SVG}text[@class='boundary-label']")
    assert label is not None and "boundary" in (label.text or "")
    restarts = root.findall(f".//{SVG}path[@class='restart']")
    assert len(restarts) == 4
    assert len(root.findall(f".//{SVG}path[@class='trigger']")) == 1
    assert len(root.findall(f".//{SVG}circle[@class='evaluation']")) == len(values) - 4
    # the boundary sits below every positive value and above the value past it (SVG y grows
    # downwards)
    y0 = float(boundary.get("y1") or 0)
    circles = [
        float(c.get("cy") or 0)
        for c in root.findall(f".//{SVG}circle")
        if c.get("class") == "evaluation"
    ]
    assert all(cy < y0 for cy in circles[:-1]) and circles[-1] > y0
    # a small decade still gets room of its own: 1e-5 and 1e-7 are visibly apart
    assert circles[-3] - circles[-4] > 10


def test_a_search_that_never_triggered_has_no_trigger_mark_and_says_so() -> None:
    svg = search_plot(
        _trace([80.0, 79.0, 78.5, 78.0], restarts=2, triggered=False), op="exp", where="search"
    )
    assert svg is not None
    root = _svg(svg)
    assert not root.findall(f".//{SVG}path[@class='trigger']")
    assert "without reaching the boundary" in (root.find(f"{SVG}desc").text or "")
    assert "symmetric-log" not in (root.find(f"{SVG}desc").text or "")  # 78..80: linear
    assert search_plot({"points": []}, op="exp", where="search") is None


def test_the_deviation_plot_shows_the_tolerance_and_identical_values() -> None:
    figures = {
        "atol": 1e-5,
        "per_input": [{"input": i, "max_abs": 0.0, "max_rel": 0.0} for i in range(1, 9)],
    }
    root = _svg(deviation_plot(figures) or "")
    assert root.find(f".//{SVG}line[@class='tolerance']") is not None
    assert len(root.findall(f".//{SVG}circle[@class='abs']")) == 8
    assert "identical values on every input" in (root.find(f"{SVG}desc").text or "")
    assert deviation_plot({"per_input": []}) is None


def test_the_history_chart_stacks_findings_by_status() -> None:
    root = _svg(
        history_chart([("#1", {"confirmed": 2, "potential": 1}), ("#2", {"not-triggered": 3})])
        or ""
    )
    bars = root.findall(f".//{SVG}rect")
    classes = [b.get("class") for b in bars if (b.get("class") or "").startswith("bar")]
    assert sorted(classes) == ["bar bar-confirmed", "bar bar-not-triggered", "bar bar-potential"]
    assert history_chart([]) is None


def test_scales_switch_to_symmetric_log_across_decades() -> None:
    linear = value_scale([1.0, 2.0, 3.0], 100, 0)
    assert linear.linthresh is None
    wide = value_scale([0.9, 1e-6], 100, 0, always=(0.0,))
    assert wide.linthresh == pytest.approx(1e-6)
    assert 0.0 in wide.ticks() and wide(0.0) == 100  # the boundary at the axis' foot
    ticks = Scale(0, 4000, 0, 100, 1.0).ticks()
    assert ticks == [0.0, 1.0, 10.0, 100.0, 1000.0]


# --- excerpts ---------------------------------------------------------------------------------
def _strip_tags(html: str) -> str:
    import html as html_module

    return html_module.unescape(re.sub(r"<[^>]+>", "", html))


def test_highlighting_colours_tokens_marks_the_call_and_loses_no_character() -> None:
    line = "    return torch.log(p < 1e-3) if 'a<b' else None  # why"
    html = str(highlight(line, (11, 30)))
    assert _strip_tags(html) == line
    assert '<span class="tok-kw">return</span>' in html
    assert '<span class="tok-num">1e-3</span>' in html
    assert "&lt;" in html and "<b" not in html.replace("<b>", "")
    assert re.search(r"<mark>torch\.log\(p &lt; <span class=\"tok-num\">1e-3</span>\)</mark>", html)
    broken = '    s = """unterminated ( [ {'
    assert _strip_tags(str(highlight(broken))) == broken
    lines = excerpt_lines(["a = 1", "b = torch.log(a)", "c = 2"], 10, (11, 11), (11, 4, 11, 16))
    assert [(x.number, x.flagged) for x in lines] == [(10, False), (11, True), (12, False)]
    assert "<mark>torch.log(a)</mark>" in str(lines[1].html)


def _finding(line: int = 5, **extra: Any) -> Finding:
    return Finding(
        path="model/loss.py",
        line=line,
        column=8,
        end_line=line,
        end_column=20,
        function="loss",
        op="log",
        framework="torch",
        call="torch.log(p)",
        operand="p",
        why="`p` can be 0",
        rule="log-domain",
        **extra,
    )


def test_excerpts_are_read_inside_the_checkout_only(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "loss.py").write_text(
        "".join(f"line {n}\n" for n in range(1, 31)), encoding="utf-8"
    )
    (tmp_path.parent / "secret.py").write_text("token = 'x'\n", encoding="utf-8")
    inside = _finding(12)
    outside = Finding(**{**_finding().__dict__, "path": "../secret.py", "fingerprint": ""})
    kept = excerpts.collect(tmp_path, [inside, outside])
    assert set(kept) == {inside.fingerprint}
    assert kept[inside.fingerprint]["start"] == 12 - excerpts.CONTEXT
    assert kept[inside.fingerprint]["lines"][excerpts.CONTEXT] == "line 12"
    assert len(kept[inside.fingerprint]["lines"]) == 2 * excerpts.CONTEXT + 1
    fallback = excerpts.fallback(inside)
    assert fallback == {"start": 12, "lines": ["        torch.log(p)"], "partial": True}


# --- publishing links -------------------------------------------------------------------------
def test_publish_links_the_check_run_and_every_comment_to_the_report(
    tmp_path: Path, git_repo: GitRepoFactory
) -> None:
    from bot.github import GitHubClient, TokenCache
    from bot.publish import publish

    key, public = make_key(tmp_path)
    with FakeGitHub(APP_ID, public) as fake:
        repo: GitRepo = git_repo(
            {"model/loss.py": "import torch\n"},
            {"model/loss.py": "import torch\n\n\n\na = torch.log(p)\nb = torch.log(q)\n"},
        )
        fake.add_repo("octo/numlib", repo.root)
        fake.add_pull(FakePull("octo/numlib", 3, "main", "feature"))
        settings = from_env(
            app_env(
                key_path=key,
                api_url=fake.api_url,
                database_url="sqlite:///x.db",
                broker_url="memory://",
                NUMCHECK_PUBLIC_URL="https://nc.example.com",
                NUMCHECK_REPORT_SECRET="s3cret",
            )
        )
        client = GitHubClient(settings, TokenCache(settings), 7)
        head = repo.sha("feature")
        findings = [
            _finding(5, status="confirmed"),
            Finding(
                **{
                    **_finding(6, status="confirmed").__dict__,
                    "call": "torch.log(q)",
                    "fingerprint": "",
                }
            ),
        ]
        result = AnalysisResult(
            repo="octo/numlib", base=None, head=head, config={}, findings=findings
        )
        run = client.create_check_run("octo/numlib", {"name": "numcheck", "head_sha": head})
        created = datetime(2026, 5, 1, tzinfo=UTC)
        url = settings.report_url(11, created)
        assert url is not None
        for _ in range(2):  # a retry writes the same links: nothing is edited
            publish(
                client,
                repo="octo/numlib",
                number=3,
                result=result,
                check_run_id=run["id"],
                lines={"model/loss.py": {5, 6}},
                state={},
                save=lambda s: None,
                bot_login="numcheck[bot]",
                details_url=settings.report_url(11, created),
            )
        assert fake.state.check_runs[0]["details_url"] == url
        assert url in fake.state.check_runs[0]["output"]["summary"]
        comments = fake.state.review_comments
        assert len(comments) == 2
        for comment in comments:
            finding = next(f for f in findings if f.line == comment["line"])
            body = comment["body"]
            assert f"({url}#finding-{finding.fingerprint})" in body
            # the hidden marker stays last, and the rest is the comment as it was
            assert body.endswith(f"<!-- numcheck:fingerprint={finding.fingerprint} -->")
            assert body.replace(
                f"[Report page: how the search found it, the trigger, the "
                f"reproducer and the patch]({url}#finding-"
                f"{finding.fingerprint})\n\n",
                "",
            ) == inline_comment(finding)
        assert not fake.calls("PATCH", r"/pulls/comments/\d+$")
        assert url in fake.state.reviews[0]["body"]
