"""The checks: an op's operand against its domain, the unstable-API patterns, and the
recording of findings (once per node and rule; silently while probing a `where` branch).

A mixin of FunctionAnalyzer (analyzer.py), which holds the state these methods share; what
it calls in the other mixins is declared in interface.py.
"""

from __future__ import annotations

import math
import re

import libcst as cst

from analyzers.catalogue import CATALOGUE, OpSpec
from analyzers.dtypes import limits, round_to, smallest_positive
from analyzers.static import explain, zeros
from analyzers.static.interface import AnalyzerInterface
from analyzers.static.records import Probe, RawFinding
from analyzers.static.rules import RuleId
from analyzers.static.values import (
    INF,
    NONNEG,
    POSITIVE,
    UNIT,
    UNKNOWN,
    Interval,
    Value,
    absolute,
    div,
    grad_free,
    promoted,
    square,
)
from analyzers.static.vocabulary import (
    EXP_OF_LOG,
    LOG_PATTERNS,
    TF_EUCLIDEAN_NORMS,
)

FLOAT16_MENTION = re.compile(r"(?<![bB])float16|\.half\(|torch\.half\b")
ZERO_PRODUCERS = frozenset({"relu", "abs", "square", "sumsq"})
# group lasso and friends: their optimum has whole groups at exactly zero (Yuan & Lin, 2006)
SPARSITY_PENALTY = re.compile(r"sparsit|lasso|group_?norm_?penalt|l21|l2_1", re.IGNORECASE)


