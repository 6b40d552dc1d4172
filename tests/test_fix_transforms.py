"""Fix transforms in TorchFix's manner: `*.in.py` / `*.out.py` pairs per fix kind.

For every `tests/fixtures/fix/<kind>/<name>.in.py`, each finding the static pass reports gets the
first candidate of that kind, one at a time (like `fixit fix`), re-scanning after each. The
result must equal `<name>.out.py` byte for byte; after every step the static pass must no longer
flag the rewritten lines; and the patch's suggestion block, applied the way GitHub applies it
(exactly the commented lines), must give the same file, save for the imports it says it needs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from analyzers.config import Config
from analyzers.fix.bounds import epsilon, exp_bound, literal, tiny_literal, unit_margin
from analyzers.fix.candidates import Candidate, candidates, first_of_kind
from analyzers.fix.patch import apply_suggestion, changed_range
from analyzers.fix.site import FixRequest
from analyzers.model import Finding, normalise_call
from analyzers.static import scan_source

FIXTURES = Path(__file__).parent / "fixtures" / "fix"
KINDS = ("stable-api", "epsilon", "clamp", "where", "masked-fill", "upcast")
PAIRS = sorted(FIXTURES.glob("*/*.in.py"))
MAX_STEPS = 30


def _config(source: str) -> Config:
    first = source.split("\n", 1)[0]
    if first.startswith("# fix-dtype:"):
        return Config(dtype=first.split(":", 1)[1].strip())
    return Config()


def _check_step(before: str, cand: Candidate, finding: Finding, path: str, config: Config) -> None:
    after = cand.source
    patch = cand.patch
    # the suggestion block covers exactly the finding's lines (widened to what changed)
    suggested = apply_suggestion(before, patch)
    if patch.suggestion_complete:
        assert suggested == after
    else:
        assert patch.imports and all(s in after for s in patch.imports)
        assert changed_range(suggested, after) is not None
        for statement in patch.imports:
            suggested_lines = suggested.splitlines(keepends=True)
            assert statement + "\n" not in suggested_lines
    assert patch.diff.startswith(f"--- a/{path}\n+++ b/{path}\n")
    # the static pass no longer flags the rewritten lines
    new_count = patch.replacement.count("\n")
    offset = after.count("\n") - suggested.count("\n") if not patch.suggestion_complete else 0
    new_lines = set(range(patch.start_line + offset, patch.start_line + offset + new_count))
    flagged = [f for f in scan_source(after, path, config).findings if f.line in new_lines]
    # a line with two risky ops is clean once both are fixed, one step each (the static pass
    # reports one finding per line and op): what must be gone is the call that was fixed
    fixed = normalise_call(finding.call)
    assert not [
        f
        for f in flagged
        if normalise_call(f.call) == fixed or f.op == finding.op and fixed in normalise_call(f.call)
    ], f"still flagged after {cand.name}: " + "; ".join(
        f"{f.line} {f.rule} {f.call}" for f in flagged
    )


def fix_file(source: str, kind: str, path: str = "example.py") -> tuple[str, list[str]]:
    """Apply the first candidate of `kind` to one finding at a time until none applies."""
    config = _config(source)
    applied: list[str] = []
    for _ in range(MAX_STEPS):
        for finding in scan_source(source, path, config).findings:
            request = FixRequest.from_finding(finding)
            if config.dtype != "float32":
                request = FixRequest(**{**request.__dict__, "dtype": config.dtype})
            cand = first_of_kind(source, request, kind, strict=True)
            if cand is None:
                continue
            _check_step(source, cand, finding, path, config)
            applied.append(f"{finding.line}:{cand.name}")
            source = cand.source
            break
        else:
            return source, applied
    raise AssertionError(f"no fixed point after {MAX_STEPS} steps: {applied}")


def test_every_kind_has_fixtures() -> None:
    assert {p.parent.name for p in PAIRS} == set(KINDS)
    for pair in PAIRS:
        assert pair.with_name(pair.name.replace(".in.py", ".out.py")).exists(), pair


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p.parent.name}/{p.name[:-6]}")
def test_transform_fixture(pair: Path) -> None:
    source = pair.read_text(encoding="utf-8")
    expected = pair.with_name(pair.name.replace(".in.py", ".out.py")).read_text(encoding="utf-8")
    ast.parse(expected)
    cst.parse_module(expected)
    result, applied = fix_file(source, pair.parent.name, f"{pair.parent.name}/{pair.name}")
    assert applied, "no candidate of this kind applied"
    assert result == expected
    # every finding of the input is gone from the output
    assert scan_source(expected, pair.name, _config(expected)).findings == []


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p.parent.name}/{p.name[:-6]}")
def test_out_files_are_clean(pair: Path) -> None:
    """Nothing left in an `.out.py` that a candidate of its kind would still rewrite."""
    out = pair.with_name(pair.name.replace(".in.py", ".out.py"))
    source = out.read_text(encoding="utf-8")
    result, applied = fix_file(source, pair.parent.name, out.name)
    assert applied == [] and result == source


# ---------------------------------------------------------------------------------- order

SOFTMAX = "import torch\n\n\ndef f(x):\n    return torch.log(torch.softmax(x, -1))\n"


def _request(source: str) -> FixRequest:
    (finding,) = scan_source(source, "m.py").findings
    return FixRequest.from_finding(finding)


def test_candidates_come_in_developers_order() -> None:
    kinds = [c.kind for c in candidates(SOFTMAX, _request(SOFTMAX), strict=True)]
    assert kinds[0] == "stable-api"
    assert kinds == sorted(kinds, key=("stable-api", "epsilon", "clamp", "where").index)
    assert "epsilon" in kinds and "clamp" in kinds


def test_one_fix_covers_every_call_of_the_op_on_the_line() -> None:
    """One finding per line and op: `digamma(s) - digamma(a)` and `log(-log(u))` are one
    finding each, and a fix of one call would leave the line as dangerous as before."""
    source = (
        "import torch\nimport torch.nn.functional as F\n\n\ndef f(z, y):\n"
        "    a = F.softplus(z)\n    s = a.sum(-1, keepdim=True)\n"
        "    return y * (torch.digamma(s) - torch.digamma(a))\n"
    )
    request = _request(source)
    (clamp,) = [c for c in candidates(source, request, strict=True) if c.kind == "clamp"]
    assert "torch.digamma(s.clamp_min(1e-6)) - torch.digamma(a.clamp_min(1e-6))" in clamp.source
    assert scan_source(clamp.source, "m.py").findings == []
    gumbel = "import torch\n\n\ndef f(u):\n    return -torch.log(-torch.log(u))\n"
    (clamp,) = [c for c in candidates(gumbel, _request(gumbel), strict=True) if c.kind == "clamp"]
    assert clamp.source.count("clamp_min(") == 2  # the inner log's operand, then the outer's
    assert scan_source(clamp.source, "m.py").findings == []


WRITTEN_OUT = """import tensorflow as tf
import torch


