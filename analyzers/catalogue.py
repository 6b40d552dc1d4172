"""The op catalogue: every risky operation, described once.

The static pass reads `requires` and the names, the dynamic pass reads `suspect_loss` and the
domains, the fix pass reads `fixes`; nothing else in numcheck hard-codes an op. Entries cite
the docs/numerics.md pattern they cover. Qualified names are normalised: `tensorflow.compat.v1.X`
and `tensorflow.compat.v2.X` resolve to `tensorflow.X` before lookup (see `normalise_qualname`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from analyzers.dtypes import DTYPES

Requirement = Literal[
    "positive",  # x > 0 (log: -inf at 0; sqrt: gradient inf at 0)
    "nonzero",  # x != 0
    "gt_minus_one",  # x > -1
    "open_unit",  # -1 < x < 1 (acos/asin/atanh: gradient inf at ±1)
    "open_probability",  # 0 < x < 1 (logit: -inf at 0, +inf at 1)
    "below_exp_max",  # x <= log(max) of the dtype
    "ge_one",  # x >= 1 (acosh)
    "none",  # nothing the generic rule can check; patterns or the dynamic pass handle it
]
Kind = Literal["risky", "producer", "guard"]
FixKind = Literal["stable-api", "epsilon", "clamp", "where", "masked-fill", "upcast"]
Framework = Literal["torch", "tensorflow", "keras", "numpy", "jax", "math", "scipy"]


@dataclass(frozen=True)
class FixCandidate:
    """A rewrite the fix pass may try, in developers' order of preference.

    `template` uses `{x}` for the operand's source and `{tiny}`/`{eps}` for bounds the fix
    pass computes from the dtype, so an epsilon is never absorbed or zero.
    """

    kind: FixKind
    template: str
    note: str = ""


@dataclass(frozen=True)
class OpSpec:
    op: str
    kind: Kind
    summary: str
    functions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    methods: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    operand: int = 0
    operand_keywords: tuple[str, ...] = ("input", "x")
    operand_overrides: Mapping[str, int] = field(default_factory=dict)
    requires: Requirement = "none"
    forward_invalid: str = ""
    gradient_invalid: str = ""
    thresholds: Mapping[str, float] = field(default_factory=dict)
    suspect_loss: str = ""
    fixes: tuple[FixCandidate, ...] = ()
    patterns: tuple[int, ...] = ()
    output: tuple[float, float] | None = None
    output_open_low: bool = False
    stable_replacement: str = ""

    def qualnames(self) -> Iterable[tuple[str, str]]:
        """(framework, qualified name) pairs."""
        for framework, names in self.functions.items():
            for name in names:
                yield framework, name

    def fix_kinds(self) -> frozenset[FixKind]:
        """The fix kinds this entry lists: the generic domain fixes are tried only for them."""
        return frozenset(fix.kind for fix in self.fixes)

    def leaf_names(self) -> Iterable[str]:
        """The names a call of this op ends in: functions unqualified, and methods."""
        yield from (qual.rsplit(".", 1)[-1] for _, qual in self.qualnames())
        yield from self.methods

    def operand_index(self, qualname: str) -> int:
        return self.operand_overrides.get(qualname, self.operand)


INF = float("inf")
EXP_MAX = {name: lim.exp_max for name, lim in DTYPES.items()}


def _torch(*names: str) -> tuple[str, ...]:
    return tuple(f"torch.{n}" for n in names)


def _tf(*names: str) -> tuple[str, ...]:
    return tuple(f"tensorflow.{n}" for n in names)


# Keras 2's backend (tf.keras.backend in TF <= 2.15, `tf_keras`) had these; Keras 3's has not.
KERAS2_BACKEND = frozenset(
    {
        "log",
        "sqrt",
        "exp",
        "pow",
        "abs",
        "square",
        "clip",
        "maximum",
        "minimum",
        "softmax",
        "sigmoid",
        "tanh",
        "cos",
        "sin",
        "std",
        "var",
        "binary_crossentropy",
    }
)


def _keras(*names: str) -> tuple[str, ...]:
    """Keras 3 ops (numpy-style names) and, where it existed, the Keras 2 backend function."""
    out: list[str] = []
    for n in names:
        out += [f"keras.ops.{n}", f"tensorflow.keras.ops.{n}"]
        if n in KERAS2_BACKEND:
            out += [f"keras.backend.{n}", f"tensorflow.keras.backend.{n}"]
    return tuple(out)


def _np(*names: str) -> tuple[str, ...]:
    return tuple(f"numpy.{n}" for n in names)


def _jnp(*names: str) -> tuple[str, ...]:
    return tuple(f"jax.numpy.{n}" for n in names)


def _math(*names: str) -> tuple[str, ...]:
    return tuple(f"math.{n}" for n in names)


def _everywhere(
    name: str,
    *,
    special: bool = False,
    np_name: str | None = None,
    tf_math: bool = True,
    keras: bool = True,
    math_mod: bool = True,
    jax_name: str | None = None,
) -> dict[str, tuple[str, ...]]:
    """The common case: the same function name in every framework."""
    np_name = np_name or name
    funcs: dict[str, tuple[str, ...]] = {
        "torch": _torch(name) + (_torch(f"special.{name}") if special else ()),
        "tensorflow": (_tf(f"math.{name}", name) if tf_math else _tf(f"experimental.numpy.{name}")),
        "numpy": _np(np_name),
        "jax": _jnp(jax_name or np_name),
    }
    if keras:
        funcs["keras"] = _keras(np_name)
    if math_mod:
        funcs["math"] = _math(name)
    return funcs


CLAMP_TINY = FixCandidate("clamp", "{x}.clamp_min({tiny})", "RANUM's precondition: keep x >= tiny")
ADD_EPS = FixCandidate("epsilon", "{x} + {eps}", "keeps the gradient flowing; only where x >= 0")
WHERE_SAFE = FixCandidate(
    "where", "where({x} > 0, {x}, 1)", "double where: make the unsafe input safe"
)
UPCAST_EPS = FixCandidate(
    "upcast",
    "op({v}.float() + eps).to({v}.dtype)",
    "float16: the sum an epsilon vanishes from (1e-8 is 0.0 there), computed in float32",
)

_ENTRIES: tuple[OpSpec, ...] = (
    # --- logarithms ------------------------------------------------------------------------
    OpSpec(
        "log",
        "risky",
        "natural logarithm",
        functions=_everywhere("log"),
        methods=("log", "log_"),
        requires="positive",
        forward_invalid="x <= 0 (-inf at 0, NaN below)",
        gradient_invalid="x = 0",
        suspect_loss="x",
        fixes=(ADD_EPS, CLAMP_TINY, WHERE_SAFE, UPCAST_EPS),
        patterns=(8, 10, 15),
    ),
    OpSpec(
        "log2",
        "risky",
        "base-2 logarithm",
        functions=_everywhere("log2", tf_math=False),
        methods=("log2", "log2_"),
        requires="positive",
        forward_invalid="x <= 0",
        gradient_invalid="x = 0",
        suspect_loss="x",
        fixes=(ADD_EPS, CLAMP_TINY),
    ),
    OpSpec(
        "log10",
        "risky",
        "base-10 logarithm",
        functions=_everywhere("log10", tf_math=False),
        methods=("log10", "log10_"),
        requires="positive",
        forward_invalid="x <= 0",
        gradient_invalid="x = 0",
        suspect_loss="x",
        fixes=(ADD_EPS, CLAMP_TINY),
    ),
    OpSpec(
        "log1p",
        "risky",
        "log(1 + x)",
        functions={**_everywhere("log1p", special=True)},
        methods=("log1p", "log1p_"),
        requires="gt_minus_one",
        forward_invalid="x <= -1",
        gradient_invalid="x = -1",
        suspect_loss="x + 1",
        fixes=(FixCandidate("clamp", "{x}.clamp_min(-1 + {eps})"),),
    ),
    OpSpec(
        "logit",
        "risky",
        "log(p / (1 - p))",
        functions={"torch": _torch("logit", "special.logit"), "scipy": ("scipy.special.logit",)},
        methods=("logit",),
        requires="open_probability",
        forward_invalid="p <= 0 or p >= 1",
        gradient_invalid="p = 0 or p = 1",
        suspect_loss="min(x, 1 - x)",
        fixes=(FixCandidate("stable-api", "torch.logit({x}, eps={eps})"),),
    ),
    # --- roots and reciprocals ---------------------------------------------------------------
    OpSpec(
        "sqrt",
        "risky",
        "square root",
        functions=_everywhere("sqrt"),
        methods=("sqrt", "sqrt_"),
        requires="positive",
        forward_invalid="x < 0",
        gradient_invalid="x = 0 (inf, NaN once multiplied by 0)",
        suspect_loss="x",
        fixes=(ADD_EPS, CLAMP_TINY, WHERE_SAFE, UPCAST_EPS),
        patterns=(1, 2, 14, 13),
    ),
    OpSpec(
        "rsqrt",
        "risky",
        "1 / sqrt(x)",
        functions={
            "torch": _torch("rsqrt"),
            "tensorflow": _tf("math.rsqrt", "rsqrt"),
            "jax": ("jax.lax.rsqrt",),
            "keras": ("keras.ops.rsqrt",),
        },
        methods=("rsqrt", "rsqrt_"),
        requires="positive",
        forward_invalid="x <= 0",
        gradient_invalid="x = 0",
        suspect_loss="x",
        fixes=(ADD_EPS, CLAMP_TINY, UPCAST_EPS),
        patterns=(3, 13),
    ),
    OpSpec(
        "reciprocal",
        "risky",
        "1 / x",
        functions={
            "torch": _torch("reciprocal"),
            "tensorflow": _tf("math.reciprocal", "reciprocal"),
            "numpy": _np("reciprocal"),
            "jax": _jnp("reciprocal"),
        },
        methods=("reciprocal", "reciprocal_"),
        requires="nonzero",
        forward_invalid="x = 0",
        gradient_invalid="x = 0",
        suspect_loss="abs(x)",
        fixes=(ADD_EPS, CLAMP_TINY),
    ),
    OpSpec(
        "div",
        "risky",
        "division",
        functions={
            "torch": _torch("div", "divide", "true_divide", "floor_divide"),
            "tensorflow": _tf(
                "div",
                "divide",
                "truediv",
                "realdiv",
                "floordiv",
                "math.divide",
                "math.truediv",
                "math.floordiv",
                "floor_div",
            ),
            "keras": _keras("divide", "true_divide", "floor_divide"),
            "numpy": _np("divide", "true_divide", "floor_divide"),
            "jax": _jnp("divide", "true_divide", "floor_divide"),
        },
        methods=("div", "div_", "divide", "true_divide", "floor_divide"),
        operators=("/", "//"),
        operand=1,
        operand_keywords=("other", "y", "x2"),
        requires="nonzero",
        forward_invalid="divisor = 0 (or below the smallest normal)",
        gradient_invalid="divisor = 0",
        suspect_loss="abs(x)",
        fixes=(
            FixCandidate("epsilon", "{x} + {eps}", "only where the divisor is >= 0"),
            FixCandidate("clamp", "{x}.clamp_min({tiny})", "only where the divisor is >= 0"),
            FixCandidate("stable-api", "tf.math.divide_no_nan(...)", "TensorFlow"),
            UPCAST_EPS,
        ),
        patterns=(2, 3, 13, 14),
    ),
    OpSpec(
        "fmod",
        "risky",
        "remainder of a division",
        functions={
            "torch": _torch("fmod", "remainder"),
            "tensorflow": _tf("math.floormod", "math.mod", "mod", "floormod"),
            "numpy": _np("fmod", "remainder", "mod"),
            "jax": _jnp("fmod", "remainder"),
            "math": _math("fmod"),
        },
        methods=("fmod", "remainder"),
        operand=1,
        operand_keywords=("other", "y"),
        requires="nonzero",
        forward_invalid="divisor = 0",
        gradient_invalid="divisor = 0",
        suspect_loss="abs(x)",
    ),
    # --- exponentials ------------------------------------------------------------------------
    OpSpec(
        "exp",
        "risky",
        "exponential",
        functions={**_everywhere("exp", special=False)},
        methods=("exp", "exp_"),
        requires="below_exp_max",
        forward_invalid="x above log(max) of the dtype (inf)",
        gradient_invalid="same",
        thresholds=EXP_MAX,
        suspect_loss="threshold - x",
        fixes=(FixCandidate("clamp", "{x}.clamp_max({exp_max})"),),
        patterns=(10, 12),
        output=(0.0, INF),
        output_open_low=True,
    ),
    OpSpec(
        "exp2",
        "risky",
        "2 ** x",
        functions={
            "torch": _torch("exp2", "special.exp2"),
            "numpy": _np("exp2"),
            "jax": _jnp("exp2"),
        },
        methods=("exp2", "exp2_"),
        requires="below_exp_max",
        forward_invalid="x above log2(max) of the dtype",
        gradient_invalid="same",
        thresholds={k: v / 0.6931471805599453 for k, v in EXP_MAX.items()},
        suspect_loss="threshold - x",
        output=(0.0, INF),
        output_open_low=True,
        fixes=(FixCandidate("clamp", "{x}.clamp_max({exp_max})", "the bound is log2(max)"),),
    ),
    OpSpec(
        "expm1",
        "risky",
        "exp(x) - 1",
        functions={**_everywhere("expm1", special=True)},
        methods=("expm1", "expm1_"),
        requires="below_exp_max",
        forward_invalid="x above log(max) of the dtype",
        gradient_invalid="same",
        thresholds=EXP_MAX,
        suspect_loss="threshold - x",
        output=(-1.0, INF),
        fixes=(FixCandidate("clamp", "{x}.clamp_max({exp_max})"),),
    ),
    OpSpec(
        "cosh",
        "risky",
        "hyperbolic cosine",
        functions=_everywhere("cosh"),
        methods=("cosh", "cosh_"),
        requires="below_exp_max",
        forward_invalid="|x| above log(2 * max)",
        gradient_invalid="same",
        thresholds={k: v + 0.6931471805599453 for k, v in EXP_MAX.items()},
        suspect_loss="threshold - abs(x)",
        output=(1.0, INF),
        fixes=(FixCandidate("clamp", "{x}.clamp(-{exp_max}, {exp_max})", "bound: log(2 max)"),),
    ),
    OpSpec(
        "sinh",
        "risky",
        "hyperbolic sine",
        functions=_everywhere("sinh"),
        methods=("sinh", "sinh_"),
        requires="below_exp_max",
        forward_invalid="|x| above log(2 * max)",
        gradient_invalid="same",
        thresholds={k: v + 0.6931471805599453 for k, v in EXP_MAX.items()},
        suspect_loss="threshold - abs(x)",
        fixes=(FixCandidate("clamp", "{x}.clamp(-{exp_max}, {exp_max})", "bound: log(2 max)"),),
    ),
    # --- powers ------------------------------------------------------------------------------
    OpSpec(
        "pow",
        "risky",
        "x ** y",
        functions={
            "torch": _torch("pow", "float_power"),
            "tensorflow": _tf("pow", "math.pow"),
            "keras": _keras("power") + ("keras.backend.pow", "tensorflow.keras.backend.pow"),
            "numpy": _np("power", "float_power"),
            "jax": _jnp("power", "float_power"),
            "math": _math("pow"),
        },
        methods=("pow", "pow_", "float_power"),
        operators=("**",),
        operand_keywords=("input", "x", "x1", "self"),
        requires="positive",
        forward_invalid="x = 0 with y < 0; x < 0 with non-integer y",
        gradient_invalid="x = 0 with y < 1",
        suspect_loss="x",
        fixes=(
            FixCandidate("stable-api", "{x}.abs() ** y", "when the sign is meaningless"),
            CLAMP_TINY,
            ADD_EPS,
        ),
        patterns=(6,),
    ),
    # --- inverse trigonometric and hyperbolic -------------------------------------------------
    OpSpec(
        "acos",
        "risky",
        "arc cosine",
        functions={**_everywhere("acos", np_name="arccos"), "torch": _torch("acos", "arccos")},
        methods=("acos", "acos_", "arccos"),
        requires="open_unit",
        forward_invalid="|x| > 1",
        gradient_invalid="|x| = 1",
        suspect_loss="1 - abs(x)",
        fixes=(FixCandidate("clamp", "{x}.clamp(-1 + {eps}, 1 - {eps})"),),
        patterns=(4,),
    ),
    OpSpec(
        "asin",
        "risky",
        "arc sine",
        functions={**_everywhere("asin", np_name="arcsin"), "torch": _torch("asin", "arcsin")},
        methods=("asin", "asin_", "arcsin"),
        requires="open_unit",
        forward_invalid="|x| > 1",
        gradient_invalid="|x| = 1",
        suspect_loss="1 - abs(x)",
        fixes=(FixCandidate("clamp", "{x}.clamp(-1 + {eps}, 1 - {eps})"),),
        patterns=(4,),
    ),
    OpSpec(
        "atanh",
        "risky",
        "inverse hyperbolic tangent",
        functions={**_everywhere("atanh", np_name="arctanh"), "torch": _torch("atanh", "arctanh")},
        methods=("atanh", "atanh_", "arctanh"),
        requires="open_unit",
        forward_invalid="|x| >= 1",
        gradient_invalid="|x| = 1",
        suspect_loss="1 - abs(x)",
        fixes=(FixCandidate("clamp", "{x}.clamp(-1 + {eps}, 1 - {eps})"),),
    ),
    OpSpec(
        "acosh",
        "risky",
        "inverse hyperbolic cosine",
        functions={**_everywhere("acosh", np_name="arccosh"), "torch": _torch("acosh", "arccosh")},
        methods=("acosh", "acosh_", "arccosh"),
        requires="ge_one",
        forward_invalid="x < 1",
        gradient_invalid="x = 1",
        suspect_loss="x - 1",
        fixes=(FixCandidate("clamp", "{x}.clamp_min(1 + {eps})"),),
    ),
    OpSpec(
        "atan2",
        "risky",
        "two-argument arc tangent",
        functions={
            "torch": _torch("atan2", "arctan2"),
            "tensorflow": _tf("math.atan2", "atan2"),
            "keras": _keras("arctan2"),
            "numpy": _np("arctan2"),
            "jax": _jnp("arctan2"),
            "math": _math("atan2"),
        },
        methods=("atan2", "arctan2"),
        requires="none",
        forward_invalid="never",
        gradient_invalid="(y, x) = (0, 0)",
        suspect_loss="abs(x) + abs(y)",
        patterns=(5,),
        fixes=(
            FixCandidate(
                "where",
                "atan2(y, where(x * x + y * y < {tiny}, 1, x))",
                "double where: a safe point where the gradient is 0/0",
            ),
        ),
    ),
    # --- special functions -------------------------------------------------------------------
    OpSpec(
        "lgamma",
        "risky",
        "log of the gamma function",
        functions={
            "torch": _torch("lgamma", "special.gammaln"),
            "tensorflow": _tf("math.lgamma", "lgamma"),
            "scipy": ("scipy.special.gammaln",),
            "jax": ("jax.scipy.special.gammaln",),
            "math": _math("lgamma"),
        },
        methods=("lgamma", "lgamma_"),
        requires="positive",
        forward_invalid="x in {0, -1, -2, ...}",
        gradient_invalid="same",
        suspect_loss="distance to the nearest non-positive integer",
        fixes=(
            ADD_EPS,
            FixCandidate(
                "clamp", "{x}.clamp_min({eps})", "positive: the value and the gradient stay finite"
            ),
        ),
    ),
    OpSpec(
        "digamma",
        "risky",
        "derivative of lgamma",
        functions={
            "torch": _torch(
                "digamma", "special.digamma", "special.psi", "polygamma", "special.polygamma"
            ),
            "tensorflow": _tf("math.digamma", "digamma", "math.polygamma"),
            "scipy": ("scipy.special.digamma", "scipy.special.psi"),
            "jax": ("jax.scipy.special.digamma",),
        },
        methods=("digamma", "digamma_", "polygamma"),
        requires="positive",
        forward_invalid="x in {0, -1, -2, ...}",
        gradient_invalid="same",
        suspect_loss="distance to the nearest non-positive integer",
        fixes=(
            ADD_EPS,
            FixCandidate(
                "clamp",
                "{x}.clamp_min({eps})",
                "tiny is not enough: trigamma(tiny) = 1/tiny**2 = inf",
            ),
        ),
    ),
    OpSpec(
        "mvlgamma",
        "risky",
        "multivariate log-gamma of dimension p",
        functions={
            "torch": _torch("mvlgamma", "special.multigammaln"),
            "scipy": ("scipy.special.multigammaln",),
        },
        methods=("mvlgamma", "mvlgamma_"),
        forward_invalid="x <= (p - 1) / 2",
        gradient_invalid="same",
        suspect_loss="x - (p - 1) / 2",
    ),
    OpSpec(
        "erfinv",
        "risky",
        "inverse error function",
        functions={
            "torch": _torch("erfinv", "special.erfinv"),
            "tensorflow": _tf("math.erfinv"),
            "scipy": ("scipy.special.erfinv",),
            "jax": ("jax.scipy.special.erfinv",),
        },
        methods=("erfinv", "erfinv_"),
        requires="open_unit",
        forward_invalid="|x| >= 1",
        gradient_invalid="|x| = 1",
        suspect_loss="1 - abs(x)",
        fixes=(FixCandidate("clamp", "{x}.clamp(-1 + {eps}, 1 - {eps})"),),
    ),
    OpSpec(
        "xlogy",
        "producer",
        "x * log(y), 0 where x = 0: the stable form of p * log(p)",
        functions={
            "torch": _torch("xlogy", "special.xlogy", "special.entr"),
            "tensorflow": _tf("math.xlogy", "math.xlog1py"),
            "scipy": ("scipy.special.xlogy", "scipy.special.entr"),
            "jax": ("jax.scipy.special.xlogy",),
        },
        patterns=(15,),
    ),
    # --- softmax family ----------------------------------------------------------------------
    OpSpec(
        "softmax",
        "risky",
        "softmax",
        functions={
            "torch": _torch("softmax", "nn.functional.softmax", "special.softmax"),
            "tensorflow": _tf("nn.softmax", "math.softmax", "keras.activations.softmax"),
            "keras": ("keras.ops.softmax", "keras.activations.softmax", "keras.backend.softmax"),
            "jax": ("jax.nn.softmax",),
            "scipy": ("scipy.special.softmax",),
        },
        methods=("softmax",),
        requires="none",
        forward_invalid="a row that is entirely -inf (fully masked) gives 0/0; a row with +inf "
        "(float16 scores past 65504) gives inf/inf",
        gradient_invalid="same",
        suspect_loss="number of finite entries in the row",
        fixes=(
            FixCandidate("masked-fill", "masked_fill(mask, torch.finfo({x}.dtype).min)"),
            FixCandidate(
                "upcast",
                "softmax(q.float() @ k.float().T * scale).to(q.dtype)",
                "float16 scores: the product and the softmax in float32",
            ),
        ),
        patterns=(11, 12),
        output=(0.0, 1.0),
    ),
    OpSpec(
        "log_softmax",
        "producer",
        "log of softmax, computed stably",
        functions={
            "torch": _torch("log_softmax", "nn.functional.log_softmax", "special.log_softmax"),
            "tensorflow": _tf("nn.log_softmax", "math.log_softmax"),
            "keras": ("keras.ops.log_softmax",),
            "jax": ("jax.nn.log_softmax",),
        },
        methods=("log_softmax",),
        forward_invalid="fully masked row (all -inf)",
        patterns=(8,),
        output=(-INF, 0.0),
    ),
    OpSpec(
        "sigmoid",
        "producer",
        "logistic sigmoid; exactly 0 or 1 once saturated",
        functions={
            "torch": _torch("sigmoid", "nn.functional.sigmoid", "special.expit"),
            "tensorflow": _tf("sigmoid", "math.sigmoid", "nn.sigmoid", "keras.activations.sigmoid"),
            "keras": ("keras.ops.sigmoid", "keras.activations.sigmoid", "keras.backend.sigmoid"),
            "jax": ("jax.nn.sigmoid",),
            "scipy": ("scipy.special.expit",),
        },
        methods=("sigmoid",),
        patterns=(9,),
        output=(0.0, 1.0),
    ),
    OpSpec(
        "logsigmoid",
        "producer",
        "log of sigmoid, computed stably",
        functions={
            "torch": _torch("nn.functional.logsigmoid"),
            "tensorflow": _tf("math.log_sigmoid", "log_sigmoid"),
            "jax": ("jax.nn.log_sigmoid",),
        },
        output=(-INF, 0.0),
    ),
    OpSpec(
        "logsumexp",
        "producer",
        "log(sum(exp(x))), computed stably",
        functions={
            "torch": _torch("logsumexp", "special.logsumexp"),
            "tensorflow": _tf("math.reduce_logsumexp", "reduce_logsumexp"),
            "keras": ("keras.ops.logsumexp",),
            "jax": ("jax.nn.logsumexp", "jax.scipy.special.logsumexp"),
            "scipy": ("scipy.special.logsumexp",),
        },
        methods=("logsumexp",),
        patterns=(10,),
    ),
    OpSpec(
        "softplus",
        "producer",
        "log(1 + exp(x)); treated as positive by convention",
        functions={
            "torch": _torch("nn.functional.softplus"),
            "tensorflow": _tf("nn.softplus", "math.softplus"),
            "keras": ("keras.ops.softplus", "keras.activations.softplus"),
            "jax": ("jax.nn.softplus",),
        },
        output=(0.0, INF),
        output_open_low=True,
    ),
    # --- losses ------------------------------------------------------------------------------
    OpSpec(
        "binary_cross_entropy",
        "risky",
        "binary cross-entropy on probabilities",
        functions={
            "torch": _torch("nn.functional.binary_cross_entropy", "nn.BCELoss"),
            "tensorflow": _tf(
                "keras.losses.binary_crossentropy",
                "keras.losses.BinaryCrossentropy",
                "keras.backend.binary_crossentropy",
            ),
            "keras": (
                "keras.losses.binary_crossentropy",
                "keras.losses.BinaryCrossentropy",
                "keras.backend.binary_crossentropy",
            ),
        },
        operand_overrides={
            "tensorflow.keras.losses.binary_crossentropy": 1,
            "keras.losses.binary_crossentropy": 1,
        },
        operand_keywords=("input", "y_pred", "output"),
        forward_invalid="input exactly 0 or 1 (log(0); torch clamps the log at -100, losing the"
        " gradient)",
        gradient_invalid="input = 0 or 1",
        suspect_loss="min(x, 1 - x)",
        fixes=(FixCandidate("stable-api", "binary_cross_entropy_with_logits(logits, y)"),),
        patterns=(9,),
        stable_replacement="binary_cross_entropy_with_logits",
    ),
    OpSpec(
        "cross_entropy",
        "risky",
        "cross-entropy / NLL with a mean over non-ignored targets",
        functions={
            "torch": _torch(
                "nn.functional.cross_entropy",
                "nn.functional.nll_loss",
                "nn.CrossEntropyLoss",
                "nn.NLLLoss",
            ),
            "tensorflow": _tf(
                "nn.softmax_cross_entropy_with_logits",
                "nn.sparse_softmax_cross_entropy_with_logits",
                "keras.losses.categorical_crossentropy",
                "keras.losses.sparse_categorical_crossentropy",
            ),
        },
        forward_invalid="every target equals ignore_index with reduction='mean' (0/0)",
        gradient_invalid="same",
        suspect_loss="number of non-ignored targets",
    ),
    OpSpec(
        "kl_div",
        "risky",
        "KL divergence on log-probabilities",
        functions={
            "torch": _torch("nn.functional.kl_div", "nn.KLDivLoss"),
            "tensorflow": _tf("keras.losses.kl_divergence", "keras.losses.KLDivergence"),
        },
        operand=1,
        operand_keywords=("target",),
        forward_invalid="target = 0 where computed as target * log(target)",
        gradient_invalid="same",
        suspect_loss="x",
        patterns=(15,),
        stable_replacement="kl_div(log_q, log_p, log_target=True): targets "
        "as log-probabilities (no fix kind rewrites the producer of the targets)",
    ),
    # --- norms, statistics, distances --------------------------------------------------------
    OpSpec(
        "norm",
        "producer",
        "vector norm; >= 0 and 0 for a zero vector",
        functions={
            "torch": _torch("norm", "linalg.norm", "linalg.vector_norm", "frobenius_norm"),
            "tensorflow": _tf("norm", "linalg.norm", "math.reduce_euclidean_norm"),
            "numpy": _np("linalg.norm"),
            "jax": _jnp("linalg.norm"),
            "keras": ("keras.ops.norm",),
        },
        methods=("norm",),
        gradient_invalid="x = 0 (TensorFlow's tf.norm)",
        # its fixes belong to the findings it feeds: normalize for a div (t_normalize), the
        # root of a sum of squares plus eps for TensorFlow's norm (t_tf_norm_eps, on sqrt)
        stable_replacement="torch.nn.functional.normalize(x, dim) for x / x.norm(dim)",
        patterns=(2,),
        output=(0.0, INF),
    ),
    OpSpec(
        "std",
        "producer",
        "standard deviation; 0 for a constant input, NaN for one element",
        functions={
            "torch": _torch("std", "var", "std_mean", "var_mean"),
            "tensorflow": _tf("math.reduce_std", "math.reduce_variance", "nn.moments"),
            "numpy": _np("std", "var", "nanstd", "nanvar"),
            "jax": _jnp("std", "var"),
            "keras": ("keras.ops.std", "keras.ops.var", "keras.backend.std", "keras.backend.var"),
        },
        methods=("std", "var"),
        forward_invalid="one element with the unbiased estimator (N - 1 = 0)",
        gradient_invalid="constant input (std = 0)",
        suspect_loss="x",
        patterns=(3,),
        stable_replacement="x.std(correction=0) where one element is "
        "possible (it changes the value, so no fix kind proposes it)",
        output=(0.0, INF),
    ),
    OpSpec(
        "cdist",
        "risky",
        "pairwise Euclidean distance",
        functions={
            "torch": _torch(
                "cdist", "nn.functional.pairwise_distance", "pdist", "nn.functional.pdist"
            )
        },
        forward_invalid="never",
        gradient_invalid="two identical points (distance 0)",
        suspect_loss="min distance",
        patterns=(14,),
        output=(0.0, INF),
    ),
    OpSpec(
        "cosine_similarity",
        "producer",
        "cosine similarity with a built-in eps",
        functions={
            "torch": _torch("nn.functional.cosine_similarity", "cosine_similarity"),
            "tensorflow": _tf("keras.losses.cosine_similarity"),
        },
        patterns=(14,),
        output=(-1.0, 1.0),
    ),
    OpSpec(
        "arange",
        "risky",
        "range with a step",
        functions={
            "torch": _torch("arange", "range"),
            "tensorflow": _tf("range"),
            "numpy": _np("arange"),
            "jax": _jnp("arange"),
        },
        forward_invalid="step = 0",
        suspect_loss="abs(step)",
    ),
    # --- linear algebra ----------------------------------------------------------------------
    OpSpec(
        "linalg",
        "risky",
        "decompositions whose gradients divide by eigenvalue gaps",
        functions={
            "torch": _torch(
                "linalg.eigh",
                "linalg.svd",
                "svd",
                "linalg.cholesky",
                "cholesky",
                "linalg.inv",
                "inverse",
                "logdet",
                "linalg.slogdet",
            ),
            "tensorflow": _tf(
                "linalg.eigh", "linalg.svd", "linalg.cholesky", "linalg.inv", "linalg.logdet"
            ),
            "numpy": _np("linalg.inv", "linalg.cholesky"),
            "jax": _jnp("linalg.eigh", "linalg.svd", "linalg.inv"),
        },
        forward_invalid="singular or not positive definite input",
        gradient_invalid="repeated eigen/singular values",
        suspect_loss="smallest gap between eigenvalues (or the smallest eigenvalue)",
        patterns=(15,),
    ),
    # --- producers with known ranges ---------------------------------------------------------
    OpSpec(
        "relu",
        "producer",
        "max(x, 0)",
        functions={
            "torch": _torch("relu", "nn.functional.relu", "nn.functional.relu6"),
            "tensorflow": _tf("nn.relu", "nn.relu6"),
            "keras": ("keras.ops.relu", "keras.activations.relu"),
            "jax": ("jax.nn.relu",),
        },
        methods=("relu",),
        output=(0.0, INF),
    ),
    OpSpec(
        "abs",
        "producer",
        "absolute value",
        functions={
            "torch": _torch("abs", "absolute"),
            "tensorflow": _tf("abs", "math.abs"),
            "numpy": _np("abs", "absolute", "fabs"),
            "jax": _jnp("abs", "absolute"),
            "keras": _keras("abs", "absolute"),
            "math": _math("fabs"),
        },
        methods=("abs", "absolute"),
        output=(0.0, INF),
    ),
    OpSpec(
        "square",
        "producer",
        "x * x",
        functions={
            "torch": _torch("square"),
            "tensorflow": _tf("square", "math.square"),
            "numpy": _np("square"),
            "jax": _jnp("square"),
            "keras": _keras("square"),
        },
        methods=("square",),
        output=(0.0, INF),
    ),
    OpSpec(
        "tanh",
        "producer",
        "hyperbolic tangent; exactly ±1 once saturated",
        functions={
            "torch": _torch("tanh", "nn.functional.tanh"),
            "tensorflow": _tf("tanh", "math.tanh", "nn.tanh"),
            "numpy": _np("tanh"),
            "jax": _jnp("tanh"),
            "keras": _keras("tanh"),
        },
        methods=("tanh",),
        output=(-1.0, 1.0),
    ),
    OpSpec(
        "cos",
        "producer",
        "cosine",
        functions=_everywhere("cos"),
        methods=("cos",),
        output=(-1.0, 1.0),
    ),
    OpSpec(
        "sin",
        "producer",
        "sine",
        functions=_everywhere("sin"),
        methods=("sin",),
        output=(-1.0, 1.0),
    ),
    # --- guards ------------------------------------------------------------------------------
    OpSpec(
        "clamp",
        "guard",
        "clamp/clip: the guard every domain fix uses",
        functions={
            "torch": _torch("clamp", "clip", "clamp_min", "clamp_max"),
            "tensorflow": _tf("clip_by_value", "clip_by_norm"),
            "keras": _keras("clip"),
            "numpy": _np("clip"),
            "jax": _jnp("clip"),
        },
        methods=("clamp", "clip", "clamp_min", "clamp_max"),
    ),
    OpSpec(
        "maximum",
        "guard",
        "elementwise max with a bound",
        functions={
            "torch": _torch("maximum", "fmax"),
            "tensorflow": _tf("maximum", "math.maximum"),
            "keras": _keras("maximum"),
            "numpy": _np("maximum", "fmax"),
            "jax": _jnp("maximum"),
        },
        methods=("maximum",),
    ),
    OpSpec(
        "minimum",
        "guard",
        "elementwise min with a bound",
        functions={
            "torch": _torch("minimum", "fmin"),
            "tensorflow": _tf("minimum", "math.minimum"),
            "keras": _keras("minimum"),
            "numpy": _np("minimum", "fmin"),
            "jax": _jnp("minimum"),
        },
        methods=("minimum",),
    ),
    OpSpec(
        "where",
        "guard",
        "select; masks the forward value but not the gradient",
        functions={
            "torch": _torch("where"),
            "tensorflow": _tf("where", "where_v2"),
            "keras": _keras("where"),
            "numpy": _np("where"),
            "jax": _jnp("where"),
        },
        patterns=(7,),
    ),
    OpSpec(
        "normalize",
        "producer",
        "normalisation with a built-in eps",
        functions={
            "torch": _torch("nn.functional.normalize"),
            "tensorflow": _tf("math.l2_normalize", "nn.l2_normalize", "linalg.normalize"),
            "keras": ("keras.utils.normalize",),
        },
        patterns=(2,),
    ),
)


def normalise_qualname(name: str) -> str:
    """Fold the aliases frameworks give one function into the catalogue's spelling."""
    for prefix in ("tensorflow.compat.v1.", "tensorflow.compat.v2."):
        if name.startswith(prefix):
            name = "tensorflow." + name[len(prefix) :]
    if name.startswith("tensorflow.python.keras."):
        name = "tensorflow.keras." + name[len("tensorflow.python.keras.") :]
    if name.startswith("tf_keras."):
        name = "tensorflow.keras." + name[len("tf_keras.") :]
    if name.startswith("torch.Tensor."):
        name = "torch." + name[len("torch.Tensor.") :]
    return name


