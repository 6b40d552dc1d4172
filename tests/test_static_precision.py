"""Values bounded by construction are not reported, and real risks next to them still are.

The noise on real pull requests was operands the interval analysis could not see were safe:
a negated square, a tensor size, a loop index, test code computing on literals. Each case
here pairs the safe form with the unsafe one it must not hide.
"""

from __future__ import annotations

import pytest

from analyzers.static import scan_source


def _flagged(code: str, path: str = "model.py") -> list[tuple[int, str]]:
    scan = scan_source(code, path)
    assert scan.error is None
    return [(f.line, f.op) for f in scan.findings if f.severity != "note"]


@pytest.mark.parametrize(
    ("safe", "unsafe"),
    [
        # exp of a non-positive quotient cannot overflow; of a quotient of unknown sign it can
        ("torch.exp(-d ** 2 / (2 * s ** 2 + 1))", "torch.exp(-(d * d) / s)"),
        ("torch.exp(-0.5 * d.abs() * s.abs())", "torch.exp(0.5 * d.abs() * s)"),
        ("torch.exp(-x.norm(dim=-1))", "torch.exp(x.norm(dim=-1))"),
        # sizes are at least 1; a sum over a mask can be 0
        ("x.sum() / x.shape[0]", "x.sum() / mask.sum()"),
        ("x / torch.sqrt(torch.tensor(float(x.size(-1))))", "x / torch.sqrt(torch.tensor(s))"),
        ("torch.log2(torch.tensor(len(x)))", "torch.log2(torch.tensor(x.sum()))"),
    ],
)
def test_bounded_by_construction(safe: str, unsafe: str) -> None:
    template = (
        "import torch\n"
        "def f(x: torch.Tensor, d: torch.Tensor, s: torch.Tensor, mask: torch.Tensor):\n"
        "    return {}\n"
    )
    assert _flagged(template.format(safe)) == []
    assert {line for line, _ in _flagged(template.format(unsafe))} == {3}


def test_loop_indices_from_range_and_enumerate() -> None:
    code = (
        "import torch\n"
        "def f(xs: torch.Tensor, k: int):\n"
        "    for i in range(10):\n"
        "        xs = xs / torch.tensor(i + 1.0)\n"  # i >= 0: safe
        "    for j, x in enumerate(xs, 1):\n"
        "        xs = xs / torch.tensor(float(j))\n"  # j >= 1: safe
        "    for m in range(k, 0, -1):\n"
        "        xs = xs / torch.tensor(float(m))\n"  # counts down to 1: safe
        "    for n in range(-3, 3):\n"
        "        xs = xs / torch.tensor(float(n))\n"  # passes 0: flagged
        "    return xs\n"
    )
    assert _flagged(code) == [(10, "div")]


def test_a_counter_can_still_be_zero() -> None:
    code = (
        "import torch\n"
        "def mean(xs):\n"
        "    n = 0\n"
        "    total = torch.zeros(3)\n"
        "    for x in xs:\n"
        "        total = total + x\n"
        "        n += 1\n"
        "    return total / torch.tensor(float(n))\n"
    )  # an empty xs: 0/0
    assert _flagged(code) == [(8, "div")]


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_losses.py",
        "pkg/tests/helpers.py",
        "test_losses.py",
        "losses_test.py",
        "conftest.py",
    ],
)
def test_test_files_do_not_report_ops_on_literals(path: str) -> None:
    code = (
        "import torch\n"
        "def test_log(x: torch.Tensor):\n"
        "    assert torch.isinf(torch.log(torch.tensor([0.0, 1.0]))).any()\n"
        "    return torch.log(x.clamp(0.0, 1.0))\n"
    )
    assert _flagged(code, path) == [(4, "log")]  # a variable still feeds line 4
    assert _flagged(code, "losses.py") == [(3, "log"), (4, "log")]


def test_a_divisor_of_unknown_provenance_is_a_candidate_never_shown_unconfirmed() -> None:
    from analyzers.trust import comment_inline, counts

    code = (
        "def iou(stats):\n    tps, fps, fns = stats()\n"
        "    return tps / (fps + fns + tps)\n"
        "def ratio(a, b):\n    return a / b\n"
    )
    scan = scan_source(code, "metrics.py")
    (finding,) = scan.findings  # the sum of counts, not the plain ratio of two parameters
    assert (finding.line, finding.rule, finding.severity) == (3, "unknown-operand", "note")
    assert not comment_inline(finding, "potential") and not counts(finding)
    finding.status = "confirmed"  # proven: shown and counted like any other
    assert comment_inline(finding, "proven") and counts(finding)