def attention_weights(scores):
    weights = torch.exp(scores)
    return weights / weights.sum(dim=-1, keepdim=True)


def method_form(scores):
    w = scores.exp()
    return w / torch.sum(w, 1, True)


def tf_weights(logits):
    e = tf.exp(logits)
    return e / tf.reduce_sum(e, axis=-1, keepdims=True)


def masked_first(scores, mask):
    weights = torch.exp(scores)
    weights = weights * mask
    return weights / weights.sum(dim=-1, keepdim=True)
"""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (6, "    weights = torch.softmax(scores, dim=-1)\n"),
        (11, "    w = torch.softmax(scores, dim=1)\n"),
        (16, "    e = tf.nn.softmax(logits, axis=-1)\n"),
        (21, None),  # a mask between the exp and the normalisation: not a softmax
    ],
)
def test_softmax_written_out_becomes_softmax(line: int, expected: str | None) -> None:
    (finding,) = [
        f for f in scan_source(WRITTEN_OUT, "m.py").findings if f.line == line and f.op == "exp"
    ]
    fused = [
        c
        for c in candidates(WRITTEN_OUT, FixRequest.from_finding(finding), strict=True)
        if c.name.startswith("softmax")
    ]
    if expected is None:
        assert fused == []
        return
    assert fused[0].name == "softmax"
    assert fused[0].source.splitlines(keepends=True)[line - 1] == expected
    if line == 6:  # for float16 scores, the float32 variant comes next
        assert fused[1].name == "softmax-float32"
        assert "torch.softmax(scores.float(), dim=-1).to(scores.dtype)" in fused[1].source


def test_float32_scores_left_alone_under_autocast() -> None:
    """Autocast casts a matmul's float32 factors back to float16: upcasting them would be a
    fix that changes nothing, so none is proposed (the finding stays, with the others)."""
    source = (
        "import torch\n\n\ndef f(q, k):\n"
        "    with torch.autocast('cuda', dtype=torch.float16):\n"
        "        return torch.softmax(q @ k.transpose(-2, -1), dim=-1)\n"
    )
    request = _request(source)
    assert request.rule == "fp16-scores-overflow"
    assert [c for c in candidates(source, request, strict=True) if c.kind == "upcast"] == []
    outside = source.replace(
        "    with torch.autocast('cuda', dtype=torch.float16):\n    ", "    q = q.half()\n"
    )
    (upcast,) = [
        c for c in candidates(outside, _request(outside), strict=True) if c.kind == "upcast"
    ]
    assert "q.float() @ k.transpose(-2, -1).float()" in upcast.source
    assert upcast.source.rstrip().endswith(".to(q.dtype)")


def test_epsilon_only_for_a_non_negative_operand() -> None:
    unknown = "import torch\n\n\ndef f(x):\n    return torch.log(x)\n"
    kinds = [c.kind for c in candidates(unknown, _request(unknown))]
    assert "epsilon" not in kinds and kinds[0] == "clamp"


def test_a_compound_divisor_gets_the_floor_then_the_sign_keeping_clamp() -> None:
    """kornia's `x / (width - 1.0)`: the one-sided floor reads best but changes the output
    for a negative divisor; the sign-keeping clamp comes next, with the compound divisor in
    parentheses where a method is called on it."""
    source = "import torch\n\n\ndef f(x, width):\n    return x * 2.0 / (width - 1.0)\n"
    clamps = [c for c in candidates(source, _request(source), strict=True) if c.kind == "clamp"]
    assert [c.source.splitlines()[-1].strip() for c in clamps] == [
        "return x * 2.0 / (width - 1.0).clamp_min(1e-6)",
        "return x * 2.0 / torch.where(width - 1.0 < 0, (width - 1.0).clamp_max(-1e-6), "
        "(width - 1.0).clamp_min(1e-6))",
    ]


def test_where_leak_gets_the_double_where_before_a_clamp() -> None:
    source = (
        "import torch\n\n\ndef f(x):\n"
        "    return torch.where(x > 0, torch.sqrt(x), torch.zeros_like(x))\n"
    )
    names = [c.name for c in candidates(source, _request(source))]
    assert names[0] == "double-where"


def test_a_finding_that_is_not_there_gives_no_candidates() -> None:
    request = FixRequest("m.py", 3, 3, "log", "torch.log(q)", "q", column=11, end_column=23)
    assert candidates(SOFTMAX, request) == []


def test_patch_json_and_suggestion_block() -> None:
    (best, *_) = candidates(SOFTMAX, _request(SOFTMAX), strict=True)
    data = best.to_json()
    patch = data["patch"]
    assert patch["start_line"] == patch["end_line"] == 5
    assert patch["replacement"] == "    return torch.log_softmax(x, -1)\n"
    assert patch["suggestion"] == "```suggestion\n    return torch.log_softmax(x, -1)\n```\n"
    assert "-    return torch.log(torch.softmax(x, -1))\n" in patch["diff"]
    assert "+    return torch.log_softmax(x, -1)\n" in patch["diff"]


# ---------------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_bounds_hold_in_the_dtype(dtype: str) -> None:
    import torch

    torch_dtype = getattr(torch, dtype)
    finfo = torch.finfo(torch_dtype)
    eps = torch.tensor(epsilon(dtype), dtype=torch_dtype)
    assert float(eps) >= finfo.tiny  # never 0, never subnormal
    assert float(torch.tensor(float(literal(epsilon(dtype))), dtype=torch_dtype)) > 0
    assert float(torch.tensor(float(tiny_literal(dtype)), dtype=torch_dtype)) == finfo.tiny
    bound = torch.tensor(float(exp_bound(dtype)), dtype=torch_dtype)
    assert bool(torch.isfinite(torch.exp(bound)))
    margin = unit_margin(dtype)
    assert float(torch.tensor(1 - margin, dtype=torch_dtype)) < 1
    assert float(torch.tensor(-1 + margin, dtype=torch_dtype)) > -1
    if dtype == "float16":
        assert epsilon(dtype) > 1e-8  # the Adam eps=1e-8 problem


# ---------------------------------------------------------------------------------- requests


def test_request_from_finding_json() -> None:
    source = "import torch\n\n\ndef f(x):\n    return torch.sqrt(torch.relu(x))\n"
    (finding,) = scan_source(source, "m.py").findings
    from_json = FixRequest.from_finding(finding.to_json())
    assert from_json == FixRequest.from_finding(finding)
    assert from_json.lo == 0.0 and from_json.hi == float("inf") and from_json.nonnegative
    assert from_json.dtype == "float32" and from_json.column == 11


def test_fp16_underflow_sizes_the_epsilon_for_float16() -> None:
    source = (
        "import torch\n\n\ndef f(x, y):\n    with torch.autocast('cuda'):\n"
        "        return x / (y.abs() + 1e-8)\n"
    )
    (finding,) = scan_source(source, "m.py").findings
    request = FixRequest.from_finding(finding)
    assert finding.rule == "eps-underflow-fp16" and request.dtype == "float16"
    best = first_of_kind(source, request, "epsilon")
    assert best is not None
    assert best.patch.replacement == "        return x / (y.abs() + 0.001)\n"


def test_suggestion_without_the_import_it_needs() -> None:
    source = (FIXTURES / "stable-api" / "log_sigmoid_import.in.py").read_text()
    (best, *_) = candidates(source, _request(source))
    patch = best.patch
    assert not patch.suggestion_complete and patch.imports == ("import torch",)
    assert patch.start_line == patch.end_line == 6
    assert patch.replacement == "    return torch.nn.functional.logsigmoid(z)\n"
    assert "+import torch\n" in patch.diff


def test_multi_line_call_is_covered_by_one_suggestion() -> None:
    source = (FIXTURES / "stable-api" / "log_softmax_torch.in.py").read_text()
    finding = next(f for f in scan_source(source, "m.py").findings if f.function == "multi_line")
    assert (finding.line, finding.end_line) == (19, 21)
    (best, *_) = candidates(source, FixRequest.from_finding(finding))
    patch = best.patch
    assert (patch.start_line, patch.end_line) == (19, 21)
    assert patch.original == (
        "    log_probs = torch.log(\n"
        "        F.softmax(logits, dim=-1),  # over the classes\n"
        "    )\n"
    )
    assert patch.replacement == (
        "    log_probs = F.log_softmax(\n        logits, dim=-1,  # over the classes\n    )\n"
    )
    assert apply_suggestion(source, patch) == best.source


def test_masked_fill_suggestion_reaches_up_to_the_fill() -> None:
    source = (FIXTURES / "masked-fill" / "masked_softmax.in.py").read_text()
    finding = next(f for f in scan_source(source, "m.py").findings if f.function == "attention")
    (best, *_) = candidates(source, FixRequest.from_finding(finding))
    assert best.kind == "masked-fill"
    assert (best.patch.start_line, best.patch.end_line) == (finding.line - 1, finding.line)


def test_a_producer_whose_input_changed_is_not_used() -> None:
    source = (
        "import torch\n\n\ndef f(z):\n    q = torch.sigmoid(z)\n    z = z * 2\n"
        "    return torch.log(q)\n"
    )
    (finding,) = scan_source(source, "m.py").findings
    names = [c.name for c in candidates(source, FixRequest.from_finding(finding), strict=True)]
    assert "log-sigmoid" not in names and names  # the guards still apply
    unchanged = source.replace("    z = z * 2\n", "")
    (finding,) = scan_source(unchanged, "m.py").findings
    (best, *_) = candidates(unchanged, FixRequest.from_finding(finding), strict=True)
    assert best.patch.replacement == "    return torch.nn.functional.logsigmoid(z)\n"


def test_only_code_the_sandbox_can_validate_gets_candidates() -> None:
    """numpy, JAX and Keras 3 findings stay static: no patch is suggested unchecked."""
    for source in (
        "import numpy as np\n\n\ndef f(x):\n    return np.log(np.exp(x).sum())\n",
        "import jax.numpy as jnp\n\n\ndef f(x):\n    return jnp.log(1 + x)\n",
    ):
        (finding,) = scan_source(source, "m.py").findings
        assert finding.framework in ("numpy", "jax")
        assert candidates(source, FixRequest.from_finding(finding)) == []
