"""The words of a finding: where a value comes from, why the op fails, what to use instead.

Kept apart from the analysis so that the sentences can be read and changed in one place.
"""

from __future__ import annotations

import math
import re

from analyzers.catalogue import OpSpec, python_errors
from analyzers.dtypes import limits
from analyzers.static.rules import RULES, RuleId, Severity
from analyzers.static.values import Interval, Value

DEFAULT_EPS = {"float16": "1e-4", "bfloat16": "1e-6", "float32": "1e-6", "float64": "1e-12"}

# a rule's severity lives with the rule (rules.py); this is the lookup the scanner reads
RULE_SEVERITY: dict[str, Severity] = {rule.id: rule.severity for rule in RULES}


def producer_phrase(producer: str, dtype: str) -> str:
    """A predicate for `why`: '`p` <phrase>'."""
    lim = limits(dtype)
    phrases = {
        "softmax": f"comes from softmax and is exactly 0.0 in {dtype} when logits differ by "
        f"more than ~{lim.softmax_zero_gap:g}",
        "sigmoid": f"comes from sigmoid and saturates to exactly 0.0 or 1.0 in {dtype}",
        "one_minus_sigmoid": f"is 1 - sigmoid, exactly 0.0 once sigmoid saturates in {dtype}",
        "relu": "comes from relu and is exactly 0 for every non-positive input",
        "abs": "is an absolute value and is 0 wherever its input is 0",
        "square": "is a square and is 0 wherever its input is 0",
        "sumsq": "is a sum of squares and is 0 for an all-zero input",
        "norm": "is a norm and is 0 for an all-zero vector",
        "std": "is a standard deviation or variance and is 0 for a constant input",
        "exp": f"comes from exp and overflows to inf above {lim.exp_max:.2f} in {dtype}",
        "softplus": f"comes from softplus, which underflows toward 0 for inputs below "
        f"{math.log(lim.tiny):.1f} in {dtype}",
        "sum_exp": "is a sum of exponentials",
        "exp_flushed": f"comes from exp, and TensorFlow flushes its subnormal results (below "
        f"{lim.tiny:.3g} in {dtype}) to exactly 0.0 on the CPU",
        "one_plus": "is 1 + x",
        "tanh": f"comes from tanh and saturates to exactly ±1.0 in {dtype}",
        "cos": "is a cosine and reaches ±1",
        "clamp": "is clamped",
    }
    return phrases.get(producer, f"comes from {producer}")