class ChecksMixin(AnalyzerInterface):
    def _apply_spec(
        self,
        node: cst.Call,
        spec: OpSpec,
        qual: str | None,
        framework: str,
        args: list[tuple[str | None, Value]],
        values: list[Value],
        receiver: tuple[cst.BaseExpression, Value] | None,
    ) -> Value:
        """The op's checks and its result, computed in its tensor operands' promoted dtype
        (`torch.sqrt(v.float() + eps)` is a float32 sqrt in a float16 model)."""
        inputs = [*values, *([receiver[1]] if receiver else [])]
        explicit = promoted(self.dtype, *inputs)
        result = self._apply_spec_value(node, spec, qual, framework, args, values, receiver)
        if inputs and grad_free(*inputs):
            self.grad_free_op(node)
            result = result.with_(no_grad=True)
        if explicit is not None and result.kind == "tensor" and result.dtype is None:
            return result.with_(dtype=explicit)
        return result

    def grad_free_op(self, node: cst.CSTNode) -> None:
        """While a `where` branch is probed: this op's inputs carry no gradient, so the NaN
        gradient `where-grad-leak` warns about cannot reach anything through it."""
        if self.probe is not None:
            self.probe.grad_free.add(id(node))

    def _apply_spec_value(
        self,
        node: cst.Call,
        spec: OpSpec,
        qual: str | None,
        framework: str,
        args: list[tuple[str | None, Value]],
        values: list[Value],
        receiver: tuple[cst.BaseExpression, Value] | None,
    ) -> Value:
        if spec.kind == "guard":
            return self._guard_value(node, spec, qual, args, values, receiver)
        operand_node, operand = self._operand(node, spec, qual, args, receiver)
        if spec.kind == "producer":
            if spec.op == "norm" and qual in TF_EUCLIDEAN_NORMS and operand_node is not None:
                self._check_tf_norm(node, qual, operand_node, operand)
            return self._produce(spec, operand, values, receiver)
        if framework == "math" and not (operand.is_tensor or not operand.interval.unknown):
            if spec.op == "sqrt":  # math.sqrt raises below 0: what it returns is >= 0
                computed = zeros.computed_here(operand_node, self.call_results)
                return Value("scalar", NONNEG, zero_reason=zeros.ROOT if computed else None)
            return Value("scalar")
        if spec.op == "softmax":
            if operand.neg_inf_filled and operand_node is not None:
                self._emit_pattern(
                    node, spec, RuleId.MASKED_SOFTMAX_INF, operand_node, operand, framework
                )
            elif operand.producer == "matmul" and operand_node is not None and self._float16_unit():
                self._emit_pattern(
                    node, spec, RuleId.FP16_SCORES_OVERFLOW, operand_node, operand, framework
                )
            return Value("tensor", UNIT, producer="softmax")
        if spec.op == "binary_cross_entropy":
            if (
                operand_node is not None
                and operand.producer == "sigmoid"
                and not self._from_logits(node)
            ):
                self._emit_pattern(node, spec, RuleId.BCE_SIGMOID, operand_node, operand, framework)
            return Value("tensor")
        if operand_node is None:
            return Value("tensor")
        if spec.op == "log" and not operand.absorbed_eps and operand.producer in LOG_PATTERNS:
            rule = LOG_PATTERNS[operand.producer or ""]
            self._emit_pattern(
                node,
                spec,
                rule,
                operand_node,
                operand,
                framework,
                absorb=("exp",) if rule == RuleId.LOG_SUM_EXP else (),
            )
            return Value("tensor")
        if spec.op == "pow":
            exponent_node = self._arg(node, 0 if receiver else 1, ("exponent", "y"))
            exponent = self.const(exponent_node) if exponent_node is not None else None
            self._check_pow(node, operand, operand_node, exponent, framework)
            if exponent == 2:
                return Value(
                    "tensor", square(operand.interval), producer="square", norm_of=operand.name
                )
            return Value("tensor")
        if spec.op == "atan2":
            other_node = self._arg(node, 1 if not receiver else 0, ("other", "x"))
            other = self.ev_cached(other_node, args, node) if other_node is not None else UNKNOWN
            guarded = "where" in (operand.producer, other.producer)
            if not guarded and not operand.interval.nonzero() and not other.interval.nonzero():
                self._record(
                    node,
                    spec,
                    RuleId.UNGUARDED_DOMAIN,
                    framework,
                    self.code(operand_node),
                    "both arguments of atan2 can be 0 at once, where its gradient is "
                    "NaN (pytorch#98276).",
                    None,
                )
            return Value("tensor", Interval(-math.pi, math.pi))
        if spec.op == "div":
            numerator = (
                values[0] if receiver is None and values else (receiver[1] if receiver else UNKNOWN)
            )
            self._check_division(node, operand, operand_node, numerator, framework)
            return Value("tensor", div(numerator.interval, operand.interval, self.dtype))
        if spec.op == "logit" and framework == "torch":
            operand = self._logit_eps(node, operand, receiver is not None)
        self._check_domain(node, spec, operand_node, operand, framework)
        result = self._result_of(spec, operand, framework)
        return result.with_(kind="scalar") if framework == "math" else result

    def _float16_unit(self) -> bool:
        """Does this unit compute in float16? The configured dtype, else the unit's own dtype
        mentions (bfloat16 alone has float32's range: no overflow), else the file's hints."""
        if self.dtype in ("float16", "bfloat16"):
            return self.dtype == "float16"
        text = self.module.code
        if FLOAT16_MENTION.search(text):
            return True
        return "bfloat16" not in text and self.ctx.half_precision

    def _check_tf_norm(
        self, node: cst.Call, qual: str, operand_node: cst.BaseExpression, operand: Value
    ) -> None:
        """TensorFlow's Euclidean norm is sqrt(reduce_sum(x * x)) with no special case at 0
        (PyTorch's norm defines the gradient there as 0): an all-zero vector, a dead ReLU
        group or a prediction equal to its target, makes the gradient 0/0 = NaN."""
        ord_node = self._arg(node, 1, ("ord",)) if not qual.endswith("euclidean_norm") else None
        if ord_node is not None and self.code(ord_node) not in (
            "'euclidean'",
            '"euclidean"',
            "2",
            "2.0",
            "'fro'",
            '"fro"',
        ):
            return
        iv = operand.interval
        shown = explain.short(self.code(operand_node))
        if iv.lo == 0 and not iv.lo_open and iv.hi < INF:
            reason = f"`{shown}` lies in {iv.describe()}, so it can be an all-zero vector"
        elif iv.lo == 0 and not iv.lo_open and operand.producer in ZERO_PRODUCERS:
            reason = f"`{shown}` {explain.producer_phrase(operand.producer or '', self.dtype)}"
        elif iv.unknown and SPARSITY_PENALTY.search(self.function or ""):
            reason = (
                f"`{self.function}` is a sparsity penalty, which drives whole groups of "
                f"`{shown}` to exactly zero"
            )
        else:  # an arbitrary vector (an embedding, a residual) is all-zero by accident only
            return
        self._record(
            node,
            CATALOGUE.by_op["sqrt"],
            RuleId.UNGUARDED_DOMAIN,
            "tensorflow",
            self.code(operand_node),
            f"{reason}; `{self.code(node.func)}` is sqrt(reduce_sum(x * x)) without "
            f"PyTorch's special case at 0, so its gradient there is 0/0 = NaN "
            f"(tensorflow#12071).",
            iv,
            "take the root of the sum of squares plus an epsilon: "
            "`tf.sqrt(tf.reduce_sum(tf.square(x), axis) + 1e-12)`",
        )

    def _logit_eps(self, node: cst.Call, operand: Value, method: bool) -> Value:
        """`torch.logit(x, eps=e)` clamps x to [e, 1 - e] first (both ends as the dtype
        holds them: 1 - 1e-5 is 1.0 in float16, which guards nothing)."""
        eps_node = self._arg(node, 0 if method else 1, ("eps",))
        eps = self.const(eps_node) if eps_node is not None else None
        if eps is None or not 0 < eps < 0.5:
            return operand
        lo, hi = round_to(eps, self.dtype), round_to(1.0 - eps, self.dtype)
        if not 0 < lo <= hi < 1:
            return operand
        return operand.with_(interval=Interval(lo, hi), producer="clamp")

    def _operand(
        self,
        node: cst.Call,
        spec: OpSpec,
        qual: str | None,
        args: list[tuple[str | None, Value]],
        receiver: tuple[cst.BaseExpression, Value] | None,
    ) -> tuple[cst.BaseExpression | None, Value]:
        if receiver is not None:
            if spec.op in ("div", "fmod"):
                arg = self._arg(node, 0, spec.operand_keywords)
                return arg, self.ev_cached(arg, args, node) if arg is not None else UNKNOWN
            return receiver
        index = spec.operand_index(qual or "")
        arg = self._arg(node, index, spec.operand_keywords)
        if arg is None:
            return None, UNKNOWN
        return arg, self.ev_cached(arg, args, node)

    def _produce(
        self,
        spec: OpSpec,
        operand: Value,
        values: list[Value],
        receiver: tuple[cst.BaseExpression, Value] | None,
    ) -> Value:
        op = spec.op
        if op == "abs":
            return Value("tensor", absolute(operand.interval), producer="abs")
        if op == "square":
            return Value(
                "tensor", square(operand.interval), producer="square", norm_of=operand.name
            )
        if op == "relu":
            return Value(
                "tensor",
                operand.interval.meet_lo(0.0) if not operand.interval.unknown else NONNEG,
                producer="relu",
            )
        if op == "norm":
            return Value("tensor", NONNEG, producer="norm", norm_of=operand.name)
        if op == "std":
            return Value("tensor", NONNEG, producer="std")
        if op == "softplus":
            return Value("tensor", POSITIVE, producer="softplus")
        if spec.output is not None:
            lo, hi = spec.output
            return Value("tensor", Interval(lo, hi, spec.output_open_low), producer=op)
        return Value("tensor")

    def _result_of(self, spec: OpSpec, operand: Value, framework: str) -> Value:
        """The op's output range, pushed through where the op is monotonic; exp's low end is
        0 where it falls below the smallest value the framework keeps (TensorFlow flushes
        subnormals: dtypes.smallest_positive)."""
        iv = operand.interval
        if spec.op == "exp":
            if operand.producer in EXP_OF_LOG:  # exp(log_softmax(x)) is softmax(x): it
                # underflows to 0 like it, and log of it is the log-softmax pattern again
                return Value("tensor", UNIT, producer=EXP_OF_LOG[operand.producer or ""])
            lo = round_to(math.exp(max(iv.lo, -745.0)), self.dtype) if iv.lo != -INF else 0.0
            hi = round_to(math.exp(min(iv.hi, 709.0)), self.dtype) if iv.hi != INF else INF
            if 0.0 < lo < smallest_positive(self.dtype, framework):
                # a bounded exponent whose exp is subnormal: flushed to exactly 0 here
                return Value("tensor", Interval(0.0, hi), producer="exp_flushed")
            return Value("tensor", Interval(lo, hi, lo == 0.0), producer="exp")
        if spec.op == "sqrt" and iv.nonnegative():
            producer = "norm" if operand.producer == "sumsq" else None
            hi = math.sqrt(iv.hi) if iv.hi != INF else INF
            return Value(
                "tensor",
                Interval(math.sqrt(iv.lo), hi, iv.positive()),
                producer=producer,
                norm_of=operand.norm_of if producer else None,
            )
        if spec.op in ("sqrt", "rsqrt"):  # NaN where the input is negative, else >= 0
            return Value("tensor", NONNEG)
        if spec.op == "log" and iv.lo > 0:
            hi = math.log(iv.hi) if iv.hi != INF else INF
            return Value("tensor", Interval(math.log(iv.lo), hi))
        if spec.output is not None:
            lo, hi = spec.output
            return Value("tensor", Interval(lo, hi, spec.output_open_low))
        return Value("tensor")

    def _guard_value(
        self,
        node: cst.Call,
        spec: OpSpec,
        qual: str | None,
        args: list[tuple[str | None, Value]],
        values: list[Value],
        receiver: tuple[cst.BaseExpression, Value] | None,
    ) -> Value:
        base = receiver[1] if receiver is not None else (values[0] if values else UNKNOWN)
        rest = args if receiver is not None else args[1:]
        leaf = (qual or "").rsplit(".", 1)[-1] if qual else self.code(node.func).rsplit(".")[-1]
        if spec.op == "clamp":
            name = leaf if leaf in ("clamp_min", "clamp_max") else "clamp"
            iv = self._clamped(base.interval, name, node, rest)
            return base.with_(
                kind="tensor", interval=iv, producer=None, name=None, neg_inf_filled=False
            )
        if spec.op in ("maximum", "minimum") and rest:
            other = rest[0][1].interval
            iv = base.interval
            if spec.op == "maximum" and other.lo != -INF:
                iv = iv.meet_lo(other.lo, other.lo_open)
            elif spec.op == "minimum" and other.hi != INF:
                iv = iv.meet_hi(other.hi)
            return Value("tensor", iv)
        return Value("tensor")

    def _requirement_holds(self, requirement: str, iv: Interval, spec: OpSpec, dtype: str) -> bool:
        if requirement == "positive":
            if spec.op == "digamma":  # digamma(x) ~ -1/x: "positive by convention" (softplus,
                # exp) is not enough, a positive x below 1/max already overflows to -inf
                return iv.lo >= 1.0 / limits(dtype).max
            return iv.positive()
        if requirement == "nonzero":
            return iv.nonzero()
        if requirement == "gt_minus_one":
            return iv.lo > -1
        if requirement == "open_unit":
            return iv.lo > -1 and iv.hi < 1
        if requirement == "open_probability":
            return iv.lo > 0 and iv.hi < 1
        if requirement == "ge_one":
            return iv.lo >= 1
        if requirement == "below_exp_max":
            return iv.hi <= spec.thresholds.get(dtype, limits(dtype).exp_max)
        return True

    def _check_domain(
        self,
        node: cst.CSTNode,
        spec: OpSpec,
        operand_node: cst.BaseExpression,
        operand: Value,
        framework: str,
        requirement: str | None = None,
        rule: str = RuleId.UNGUARDED_DOMAIN,
    ) -> None:
        requirement = requirement or spec.requires
        if requirement == "none":
            return
        iv = operand.interval
        dtype = operand.dtype or self.dtype  # an upcast operand is checked in its own dtype
        if self._requirement_holds(requirement, iv, spec, dtype):
            if (
                self.ctx.half_precision
                and operand.fp16_zero_eps is not None
                and operand.fp16_interval is not None
                and not self._requirement_holds(requirement, operand.fp16_interval, spec, "float16")
            ):
                eps = operand.fp16_zero_eps
                self._record(
                    node,
                    spec,
                    RuleId.EPS_UNDERFLOW_FP16,
                    framework,
                    self.code(operand_node),
                    f"the epsilon {eps:g} in `{self.code(operand_node)}` is 0.0 in "
                    f"float16 (the smallest float16 is 6e-08), so under half "
                    f"precision the guard does nothing and "
                    f"{explain.consequence(spec, operand.fp16_interval, 'float16', requirement)}.",  # noqa: E501
                    operand.fp16_interval,
                    explain.pattern_hint(RuleId.EPS_UNDERFLOW_FP16, framework),
                )
            return
        operand_src = self.code(operand_node)
        consequence = explain.consequence(spec, iv, dtype, requirement, framework)
        if operand.absorbed_eps:
            self._record(
                node,
                spec,
                RuleId.EPS_ABSORBED,
                framework,
                operand_src,
                f"the epsilon in `{operand_src}` is absorbed ({operand.absorbed_eps}), "
                f"so it guards nothing and {consequence}.",
                iv,
                explain.pattern_hint(RuleId.EPS_ABSORBED, framework),
            )
            return
        if operand.fp16_zero_eps is not None and dtype == "float16":
            self._record(
                node,
                spec,
                RuleId.EPS_UNDERFLOW_FP16,
                framework,
                operand_src,
                f"the epsilon {operand.fp16_zero_eps:g} is 0.0 in float16, so {consequence}.",
                iv,
                explain.pattern_hint(RuleId.EPS_UNDERFLOW_FP16, framework),
            )
            return
        self._record(
            node,
            spec,
            rule,
            framework,
            operand_src,
            explain.why(operand_src, operand, consequence, dtype),
            iv,
            explain.domain_hint(spec, operand_src, framework, requirement, iv, dtype),
        )

    def _check_division(
        self,
        node: cst.CSTNode,
        divisor: Value,
        divisor_node: cst.BaseExpression,
        numerator: Value,
        framework: str | None = None,
        rule: str = RuleId.UNGUARDED_DOMAIN,
    ) -> None:
        """`x / x.norm()` is the normalisation pattern; a scalar over a norm is a plain
        division (clip coefficients, ratios)."""
        spec = CATALOGUE.by_op["div"]
        framework = framework or self._framework(None)
        same_vector = numerator.kind != "scalar" and (
            divisor.norm_of is None or numerator.name is None or numerator.name == divisor.norm_of
        )
        if divisor.producer == "norm" and same_vector and not divisor.interval.nonzero():
            self._emit_pattern(
                node,
                spec,
                RuleId.MANUAL_NORMALIZE,
                divisor_node,
                divisor,
                framework,
                absorb=("sqrt",),
            )
            return
        self._check_domain(node, spec, divisor_node, divisor, framework, rule=rule)

    def _check_pow(
        self,
        node: cst.CSTNode,
        base: Value,
        base_node: cst.BaseExpression,
        exponent: float | None,
        framework: str | None = None,
        rule: str = RuleId.UNGUARDED_DOMAIN,
    ) -> None:
        """A negative power divides by the base, so a base of unknown range is a candidate
        on the same terms as a divisor (`rule=RuleId.UNKNOWN_OPERAND`, zeros.py)."""
        spec = CATALOGUE.by_op["pow"]
        framework = framework or self._framework(None)
        if exponent is not None and exponent >= 0 and exponent == int(exponent):
            return
        requirement = (
            "nonzero" if exponent is not None and exponent == int(exponent) else "positive"
        )
        self._check_domain(node, spec, base_node, base, framework, requirement, rule=rule)

    def _discarded_guard(self, expr: cst.BaseExpression) -> None:
        """`torch.clamp(x, min=eps)` as a statement: the guard's result is thrown away."""
        if not isinstance(expr, cst.Call):
            return
        if any(a.keyword is not None and a.keyword.value == "out" for a in expr.args):
            return  # `torch.maximum(a, b, out=a)` writes its result
        qual = self.resolve(expr.func)
        spec: OpSpec | None = None
        target: cst.BaseExpression | None = None
        if qual is not None:
            found = CATALOGUE.lookup(qual)
            if found is not None:
                spec = found[0]
            target = self._arg(expr, 0, ("input", "x", "t", "a"))
        elif isinstance(expr.func, cst.Attribute):
            spec = CATALOGUE.method(expr.func.attr.value)
            target = expr.func.value
            receiver = self.ev_quiet(target)
            if receiver.kind in ("module", "scalar"):
                return
        if spec is None or spec.kind != "guard" or spec.op == "where" or target is None:
            return
        framework = self._framework(qual)
        self._record(
            expr,
            spec,
            RuleId.DISCARDED_GUARD,
            framework,
            self.code(target),
            f"the result of `{self.code(expr)}` is discarded, so `{self.code(target)}` "
            f"is not guarded afterwards (clamp and clip return a new tensor).",
            None,
            explain.pattern_hint(RuleId.DISCARDED_GUARD, framework),
        )

    def ev_quiet(self, node: cst.BaseExpression) -> Value:
        saved_probe, saved_findings = self.probe, self.findings
        self.probe, self.findings = Probe(), []
        try:
            return self.ev(node)
        finally:
            self.probe, self.findings = saved_probe, saved_findings

    def _emit_pattern(
        self,
        node: cst.CSTNode,
        spec: OpSpec,
        rule: str,
        operand_node: cst.BaseExpression,
        operand: Value,
        framework: str,
        absorb: tuple[str, ...] = (),
    ) -> None:
        operand_src = self.code(operand_node)
        sentences: dict[str, str] = {
            RuleId.LOG_SOFTMAX: "log of a softmax is -inf as soon as one probability underflows "
            f"to 0.0 (logits ~{limits(self.dtype).softmax_zero_gap:g} apart in "
            f"{self.dtype})",
            RuleId.LOG_SIGMOID: f"log of a sigmoid is -inf once the sigmoid saturates to 0.0 or "
            f"1.0 in {self.dtype}",
            RuleId.BCE_SIGMOID: "binary cross-entropy on a sigmoid output takes log(0) once the "
            "sigmoid saturates; the loss is clamped and the gradient is lost",
            RuleId.LOG_SUM_EXP: f"exp overflows to inf above {limits(self.dtype).exp_max:.2f} in "
            f"{self.dtype}, so log(sum(exp(x))) is inf where logsumexp is finite",
            RuleId.LOG1P: "log(1 + x) loses all precision for |x| below machine epsilon "
            f"({limits(self.dtype).eps:.2g} in {self.dtype}) and is NaN for x < -1",
            RuleId.EXPM1: "exp(x) - 1 cancels catastrophically for small x and overflows like exp",
            RuleId.MASKED_SOFTMAX_INF: "the scores are filled with -inf before softmax, so a row "
            "that is entirely masked gives 0/0 = NaN",
            RuleId.MANUAL_NORMALIZE: "dividing by a norm is inf/NaN for an all-zero vector, "
            "and so is the gradient",
            RuleId.FP16_SCORES_OVERFLOW: "the scores are a float16 product: a dot product above "
            f"{limits('float16').max:g} is inf before any scale "
            "applied after it, and softmax of a row with inf is NaN",
        }
        subject = f"`{explain.short(operand_src)}`"
        if (
            operand.name
            and operand.name != operand_src
            and rule
            in (
                RuleId.LOG_SOFTMAX,
                RuleId.LOG_SIGMOID,
                RuleId.BCE_SIGMOID,
                RuleId.MASKED_SOFTMAX_INF,
            )
        ):
            subject += f" (from `{operand.name}`)"
        why = f"{subject}: {sentences.get(rule, rule)}."
        if absorb:
            self._absorb(operand_node if rule != RuleId.EXPM1 else node, absorb)
        self._record(
            node,
            spec,
            rule,
            framework,
            operand_src,
            why,
            operand.interval if not operand.interval.unknown else None,
            explain.pattern_hint(rule, framework),
        )

    def _absorb(self, subtree: cst.CSTNode, ops: tuple[str, ...]) -> None:
        inside: set[int] = set()
        stack = [subtree]
        while stack:
            current = stack.pop()
            inside.add(id(current))
            stack.extend(current.children)
        self.findings = [f for f in self.findings if not (id(f.node) in inside and f.op in ops)]

    def _record(
        self,
        node: cst.CSTNode,
        spec: OpSpec,
        rule: str,
        framework: str,
        operand_src: str,
        why: str,
        interval: Interval | None,
        suggestion: str = "",
    ) -> None:
        if self.ctx.enabled is not None and spec.op not in self.ctx.enabled:
            return
        if self.probe is not None:
            self.probe.nodes.append((node, spec.op, operand_src))
            return
        key = (id(node), spec.op, rule)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(
            RawFinding(
                node=node,
                stmt=self.stmt,
                op=spec.op,
                rule=rule,
                framework=framework,
                call=self.code(node),
                operand=operand_src,
                why=why,
                interval=interval,
                suggestion=suggestion,
                function=self.function,
            )
        )