@pytest.mark.parametrize(
    ("cut", "framework"),
    [
        ("h = jax.lax.stop_gradient(h)\n    t = jax.lax.stop_gradient(t)", "jax"),
        ("h = h.detach()\n    t = t.detach()", "torch"),
    ],
)
def test_where_cannot_leak_a_gradient_that_was_stopped(cut: str, framework: str) -> None:
    """`where(h == 0, 0, t / h)` leaks a NaN gradient only if a gradient flows through `t / h`:
    on values cut off from autograd (and constants) it cannot. Stopping one operand is not
    enough: the gradient still reaches `t` through the division."""
    where = "jnp.where" if framework == "jax" else "torch.where"
    template = (
        "import jax\nimport jax.numpy as jnp\nimport torch\n"
        "def f(h: torch.Tensor, t: torch.Tensor):\n"
        "    {cut}\n"
        "    h2 = h * 2.0\n"
        f"    return {where}(h2 == 0, 0.0, t * 14.4 / h2)\n"
    )

    def rules_on_return(cut: str) -> list[str]:
        code = template.format(cut=cut)
        last = code.count("\n")
        return [f.rule for f in scan_source(code, "m.py").findings if f.line == last]

    assert rules_on_return(cut) == []
    assert rules_on_return(cut.split("\n")[0]) == ["where-grad-leak"]  # only h is stopped
    assert rules_on_return("pass") == ["where-grad-leak"]


def test_a_counter_that_may_stay_zero_is_followed_through_the_ratio_it_makes() -> None:
    """BLEU's brevity penalty: both lengths start at 0 and only the loop adds to them, so
    an empty corpus divides by 0 twice, once by the counter, once by the ratio it made.
    A counter that starts at 1, and a running total of unknowns, are not candidates."""
    code = (
        "import math\n"
        "def bleu(pairs):\n"
        "    hyp_len = 0\n"
        "    ref_len = 0\n"
        "    for h, r in pairs:\n"
        "        hyp_len += len(h)\n"
        "        ref_len += len(r)\n"
        "    ratio = hyp_len / ref_len\n"
        "    return math.exp(1 - 1. / ratio) if ratio < 1.0 else 1.0\n"
        "def mean(xs, total, n):\n"
        "    k = 1\n"
        "    for x in xs:\n"
        "        k += 1\n"
        "        total += x\n"
        "        n += x\n"
        "    return total / k + total / n\n"
    )
    scan = scan_source(code, "metrics.py")
    assert [(f.line, f.rule) for f in scan.findings] == [
        (8, "unknown-operand"),
        (9, "unknown-operand"),
    ]
    assert "starts at 0" in scan.findings[1].why


def test_a_where_mask_makes_the_variables_it_compares_tensors() -> None:
    """Untyped parameters: `h == 0` in a jnp.where mask says `h` is an array, so the hidden
    `t / h` is probed like a tensor division; stopped gradients still keep it silent."""
    code = (
        "import jax\nimport jax.numpy as jnp\n"
        "def f(h, t):\n"
        "    return jnp.where(h == 0, 0.0, t * 14.4 / h)\n"
        "def g(h, t):\n"
        "    h = jax.lax.stop_gradient(h)\n"
        "    t = jax.lax.stop_gradient(t)\n"
        "    return jnp.where(h == 0, 0.0, t * 14.4 / h)\n"
    )
    scan = scan_source(code, "energy.py")
    assert [(f.line, f.rule) for f in scan.findings] == [(4, "where-grad-leak")]
    assert scan.findings[0].why.startswith("`jnp.where` hides")


def test_a_sum_of_unknowns_is_followed_through_its_name_and_a_negative_power_divides() -> None:
    """Adafactor's second moment `v = decay * v0 + (1 - decay) * g * g` is 0 wherever the
    gradient and the old moment are, and `v ** -0.5` divides by it, like a running count
    `total + batch` divided later. A difference of two unknowns (elapsed time), a sum with
    a positive constant (the usual guard) and a positive power are not candidates."""
    code = (
        "import time\n"
        "def update(g, v0, decay):\n"
        "    v = decay * v0 + (1.0 - decay) * g * g\n"
        "    return g * v ** -0.5\n"
        "def mean(total, batch, s):\n"
        "    n = total + batch\n"
        "    return s / n\n"
        "def rate(work, start):\n"
        "    elapsed = time.time() - start\n"
        "    return work / elapsed\n"
        "def guarded(s, d):\n"
        "    n = d + 1e-10\n"
        "    return s / n + n ** 0.5\n"
    )
    scan = scan_source(code, "opt.py")
    assert [(f.line, f.op, f.rule) for f in scan.findings] == [
        (4, "pow", "unknown-operand"),
        (7, "div", "unknown-operand"),
    ]


def test_the_square_root_of_a_computed_statistic_may_be_zero_a_scale_may_not() -> None:
    """Pearson's r divides by the roots of two variances it read off its metrics: constant
    data makes them 0. The root of a parameter, of an attribute or its alias is a scale
    (`math.sqrt(float(self.key_dim))`, a fan-in); and any root is >= 0, so the exponent below can
    not overflow."""
    code = (
        "import math\n"
        "def pearson(cov, metric):\n"
        "    var = metric.get()\n"
        "    return cov / (math.sqrt(var) * math.sqrt(var))\n"
        "def scaled(q, m, d_k):\n"
        "    fan_in = m.in_features\n"
        "    return q / math.sqrt(float(m.key_dim)) + q / math.sqrt(d_k) \\\n"
        "        + q / math.sqrt(fan_in)\n"
        "def matern(distance: float, nu):\n"
        "    return math.exp(-math.sqrt(nu * 2) * abs(distance))\n"
    )
    scan = scan_source(code, "metrics.py")
    assert [(f.line, f.op, f.rule) for f in scan.findings] == [(4, "div", "unknown-operand")]
