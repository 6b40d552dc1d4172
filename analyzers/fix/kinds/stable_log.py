"""Stable APIs for logarithms: `log_softmax` (also of a picked or divided softmax), `log(exp)`,
hand-written and sigmoid BCE as `binary_cross_entropy_with_logits`, `logsigmoid`,
`logsumexp`, a log-mean-exp, `log1p`, `xlogy`, and a logit with an epsilon.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from analyzers.fix import bounds
from analyzers.fix.kinds.common import assignment, strip_parens, unwrap_call
from analyzers.fix.kinds.registry import only, transform
from analyzers.fix.site import (
    ATOMS,
    CallView,
    Edit,
    Site,
    arg_list,
    atomic,
    atomic_text,
    expr,
    flat,
    is_one,
    is_simple,
    positional,
    replace_call,
    sibling,
    view,
    with_keyword,
)


def _log_call(site: Site) -> tuple[CallView, cst.BaseExpression] | None:
    """The flagged node as a log call, with the log's argument."""
    v = view(site, site.node)
    if v is None or v.spec is None or v.spec.op != "log":
        return None
    inner = v.operand()
    return (v, inner) if inner is not None else None


def _log_factor(
    site: Site, product: cst.BaseExpression
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`a * log(b)` (either order) as (a, b)."""
    if not (
        isinstance(product, cst.BinaryOperation) and isinstance(product.operator, cst.Multiply)
    ):
        return None
    for factor, other in ((product.right, product.left), (product.left, product.right)):
        v = view(site, factor)
        if v is not None and v.spec is not None and v.spec.op == "log":
            arg = v.operand()
            if arg is not None:
                return other, arg
    return None


SELECTIONS = frozenset(
    {"gather", "take_along_dim", "index_select", "take_along_axis", "gather_nd", "squeeze"}
)


def _picked_from(
    site: Site, node: cst.BaseExpression
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`p.gather(1, t)`, `torch.gather(p, 1, t)`, `p[idx]` (or a name assigned one earlier):
    (the selection, the tensor it picks from)."""
    if isinstance(node, cst.Name):
        assigned = assignment(site, node.value)
        if assigned is None:
            return None
        node = assigned
    if isinstance(node, cst.Subscript):
        return node, node.value
    if not isinstance(node, cst.Call):
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in SELECTIONS:
        v = view(site, node)
        if v is not None and v.qual is not None and node.args:  # torch.gather(p, dim, t)
            return node, node.args[0].value
        return node, node.func.value
    return None


def _log_softmax_of(site: Site, soft: CallView) -> cst.BaseExpression:
    """The log_softmax call with the softmax's own arguments (its dim or axis kept)."""
    if soft.receiver is not None:
        func = soft.node.func
        assert isinstance(func, cst.Attribute)
        return soft.node.with_changes(
            func=func.with_changes(attr=cst.Name("log_softmax")), lpar=[], rpar=[]
        )
    canonical = "tensorflow.nn.log_softmax" if site.is_tf else "torch.nn.functional.log_softmax"
    return soft.node.with_changes(
        func=expr(sibling(site, soft, "log_softmax", canonical)), lpar=[], rpar=[]
    )


SUM_KEYWORDS = frozenset(
    {"dim", "keepdim", "axis", "keepdims", "keep_dims", "name", "reduction_indices"}
)


def _log_mean_exp(site: Site) -> tuple[cst.Call, CallView, cst.BaseExpression] | None:
    """(the log call, the mean, x) for `log(exp(x).mean(dim))` or `log(mean(exp(x), dim))`,
    from the finding on the log or on the exp inside it (PyTorch)."""
    node: cst.CSTNode = site.node
    v = view(site, site.node)
    if v is not None and v.spec is not None and v.spec.op == "exp":  # climb: exp -> mean
        parent = site.parent(node)
        if isinstance(parent, cst.Arg | cst.Attribute):
            parent = site.parent(parent)
        if not isinstance(parent, cst.Call):
            return None
        node = parent
        parent = site.parent(node)  # mean -> log
        if isinstance(parent, cst.Arg | cst.Attribute):
            parent = site.parent(parent)
        if not isinstance(parent, cst.Call):
            return None
        node = parent
    log = view(site, node) if isinstance(node, cst.BaseExpression) else None
    if log is None or log.spec is None or log.spec.op != "log" or log.qual == "math.log":
        return None
    inner = log.operand()
    mean = view(site, inner) if inner is not None else None
    if mean is None or mean.name != "mean" or (mean.qual or "torch.").split(".")[0] != "torch":
        return None
    exps = mean.operand()
    e = unwrap_call(site, exps, "exp") if exps is not None else None
    x = e.operand() if e is not None else None
    if x is None or not isinstance(log.node, cst.Call):
        return None
    return log.node, mean, x


def _local_names(site: Site, node: cst.BaseExpression) -> list[str]:
    """The plain local names an expression reads (not `self`, modules or attribute names)."""
    modules = set(site.imports.names)
    found: list[str] = []

    class Locals(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            if n.value not in modules and n.value != "self" and n.value not in found:
                found.append(n.value)

    node.visit(Locals())
    return found


def _with_parens(new: cst.BaseExpression, old: cst.BaseExpression) -> cst.BaseExpression:
    return new.with_changes(lpar=old.lpar, rpar=old.rpar)


@transform("stable-api", "log-softmax", only("log"), "log(softmax(z)) -> log_softmax(z)")
def t_log_softmax(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, inner = found
    soft = unwrap_call(site, inner, "softmax")
    if soft is None:
        return
    if soft.receiver is not None:  # x.softmax(dim) -> x.log_softmax(dim)
        new: cst.BaseExpression = _log_softmax_of(site, soft).with_changes(
            lpar=site.node.lpar, rpar=site.node.rpar
        )
    else:
        canonical = "tensorflow.nn.log_softmax" if site.is_tf else "torch.nn.functional.log_softmax"
        func_text = sibling(site, soft, "log_softmax", canonical)
        new = (
            replace_call(outer.node, func_text, soft.node.args)
            if outer.receiver is None
            else soft.node.with_changes(
                func=expr(func_text), lpar=site.node.lpar, rpar=site.node.rpar
            )
        )
    yield Edit(
        "stable-api",
        "log-softmax",
        "log(softmax(x)) -> log_softmax(x): finite for any logits",
        site.node,
        new,
        site.take_imports(),
    )


@transform(
    "stable-api",
    "log-softmax",
    only("log"),
    "log(softmax(z).gather(d, t)) -> log_softmax(z).gather(d, t)",
)
def t_log_softmax_picked(site: Site) -> Iterator[Edit]:
    """`log(p.gather(1, t))` with `p = softmax(z, dim)` (the target class's probability) ->
    `log_softmax(z, dim).gather(1, t)`: the log commutes with picking elements, and a picked
    probability that underflows to 0.0 has a finite log-softmax."""
    found = _log_call(site)
    if found is None:
        return
    picked = _picked_from(site, found[1])
    if picked is None:
        return
    selection, base = picked
    soft = unwrap_call(site, base, "softmax")
    if soft is None:
        return
    fused = _log_softmax_of(site, soft)
    if isinstance(selection, cst.Subscript):
        new: cst.BaseExpression = selection.with_changes(value=fused)
    elif (
        isinstance(selection, cst.Call)
        and isinstance(selection.func, cst.Attribute)
        and selection.func.value is base
    ):
        new = selection.with_changes(func=selection.func.with_changes(value=fused))
    else:
        assert isinstance(selection, cst.Call)
        new = selection.with_changes(
            args=[selection.args[0].with_changes(value=fused), *selection.args[1:]]
        )
    new = new.with_changes(lpar=site.node.lpar, rpar=site.node.rpar)
    yield Edit(
        "stable-api",
        "log-softmax",
        "log of a picked softmax probability -> the picked log_softmax: finite for any logits",
        site.node,
        new,
        site.take_imports(),
    )


@transform(
    "stable-api",
    "log-softmax-ratio",
    only("log"),
    "log(softmax(a) / softmax(b)) -> log_softmax(a) - log_softmax(b)",
)
def t_log_softmax_ratio(site: Site) -> Iterator[Edit]:
    """`log(p / q)` for two softmaxes (a KL divergence, distillation) -> `log_softmax(a) -
    log_softmax(b)`: the ratio is inf or 0/0 once a probability underflows, the difference of
    log-probabilities is finite for any logits."""
    found = _log_call(site)
    if found is None:
        return
    _, inner = found
    inner = (
        inner.with_changes(lpar=[], rpar=[]) if isinstance(inner, cst.BinaryOperation) else inner
    )
    if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Divide):
        top, bottom = inner.left, inner.right
    else:
        v = view(site, inner)
        if (
            v is None
            or v.spec is None
            or v.spec.op != "div"
            or v.receiver is not None
            or len(v.node.args) != 2
        ):
            return
        top, bottom = v.node.args[0].value, v.node.args[1].value
    p, q = unwrap_call(site, top, "softmax"), unwrap_call(site, bottom, "softmax")
    if p is None or q is None:
        return
    new = cst.BinaryOperation(
        left=_log_softmax_of(site, p),
        operator=cst.Subtract(
            whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")
        ),
        right=_log_softmax_of(site, q),
        lpar=[cst.LeftParen()],
        rpar=[cst.RightParen()],
    )
    yield Edit(
        "stable-api",
        "log-softmax-ratio",
        "log(softmax(a) / softmax(b)) -> log_softmax(a) - log_softmax(b): finite for any logits",
        site.node,
        new,
        site.take_imports(),
    )


@transform("stable-api", "log-of-exp", only("log"), "log(exp(y)) -> y")
def t_log_of_exp(site: Site) -> Iterator[Edit]:
    """`log(p)` where `p = y.exp()` (probabilities recovered from log-probabilities) -> `y`:
    exactly the same where p did not underflow, and finite where it did."""
    found = _log_call(site)
    if found is None:
        return
    _, inner = found
    e = unwrap_call(site, inner, "exp")
    y = e.operand() if e is not None else None
    if y is None or not is_simple(y):
        return  # a name or attribute: reused, not recomputed
    yield Edit(
        "stable-api",
        "log-of-exp",
        f"log(exp(y)) -> y: `{site.code(y)}` is the log-probability the code already has",
        site.node,
        y.with_changes(lpar=site.node.lpar, rpar=site.node.rpar),
        site.take_imports(),
    )


@transform(
    "stable-api",
    "bce-with-logits",
    only("log"),
    "-(y * log(sigmoid(z)) + (1 - y) * log(1 - sigmoid(z))) -> "
    "binary_cross_entropy_with_logits(z, y)",
)
def t_bce_hand_written(site: Site) -> Iterator[Edit]:
    """-(y * log(sigmoid(z)) + (1 - y) * log(1 - sigmoid(z))): the whole loss, with logits."""
    if _log_call(site) is None:
        return
    add = site.parent(site.parent(site.node) or site.node)
    if not (isinstance(add, cst.BinaryOperation) and isinstance(add.operator, cst.Add)):
        return
    first, second = _log_factor(site, add.left), _log_factor(site, add.right)
    if first is None or second is None:
        return
    y, p = first
    one_minus_y, one_minus_p = second
    if not (isinstance(strip_parens(one_minus_p), cst.BinaryOperation)):
        y, p, one_minus_y, one_minus_p = one_minus_y, one_minus_p, y, p
    q, r = strip_parens(one_minus_y), strip_parens(one_minus_p)
    if not (
        isinstance(q, cst.BinaryOperation)
        and isinstance(q.operator, cst.Subtract)
        and is_one(q.left)
        and isinstance(r, cst.BinaryOperation)
        and isinstance(r.operator, cst.Subtract)
        and is_one(r.left)
    ):
        return
    sig, sig2 = unwrap_call(site, p, "sigmoid"), unwrap_call(site, r.right, "sigmoid")
    if sig is None or sig2 is None:
        return
    z, z2 = sig.operand(), sig2.operand()
    if (
        z is None
        or z2 is None
        or flat(site.code(strip_parens(z))) != flat(site.code(strip_parens(z2)))
        or flat(site.code(strip_parens(y))) != flat(site.code(strip_parens(q.right)))
    ):
        return
    labels, logits = site.code(strip_parens(y)).strip(), site.code(strip_parens(z)).strip()
    if site.is_tf:
        call = (
            f"{site.spell('tensorflow.nn.sigmoid_cross_entropy_with_logits')}("
            f"labels={labels}, logits={logits})"
        )
        what = "tf.nn.sigmoid_cross_entropy_with_logits"
    else:
        call = (
            f"{site.spell('torch.nn.functional.binary_cross_entropy_with_logits')}("
            f'{logits}, {labels}, reduction="none")'
        )
        what = "binary_cross_entropy_with_logits(reduction='none')"
    target: cst.BaseExpression = add
    parent = site.parent(add)
    reduction = site.parent(parent) if isinstance(parent, cst.Attribute) else None
    negated = site.parent(reduction) if isinstance(reduction, cst.Call) else None
    new: cst.BaseExpression
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
        target, new = parent, expr(call)
    elif (
        isinstance(negated, cst.UnaryOperation)
        and isinstance(negated.operator, cst.Minus)
        and isinstance(reduction, cst.Call)
        and isinstance(parent, cst.Attribute)
        and add.lpar
    ):  # -(sum).mean() -> loss(...).mean()
        target = negated
        new = reduction.with_changes(
            func=parent.with_changes(value=expr(call)), lpar=negated.lpar, rpar=negated.rpar
        )
    else:
        new = expr(f"-{call}")
    if not isinstance(new, ATOMS):
        new = (
            new.with_changes(
                lpar=target.lpar or [cst.LeftParen()], rpar=target.rpar or [cst.RightParen()]
            )
            if target.lpar or not isinstance(site.parent(target), cst.Arg | cst.Return)
            else new
        )
    yield Edit(
        "stable-api",
        "bce-with-logits",
        f"hand-written binary cross-entropy on sigmoid(z) -> {what} on the logits",
        target,
        new,
        site.take_imports(),
        (),
    )


@transform(
    "stable-api",
    "log-sigmoid",
    only("log"),
    "log(sigmoid(z)) -> logsigmoid(z), log(1 - sigmoid(z)) -> logsigmoid(-z)",
)
def t_log_sigmoid(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, inner = found
    negate = False
    if (
        isinstance(inner, cst.BinaryOperation)
        and isinstance(inner.operator, cst.Subtract)
        and is_one(inner.left)
    ):
        negate, inner = True, inner.right
    sig = unwrap_call(site, inner, "sigmoid")
    if sig is None:
        return
    x = sig.operand()
    if x is None:
        return
    if negate:
        if isinstance(x, cst.UnaryOperation) and isinstance(x.operator, cst.Minus) and not x.lpar:
            arg_text = site.code(x.expression)
        else:
            arg_text = "-" + atomic_text(site, x)
    else:
        arg_text = site.code(x)
    canonical = "tensorflow.math.log_sigmoid" if site.is_tf else "torch.nn.functional.logsigmoid"
    func_text = site.spell(canonical)
    new: cst.BaseExpression
    if outer.receiver is None:
        new = replace_call(outer.node, func_text, [positional(expr(arg_text))])
    else:
        new = expr(f"{func_text}({arg_text})").with_changes(
            lpar=site.node.lpar, rpar=site.node.rpar
        )
    what = "log(1 - sigmoid(x)) -> logsigmoid(-x)" if negate else "log(sigmoid(x)) -> logsigmoid(x)"
    yield Edit(
        "stable-api",
        "log-sigmoid",
        what + ": finite once the sigmoid saturates",
        site.node,
        new,
        site.take_imports(),
    )


@transform(
    "stable-api",
    "bce-with-logits",
    only("binary_cross_entropy"),
    "binary_cross_entropy(sigmoid(z), y) -> binary_cross_entropy_with_logits(z, y)",
)
def t_bce_logits(site: Site) -> Iterator[Edit]:
    node = site.node
    if not isinstance(node, cst.Call):
        return
    v = view(site, node)
    loss_object: CallView | None = None
    if v is None and isinstance(node.func, cst.Call):  # nn.BCELoss(...)(p, y)
        loss_object = view(site, node.func)
        if (
            loss_object is None
            or loss_object.spec is None
            or loss_object.spec.op != "binary_cross_entropy"
        ):
            return
    elif v is None or v.spec is None or v.spec.op != "binary_cross_entropy":
        return
    called = loss_object or v
    qual = (called.qual or "") if called is not None else ""
    tf_style = qual.startswith(("tensorflow.", "keras."))
    index = 1 if tf_style else 0
    target_view = CallView(node, None, "", None, None)
    arg = target_view.arg(index, ("input", "y_pred", "output"))
    if arg is None:
        return
    sig = unwrap_call(site, arg.value, "sigmoid")
    if sig is None:
        return
    logits = sig.operand()
    if logits is None:
        return
    new_args = [a.with_changes(value=logits) if a is arg else a for a in node.args]
    new: cst.Call = node.with_changes(args=new_args)
    if tf_style:
        if loss_object is not None:  # BinaryCrossentropy(...)(y, sigmoid(x))
            new = new.with_changes(func=with_keyword(loss_object.node, "from_logits", "True"))
        else:
            new = with_keyword(new, "from_logits", "True")
        description = (
            "binary cross-entropy on sigmoid(x) -> from_logits=True on x (the "
            "stable sigmoid_cross_entropy_with_logits form)"
        )
    elif loss_object is not None:
        func = loss_object.node.func
        leaf = "BCEWithLogitsLoss"
        func_text = (
            site.code(func.with_changes(attr=cst.Name(leaf)))
            if isinstance(func, cst.Attribute)
            else site.spell("torch.nn." + leaf)
        )
        new = new.with_changes(func=loss_object.node.with_changes(func=expr(func_text)))
        description = "BCELoss()(sigmoid(x), y) -> BCEWithLogitsLoss()(x, y)"
    else:
        assert v is not None
        func_text = sibling(
            site,
            v,
            "binary_cross_entropy_with_logits",
            "torch.nn.functional.binary_cross_entropy_with_logits",
        )
        new = new.with_changes(func=expr(func_text))
        description = (
            "binary_cross_entropy(sigmoid(x), y) -> binary_cross_entropy_with_logits(x, y)"
        )
    yield Edit("stable-api", "bce-with-logits", description, site.node, new, site.take_imports())


@transform("stable-api", "logsumexp", only("log"), "log(sum(exp(x), d)) -> logsumexp(x, d)")
def t_logsumexp(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, inner = found
    total = view(site, inner)
    if total is None or total.name not in ("sum", "reduce_sum"):
        return
    if total.qual is not None and not total.qual.startswith(("torch.", "tensorflow.")):
        return
    expo = total.operand()
    if expo is None:
        return
    e = unwrap_call(site, expo, "exp")
    if e is None:
        return
    x = e.operand()
    if x is None:
        return
    rest = total.rest()
    if any(a.keyword is not None and a.keyword.value not in SUM_KEYWORDS for a in rest) or any(
        a.star for a in rest
    ):
        return
    tf = total.name == "reduce_sum"
    new: cst.BaseExpression
    if tf:
        func_text = sibling(site, total, "reduce_logsumexp", "tensorflow.math.reduce_logsumexp")
        new = (
            replace_call(outer.node, func_text, [positional(x), *rest])
            if outer.receiver is None
            else _with_parens(
                total.node.with_changes(func=expr(func_text), args=arg_list([x, *rest])), site.node
            )
        )
    else:
        if not rest:  # torch.logsumexp needs a dim (pytorch#144339): over all elements
            x_arg: cst.BaseExpression = expr(f"{atomic_text(site, x)}.flatten()")
            rest = [positional(cst.Integer("0"))]
        else:
            x_arg = x
        if total.receiver is not None:  # x.exp().sum(dim).log() -> x.logsumexp(dim)
            new = _with_parens(
                total.node.with_changes(
                    func=cst.Attribute(value=atomic(x_arg), attr=cst.Name("logsumexp")),
                    args=arg_list(rest) if len(rest) != len(total.node.args) else rest,
                ),
                site.node,
            )
        else:
            func_text = sibling(site, total, "logsumexp", "torch.logsumexp")
            args = [positional(x_arg), *rest]
            new = (
                replace_call(outer.node, func_text, args)
                if outer.receiver is None
                else _with_parens(
                    total.node.with_changes(func=expr(func_text), args=arg_list(args)), site.node
                )
            )
    yield Edit(
        "stable-api",
        "logsumexp",
        "log(sum(exp(x))) -> logsumexp(x) over the same "
        "dims: shifts by the max, so it cannot overflow",
        site.node,
        new,
        site.take_imports(),
    )


@transform(
    "stable-api",
    "logsumexp-mean",
    only("log", "exp"),
    "log(exp(x).mean(d)) -> logsumexp(x, d) - log(n)",
)
def t_log_mean_exp(site: Site) -> Iterator[Edit]:
    """`log(exp(x).mean(dim))` -> `logsumexp(x, dim) - log(n)`, n the size along dim, read
    from x when it is a name, else from the one local tensor name in it (`self.r * flat`:
    flat's); the validation's value comparison catches a broadcast that would change n."""
    if site.is_tf:
        return
    found = _log_mean_exp(site)
    if found is None:
        return
    log_call, mean, x = found
    rest = mean.rest()
    keywords = {a.keyword.value: a.value for a in rest if a.keyword is not None}
    plain = [a.value for a in rest if a.keyword is None]
    dim = keywords.get("dim", plain[0] if plain else None)
    keep = keywords.get("keepdim", plain[1] if len(plain) > 1 else None)
    if (
        dim is None
        or set(keywords) - {"dim", "keepdim"}
        or not isinstance(dim, cst.Integer | cst.UnaryOperation)
    ):
        return  # one integer dim: the count is one size
    names = [site.code(x)] if is_simple(x) else _local_names(site, x)
    if len(names) != 1:
        return
    keep_text = f", keepdim={site.code(keep)}" if keep is not None else ""
    text = (
        f"{site.spell('torch.logsumexp')}({site.code(x)}, dim={site.code(dim)}{keep_text})"
        f" - {site.spell('math.log')}({names[0]}.shape[{site.code(dim)}])"
    )
    if not isinstance(site.parent(log_call), cst.Return | cst.Assign | cst.Arg):
        text = f"({text})"  # a difference inside a larger expression
    yield Edit(
        "stable-api",
        "logsumexp-mean",
        "log(mean(exp(x))) -> logsumexp(x) - log(n): shifted by the max, it cannot overflow",
        log_call,
        expr(text),
        site.take_imports(),
    )


@transform("stable-api", "log1p", only("log"), "log(1 + x) -> log1p(x)")
def t_log1p(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, inner = found
    if not isinstance(inner, cst.BinaryOperation):
        return
    if isinstance(inner.operator, cst.Add) and is_one(inner.left):
        x_text = (
            site.code(inner.right.with_changes(lpar=[], rpar=[]))
            if inner.right.lpar
            else site.code(inner.right)
        )
        x_node = inner.right
    elif isinstance(inner.operator, cst.Add) and is_one(inner.right):
        x_node = inner.left
        x_text = site.code(x_node)
    elif isinstance(inner.operator, cst.Subtract) and is_one(inner.left):
        x_node = inner.right
        x_text = "-" + atomic_text(site, x_node)
    else:
        return
    new: cst.BaseExpression
    if outer.receiver is not None:
        receiver = expr(x_text)
        new = _with_parens(
            outer.node.with_changes(
                func=cst.Attribute(value=atomic(receiver), attr=cst.Name("log1p"))
            ),
            site.node,
        )
    else:
        canonical = "tensorflow.math.log1p" if site.is_tf else "torch.log1p"
        func_text = sibling(site, outer, "log1p", canonical)
        new = replace_call(outer.node, func_text, [positional(expr(x_text))])
    yield Edit(
        "stable-api",
        "log1p",
        "log(1 + x) -> log1p(x): exact for small x",
        site.node,
        new,
        site.take_imports(),
        ("log1p",),
    )


@transform("stable-api", "xlogy", only("log"), "x * log(y) -> xlogy(x, y)")
def t_xlogy(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, y = found
    parent = site.parent(site.node)
    if not (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply)):
        return
    other = parent.left if parent.right is site.node else parent.right
    if other is site.node:
        return
    name = "tensorflow.math.xlogy" if site.is_tf else "torch.xlogy"
    text = f"{site.spell(name)}({site.code(other)}, {site.code(y)})"
    new = expr(text)  # a call: the product's parentheses are not needed any more
    yield Edit(
        "stable-api",
        "xlogy",
        "x * log(y) -> xlogy(x, y): 0 where x is 0",
        parent,
        new,
        site.take_imports(),
        (),
    )


@transform("stable-api", "logit-eps", only("logit"), "logit(p) -> logit(p, eps={eps})")
def t_logit_eps(site: Site) -> Iterator[Edit]:
    v = view(site, site.node)
    if v is None or v.spec is None or v.spec.op != "logit" or v.receiver is not None and site.is_tf:
        return
    eps = bounds.literal(bounds.epsilon(site.request.dtype))
    yield Edit(
        "stable-api",
        "logit-eps",
        f"logit(p) -> logit(p, eps={eps}): clamps p into [eps, 1 - eps] first",
        site.node,
        with_keyword(v.node, "eps", eps),
        (),
        ("logit",),
    )
