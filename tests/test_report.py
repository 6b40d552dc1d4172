"""Renderers: JSON contract, SARIF against the official schema, review markdown, terminal text."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from analyzers.model import AnalysisResult, Finding, IntervalInfo, StageError
from analyzers.report import FORMATS, render
from analyzers.report.jsonout import load_result, load_schema, to_json_text
from analyzers.report.markdown import (
    GITHUB_BODY_LIMIT,
    inline_comment,
    render_markdown,
    review_body,
)
from analyzers.report.mdescape import code_span, escape_text, inline_markdown, table_cell
from analyzers.report.sarif import FINGERPRINT_KEY, to_sarif
from analyzers.report.text import render_text

FIXTURES = Path(__file__).parent / "fixtures"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _log_finding() -> Finding:
    return Finding(
        path="model/loss.py",
        line=12,
        column=8,
        end_line=12,
        end_column=25,
        function="Loss.forward",
        op="log",
        framework="torch",
        call="torch.log(probs)",
        operand="probs",
        why="`probs` comes from softmax, which is exactly 0.0 in float32 when logits differ "
        "by more than ~104",
        rule="NC-log-domain",
        severity="error",
        interval=IntervalInfo(lo=0.0, hi=1.0, dtype="float32"),
        status="confirmed",
        trigger={
            "values": {"logits": [0.0, 120.0]},
            "where": "forward",
            "output": math.nan,
            "reached_loss": True,
            "seconds": 0.4,
            "device": "cpu",
            "seed": 0,
        },
        reproducer="import torch\n\ndef test_nan():\n    assert torch.log(torch.tensor(0.0)) > 0\n",
        fix={
            "status": "validated",
            "kind": "stable-api",
            "name": "log-softmax",
            "description": "log(softmax(x)) -> log_softmax(x)",
            "path": "model/loss.py",
            "diff": "--- a/model/loss.py\n+++ b/model/loss.py\n@@ -12 +12 @@\n"
            "-        logp = torch.log(probs)\n"
            "+        logp = torch.log_softmax(logits, dim=-1)\n",
            "start_line": 12,
            "end_line": 12,
            "suggestion_complete": True,
            "replacement": ["        logp = torch.log_softmax(logits, dim=-1)"],
            "validation": {
                "accepted": True,
                "checks": [
                    {"name": "reproducer", "ran": True, "passed": True, "figures": {}},
                    {
                        "name": "equivalence",
                        "ran": True,
                        "passed": True,
                        "figures": {"max_abs": 1e-7, "max_rel": 2e-7, "inputs": 4},
                    },
                ],
            },
        },
    )


def _div_finding() -> Finding:
    return Finding(
        path="model/norm.py",
        line=3,
        column=11,
        end_line=4,
        end_column=5,
        function="normalise",
        op="div",
        framework="torch",
        call="x / (a | b).sum()",
        operand="(a | b).sum()",
        why="the denominator `(a | b).sum()` can be 0",
        rule="NC-div-zero",
        interval=IntervalInfo(lo=-math.inf, hi=math.inf, dtype="float16"),
        suggestion="x / (a | b).sum().clamp_min(1e-6)",
    )


def _exp_finding() -> Finding:
    return Finding(
        path="model/loss.py",
        line=30,
        column=4,
        end_line=30,
        end_column=16,
        function="",
        op="exp",
        framework="numpy",
        call="np.exp(z)",
        operand="z",
        why="z is unbounded <script>alert(1)</script> @octocat",
        rule="NC-exp-overflow",
        severity="note",
        status="not-triggered",
    )


def _error_finding() -> Finding:
    return Finding(
        path="train.py",
        line=7,
        column=0,
        end_line=7,
        end_column=9,
        function="main",
        op="sqrt",
        framework="math",
        call="sqrt(v)",
        operand="v",
        why="v may be negative",
        rule="NC-sqrt-domain",
        status="error",
        error="entry could not be built: ImportError",
    )


def _result(
    findings: list[Finding] | None = None,
    errors: list[StageError] | None = None,
    comment_on: str = "potential",
) -> AnalysisResult:
    """A result with one finding of each status. The rendering tests comment on every finding
    (`comment_on = "potential"`); the publishing policy's own tests pass "proven"."""
    return AnalysisResult(
        repo="acme/model",
        base="a" * 40,
        head="b" * 40,
        config={"static_only": False, "comment_on": comment_on},
        findings=findings
        if findings is not None
        else [_log_finding(), _div_finding(), _exp_finding(), _error_finding()],
        errors=errors
        if errors is not None
        else [StageError(stage="dynamic", message="timeout after 60 s", path="model/norm.py")],
        timings={"static": 0.5, "dynamic": 12.0},
        files_analyzed=4,
        lines_analyzed=120,
        tool_version="0.1.0",
    )


