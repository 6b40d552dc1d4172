"""Calls: framework functions, tensor methods, loss objects, `where`, and in-place guards.

A mixin of FunctionAnalyzer (analyzer.py), which holds the state these methods share; what
it calls in the other mixins is declared in interface.py.
"""

from __future__ import annotations

import libcst as cst

from analyzers.catalogue import CATALOGUE, OpSpec
from analyzers.dtypes import round_to
from analyzers.static.conditions import compared_names, facts_from
from analyzers.static.expressions import product
from analyzers.static.interface import AnalyzerInterface
from analyzers.static.records import Probe
from analyzers.static.rules import RuleId
from analyzers.static.values import (
    COUNT,
    INF,
    SIZE,
    UNIT,
    UNKNOWN,
    Interval,
    Value,
    absolute,
    cast_target,
    constant,
    integral,
    join,
    tensor_kind,
)
from analyzers.static.vocabulary import (
    ARITHMETIC_METHODS,
    BOOL_METHODS,
    CASTS,
    CASTS_TO,
    CONST_LIKE,
    FRAMEWORK_ROOTS,
    MATMULS,
    SAME_RANGE_REDUCTIONS,
    SAME_VALUE_METHODS,
    SCALAR_HELPER,
    SCALAR_METHODS,
    SUM_REDUCTIONS,
    TENSOR_FACTORIES,
    UPCASTS,
)


