"""A change that creates a risk on a line it does not touch is reported on the line it adds."""

from __future__ import annotations

from analyzers.model import AnalysisResult
from analyzers.report.markdown import render_markdown
from analyzers.static import scan_source

HEAD = """import torch


def attend(scores, mask, v):
    scores = scores / 8.0
    scores = scores.masked_fill(~mask, {fill})
    attn = scores.softmax(-1)
    return attn @ v
"""


def test_a_minus_inf_fill_above_an_unchanged_softmax() -> None:
    scan = scan_source(HEAD.format(fill='float("-inf")'), "attn.py", lines=frozenset({6}))
    (finding,) = scan.findings
    assert (finding.line, finding.fed_by, finding.rule) == (7, 6, "masked-softmax-inf")
    assert "Line 7 is unchanged; line 6 of this change feeds its operand." in finding.why
    result = AnalysisResult(
        repo="r", base=None, head="h", config={}, findings=[finding], files_analyzed=1
    )
    # definite, so inline by default, and the comment sits on the added line
    assert "### attn.py:6\n" in render_markdown(result)


def test_a_harmless_edit_upstream_does_not_drag_a_finding_down() -> None:
    # the fill is finite: the softmax cannot see a fully -inf row
    finite = HEAD.format(fill="-1e4")
    assert scan_source(finite, "attn.py", lines=frozenset({6})).findings == []
    # a line the change adds that does not reach the op
    other = HEAD.format(fill='float("-inf")').replace(
        "    return attn @ v", "    w = v * 2\n    return attn @ w"
    )
    assert scan_source(other, "attn.py", lines=frozenset({8})).findings == []


def test_an_added_cast_reaches_through_unchanged_assignments() -> None:
    code = (
        "import torch\n\n\ndef f(x):\n"
        "    h = x.half()\n"  # added
        "    z = h * 2\n"  # unchanged
        "    return torch.log(z + 1e-8)\n"
    )  # unchanged: 1e-8 is 0 in float16
    scan = scan_source(code, "f.py", lines=frozenset({5}))
    assert [(f.line, f.fed_by) for f in scan.findings] == [(7, 5)]
    plain = code.replace("x.half()", "x * 3")
    assert scan_source(plain, "f.py", lines=frozenset({5})).findings == []