def _validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def result_validator() -> jsonschema.protocols.Validator:
    return _validator(load_schema())


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    assert "sarif-schema-2.1.0" in schema["id"]
    return _validator(schema)


# --- JSON ------------------------------------------------------------------------------------


def test_json_validates_and_is_sorted(result_validator: jsonschema.protocols.Validator) -> None:
    data = json.loads(to_json_text(_result()))
    result_validator.validate(data)
    keys = [(f["path"], f["line"], f["column"]) for f in data["findings"]]
    assert keys == sorted(keys)
    div = next(f for f in data["findings"] if f["op"] == "div")
    assert div["interval"] == {"lo": "-inf", "hi": "inf", "dtype": "float16"}
    log = next(f for f in data["findings"] if f["op"] == "log")
    assert log["trigger"]["output"] == "nan"  # strict JSON: no bare NaN token


def test_json_round_trips() -> None:
    original = _result()
    text = to_json_text(original)
    again = load_result(text)
    assert to_json_text(again) == text
    div = next(f for f in again.findings if f.op == "div")
    assert div.interval is not None and math.isinf(div.interval.lo) and div.interval.lo < 0
    assert div.fingerprint == _div_finding().fingerprint


def test_schema_lists_every_finding_field() -> None:
    schema = load_schema()["$defs"]["finding"]
    fields = set(_log_finding().to_json())
    assert set(schema["properties"]) == fields
    assert set(schema["required"]) == fields


@pytest.mark.parametrize(
    "mutate",
    [
        lambda f: f.update(unexpected="x"),
        lambda f: f.update(status="maybe"),
        lambda f: f.update(line=0),
        lambda f: f.update(column=-1),
        lambda f: f.update(severity="fatal"),
        lambda f: f["interval"].update(lo="infinity"),
        lambda f: f.pop("why"),
    ],
)
def test_schema_rejects_drift(
    result_validator: jsonschema.protocols.Validator, mutate: Any
) -> None:
    data = json.loads(to_json_text(_result()))
    bad = copy.deepcopy(data)
    finding = next(f for f in bad["findings"] if f["interval"] is not None)
    mutate(finding)
    with pytest.raises(jsonschema.ValidationError):
        result_validator.validate(bad)


# --- SARIF -----------------------------------------------------------------------------------


def test_sarif_validates_against_official_schema(
    sarif_validator: jsonschema.protocols.Validator,
) -> None:
    log = json.loads(render(_result(), "sarif"))
    sarif_validator.validate(log)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "numcheck"
    assert run["tool"]["driver"]["version"] == "0.1.0"


def test_sarif_results_fingerprints_columns_and_rules() -> None:
    result = _result()
    run = to_sarif(result)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({f.rule for f in result.findings})
    by_fp = {f.fingerprint: f for f in result.findings}
    assert len(run["results"]) == len(result.findings)
    for sarif_result in run["results"]:
        assert rules[sarif_result["ruleIndex"]]["id"] == sarif_result["ruleId"]
        finding = by_fp[sarif_result["partialFingerprints"][FINGERPRINT_KEY]]
        location = sarif_result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": finding.path, "uriBaseId": "%SRCROOT%"}
        region = location["region"]
        assert region["startLine"] == finding.line
        assert region["startColumn"] == finding.column + 1
        assert region["endColumn"] == finding.end_column + 1
        assert sarif_result["level"] == finding.severity
        assert sarif_result["properties"]["status"] == finding.status
    div = next(r for r in run["results"] if r["ruleId"] == "NC-div-zero")
    assert div["properties"]["interval"] == {"lo": "-inf", "hi": "inf", "dtype": "float16"}
    assert "Suggestion: x / (a | b).sum().clamp_min(1e-6)" in div["message"]["text"]
    log_rule = next(r for r in rules if r["id"] == "NC-log-domain")
    assert log_rule["defaultConfiguration"]["level"] == "error"