def why(operand_src: str, value: Value, consequence: str, dtype: str) -> str:
    """One sentence: what the operand is, then what goes wrong."""
    shown = short(operand_src)
    if value.producer is not None and value.producer not in ("clamp", "where"):
        phrase = producer_phrase(value.producer, dtype)
        if value.name and value.name != operand_src:
            head = f"`{shown}` depends on `{value.name}`, which {phrase}"
        else:
            head = f"`{shown}` {phrase}"
    elif value.zero_reason is not None:
        head = (
            f"`{shown}` {value.zero_reason}"
            if value.name in (None, operand_src)
            else f"`{shown}` depends on `{value.name}`, which {value.zero_reason}"
        )
    elif not value.interval.unknown:
        head = f"`{shown}` lies in {value.interval.describe()} in {dtype}"
    else:
        head = f"nothing bounds `{shown}`"
    return f"{head}, so {consequence}."


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def consequence(
    spec: OpSpec, interval: Interval, dtype: str, requirement: str, framework: str = "torch"
) -> str:
    op = spec.op
    if framework == "math":  # Python floats raise instead of returning inf/NaN
        error = python_errors(op)[0]
        return f"math.{op} raises {error} there, which stops the training step"
    if requirement == "positive":
        if op in ("sqrt", "pow") and interval.nonnegative():
            return (
                f"{op} is finite at 0 but its gradient is inf there, which turns into "
                "NaN in backprop"
            )
        if op in ("sqrt",):
            return "sqrt returns NaN below 0 and its gradient is inf at 0"
        if op == "rsqrt":
            return "rsqrt returns inf at 0 and NaN below"
        if op == "pow":
            return (
                "the power is inf at 0 for a negative exponent and NaN below 0 for a fractional one"
            )
        if op == "digamma" and interval.positive():
            return (
                f"digamma(x) ~ -1/x overflows to -inf for x below "
                f"{1.0 / limits(dtype).max:.2g} in {dtype}"
            )
        if op in ("lgamma", "digamma"):
            return f"{op} is inf at 0 and at every negative integer"
        return f"{op} returns -inf at 0 and NaN below"
    if requirement == "nonzero":
        if op == "div":
            return "the division gives inf (or NaN for 0/0) when it is 0"
        return f"{op} gives inf or NaN at 0"
    if requirement == "gt_minus_one":
        return f"{op} returns -inf at -1 and NaN below"
    if requirement == "open_unit":
        if interval.lo >= -1 and interval.hi <= 1:
            return f"{op} is defined but its gradient is inf at ±1"
        return f"{op} returns NaN outside [-1, 1] and its gradient is inf at ±1"
    if requirement == "ge_one":
        return f"{op} returns NaN below 1"
    if requirement == "open_probability":
        return f"{op} is -inf at 0, +inf at 1 and NaN outside [0, 1]"
    if requirement == "below_exp_max":
        threshold = spec.thresholds.get(dtype, limits(dtype).exp_max)
        return f"{op} overflows to inf above {threshold:.2f} in {dtype}"
    return f"{op} can produce NaN or Inf"


def domain_hint(
    spec: OpSpec, operand_src: str, framework: str, requirement: str, interval: Interval, dtype: str
) -> str:
    """A short hint until the fix pass proposes a checked patch."""
    plain = short(operand_src, 40)
    simple = re.fullmatch(r"[\w.]+(\([^()]*\))?", plain) is not None
    x = plain if simple else f"({plain})"  # the receiver of `.clamp_min(...)` and friends
    eps = DEFAULT_EPS.get(dtype, "1e-6")
    tf_like = framework in ("tensorflow", "keras")
    np_like = framework in ("numpy", "jax", "math")
    mod = "tf" if tf_like else ("jnp" if framework == "jax" else "np")
    if requirement in ("positive", "nonzero", "ge_one"):
        floor = eps if requirement != "ge_one" else f"1 + {eps}"
        if requirement == "nonzero" and not interval.nonnegative():
            return "guard the divisor: keep it away from 0 with its sign, or mask the zeros"
        if interval.nonnegative() and requirement != "ge_one":
            return f"add an epsilon the dtype can represent: `{plain} + {eps}`"
        if tf_like or np_like:
            return f"clamp the operand: `{mod}.maximum({plain}, {floor})`"
        return f"clamp the operand: `{x}.clamp_min({floor})`"
    if requirement == "gt_minus_one":
        return f"clamp the operand: `{x}.clamp_min(-1 + {eps})`"
    if requirement == "open_probability":
        return f"clamp inside (0, 1): `{x}.clamp({eps}, 1 - {eps})`, or pass `eps=` to logit"
    if requirement == "open_unit":
        if tf_like:
            return (
                f"clip strictly inside (-1, 1): `tf.clip_by_value({plain}, -1 + {eps}, 1 - {eps})`"
            )
        if np_like:
            return f"clip strictly inside (-1, 1): `{mod}.clip({plain}, -1 + {eps}, 1 - {eps})`"
        return f"clamp strictly inside (-1, 1): `{x}.clamp(-1 + {eps}, 1 - {eps})`"
    if requirement == "below_exp_max":
        threshold = spec.thresholds.get(dtype, limits(dtype).exp_max)
        if tf_like or np_like:
            return (
                f"bound the exponent: `{mod}.minimum({plain}, {threshold:.0f})`, or work in "
                "log space"
            )
        return f"bound the exponent: `{x}.clamp_max({threshold:.0f})`, or work in log space"
    return ""