class Catalogue:
    """Lookup tables over the entries, built once; duplicate names are a programming error."""

    def __init__(self, entries: tuple[OpSpec, ...]) -> None:
        self.entries = entries
        self.by_op: dict[str, OpSpec] = {spec.op: spec for spec in entries}
        self._by_qualname: dict[str, tuple[OpSpec, str]] = {}
        self._by_method: dict[str, OpSpec] = {}
        self._by_operator: dict[str, OpSpec] = {}
        for spec in entries:
            for framework, qual in spec.qualnames():
                if qual in self._by_qualname:
                    other = self._by_qualname[qual][0].op
                    raise ValueError(f"{qual} is listed under both {other} and {spec.op}")
                self._by_qualname[qual] = (spec, framework)
            for method in spec.methods:
                if method in self._by_method:
                    other = self._by_method[method].op
                    raise ValueError(f"method {method} under both {other} and {spec.op}")
                self._by_method[method] = spec
            for symbol in spec.operators:
                self._by_operator[symbol] = spec
        self.risky_leaf_names: frozenset[str] = frozenset(
            name for spec in entries if spec.kind != "producer" for name in spec.leaf_names()
        )

    def lookup(self, qualname: str) -> tuple[OpSpec, str] | None:
        """The entry for a fully qualified name, with its framework."""
        return self._by_qualname.get(normalise_qualname(qualname))

    def method(self, name: str) -> OpSpec | None:
        return self._by_method.get(name)

    def operator(self, symbol: str) -> OpSpec | None:
        return self._by_operator.get(symbol)

    def function_names(self) -> set[str]:
        """Distinct unqualified function names (what the issue counts)."""
        return {qual.rsplit(".", 1)[-1] for spec in self.entries for _, qual in spec.qualnames()}