def test_sarif_stage_errors(sarif_validator: jsonschema.protocols.Validator) -> None:
    run = to_sarif(_result())["runs"][0]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is True
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "timeout" in note["message"]["text"]
    whole = _result(errors=[StageError(stage="static", message="parser crashed")])
    log = to_sarif(whole)
    sarif_validator.validate(log)
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_sarif_empty_result_and_odd_paths(
    sarif_validator: jsonschema.protocols.Validator,
) -> None:
    odd = _div_finding()
    odd.path = "src/my model/ü.py"
    for result in (_result(findings=[], errors=[]), _result(findings=[odd])):
        log = to_sarif(result)
        sarif_validator.validate(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == "src/my%20model/%C3%BC.py"


# --- markdown --------------------------------------------------------------------------------


def test_inline_comment_marker_headline_and_suggestion_block() -> None:
    log = _log_finding()
    comment = inline_comment(log)
    assert f"<!-- numcheck:fingerprint={log.fingerprint} -->" in comment
    assert (
        comment.splitlines()[0] == "**numcheck · `log` · confirmed: a concrete input produced "
        "NaN/Inf**"
    )
    assert "```suggestion\n        logp = torch.log_softmax(logits, dim=-1)\n```" in comment
    assert "Operand `probs` ∈ `[0, 1]` (float32)" in comment
    assert "<summary>Reproducer</summary>" in comment
    assert "`probs` comes from softmax" in comment


def test_no_suggestion_block_without_replacement() -> None:
    div = _div_finding()
    comment = inline_comment(div)
    assert "```suggestion" not in comment
    assert "Consider: `x / (a | b).sum().clamp_min(1e-6)`" in comment
    assert "∈ `[-inf, inf]` (float16)" in comment
    div.fix = {"kind": "clamp", "diff": "--- a/x\n+++ b/x\n"}
    comment = inline_comment(div)
    assert "```suggestion" not in comment
    assert "```diff" in comment
    div.fix = {
        "status": "none-validated",
        "reason": "no candidate passed validation",
        "tried": [
            {
                "name": "clamp",
                "kind": "clamp",
                "rejected_because": "reproducer: the reproducer still fails",
            }
        ],
    }
    comment = inline_comment(div)
    assert "```suggestion" not in comment and "```diff" not in comment
    assert "No checked fix: 1 candidate tried, none passed" in comment
    assert "- clamp (clamp): reproducer: the reproducer still fails" in comment
    assert "Consider: `x / (a | b).sum().clamp_min(1e-6)`" in comment


def test_user_text_is_escaped() -> None:
    comment = inline_comment(_exp_finding())
    assert "<script>" not in comment
    assert "&lt;script&gt;" in comment
    assert "@octocat" not in comment
    body = review_body(_result())
    assert "<script>" not in body
    row = next(line for line in body.splitlines() if "model/norm.py:3" in line)
    assert "`x / (a \\| b).sum()`" in row
    # Exactly six unescaped pipes delimit five cells.
    assert len(re.findall(r"(?<!\\)\|", row)) == 6


def test_escape_helpers() -> None:
    assert code_span("a`b") == "``a`b``"
    assert code_span("`x`") == "`` `x` ``"
    assert table_cell("`a|b`") == "`a\\|b`"
    assert escape_text("*x* [l](u) <b>") == "\\*x\\* \\[l\\](u) &lt;b&gt;"
    assert inline_markdown("`a<b` and <i>") == "`a<b` and &lt;i&gt;"


def test_huge_reproducer_is_truncated() -> None:
    log = _log_finding()
    log.reproducer = "x = 1  # padding line for a very long reproducer\n" * 4200
    assert len(log.reproducer) > 200_000
    comment = inline_comment(log)
    assert len(comment) < GITHUB_BODY_LIMIT
    assert "Reproducer truncated" in comment
    assert comment.rstrip().endswith(f"<!-- numcheck:fingerprint={log.fingerprint} -->")
    assert comment.count("```python") == 1 and comment.count("```suggestion") == 1


def test_huge_replacement_is_not_cut() -> None:
    log = _log_finding()
    assert log.fix is not None
    log.fix["replacement"] = ["y = 1"] * 20000
    log.reproducer = "z = 2\n" * 40000
    comment = inline_comment(log)
    assert len(comment) < GITHUB_BODY_LIMIT
    assert "```suggestion" not in comment and "too long to show" in comment


def test_review_body_summary_table_and_errors() -> None:
    body = review_body(_result())
    assert "**4 findings** (1 confirmed, 1 potential, 1 not-triggered, 1 error) in 4 files" in body
    assert "`log` × 1" in body
    assert body.count("| `model/") == 3 and "| `train.py:7` |" in body
    assert "<details>\n<summary>1 error (dynamic)</summary>" in body
    assert "timeout after 60 s" in body
    assert len(body) < GITHUB_BODY_LIMIT
    inline = {f.fingerprint for f in _result().findings if f.op != "div"}
    partial = review_body(_result(), inline=inline)
    assert "Findings not commented inline" in partial and partial.count("| `model/") == 1


def test_review_body_caps_many_findings() -> None:
    many = []
    for i in range(2000):
        finding = _div_finding()
        finding.line = i + 1
        finding.call = f"x{i} / y" + " + z" * 40
        finding.fingerprint = ""
        finding.__post_init__()
        many.append(finding)
    body = review_body(_result(findings=many))
    assert len(body) < GITHUB_BODY_LIMIT
    assert "more findings not shown" in body


def test_render_markdown_has_each_comment() -> None:
    text = render_markdown(_result())
    assert text.startswith("## numcheck")
    assert "### model/loss.py:12" in text and "### train.py:7" in text
    assert text.count("<!-- numcheck:fingerprint=") == 4


def test_no_findings_body() -> None:
    body = review_body(_result(findings=[], errors=[]))
    assert "No NaN/Inf risks found" in body and "<details>" not in body


# --- text ------------------------------------------------------------------------------------


def test_text_format_lines() -> None:
    out = render_text(_result())
    lines = out.splitlines()
    assert lines[0] == (
        "model/loss.py:12:9: error log [confirmed] `probs` comes from softmax, "
        "which is exactly 0.0 in float32 when logits differ by more than ~104"
    )
    assert lines[1] == "    probs in [0, 1] (float32)"
    assert lines[2] == (
        "    fix: stable-api: log(softmax(x)) -> log_softmax(x) (checked: the "
        "reproducer passes; max deviation 1e-07 abs, 2e-07 rel on 4 in-domain "
        "inputs)"
    )
    assert "         +        logp = torch.log_softmax(logits, dim=-1)" in lines
    assert "model/loss.py:30:5: note exp [not-triggered] z is unbounded" in out
    assert "model/norm.py:3:12: warning div [potential] the denominator" in out
    assert "    suggestion: x / (a | b).sum().clamp_min(1e-6)" in out
    assert "train.py:7:1: warning sqrt [error] v may be negative" in out
    assert "    error: entry could not be built: ImportError" in out
    summary = "4 findings (1 confirmed, 1 potential, 1 not-triggered, 1 error) in 4 files; 1 error"
    assert summary in lines
    assert lines[-1] == "error[dynamic] model/norm.py: timeout after 60 s"
    assert not ANSI.search(out)


def test_text_order_is_deterministic_and_color_optional() -> None:
    shuffled = _result()
    shuffled.findings.reverse()
    assert render_text(shuffled) == render_text(_result())
    colored = render_text(_result(), color=True)
    assert ANSI.search(colored)
    assert ANSI.sub("", colored) == render_text(_result())


def test_text_neutralises_control_characters() -> None:
    sneaky = _div_finding()
    sneaky.why = "looks fine\x1b[2J"
    sneaky.suggestion = "a\x07b"
    out = render_text(_result(findings=[sneaky], errors=[]))
    assert "\x1b" not in out and "\x07" not in out
    assert "looks fine\\x1b[2J" in out and "suggestion: a\\x07b" in out


def test_review_body_holds_back_what_is_not_proven() -> None:
    body = review_body(_result(comment_on="proven"))
    assert (
        '3 findings held back from inline comments (comment\\_on = "proven"): 1 potential '
        "(not proven: the code was not run, or no entry reached the op), 1 not-triggered "
        "(not proven: the search found no input that makes NaN/Inf), 1 error (not proven: "
        "the code could not be run as far as the op)."
    ) in body
    assert "<summary>3 findings held back (not proven)</summary>" in body
    held = body[body.index("held back (not proven)</summary>") :]
    assert "`model/norm.py:3`" in held and "`train.py:7`" in held and "`model/loss.py:30`" in held
    assert "`model/loss.py:12`" not in held  # the confirmed one is not held back
    # every finding the policy lets be inline was placed: no "not commented inline" table
    confirmed = {f.fingerprint for f in _result().findings if f.status == "confirmed"}
    assert "not commented inline" not in review_body(_result(comment_on="proven"), inline=confirmed)


def test_a_definite_rule_is_commented_without_proof() -> None:
    softmax = _div_finding()
    softmax.op, softmax.rule, softmax.fingerprint = "log", "log-softmax", ""
    softmax.__post_init__()
    text = render_markdown(
        _result(findings=[softmax, _exp_finding()], errors=[], comment_on="proven")
    )
    assert "### model/norm.py:3" in text  # potential, but definite: inline
    assert "### model/loss.py:30" not in text  # not-triggered and not definite: held back
    assert "1 finding held back" in text


def test_a_definite_rule_in_a_test_file_is_held_back_until_confirmed() -> None:
    """A test's reference formula (`F.binary_cross_entropy(torch.sigmoid(x), y)` next to the
    fused loss it checks) matches a definite pattern on inputs the test chose itself."""
    in_test = _div_finding()
    in_test.op, in_test.rule, in_test.path, in_test.fingerprint = (
        "binary_cross_entropy",
        "bce-sigmoid",
        "keras/losses_test.py",
        "",
    )
    in_test.__post_init__()
    text = render_markdown(_result(findings=[in_test], errors=[], comment_on="proven"))
    assert "### keras/losses_test.py:3" not in text
    assert (
        '1 finding held back from inline comments (comment\\_on = "proven"): '
        "1 test-file (a definite pattern, but in a test file, whose inputs are the "
        "test's own)."
    ) in text
    in_test.status = "confirmed"
    assert "held back" not in render_markdown(
        _result(findings=[in_test], errors=[], comment_on="proven")
    )


def test_a_proof_that_cancels_an_epsilon_guard_is_held_back() -> None:
    """`max(load) / (mean(load) + 1e-10)` is 0 only where `mean(load)` is -1e-10: the search
    proved it with negative example counts, which the author's epsilon says never occur."""
    from analyzers.trust import cancels_guard, is_credible_proof

    balance = _div_finding()
    balance.call, balance.operand = (
        "tf.reduce_max(load) / (tf.reduce_mean(load) + 1e-10)",
        "(tf.reduce_mean(load) + 1e-10)",
    )
    balance.status, balance.fingerprint = "confirmed", ""
    balance.trigger = {"box": {"source": "synthesised"}}
    balance.__post_init__()
    result = _result(findings=[balance], errors=[], comment_on="proven")
    assert cancels_guard(balance) and not is_credible_proof(balance)
    text = render_markdown(result)
    assert "### model/norm.py:3" not in text
    assert "1 guard-cancelled (confirmed only by making negative the part an epsilon guards" in text
    assert "1 finding held back (not proven, or proven only by cancelling an epsilon)" in text
    # inside bounds a user declared in a configured entry, the same proof is commented
    balance.trigger = {"box": {"source": "config"}}
    assert "### model/norm.py:3" in render_markdown(result) and is_credible_proof(balance)
    # an operand without an epsilon (`trace + 1.0` is a formula, not a guard) is commented
    balance.trigger, balance.operand = {"box": {"source": "synthesised"}}, "trace + 1.0"
    assert is_credible_proof(balance) and "### model/norm.py:3" in render_markdown(result)


def test_a_precision_finding_is_not_a_cancelled_guard() -> None:
    """Found in float16 on inputs that are finite in float32: the epsilon holds in float32
    on those very inputs, so what fails is the precision, and the proof is commented."""
    from analyzers.report.summary import proof_sentence
    from analyzers.trust import cancels_guard, is_credible_proof

    balance = _div_finding()
    balance.operand = "(out[..., -1:] + self.eps)"
    balance.status, balance.fingerprint = "confirmed", ""
    balance.trigger = {
        "box": {"source": "synthesised"},
        "evaluations": 9,
        "where": "forward",
        "precision": {"dtype": "float16", "mode": "autocast", "float32": "fails"},
    }
    balance.__post_init__()
    assert cancels_guard(balance)  # float32 fails too: it is the guard that was cancelled
    assert (
        "found under float16 autocast, and the same inputs fail in float32 too"
        in proof_sentence(balance)
    )
    balance.trigger["precision"]["float32"] = "finite"
    assert not cancels_guard(balance) and is_credible_proof(balance)
    assert "finite in float32: a mixed-precision bug" in proof_sentence(balance)
    result = _result(findings=[balance], errors=[], comment_on="proven")
    assert "### model/norm.py:3" in render_markdown(result)
    # words that are not numcheck's say nothing
    balance.trigger["precision"] = {"dtype": "float8<b>", "mode": "cast", "float32": "finite"}
    assert "float32" not in proof_sentence(balance)


@pytest.mark.parametrize("verdict", ["finite", "fails", "unreached", "error"])
def test_every_float32_verdict_is_said_in_words(verdict: str) -> None:
    """The host keeps a precision block in the words analyzers/dtypes.py spells; each of them
    is said to the reader, and nothing else is a verdict."""
    from analyzers.dtypes import FLOAT32_VERDICTS
    from analyzers.report.summary import precision_clause

    assert verdict in FLOAT32_VERDICTS and len(FLOAT32_VERDICTS) == 4
    block = {"dtype": "bfloat16", "mode": "cast", "float32": verdict}
    clause = precision_clause({"precision": block})
    assert clause.startswith("; found in bfloat16, and ") and "float32" in clause


@pytest.mark.parametrize(
    ("operand", "part"),
    [
        ("(tf.reduce_mean(load) + 1e-10)", "tf.reduce_mean(load)"),
        ("1e-8 + p.sum(-1)", "p.sum(-1)"),
        ("var + self.variance_epsilon", "var"),
        ("a * b + EPS", "a * b"),
        ("eps + norm", "norm"),
        ("norm + self.wn_eps", "norm"),
        ("total + num_steps", None),
        ("count + reps", None),
        ("trace + 1.0", None),
        ("x + 1e-2", None),
        ("x - 1e-8", None),
        ("x", None),
        ("x +", None),
        ("eps * x", None),
    ],
)
def test_the_part_an_epsilon_guards(operand: str, part: str | None) -> None:
    from analyzers.epsilon import guarded_part

    assert guarded_part(operand) == part


def test_results_without_the_key_hold_back_unproven_findings() -> None:
    result = _result(findings=[_div_finding()], errors=[])
    result.config = {}
    assert "### model/norm.py:3" not in render_markdown(result)
    assert "1 finding held back" in render_markdown(result)


def test_text_summary_says_what_a_pull_request_would_show() -> None:
    lines = render_text(_result(comment_on="proven")).splitlines()
    at = lines.index(
        "4 findings (1 confirmed, 1 potential, 1 not-triggered, 1 error) in 4 files; 1 error"
    )
    assert lines[at + 1].startswith("on a pull request: 1 inline comment; 3 findings held back")
    assert lines[at + 2 : at + 5] == [
        "    held back: model/loss.py:30 exp [not-triggered]",
        "    held back: model/norm.py:3 div [potential]",
        "    held back: train.py:7 sqrt [error]",
    ]


def test_text_summary_wording() -> None:
    one = _result(findings=[_div_finding()], errors=[])
    one.files_analyzed = 1
    assert render_text(one).splitlines()[-1] == "1 finding (1 potential) in 1 file"
    assert render_text(_result(findings=[], errors=[])) == "no findings in 4 files\n"


# --- dispatch --------------------------------------------------------------------------------


def test_render_dispatch() -> None:
    result = _result()
    for fmt in FORMATS:
        assert render(result, fmt).strip()
    with pytest.raises(ValueError, match="unknown format"):
        render(result, "html")


def test_the_proof_states_the_values_numcheck_gave_parameters() -> None:
    """A fractional exponent (branches.exponent_values) is part of the trigger: the reader
    sees `gamma=0.5`; a name or value the sandbox could have forged into text is left out."""
    from analyzers.report.summary import proof_sentence

    box = {
        "source": "synthesised",
        "target": "losses.focal:focal_loss",
        "inputs": [{"dtype": "float32", "shape": [4, 8], "lo": -100.0, "hi": 100.0}],
        "chosen": {"gamma": 0.5, "eps": 1e-06, "x) **bold**": 1.0, "mode": "<b>"},
    }
    finding = Finding(
        path="losses/focal.py",
        line=3,
        column=0,
        end_line=3,
        end_column=0,
        function="focal_loss",
        op="pow",
        framework="torch",
        call="",
        operand="",
        why="",
        rule="pow",
        status="confirmed",
        trigger={
            "where": "backward",
            "evaluations": 1,
            "seconds": 0.5,
            "stage": "restarts",
            "box": box,
        },
    )
    sentence = proof_sentence(finding)
    assert "in [-100, 100], called with gamma=0.5, eps=1e-06 (numcheck's values)" in sentence
    assert "bold" not in sentence and "<b>" not in sentence
