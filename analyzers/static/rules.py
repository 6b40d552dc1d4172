"""The rules the static pass reports, each with the examples that define it (Fixit's manner).

The analysis itself lives in `analyzer.py` (one abstract interpretation serves every rule);
this registry is what a reader, the SARIF writer, the publishing policy and the tests see: an
id, a message, a severity, whether the rule is *definite*, and VALID/INVALID snippets.
`tests/test_rules.py` runs every example, so a rule's documentation cannot drift from what it
does.

A definite rule states a fact about the code that needs no input to be true: an epsilon that
rounds away, a guard whose result is thrown away, log(softmax(x)) where log_softmax exists. Such
a finding is worth an inline comment without a proof. Every other rule (an operand not proven
inside the domain) is only a suspicion until the dynamic pass confirms it
(`analyzers/trust.py` decides what is published inline).

A candidate rule is weaker still: an operand of unknown provenance (a sum of values a helper
returned, a parameter minus one) that the static pass cannot judge at all. It is flagged so
that the dynamic pass tries it (recall comes from the static pass, precision from the proof),
and it is never an inline comment, nor a failing exit status, unless confirmed. The labelled
corpus scores the other rules only (`bench.corpus` counts candidates apart).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

Severity = Literal["error", "warning", "note"]


class RuleId(StrEnum):
    """The rule ids: what findings, SARIF, `disable` and `# numcheck: ignore[...]` name."""

    UNGUARDED_DOMAIN = "unguarded-domain"
    EPS_ABSORBED = "eps-absorbed"
    EPS_UNDERFLOW_FP16 = "eps-underflow-fp16"
    DISCARDED_GUARD = "discarded-guard"
    WHERE_GRAD_LEAK = "where-grad-leak"
    LOG_SOFTMAX = "log-softmax"
    LOG_SIGMOID = "log-sigmoid"
    BCE_SIGMOID = "bce-sigmoid"
    LOG_SUM_EXP = "log-sum-exp"
    LOG1P = "log1p"
    EXPM1 = "expm1"
    MASKED_SOFTMAX_INF = "masked-softmax-inf"
    FP16_SCORES_OVERFLOW = "fp16-scores-overflow"
    UNKNOWN_OPERAND = "unknown-operand"
    MANUAL_NORMALIZE = "manual-normalize"


@dataclass(frozen=True)
class RuleText:
    """Human text for one rule (SARIF's short and full descriptions and its help)."""

    short: str
    full: str
    help: str


@dataclass(frozen=True)
class Rule:
    id: RuleId
    summary: str
    message: str
    fix: str
    valid: tuple[str, ...]
    invalid: tuple[str, ...]
    severity: Severity = "warning"
    # true when the finding is a fact of the code whatever the inputs (see the module doc)
    definite: bool = False
    # a suspicion too weak to show unless the dynamic pass confirms it (see the module doc)
    candidate: bool = False

    def text(self) -> RuleText:
        return RuleText(short=self.summary, full=self.message, help=self.fix)


RULES: tuple[Rule, ...] = (
    Rule(
        RuleId.UNGUARDED_DOMAIN,
        "operand not proven inside the op's valid domain",
        "The operand of log, sqrt, division, pow, acos, exp, ... is not proven to stay inside "
        "the op's valid domain (forward and gradient), so the op can produce NaN or Inf.",
        "Clamp the operand, add an epsilon the dtype can represent, or use a stable API.",
        valid=(
            "import torch\ndef f(x):\n    return torch.log(x.clamp(min=1e-6))\n",
            "import torch\ndef f(x):\n    return torch.sqrt(x ** 2 + 1e-8)\n",
            "import torch\ndef f(x):\n    return (x * x).add(1e-8).sqrt()  # `.add` is `+`\n",
            "import tensorflow as tf\ndef f(x):\n    return tf.math.log(tf.maximum(x, 1e-7))\n",
            "import numpy as np\ndef f(x):\n    return np.log(np.abs(x) + 1e-9)\n",
            "import torch\ndef f(x):\n    return x / 255.0\n",
            "def f(a, b):\n    return a / b\n",
            # bounded by construction: a negated square over a square, sizes, loop indices
            "import torch\ndef f(x: torch.Tensor, s):\n"
            "    return torch.exp(-x ** 2 / (2 * s ** 2 + 1e-6))\n",
            "import math, torch\ndef f(q: torch.Tensor, k: torch.Tensor):\n"
            "    return (q @ k.T) / math.sqrt(q.shape[-1])\n",
            "import torch\ndef f(x: torch.Tensor):\n"
            "    return torch.log2(torch.tensor(x.size(-1))) + x.sum() / x.numel()\n",
            "import torch\ndef f(x: torch.Tensor):\n    for i in range(4):\n"
            "        x = x / torch.tensor(i + 1.0)\n    return x\n",
            "import torch\ndef f(x: torch.Tensor):\n"
            "    return torch.log(torch.arange(1, x.shape[0] + 1))\n",
        ),
        invalid=(
            "import torch\ndef f(x):\n    return torch.log(x)\n",
            "import torch as t\ndef f(x):\n    return t.sqrt(t.relu(x))\n",
            "import tensorflow.compat.v1 as tf\ndef f(x, y):\n    return tf.div(x, y)\n",
            "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return x / y.std()\n",
            "import torch\ndef f(c):\n    return torch.acos(torch.clamp(c, -1, 1))\n",
            "import jax.numpy as jnp\ndef f(x):\n    return jnp.exp(x)\n",
        ),
    ),
    Rule(
        RuleId.EPS_ABSORBED,
        "epsilon absorbed by floating-point rounding",
        "An epsilon meant to keep an operand away from 0 is added to a term so much larger "
        "that it rounds away (in float32, 1 + 1e-10 == 1): the guard does nothing.",
        "Add the epsilon next to the value that can reach 0, or clamp.",
        valid=(
            "import torch\ndef f(z):\n    p = torch.sigmoid(z)\n"
            "    return torch.log(1 - p + 1e-6)\n",
        ),
        invalid=(
            "import torch\ndef f(z):\n    p = torch.sigmoid(z)\n"
            "    return torch.log(1e-10 + 1 - p)\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.EPS_UNDERFLOW_FP16,
        "epsilon that is zero in float16",
        "An epsilon below float16's smallest subnormal (6e-8), such as 1e-8, is 0.0 in "
        "float16, so under half precision or autocast the guard does nothing.",
        "Use an epsilon float16 can represent (1e-4 stays normal) or finfo(dtype).tiny.",
        valid=(
            "import torch\ndef f(x, y):\n    with torch.autocast('cuda'):\n"
            "        return x / (y.abs() + 1e-4)\n",
        ),
        invalid=(
            "import torch\ndef f(x, y):\n    with torch.autocast('cuda'):\n"
            "        return x / (y.abs() + 1e-8)\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.DISCARDED_GUARD,
        "guard whose result is discarded",
        "clamp/clip return a new tensor; called as a bare statement they change nothing.",
        "Assign the result, or use the in-place form (clamp_).",
        valid=(
            "import torch\ndef f(x):\n    x = torch.clamp(x, min=1e-6)\n    return torch.log(x)\n",
        ),
        invalid=(
            "import tensorflow as tf\ndef f(x):\n    tf.clip_by_value(x, 1e-6, 1.0)\n"
            "    return x\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.WHERE_GRAD_LEAK,
        "where() masks the value but not the gradient",
        "torch.where/tf.where select the safe value in the forward pass, but the gradient "
        "of the unsafe branch is still computed everywhere and 0 * NaN = NaN (pytorch#68425).",
        "Make the unsafe branch's input safe too: op(where(cond, x, safe)) (double where).",
        valid=(
            "import torch\ndef f(x):\n    safe = torch.where(x > 0, x, torch.ones_like(x))\n"
            "    return torch.where(x > 0, torch.log(safe), torch.zeros_like(x))\n",
        ),
        invalid=(
            "import torch\ndef f(x):\n"
            "    return torch.where(x > 0, torch.sqrt(x), torch.zeros_like(x))\n",
            # untyped parameters: the mask compares `h`, so `h` is a tensor
            "import jax.numpy as jnp\ndef f(h, t):\n    return jnp.where(h == 0, 0.0, t / h)\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.LOG_SOFTMAX,
        "log of softmax",
        "log(softmax(x)) is -inf once a probability underflows to 0.0 (logits ~104 apart in "
        "float32).",
        "Use log_softmax on the logits.",
        valid=("import torch\ndef f(x):\n    return torch.log_softmax(x, dim=-1)\n",),
        invalid=(
            "import torch\nimport torch.nn.functional as F\ndef f(x):\n"
            "    return torch.log(F.softmax(x, dim=-1))\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.LOG_SIGMOID,
        "log of sigmoid",
        "log(sigmoid(x)) and log(1 - sigmoid(x)) are -inf once the sigmoid saturates.",
        "Use logsigmoid(x) and logsigmoid(-x).",
        valid=("import torch.nn.functional as F\ndef f(x):\n    return F.logsigmoid(x)\n",),
        invalid=("import torch\ndef f(x):\n    return torch.log(torch.sigmoid(x))\n",),
        definite=True,
    ),
    Rule(
        RuleId.BCE_SIGMOID,
        "binary cross-entropy on a sigmoid",
        "BCELoss on sigmoid outputs takes log(0) once the sigmoid saturates; torch clamps the "
        "log at -100 and the gradient is lost (pytorch#751).",
        "Use BCEWithLogitsLoss / binary_cross_entropy_with_logits, or from_logits=True.",
        valid=(
            "import torch.nn.functional as F\ndef f(x, y):\n"
            "    return F.binary_cross_entropy_with_logits(x, y)\n",
        ),
        invalid=(
            "import torch\nfrom torch import nn\ndef f(x, y):\n"
            "    return nn.BCELoss()(torch.sigmoid(x), y)\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.LOG_SUM_EXP,
        "hand-written log(sum(exp(x)))",
        "exp overflows above 88.72 in float32, so log(sum(exp(x))) is inf where logsumexp "
        "is finite.",
        "Use logsumexp with the same dim.",
        valid=("import torch\ndef f(x):\n    return torch.logsumexp(x, dim=1)\n",),
        invalid=(
            "import torch\ndef f(x):\n    return torch.log(torch.sum(torch.exp(x), dim=1))\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.LOG1P,
        "log(1 + x)",
        "log(1 + x) loses precision for small x and is NaN for x < -1.",
        "Use log1p(x).",
        valid=("import torch\ndef f(x):\n    return torch.log1p(torch.relu(x))\n",),
        invalid=("import torch\ndef f(x: torch.Tensor):\n    return torch.log(1 + x)\n",),
        severity="note",
    ),
    Rule(
        RuleId.EXPM1,
        "exp(x) - 1",
        "exp(x) - 1 cancels catastrophically for small x.",
        "Use expm1(x).",
        valid=("import torch\ndef f(x):\n    return torch.expm1(x.clamp(max=20))\n",),
        invalid=("import torch\ndef f(x):\n    return torch.exp(x) - 1\n",),
        severity="note",
    ),
    Rule(
        RuleId.MASKED_SOFTMAX_INF,
        "softmax over rows filled with -inf",
        "Masking scores with -inf before softmax gives 0/0 = NaN for a fully masked row "
        "(pytorch#41508).",
        "Fill with torch.finfo(dtype).min instead of -inf.",
        valid=(
            "import torch\ndef f(s, m):\n"
            "    s = s.masked_fill(m == 0, torch.finfo(s.dtype).min)\n"
            "    return torch.softmax(s, dim=-1)\n",
        ),
        invalid=(
            "import torch\ndef f(s, m):\n"
            "    s = s.masked_fill(m == 0, float('-inf'))\n"
            "    return torch.softmax(s, dim=-1)\n",
        ),
        definite=True,
    ),
    Rule(
        RuleId.FP16_SCORES_OVERFLOW,
        "softmax over float16 matmul scores",
        "In float16 (or fp16 autocast), q @ k^T overflows to inf once a dot product passes "
        "65504, before a scale applied after the product can help; softmax of a row with inf "
        "is NaN (pytorch#40497, transformers#24638).",
        "Compute the scores and the softmax in float32, or scale q before the product.",
        valid=(
            "import torch\ndef f(q, k):\n    s = (q @ k.transpose(-2, -1)).float()\n"
            "    return torch.softmax(s, dim=-1).half()\n",
            "import torch\ndef f(q, k):\n    q = q.half()\n"
            "    return torch.softmax(q.float() @ k.float().T, dim=-1)\n",
        ),
        invalid=(
            "import torch\ndef f(q, k, scale):\n    q = q.half()\n"
            "    return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1)\n",
            "import torch\ndef f(q, k):\n"
            "    with torch.autocast('cuda', dtype=torch.float16):\n"
            "        return torch.softmax(torch.matmul(q, k.mT) / 8.0, dim=-1)\n",
        ),
    ),
    Rule(
        RuleId.UNKNOWN_OPERAND,
        "divisor of unknown provenance that can reach 0",
        "The divisor is a sum or difference of values the analysis cannot follow (counts a "
        "helper returned, a parameter minus one), a floor division, or a counter that starts "
        "at 0 and only a loop adds to; such a divisor reaching 0 is a common bug, "
        "so the dynamic pass tries to prove it. Not shown unless confirmed.",
        "Guard the divisor (clamp_min, + eps) or check it before dividing.",
        valid=(
            "def f(a, b):\n    return a / b\n",
            "def f(a, b):\n    return a / (b * b + 1.0)\n",
            # a counter that starts at 1, a floor division of a known size
            "def mean(xs):\n    n = 1\n    for x in xs:\n        n += 1\n    return 3.0 / n\n",
            "def f(x):\n    return x / (7 // 2)\n",
            # a difference of two unknowns is followed only where it is written, and a
            # running total of unknowns is not an offset that lands on 0
            "import time\ndef rate(n, start):\n    elapsed = time.time() - start\n"
            "    return n / elapsed\n",
            "def f(x, d):\n    d = d + 1e-10\n    return x / d\n",
            "class Meter:\n    def update(self, val, n=1):\n        self.sum += val * n\n"
            "        self.count += n\n        self.avg = self.sum / self.count\n",
        ),
        invalid=(
            "def iou(stats):\n    tps, fps, fns = stats()\n    return tps / (fps + fns + tps)\n",
            "def scale(x, width):\n    return x * 2.0 / (width - 1.0)\n",
            # the difference is assigned first: `keep` is 0 for a rate of 1
            "def dropout(x, rate):\n    keep = 1.0 - rate\n    return x / keep\n",
            # 0 for a depth of 1
            "def f(x, depth):\n    return x / (depth // 2)\n",
            # an empty corpus leaves both counters at 0
            "def ratio(pairs):\n    hyp = 0\n    ref = 0\n"
            "    for h, r in pairs:\n        hyp += len(h)\n        ref += len(r)\n"
            "    return hyp / ref\n",
        ),
        severity="note",
        candidate=True,
    ),
    Rule(
        RuleId.MANUAL_NORMALIZE,
        "division by a norm",
        "x / x.norm() is inf/NaN for an all-zero vector, and so is its gradient (pytorch#2421).",
        "Use F.normalize(x, dim=...) or divide by norm.clamp_min(eps).",
        valid=("import torch.nn.functional as F\ndef f(x):\n    return F.normalize(x, dim=-1)\n",),
        invalid=("import torch\ndef f(x):\n    return x / x.norm(dim=-1, keepdim=True)\n",),
    ),
)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def rule_texts() -> dict[str, RuleText]:
    return {rule.id: rule.text() for rule in RULES}