CATALOGUE = Catalogue(_ENTRIES)

# What an op raises on plain Python numbers where a tensor would return inf/NaN: `n / 0` of
# two ints, `math.exp(1000)`, `math.log(0)`. The static pass says it in its text
# (explain.consequence) and the dynamic pass takes that exception, raised at the flagged line,
# for the op's failure (dynamic/raised.py). A ValueError counts only as math's "math domain
# error"; pow raises any of three (`math.pow(-8, 0.5)`, `0.0 ** -1`, `10.0 ** 400`), the first
# being what `math.pow` raises.
PYTHON_ERRORS: dict[str, tuple[str, ...]] = {
    "div": ("ZeroDivisionError",),
    "reciprocal": ("ZeroDivisionError",),
    "fmod": ("ValueError", "ZeroDivisionError"),
    "exp": ("OverflowError",),
    "expm1": ("OverflowError",),
    "cosh": ("OverflowError",),
    "sinh": ("OverflowError",),
    "pow": ("ValueError", "ZeroDivisionError", "OverflowError"),
}


def python_errors(op: str) -> tuple[str, ...]:
    """The exceptions `op` raises on Python numbers where it fails (PYTHON_ERRORS); math's
    domain error (a ValueError) for the rest: log, sqrt, acos and their kin."""
    return PYTHON_ERRORS.get(op, ("ValueError",))


KNOWN_OPS: frozenset[str] = frozenset(spec.op for spec in _ENTRIES)