class CallsMixin(AnalyzerInterface):
    def _call(self, node: cst.Call) -> Value:
        func = node.func
        qual = self.resolve(func)
        if qual is not None:
            return self._framework_call(node, qual)
        if isinstance(func, cst.Attribute):
            receiver = self.ev(func.value)
            if receiver.kind != "module":
                return self._method_call(node, func, receiver)
            self._eval_args(node)
            return Value("tensor")
        if isinstance(func, cst.Name):
            return self._plain_call(node, func.value)
        callee = self.ev(func)
        args = self._eval_args(node)
        if callee.callable_op:
            return self._call_op_object(node, callee.callable_op, args)
        return Value("unknown")

    def _eval_args(self, node: cst.Call) -> list[tuple[str | None, Value]]:
        return [(a.keyword.value if a.keyword else None, self.ev(a.value)) for a in node.args]

    @staticmethod
    def _arg(
        node: cst.Call, index: int, keywords: tuple[str, ...] = ()
    ) -> cst.BaseExpression | None:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        for a in node.args:
            if a.keyword is not None and a.keyword.value in keywords:
                return a.value
        return positional[index].value if index < len(positional) else None

    def _plain_call(self, node: cst.Call, name: str) -> Value:
        args = self._eval_args(node)
        if name in self.env and self.env[name].callable_op:
            return self._call_op_object(node, self.env[name].callable_op or "", args)
        if name == "float" and len(node.args) == 1:
            arg = node.args[0].value
            if isinstance(arg, cst.SimpleString):
                text = arg.evaluated_value
                if isinstance(text, str):
                    try:
                        return Value("scalar", constant(float(text)))
                    except ValueError:
                        return Value("scalar")
            return args[0][1].with_(kind="scalar") if args else Value("scalar")
        if name == "len":
            return Value("scalar", SIZE)
        if name in ("int", "round") and args:
            return Value("scalar", integral(args[0][1].interval))
        if name in ("int", "round", "bool", "str"):
            return Value("scalar")
        if name == "abs" and args:
            return args[0][1].with_(
                interval=absolute(args[0][1].interval), producer="abs", name=None
            )
        if name in ("max", "min") and len(args) >= 2:
            ivs = [v.interval for _, v in args]
            if name == "max":
                lo = max(iv.lo for iv in ivs)
                return Value(
                    tensor_kind(*(v for _, v in args)), Interval(lo, max(iv.hi for iv in ivs))
                )
            return Value(
                tensor_kind(*(v for _, v in args)),
                Interval(min(iv.lo for iv in ivs), min(iv.hi for iv in ivs)),
            )
        return Value("unknown")

    def _call_op_object(
        self, node: cst.Call, op: str, args: list[tuple[str | None, Value]]
    ) -> Value:
        spec = CATALOGUE.by_op[op]
        if op == "binary_cross_entropy":
            operand = self._arg(node, 0, ("input",))
            if operand is not None:
                value = self.ev_cached(operand, args, node)
                if value.producer == "sigmoid":
                    self._emit_pattern(
                        node, spec, RuleId.BCE_SIGMOID, operand, value, self.ctx.primary_framework
                    )
        return Value("tensor")

    def ev_cached(
        self, operand: cst.BaseExpression, args: list[tuple[str | None, Value]], node: cst.Call
    ) -> Value:
        for arg, (_, value) in zip(node.args, args, strict=False):
            if arg.value is operand:
                return value
        return UNKNOWN

    def _framework_call(self, node: cst.Call, qual: str) -> Value:
        leaf = qual.rsplit(".", 1)[-1]
        framework = self._framework(qual)
        found = CATALOGUE.lookup(qual)
        if found is not None and found[0].op == "where" and len(node.args) == 3:
            return self._where(node, framework)
        args = self._eval_args(node)
        values = [v for _, v in args]
        if found is None:
            return self._helper_call(node, qual, leaf, args, framework)
        spec, framework = found
        if leaf[:1].isupper():  # a loss class: calling the instance is the op
            if spec.op == "binary_cross_entropy" and not self._from_logits(node):
                return Value("callable", callable_op=spec.op)
            return Value("callable")
        value = self._apply_spec(node, spec, qual, framework, args, values, receiver=None)
        if spec.op == "arange":
            return value.with_(interval=self._arange_range(args))
        return value

    @staticmethod
    def _arange_range(args: list[tuple[str | None, Value]]) -> Interval:
        """arange(end) counts from 0 and arange(start, end[, step > 0]) from start; the end
        is not tracked (upper bound inf)."""
        positional = [v.interval for k, v in args if k is None]
        step = positional[2] if len(positional) > 2 else constant(1.0)
        if not positional or step.lo <= 0:
            return Interval()
        return Interval(positional[0].lo if len(positional) > 1 else 0.0, INF)

    def _from_logits(self, node: cst.Call) -> bool:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "from_logits":
                return self.code(arg.value) != "False"
        return False

    def _helper_call(
        self,
        node: cst.Call,
        qual: str,
        leaf: str,
        args: list[tuple[str | None, Value]],
        framework: str,
    ) -> Value:
        values = [v for _, v in args]
        root = qual.split(".", 1)[0]
        if leaf == "finfo":
            dtype_text = self.code(node.args[0].value) if node.args else self.dtype
            dtype = next(
                (d for d in ("float16", "bfloat16", "float64", "float32") if d in dtype_text), None
            )
            if dtype is None and ("half" in dtype_text):
                dtype = "float16"
            return Value("finfo", origin=dtype or self.dtype)
        if leaf == "stop_gradient" and values:  # jax.lax / tf: the value, cut off from autograd
            return values[0].with_(kind="tensor", name=None, no_grad=True)
        if leaf == "epsilon" and root in ("keras", "tensorflow"):
            return Value("scalar", constant(round_to(1e-7, self.dtype)))
        if leaf in CONST_LIKE:
            return Value("tensor", constant(CONST_LIKE[leaf]))
        if leaf in ("full_like", "full", "fill") and len(values) >= 2:  # tf.fill(dims, v)
            return Value("tensor", values[1].interval)
        if leaf in TENSOR_FACTORIES and values:
            return values[0].with_(kind="tensor", name=None)
        if leaf in SUM_REDUCTIONS and values:
            return self._sum(values[0])
        if leaf in MATMULS:
            return product([a.value for a in node.args if a.keyword is None])
        if leaf == "cast" and values:  # tf.cast(x, tf.float32): the same values, another dtype
            target = cast_target(self.code(node.args[1].value)) if len(node.args) > 1 else None
            return values[0].with_(
                kind="tensor",
                name=None,
                dtype=target,
                producer=None if values[0].producer == "matmul" else values[0].producer,
            )
        if leaf in UPCASTS and values and values[0].producer == "matmul":
            return values[0].with_(producer=None)
        positional = [v for k, v in args if k is None]
        if leaf in ("max", "min") and len(positional) == 2 and positional[1].kind == "tensor":
            first, second = positional[0].interval, positional[1].interval  # elementwise
            if leaf == "max":
                return Value(
                    "tensor",
                    first.meet_lo(second.lo, second.lo_open) if second.lo != -INF else first,
                )
            return Value("tensor", first.meet_hi(second.hi) if second.hi != INF else first)
        if leaf in SAME_RANGE_REDUCTIONS and values:
            keep = (
                values[0].producer if values[0].producer in ("exp", "softmax", "sigmoid") else None
            )
            max_of = values[0].name if leaf in ("max", "amax", "reduce_max") else None
            return values[0].with_(kind="tensor", name=None, producer=keep, max_of=max_of)
        if leaf in ("masked_fill",) and len(values) >= 3:
            return self._masked_fill(values[0], values[2])
        if leaf == "sign":
            return Value("tensor", Interval(-1.0, 1.0))
        if root == "math" or SCALAR_HELPER.search(leaf):
            return Value("scalar")
        if root in FRAMEWORK_ROOTS and not leaf.startswith("_"):
            return Value("tensor")
        return Value("unknown")

    def _sum(self, value: Value) -> Value:
        producer = {"exp": "sum_exp", "square": "sumsq"}.get(value.producer or "")
        if producer == "sum_exp" and value.interval.hi != INF:
            producer = None  # the max was subtracted first: this is logsumexp done right
        iv = value.interval
        if iv.nonnegative():  # a sum of terms >= lo >= 0 is >= lo (each element's floor kept)
            return Value(
                "tensor", Interval(iv.lo, INF, iv.lo_open), producer=producer, norm_of=value.norm_of
            )
        return Value("tensor", producer=producer)

    def _masked_fill(self, base: Value, fill: Value) -> Value:
        merged = join(base, fill).with_(kind="tensor", producer=None, name=None)
        if fill.interval.hi == -INF:
            merged = merged.with_(neg_inf_filled=True)
        return merged

    def _method_call(self, node: cst.Call, func: cst.Attribute, receiver: Value) -> Value:
        method = func.attr.value
        args = self._eval_args(node)
        values = [v for _, v in args]
        positional = [a for a in node.args if a.keyword is None]
        if receiver.callable_op and method in ("__call__", "forward"):
            return self._call_op_object(node, receiver.callable_op, args)
        if (
            isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and self.cls is not None
            and method in self.cls.attr_calls
        ):
            made = self._constructed(self.cls.attr_calls[method])
            if made.callable_op:
                return self._call_op_object(node, made.callable_op, args)
            return Value("tensor" if made.kind == "callable" else "unknown")
        if receiver.kind == "scalar" and method not in ("sqrt", "log", "exp"):
            # `n.float()` of a size keeps its range; anything else on a scalar is a scalar
            return (
                Value("scalar", receiver.interval)
                if method in SAME_VALUE_METHODS
                else Value("scalar")
            )
        spec = CATALOGUE.method(method)
        tensorish = receiver.kind in ("tensor", "unknown") and receiver.name not in ("self",)
        if (
            spec is not None
            and tensorish
            and self._tensor_signature(spec, method, positional, node)
        ):
            return self._apply_spec(
                node,
                spec,
                None,
                self._framework(None),
                args,
                values,
                receiver=(func.value, receiver),
            )
        if method in (
            "clamp_",
            "clamp_min_",
            "clamp_max_",
            "clip_",
            "masked_fill_",
            "relu_",
            "abs_",
        ):
            return self._in_place(node, func, method, receiver, args)
        if method == "masked_fill" and len(values) >= 2:
            return self._masked_fill(receiver, values[1])
        symbol = ARITHMETIC_METHODS.get(method)
        if symbol and tensorish and len(args) == 1 and args[0][0] is None:
            # `x.exp().add(1)` is `x.exp() + 1`: the same range, the same patterns (log1p)
            return self._binop(node, symbol, receiver, values[0], func.value, positional[0].value)
        if method in CASTS:
            receiver = receiver.with_(dtype=self._cast_dtype(method, node, receiver))
        if method in UPCASTS and receiver.producer == "matmul":
            return receiver.with_(kind="tensor", producer=None)
        if method in MATMULS and receiver.is_tensor:
            return product([func.value] + [a.value for a in node.args if a.keyword is None])
        if method in SAME_VALUE_METHODS:
            if receiver.kind == "tensor" or method in ("detach", "float", "contiguous"):
                return receiver.with_(
                    kind="tensor",
                    name=receiver.name,
                    no_grad=receiver.no_grad or method == "detach",
                )
            return receiver if receiver.kind == "tensor" else Value("unknown")
        if method in SCALAR_METHODS:
            return self._scalar_method(method, receiver, positional)
        if method in SUM_REDUCTIONS:
            return self._sum(receiver)
        if method in SAME_RANGE_REDUCTIONS:
            keep = receiver.producer if receiver.producer in ("exp", "softmax", "sigmoid") else None
            max_of = receiver.name if method in ("max", "amax") else None
            return receiver.with_(kind="tensor", name=None, producer=keep, max_of=max_of)
        if method in BOOL_METHODS:
            return Value("tensor" if receiver.kind != "scalar" else "scalar", UNIT)
        if method == "pow":
            return Value("tensor")
        if receiver.kind == "tensor":
            return Value("tensor")
        return Value("unknown")

    @staticmethod
    def _scalar_method(method: str, receiver: Value, positional: list[cst.Arg]) -> Value:
        """`x.item()` keeps the value's range; sizes and counts are sizes (values.SIZE)."""
        if method == "item":
            return receiver.with_(kind="scalar")
        if method in ("size", "get_shape") and not positional:
            return Value("scalar", SIZE, producer="shape")  # torch.Size: indexed later
        if method in ("size", "numel", "nelement"):
            return Value("scalar", SIZE)
        if method in ("dim", "ndimension"):
            return Value("scalar", COUNT)
        return Value("scalar")

    def _cast_dtype(self, method: str, node: cst.Call, receiver: Value) -> str | None:
        """The dtype after `x.float()`, `x.half()`, `x.to(torch.float32)`, `x.type(...)`;
        `x.to(y.dtype)` goes back to a runtime dtype (taken as the unit's); `x.to(device)`
        keeps it."""
        if method in CASTS_TO:
            return CASTS_TO[method]
        text = " ".join(self.code(a.value) for a in node.args)
        target = cast_target(text)
        if target is not None:
            return target
        return None if "dtype" in text or not text else receiver.dtype

    @staticmethod
    def _tensor_signature(
        spec: OpSpec, method: str, positional: list[cst.Arg], node: cst.Call
    ) -> bool:
        """Rule out `logger.log("msg", v)`: tensor methods take no (or one) positional."""
        if spec.kind == "guard" or spec.op in ("softmax", "norm", "std", "logit"):
            return True
        if spec.op in ("pow", "div", "fmod", "atan2"):
            return len(positional) == 1
        if spec.op == "digamma" and method in ("polygamma", "mvlgamma"):
            return len(positional) <= 1
        return not positional and all(
            a.keyword is None or a.keyword.value in ("out",) for a in node.args
        )

    def _in_place(
        self,
        node: cst.Call,
        func: cst.Attribute,
        method: str,
        receiver: Value,
        args: list[tuple[str | None, Value]],
    ) -> Value:
        base = method.rstrip("_")
        if base == "masked_fill" and len(args) >= 2:
            updated = self._masked_fill(receiver, args[1][1])
        elif base in ("relu", "abs"):
            updated = receiver.with_(
                interval=absolute(receiver.interval)
                if base == "abs"
                else receiver.interval.meet_lo(0.0)
            )
        else:
            updated = receiver.with_(interval=self._clamped(receiver.interval, base, node, args))
        if isinstance(func.value, cst.Name):
            self.env[func.value.value] = updated.with_(name=func.value.value)
        return updated

    def _clamped(
        self, iv: Interval, base: str, node: cst.Call, args: list[tuple[str | None, Value]]
    ) -> Interval:
        """Bounds from clamp/clip arguments: `clamp(min=a, max=b)`, `clamp_min(a)`, ..."""
        positional = [v for k, v in args if k is None]
        keywords = {k: v for k, v in args if k is not None}
        lo_val = keywords.get("min", keywords.get("clip_value_min", keywords.get("a_min")))
        hi_val = keywords.get("max", keywords.get("clip_value_max", keywords.get("a_max")))
        if base == "clamp_min":
            lo_val = lo_val or (positional[0] if positional else None)
        elif base == "clamp_max":
            hi_val = hi_val or (positional[0] if positional else None)
        else:
            if lo_val is None and len(positional) >= 1:
                lo_val = positional[0]
            if hi_val is None and len(positional) >= 2:
                hi_val = positional[1]
        if lo_val is not None and lo_val.interval.lo != -INF:
            iv = iv.meet_lo(lo_val.interval.lo, lo_val.interval.lo_open)
        if hi_val is not None and hi_val.interval.hi != INF:
            iv = iv.meet_hi(hi_val.interval.hi)
        return iv

    def _where(self, node: cst.Call, framework: str) -> Value:
        cond, when_true, when_false = (a.value for a in node.args[:3])
        self.ev(cond)
        grad_leak = framework in ("torch", "tensorflow", "jax")
        if grad_leak:
            for name in compared_names(cond):
                known = self.env.get(name, Value("unknown", name=name))
                if known.kind == "unknown":
                    self.env[name] = known.with_(kind="tensor")
        before = dict(self.env)
        leaked: list[tuple[cst.CSTNode, str, str, str]] = []
        grad_free_ops: set[int] = set()
        if grad_leak:  # each branch without the condition: what its op would do there
            for branch, hidden in ((when_true, "false"), (when_false, "true")):
                probe = Probe()
                saved_probe, self.probe = self.probe, probe
                self.ev(branch)
                self.probe = saved_probe
                self.env = dict(before)
                leaked += [(n, op, src, hidden) for n, op, src in probe.nodes]
                grad_free_ops |= probe.grad_free
        self._apply(facts_from(cond, True, self.const))
        guarded = Probe()
        saved_probe, self.probe = self.probe, guarded
        true_value = self.ev(when_true)
        self.probe = saved_probe
        flagged_anyway = {id(n) for n, _, _ in guarded.nodes}
        self.env = dict(before)
        self._apply(facts_from(cond, False, self.const))
        guarded = Probe()  # the false branch under the negated condition
        saved_probe, self.probe = self.probe, guarded
        false_value = self.ev(when_false)
        self.probe = saved_probe
        flagged_anyway |= {id(n) for n, _, _ in guarded.nodes}
        self.env = before
        if self.probe is None:
            true_value = self._replay(when_true, before, cond)
            false_value = self._replay(when_false, before, cond, False)
        for leak_node, op, operand_src, hidden in leaked:
            if id(leak_node) in flagged_anyway or id(leak_node) in grad_free_ops:
                continue
            spec = CATALOGUE.by_op[op]
            self._record(
                leak_node,
                spec,
                RuleId.WHERE_GRAD_LEAK,
                framework,
                operand_src,
                f"`{self.code(node.func)}` hides the forward value of "
                f"`{self.code(leak_node)}` where the condition is {hidden}, but the "
                "gradient still flows through it there and is NaN/inf, and "
                "0 * NaN = NaN.",
                None,
            )
        joined = join(true_value, false_value).with_(kind="tensor", name=None)
        if -INF in (true_value.interval.hi, false_value.interval.hi):
            joined = joined.with_(neg_inf_filled=True)  # where(mask, x, -inf): masked_fill
        return joined if joined.producer else joined.with_(producer="where")

    def _replay(
        self,
        branch: cst.BaseExpression,
        before: dict[str, Value],
        cond: cst.BaseExpression,
        holds: bool = True,
    ) -> Value:
        """Evaluate the guarded branch for real, so nodes inside it are reported normally."""
        self._apply(facts_from(cond, holds, self.const))
        value = self.ev(branch)
        self.env = dict(before)
        return value