PATTERN_HINTS: dict[str, dict[str, str]] = {
    RuleId.LOG_SOFTMAX: {
        "torch": "use `torch.log_softmax(x, dim=...)` on the logits",
        "tensorflow": "use `tf.nn.log_softmax(logits)` on the logits",
        "default": "use log_softmax on the logits",
    },
    RuleId.LOG_SIGMOID: {
        "torch": "use `torch.nn.functional.logsigmoid(x)` "
        "(and `logsigmoid(-x)` for log(1 - sigmoid(x)))",
        "tensorflow": "use `tf.math.log_sigmoid(x)` (and `log_sigmoid(-x)` for "
        "log(1 - sigmoid(x)))",
        "default": "use log_sigmoid on the logits",
    },
    RuleId.BCE_SIGMOID: {
        "torch": "drop the sigmoid and use `BCEWithLogitsLoss` / "
        "`F.binary_cross_entropy_with_logits` on the logits",
        "tensorflow": "drop the sigmoid and pass `from_logits=True`",
        "default": "compute the loss from the logits",
    },
    RuleId.LOG_SUM_EXP: {
        "torch": "use `torch.logsumexp(x, dim=...)`",
        "tensorflow": "use `tf.math.reduce_logsumexp(x, axis=...)`",
        "default": "use logsumexp",
    },
    RuleId.LOG1P: {
        "torch": "use `torch.log1p(x)`: exact for small x",
        "tensorflow": "use `tf.math.log1p(x)`: exact for small x",
        "default": "use log1p(x)",
    },
    RuleId.EXPM1: {
        "torch": "use `torch.expm1(x)`: exact for small x",
        "tensorflow": "use `tf.math.expm1(x)`: exact for small x",
        "default": "use expm1(x)",
    },
    RuleId.MASKED_SOFTMAX_INF: {
        "default": "fill masked positions with "
        "`torch.finfo(scores.dtype).min` instead of -inf, so a "
        "fully masked row stays finite"
    },
    RuleId.MANUAL_NORMALIZE: {
        "torch": "use `torch.nn.functional.normalize(x, dim=...)` or divide "
        "by `norm.clamp_min(eps)`",
        "tensorflow": "use `tf.math.l2_normalize(x, axis=...)`",
        "default": "divide by max(norm, eps)",
    },
    RuleId.FP16_SCORES_OVERFLOW: {
        "torch": "compute the scores and the softmax in float32: "
        "`torch.softmax(q.float() @ k.float().transpose(-2, -1) "
        "* scale, dim=-1).to(q.dtype)`, or scale q first",
        "tensorflow": "compute the scores and the softmax in float32 "
        "(`tf.cast(q, tf.float32)`), or scale q first",
        "default": "compute the scores and the softmax in float32",
    },
    RuleId.WHERE_GRAD_LEAK: {
        "default": "make the unsafe branch's input safe too (double where): "
        "`op(where(cond, x, safe_value))`"
    },
    RuleId.DISCARDED_GUARD: {
        "default": "assign the result (`x = x.clamp(...)`) or use the "
        "in-place form (`x.clamp_(...)`)"
    },
    RuleId.EPS_ABSORBED: {
        "default": "add the epsilon last, next to the value that can reach 0, "
        "or clamp: an epsilon below the other term's precision "
        "vanishes"
    },
    RuleId.EPS_UNDERFLOW_FP16: {
        "default": "use an epsilon float16 can represent (>= 1e-4 keeps "
        "it normal), or `torch.finfo(x.dtype).tiny`"
    },
}


def pattern_hint(rule: str, framework: str) -> str:
    hints = PATTERN_HINTS.get(rule, {})
    key = "tensorflow" if framework == "keras" else framework
    return hints.get(key, hints.get("default", ""))
