"""Candidate fixes as libcst rewrites of the PR's source.

Each transform looks at a `Site` (site.py: the flagged node in the parsed file) and yields
zero or more `Edit`s: a node of the original tree and the node to put in its place, so the
rest of the file, comments and formatting included, stays as it was. `TRANSFORMS` lists them
in the order developers prefer their kinds (docs/numerics.md): fused stable APIs, the pattern's own
fix (the double `where`, a masked fill with finfo.min), an epsilon, a clamp, a `where`. The
generic domain fixes (epsilon, clamp, where) are tried only for ops whose catalogue entry lists
that kind; their bounds come from the op's invalid domain and the dtype (bounds.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from analyzers.catalogue import CATALOGUE
from analyzers.epsilon import is_epsilon, is_small_literal
from analyzers.fix import bounds
from analyzers.fix.site import (
    ATOMS,
    CallView,
    Edit,
    FixRequest,
    Site,
    Unsupported,
    arg_list,
    atomic,
    atomic_text,
    dotted_name,
    expr,
    flat,
    is_one,
    is_simple,
    operand_node,
    positional,
    replace_call,
    replace_in,
    sibling,
    substitute_operand,
    view,
    with_keyword,
)

__all__ = ["TRANSFORMS", "Edit", "FixRequest", "Site", "edits_for"]


# ---------------------------------------------------------------------------------- stable API

def _log_call(site: Site) -> tuple[CallView, cst.BaseExpression] | None:
    """The flagged node as a log call, with the log's argument."""
    v = view(site, site.node)
    if v is None or v.spec is None or v.spec.op != "log":
        return None
    inner = v.operand()
    return (v, inner) if inner is not None else None


def _unwrap_call(site: Site, node: cst.BaseExpression, op: str) -> CallView | None:
    """`node` as a call of `op`, or a name assigned one earlier in the same block
    (`p = torch.sigmoid(z)` ... `torch.log(p)`) whose inputs are not reassigned since."""
    v = view(site, node)
    if v is not None and v.spec is not None and v.spec.op == op:
        return v
    if not isinstance(node, cst.Name):
        return None
    assigned = _assignment(site, node.value)
    if assigned is None:
        return None
    v = view(site, assigned)
    return v if v is not None and v.spec is not None and v.spec.op == op else None


def _assignment(site: Site, name: str) -> cst.BaseExpression | None:
    statement = _statement_of(site, site.node)
    block = site.parent(statement) if statement is not None else None
    body = getattr(block, "body", None)
    if statement is None or not isinstance(body, Sequence) or statement not in body:
        return None
    before = list(body[: list(body).index(statement)])
    for i in range(len(before) - 1, -1, -1):
        stmt = before[i]
        targets = _assigned_names(stmt)
        if name not in targets:
            continue
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and
                isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1 and
                isinstance(stmt.body[0].targets[0].target, cst.Name)):
            return None
        value = stmt.body[0].value
        used = _names_in(value)
        if any(used & _assigned_names(later) for later in before[i + 1:]):
            return None  # an input of the producer changed in between
        return value
    return None


def _names_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    node.visit(Names())
    return names


def _assigned_names(statement: cst.CSTNode) -> set[str]:
    """Names a statement may rebind (compound statements: every name bound inside)."""
    names: set[str] = set()

    class Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(_names_in(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(_names_in(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(_names_in(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(_names_in(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            names.update(_names_in(node.target))

    statement.visit(Targets())
    return names


def _strip(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[], rpar=[]) if node.lpar else node


def _log_factor(site: Site, product: cst.BaseExpression) -> \
        tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`a * log(b)` (either order) as (a, b)."""
    if not (isinstance(product, cst.BinaryOperation) and
            isinstance(product.operator, cst.Multiply)):
        return None
    for factor, other in ((product.right, product.left), (product.left, product.right)):
        v = view(site, factor)
        if v is not None and v.spec is not None and v.spec.op == "log":
            arg = v.operand()
            if arg is not None:
                return other, arg
    return None


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
    if not (isinstance(_strip(one_minus_p), cst.BinaryOperation)):
        y, p, one_minus_y, one_minus_p = one_minus_y, one_minus_p, y, p
    q, r = _strip(one_minus_y), _strip(one_minus_p)
    if not (isinstance(q, cst.BinaryOperation) and isinstance(q.operator, cst.Subtract) and
            is_one(q.left) and isinstance(r, cst.BinaryOperation) and
            isinstance(r.operator, cst.Subtract) and is_one(r.left)):
        return
    sig, sig2 = _unwrap_call(site, p, "sigmoid"), _unwrap_call(site, r.right, "sigmoid")
    if sig is None or sig2 is None:
        return
    z, z2 = sig.operand(), sig2.operand()
    if z is None or z2 is None or flat(site.code(_strip(z))) != flat(site.code(_strip(z2))) \
            or flat(site.code(_strip(y))) != flat(site.code(_strip(q.right))):
        return
    labels, logits = site.code(_strip(y)).strip(), site.code(_strip(z)).strip()
    if site.is_tf:
        call = f"{site.spell('tensorflow.nn.sigmoid_cross_entropy_with_logits')}(" \
               f"labels={labels}, logits={logits})"
        what = "tf.nn.sigmoid_cross_entropy_with_logits"
    else:
        call = f"{site.spell('torch.nn.functional.binary_cross_entropy_with_logits')}(" \
               f"{logits}, {labels}, reduction=\"none\")"
        what = "binary_cross_entropy_with_logits(reduction='none')"
    target: cst.BaseExpression = add
    parent = site.parent(add)
    reduction = site.parent(parent) if isinstance(parent, cst.Attribute) else None
    negated = site.parent(reduction) if isinstance(reduction, cst.Call) else None
    new: cst.BaseExpression
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
        target, new = parent, expr(call)
    elif isinstance(negated, cst.UnaryOperation) and isinstance(negated.operator, cst.Minus) \
            and isinstance(reduction, cst.Call) and isinstance(parent, cst.Attribute) \
            and add.lpar:  # -(sum).mean() -> loss(...).mean()
        target = negated
        new = reduction.with_changes(func=parent.with_changes(value=expr(call)),
                                     lpar=negated.lpar, rpar=negated.rpar)
    else:
        new = expr(f"-{call}")
    if not isinstance(new, ATOMS):
        new = new.with_changes(lpar=target.lpar or [cst.LeftParen()],
                               rpar=target.rpar or [cst.RightParen()]) \
            if target.lpar or not isinstance(site.parent(target), cst.Arg | cst.Return) \
            else new
    yield Edit("stable-api", "bce-with-logits", f"hand-written binary cross-entropy on "
               f"sigmoid(z) -> {what} on the logits", target, new, site.take_imports(), ())


def t_log_softmax(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, inner = found
    soft = _unwrap_call(site, inner, "softmax")
    if soft is None:
        return
    if soft.receiver is not None:  # x.softmax(dim) -> x.log_softmax(dim)
        new: cst.BaseExpression = _log_softmax_of(site, soft).with_changes(
            lpar=site.node.lpar, rpar=site.node.rpar)
    else:
        canonical = "tensorflow.nn.log_softmax" if site.is_tf \
            else "torch.nn.functional.log_softmax"
        func_text = sibling(site, soft, "log_softmax", canonical)
        new = replace_call(outer.node, func_text, soft.node.args) if outer.receiver is None \
            else soft.node.with_changes(func=expr(func_text), lpar=site.node.lpar,
                                        rpar=site.node.rpar)
    yield Edit("stable-api", "log-softmax", "log(softmax(x)) -> log_softmax(x): finite for "
               "any logits", site.node, new, site.take_imports())


SELECTIONS = frozenset({"gather", "take_along_dim", "index_select", "take_along_axis",
                        "gather_nd", "squeeze"})


def _picked_from(site: Site, node: cst.BaseExpression) -> \
        tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`p.gather(1, t)`, `torch.gather(p, 1, t)`, `p[idx]` (or a name assigned one earlier):
    (the selection, the tensor it picks from)."""
    if isinstance(node, cst.Name):
        assigned = _assignment(site, node.value)
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
    soft = _unwrap_call(site, base, "softmax")
    if soft is None:
        return
    fused = _log_softmax_of(site, soft)
    if isinstance(selection, cst.Subscript):
        new: cst.BaseExpression = selection.with_changes(value=fused)
    elif isinstance(selection, cst.Call) and isinstance(selection.func, cst.Attribute) and \
            selection.func.value is base:
        new = selection.with_changes(func=selection.func.with_changes(value=fused))
    else:
        assert isinstance(selection, cst.Call)
        new = selection.with_changes(args=[selection.args[0].with_changes(value=fused),
                                           *selection.args[1:]])
    new = new.with_changes(lpar=site.node.lpar, rpar=site.node.rpar)
    yield Edit("stable-api", "log-softmax", "log of a picked softmax probability -> the "
               "picked log_softmax: finite for any logits", site.node, new, site.take_imports())


def _log_softmax_of(site: Site, soft: CallView) -> cst.BaseExpression:
    """The log_softmax call with the softmax's own arguments (its dim or axis kept)."""
    if soft.receiver is not None:
        func = soft.node.func
        assert isinstance(func, cst.Attribute)
        return soft.node.with_changes(func=func.with_changes(attr=cst.Name("log_softmax")),
                                      lpar=[], rpar=[])
    canonical = "tensorflow.nn.log_softmax" if site.is_tf else "torch.nn.functional.log_softmax"
    return soft.node.with_changes(func=expr(sibling(site, soft, "log_softmax", canonical)),
                                  lpar=[], rpar=[])


def t_log_softmax_ratio(site: Site) -> Iterator[Edit]:
    """`log(p / q)` for two softmaxes (a KL divergence, distillation) -> `log_softmax(a) -
    log_softmax(b)`: the ratio is inf or 0/0 once a probability underflows, the difference of
    log-probabilities is finite for any logits."""
    found = _log_call(site)
    if found is None:
        return
    _, inner = found
    inner = inner.with_changes(lpar=[], rpar=[]) if isinstance(inner, cst.BinaryOperation) \
        else inner
    if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Divide):
        top, bottom = inner.left, inner.right
    else:
        v = view(site, inner)
        if v is None or v.spec is None or v.spec.op != "div" or v.receiver is not None or \
                len(v.node.args) != 2:
            return
        top, bottom = v.node.args[0].value, v.node.args[1].value
    p, q = _unwrap_call(site, top, "softmax"), _unwrap_call(site, bottom, "softmax")
    if p is None or q is None:
        return
    new = cst.BinaryOperation(left=_log_softmax_of(site, p), operator=cst.Subtract(
        whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")),
        right=_log_softmax_of(site, q), lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    yield Edit("stable-api", "log-softmax-ratio", "log(softmax(a) / softmax(b)) -> "
               "log_softmax(a) - log_softmax(b): finite for any logits", site.node, new,
               site.take_imports())


def t_log_of_exp(site: Site) -> Iterator[Edit]:
    """`log(p)` where `p = y.exp()` (probabilities recovered from log-probabilities) -> `y`:
    exactly the same where p did not underflow, and finite where it did."""
    found = _log_call(site)
    if found is None:
        return
    _, inner = found
    e = _unwrap_call(site, inner, "exp")
    y = e.operand() if e is not None else None
    if y is None or not is_simple(y):
        return  # a name or attribute: reused, not recomputed
    yield Edit("stable-api", "log-of-exp", f"log(exp(y)) -> y: `{site.code(y)}` is the "
               "log-probability the code already has", site.node,
               y.with_changes(lpar=site.node.lpar, rpar=site.node.rpar), site.take_imports())


def _normaliser_dim(site: Site, name: str, statement: cst.CSTNode) -> cst.BaseExpression | None:
    """The dim of `name / name.sum(dim, keepdim=True)` (or `torch.sum`, `tf.reduce_sum` with
    `keepdims=True`) in the statement right after `statement`, when there is one."""
    block = site.parent(statement)
    body = list(getattr(block, "body", ()))
    if statement not in body or body.index(statement) + 1 >= len(body):
        return None
    following = body[body.index(statement) + 1]
    found: list[cst.BaseExpression] = []

    class Division(cst.CSTVisitor):
        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            if found or not isinstance(node.operator, cst.Divide) or not (
                    isinstance(node.left, cst.Name) and node.left.value == name):
                return
            total = view(site, _strip(node.right))
            if total is None or total.name not in ("sum", "reduce_sum"):
                return
            summed = total.operand()
            if not (isinstance(summed, cst.Name) and summed.value == name):
                return
            keywords = {a.keyword.value: a.value for a in total.rest() if a.keyword is not None}
            plain = [a.value for a in total.rest() if a.keyword is None]
            dim = keywords.get("dim", keywords.get("axis", plain[0] if plain else None))
            keep = keywords.get("keepdim", keywords.get("keepdims",
                                                        plain[1] if len(plain) > 1 else None))
            if dim is not None and keep is not None and site.code(keep) == "True":
                found.append(dim)

    following.visit(Division())
    return found[0] if found else None


def t_exp_normalised(site: Site) -> Iterator[Edit]:
    """`w = exp(s)` normalised by `w / w.sum(dim, keepdim=True)` on the next line is a
    softmax written out: `w = softmax(s, dim)` is the fused API (shifted by the max, so exp
    cannot overflow); the division that follows then divides by 1 and can stay."""
    if site.request.op != "exp":
        return
    v = view(site, site.node)
    x = v.operand() if v is not None else None
    statement = _statement_of(site, site.node)
    if v is None or x is None or not isinstance(statement, cst.SimpleStatementLine) or \
            len(statement.body) != 1 or not isinstance(statement.body[0], cst.Assign):
        return
    assign = statement.body[0]
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if assign.value is not site.node or not isinstance(target, cst.Name):
        return
    dim = _normaliser_dim(site, target.value, statement)
    if dim is None:
        return
    if site.is_tf:
        text = f"{site.spell('tensorflow.nn.softmax')}({site.code(x)}, axis={site.code(dim)})"
    else:
        text = f"{site.spell('torch.softmax')}({site.code(x)}, dim={site.code(dim)})"
    yield Edit("stable-api", "softmax", "exp(x) / exp(x).sum(dim) is softmax(x, dim): "
               "shifted by the max, it cannot overflow", site.node, expr(text),
               site.take_imports())
    if site.is_tf or not is_simple(x):
        return
    # float16 scores (a product that can pass 65504): the softmax in float32, cast back
    text = f"{site.spell('torch.softmax')}({site.code(x)}.float(), dim={site.code(dim)})" \
           f".to({site.code(x)}.dtype)"
    yield Edit("stable-api", "softmax-float32", "exp(x) / exp(x).sum(dim) is softmax(x, dim),"
               " computed in float32 and cast back", site.node, expr(text),
               site.take_imports())


def t_log_sigmoid(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, inner = found
    negate = False
    if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Subtract) \
            and is_one(inner.left):
        negate, inner = True, inner.right
    sig = _unwrap_call(site, inner, "sigmoid")
    if sig is None:
        return
    x = sig.operand()
    if x is None:
        return
    if negate:
        if isinstance(x, cst.UnaryOperation) and isinstance(x.operator, cst.Minus) \
                and not x.lpar:
            arg_text = site.code(x.expression)
        else:
            arg_text = "-" + atomic_text(site, x)
    else:
        arg_text = site.code(x)
    canonical = "tensorflow.math.log_sigmoid" if site.is_tf \
        else "torch.nn.functional.logsigmoid"
    func_text = site.spell(canonical)
    new: cst.BaseExpression
    if outer.receiver is None:
        new = replace_call(outer.node, func_text, [positional(expr(arg_text))])
    else:
        new = expr(f"{func_text}({arg_text})").with_changes(lpar=site.node.lpar,
                                                             rpar=site.node.rpar)
    what = "log(1 - sigmoid(x)) -> logsigmoid(-x)" if negate else "log(sigmoid(x)) -> " \
        "logsigmoid(x)"
    yield Edit("stable-api", "log-sigmoid", what + ": finite once the sigmoid saturates",
               site.node, new, site.take_imports())


def t_bce_logits(site: Site) -> Iterator[Edit]:
    node = site.node
    if not isinstance(node, cst.Call):
        return
    v = view(site, node)
    loss_object: CallView | None = None
    if v is None and isinstance(node.func, cst.Call):  # nn.BCELoss(...)(p, y)
        loss_object = view(site, node.func)
        if loss_object is None or loss_object.spec is None or \
                loss_object.spec.op != "binary_cross_entropy":
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
    sig = _unwrap_call(site, arg.value, "sigmoid")
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
        description = "binary cross-entropy on sigmoid(x) -> from_logits=True on x (the " \
                      "stable sigmoid_cross_entropy_with_logits form)"
    elif loss_object is not None:
        func = loss_object.node.func
        leaf = "BCEWithLogitsLoss"
        func_text = site.code(func.with_changes(attr=cst.Name(leaf))) \
            if isinstance(func, cst.Attribute) else site.spell("torch.nn." + leaf)
        new = new.with_changes(func=loss_object.node.with_changes(func=expr(func_text)))
        description = "BCELoss()(sigmoid(x), y) -> BCEWithLogitsLoss()(x, y)"
    else:
        assert v is not None
        func_text = sibling(site, v, "binary_cross_entropy_with_logits",
                            "torch.nn.functional.binary_cross_entropy_with_logits")
        new = new.with_changes(func=expr(func_text))
        description = "binary_cross_entropy(sigmoid(x), y) -> " \
                      "binary_cross_entropy_with_logits(x, y)"
    yield Edit("stable-api", "bce-with-logits", description, site.node, new,
               site.take_imports())


SUM_KEYWORDS = frozenset({"dim", "keepdim", "axis", "keepdims", "keep_dims", "name",
                          "reduction_indices"})


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
    e = _unwrap_call(site, expo, "exp")
    if e is None:
        return
    x = e.operand()
    if x is None:
        return
    rest = total.rest()
    if any(a.keyword is not None and a.keyword.value not in SUM_KEYWORDS for a in rest) or \
            any(a.star for a in rest):
        return
    tf = total.name == "reduce_sum"
    new: cst.BaseExpression
    if tf:
        func_text = sibling(site, total, "reduce_logsumexp",
                            "tensorflow.math.reduce_logsumexp")
        new = replace_call(outer.node, func_text, [positional(x), *rest]) \
            if outer.receiver is None else _with_parens(
                total.node.with_changes(func=expr(func_text),
                                        args=arg_list([x, *rest])), site.node)
    else:
        if not rest:  # torch.logsumexp needs a dim (pytorch#144339): over all elements
            x_arg: cst.BaseExpression = expr(f"{atomic_text(site, x)}.flatten()")
            rest = [positional(cst.Integer("0"))]
        else:
            x_arg = x
        if total.receiver is not None:  # x.exp().sum(dim).log() -> x.logsumexp(dim)
            new = _with_parens(total.node.with_changes(
                func=cst.Attribute(value=atomic(x_arg), attr=cst.Name("logsumexp")),
                args=arg_list(rest) if len(rest) != len(total.node.args) else rest),
                site.node)
        else:
            func_text = sibling(site, total, "logsumexp", "torch.logsumexp")
            args = [positional(x_arg), *rest]
            new = replace_call(outer.node, func_text, args) if outer.receiver is None else \
                _with_parens(total.node.with_changes(func=expr(func_text),
                                                     args=arg_list(args)), site.node)
    yield Edit("stable-api", "logsumexp", "log(sum(exp(x))) -> logsumexp(x) over the same "
               "dims: shifts by the max, so it cannot overflow", site.node, new,
               site.take_imports())


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
    e = _unwrap_call(site, exps, "exp") if exps is not None else None
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
    if dim is None or set(keywords) - {"dim", "keepdim"} or not isinstance(
            dim, cst.Integer | cst.UnaryOperation):
        return  # one integer dim: the count is one size
    names = [site.code(x)] if is_simple(x) else _local_names(site, x)
    if len(names) != 1:
        return
    keep_text = f", keepdim={site.code(keep)}" if keep is not None else ""
    text = f"{site.spell('torch.logsumexp')}({site.code(x)}, dim={site.code(dim)}{keep_text})" \
           f" - {site.spell('math.log')}({names[0]}.shape[{site.code(dim)}])"
    if not isinstance(site.parent(log_call), cst.Return | cst.Assign | cst.Arg):
        text = f"({text})"  # a difference inside a larger expression
    yield Edit("stable-api", "logsumexp-mean", "log(mean(exp(x))) -> logsumexp(x) - log(n): "
               "shifted by the max, it cannot overflow", log_call, expr(text),
               site.take_imports())


def _with_parens(new: cst.BaseExpression, old: cst.BaseExpression) -> cst.BaseExpression:
    return new.with_changes(lpar=old.lpar, rpar=old.rpar)


def t_log1p(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, inner = found
    if not isinstance(inner, cst.BinaryOperation):
        return
    if isinstance(inner.operator, cst.Add) and is_one(inner.left):
        x_text = site.code(inner.right.with_changes(lpar=[], rpar=[])) \
            if inner.right.lpar else site.code(inner.right)
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
        new = _with_parens(outer.node.with_changes(
            func=cst.Attribute(value=atomic(receiver), attr=cst.Name("log1p"))), site.node)
    else:
        canonical = "tensorflow.math.log1p" if site.is_tf else "torch.log1p"
        func_text = sibling(site, outer, "log1p", canonical)
        new = replace_call(outer.node, func_text, [positional(expr(x_text))])
    yield Edit("stable-api", "log1p", "log(1 + x) -> log1p(x): exact for small x",
               site.node, new, site.take_imports(), ("log1p",))


def t_expm1(site: Site) -> Iterator[Edit]:
    node: cst.BaseExpression = site.node
    parent = site.parent(node)
    if not isinstance(node, cst.BinaryOperation) and isinstance(parent, cst.BinaryOperation) \
            and parent.left is node:
        node = parent
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)
            and is_one(node.right)):
        return
    e = _unwrap_call(site, node.left, "exp")
    if e is None:
        return
    x = e.operand()
    if x is None:
        return
    new: cst.BaseExpression
    if e.receiver is not None:
        func = e.node.func
        assert isinstance(func, cst.Attribute)
        new = e.node.with_changes(func=func.with_changes(attr=cst.Name("expm1")))
    else:
        canonical = "tensorflow.math.expm1" if site.is_tf else "torch.expm1"
        new = e.node.with_changes(func=expr(sibling(site, e, "expm1", canonical)))
    new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
    yield Edit("stable-api", "expm1", "exp(x) - 1 -> expm1(x): exact for small x", node, new,
               site.take_imports(), ("expm1",))


def _exp_of(site: Site, node: cst.BaseExpression) -> str | None:
    """The flattened operand text of `exp(a)` (function or method), else None."""
    v = view(site, node)
    if v is None or v.spec is None or v.spec.op != "exp":
        return None
    operand = v.operand()
    return flat(site.code(operand)) if operand is not None else None


def _negated(text: str) -> str:
    """`-x` for `x` and `x` for `-x` (flattened)."""
    return text[1:] if text.startswith("-") else "-" + text


def t_tanh(site: Site) -> Iterator[Edit]:
    """(exp(x) - exp(-x)) / (exp(x) + exp(-x)) -> tanh(x): inf / inf is NaN for |x| above
    log(max), tanh is finite everywhere."""
    if site.request.op != "exp":
        return
    node: cst.CSTNode | None = site.node
    while node is not None and not (isinstance(node, cst.BinaryOperation) and
                                    isinstance(node.operator, cst.Divide)):
        if isinstance(node, cst.BaseStatement):
            return
        node = site.parent(node)
    if not isinstance(node, cst.BinaryOperation):
        return
    top, bottom = node.left, node.right
    if not (isinstance(top, cst.BinaryOperation) and isinstance(top.operator, cst.Subtract)
            and isinstance(bottom, cst.BinaryOperation)
            and isinstance(bottom.operator, cst.Add)):
        return
    a, b = _exp_of(site, top.left), _exp_of(site, top.right)
    c, d = _exp_of(site, bottom.left), _exp_of(site, bottom.right)
    if a is None or b is None or a != c or b != d or b != _negated(a):
        return
    first = view(site, top.left)
    operand = first.operand() if first is not None else None
    if operand is None:
        return
    name = "tensorflow.math.tanh" if site.is_tf else "torch.tanh"
    x = site.code(operand.with_changes(lpar=[], rpar=[]))  # exp(-x) first: tanh(-x)
    new = expr(f"{site.spell(name)}({x})").with_changes(lpar=node.lpar, rpar=node.rpar)
    yield Edit("stable-api", "tanh", "(exp(x) - exp(-x)) / (exp(x) + exp(-x)) -> tanh(x): "
               "finite for any x", node, new, site.take_imports(), ())


def t_normalize(site: Site) -> Iterator[Edit]:
    node = site.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        numerator, denominator = node.left, node.right
    else:
        d = view(site, node)
        if d is None or d.spec is None or d.spec.op != "div" or d.receiver is not None or \
                not isinstance(node, cst.Call) or len(node.args) != 2 or \
                any(a.keyword for a in node.args):
            return
        numerator, denominator = node.args[0].value, node.args[1].value
    n = view(site, denominator)
    if n is None or n.spec is None or n.spec.op != "norm":
        return
    x = n.operand()
    if x is None or flat(site.code(x.with_changes(lpar=[], rpar=[]))) != \
            flat(site.code(numerator.with_changes(lpar=[], rpar=[]))):
        return
    rest = n.rest()
    keywords = {a.keyword.value: a.value for a in rest if a.keyword is not None}
    plain = [a.value for a in rest if a.keyword is None]
    tf = site.is_tf
    p_node = keywords.get("ord" if tf or (n.qual or "").startswith("torch.linalg") else "p")
    if p_node is None and plain and not tf:
        p_node = plain.pop(0)
    if p_node is not None and site.code(p_node) not in ("2", "2.0", "'euclidean'",
                                                        '"euclidean"'):
        return
    dim = keywords.get("axis" if tf else "dim")
    if dim is None and plain:
        dim = plain.pop(0)
    keep = keywords.get("keepdims" if tf else "keepdim")
    if keep is None and plain:
        keep = plain.pop(0)
    if dim is None or keep is None or site.code(keep) != "True" or plain:
        return  # without keepdim the division broadcasts differently; without dim, rank
    if tf:
        text = f"{site.spell('tensorflow.math.l2_normalize')}({site.code(x)}, " \
               f"axis={site.code(dim)})"
    else:
        text = f"{site.spell('torch.nn.functional.normalize')}({site.code(x)}, " \
               f"dim={site.code(dim)})"
    new = expr(text)
    yield Edit("stable-api", "normalize", "x / x.norm(dim, keepdim=True) -> normalize(x, dim):"
               " divides by max(norm, eps)", node, new, site.take_imports(), ())


TF_NORM_PARAMETERS = {  # positional order after the tensor
    "tensorflow.norm": ("ord", "axis", "keepdims", "name"),
    "tensorflow.linalg.norm": ("ord", "axis", "keepdims", "name"),
    "tensorflow.math.reduce_euclidean_norm": ("axis", "keepdims", "name"),
}


def t_tf_norm_eps(site: Site) -> Iterator[Edit]:
    """`tf.norm(x, axis=a)` -> `tf.sqrt(tf.reduce_sum(tf.square(x), axis=a) + eps)`:
    TensorFlow's norm has no special case at 0 (PyTorch's does), so the only way to a finite
    gradient for an all-zero vector is an epsilon under the root."""
    v = view(site, site.node)
    if v is None or site.request.op != "sqrt" or v.qual not in TF_NORM_PARAMETERS:
        return
    x = v.operand()
    if x is None:
        return
    named: dict[str, cst.BaseExpression] = {}
    plain = [a.value for a in v.rest() if a.keyword is None]
    for name, value in zip(TF_NORM_PARAMETERS[v.qual], plain, strict=False):
        named[name] = value
    named.update({a.keyword.value: a.value for a in v.rest() if a.keyword is not None})
    ord_node = named.pop("ord", None)
    if ord_node is not None and site.code(ord_node) not in ("2", "2.0", "'euclidean'",
                                                            '"euclidean"', "'fro'", '"fro"'):
        return
    named.pop("name", None)
    arguments = "".join(f", {key}={site.code(value)}" for key, value in named.items())
    eps = bounds.literal(bounds.epsilon_under_root(site.request.dtype))
    sqrt, total = site.spell("tensorflow.sqrt"), site.spell("tensorflow.reduce_sum")
    squares = _tf_call(site, "square", site.code(x))
    text = f"{sqrt}({total}({squares}{arguments}) + {eps})"
    yield Edit("epsilon", "epsilon", f"the root of the sum of squares plus {eps}: "
               "finite gradient for an all-zero vector, where tf.norm's is 0/0",
               site.node, expr(text), site.take_imports(), ())


def _upcast_matmul(site: Site, node: cst.BaseExpression) -> \
        tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(the product with both factors cast to float32, its first factor) for the first
    matmul inside `node`: `a @ b`, `matmul/bmm(a, b)`, `einsum(eq, a, b)`."""
    tf = site.is_tf

    def up(x: cst.BaseExpression) -> cst.BaseExpression:
        if tf:
            return expr(_tf_call(site, "cast", site.code(x), site.spell("tensorflow.float32")))
        return expr(f"{atomic_text(site, x)}.float()")

    found: list[tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression]] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if found:
                return False
            if isinstance(n, cst.BinaryOperation) and isinstance(n.operator,
                                                                 cst.MatrixMultiply):
                found.append((n, n.with_changes(left=up(n.left), right=up(n.right)), n.left))
                return False
            v = view(site, n) if isinstance(n, cst.Call) else None
            leaf = v.name if v is not None else ""
            if v is not None and leaf in ("matmul", "bmm", "mm", "einsum") and \
                    (v.qual is not None or v.receiver is None):
                assert isinstance(n, cst.Call)
                factors = [i for i, a in enumerate(n.args) if a.keyword is None]
                factors = factors[1:3] if leaf == "einsum" else factors[:2]
                if len(factors) == 2:
                    args = [a.with_changes(value=up(a.value)) if i in factors else a
                            for i, a in enumerate(n.args)]
                    found.append((n, n.with_changes(args=args), n.args[factors[0]].value))
                    return False
            return True

    node.visit(Finder())
    if not found:
        return None
    old, new, first = found[0]
    return replace_in(node, old, new), first  # type: ignore[return-value]


def _under_autocast(site: Site) -> bool:
    """Inside `with torch.autocast(...)` a `.float()` factor is cast back to float16 by the
    matmul itself: the upcast needs autocast disabled there, which this fix does not write."""
    node: cst.CSTNode | None = site.node
    while node is not None:
        if isinstance(node, cst.With) and any("autocast" in site.code(item.item) or
                                              "amp" in site.code(item.item)
                                              for item in node.items):
            return True
        node = site.parent(node)
    return False


def t_float32_scores(site: Site) -> Iterator[Edit]:
    """`softmax(q @ k.T * s)` -> `softmax(q.float() @ k.T.float() * s).to(q.dtype)`: the
    product is what overflows float16 (docs/numerics.md #12), so a softmax in float32 alone is
    too late; the probabilities go back to the model's dtype for the next product."""
    if site.request.rule != "fp16-scores-overflow" or _under_autocast(site):
        return
    v = view(site, site.node)
    operand = v.operand() if v is not None else None
    if v is None or operand is None or not isinstance(site.node, cst.Call):
        return
    upcast = _upcast_matmul(site, operand)
    if upcast is None:
        return
    scores, first = upcast
    call = site.node
    if v.receiver is not None and isinstance(call.func, cst.Attribute):
        inner = call.with_changes(func=call.func.with_changes(value=atomic(scores)))
    else:
        inner = call.with_changes(args=[a.with_changes(value=scores) if a.value is operand
                                        else a for a in call.args])
    text = site.code(inner)
    if site.is_tf:
        if not is_simple(first):
            return
        new = expr(_tf_call(site, "cast", text, f"{site.code(first)}.dtype"))
    else:
        new = expr(f"{text}.to({site.code(first)}.dtype)" if is_simple(first)
                   else f"{text}.half()")
    yield Edit("upcast", "float32-scores", "compute the scores and their softmax in float32 "
               "(a float16 product passes 65504 before any scale), then cast back",
               call, new, site.take_imports(), ())


def _vanishing_sum(site: Site, node: cst.BaseExpression) -> \
        tuple[cst.BinaryOperation, cst.BaseExpression] | None:
    """The first `a + eps` inside `node` whose epsilon is a small literal or a name that
    says so (`self.eps`, `variance_epsilon`), with its other side `a`."""
    found: list[tuple[cst.BinaryOperation, cst.BaseExpression]] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if found:
                return False
            if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Add):
                for eps, other in ((n.right, n.left), (n.left, n.right)):
                    if is_epsilon(eps, site.code(eps)):
                        found.append((n, other))
                        return False
            return True

    node.visit(Finder())
    return found[0] if found else None


def t_float32_eps(site: Site) -> Iterator[Edit]:
    """`x / torch.sqrt(var + self.eps)` in float16, with eps 1e-8 (0.0 there) ->
    `(x / torch.sqrt(var.float() + self.eps)).to(var.dtype)`: the sum the epsilon vanishes
    from is computed in float32, where it does not, and the flagged expression goes back to
    the model's dtype (docs/numerics.md #13: how float16 LayerNorm and RMSNorm are written)."""
    if site.request.dtype != "float16" or _under_autocast(site) or \
            "upcast" not in catalogue_kinds(site.request.op):
        return
    node = site.node
    if not isinstance(node, cst.BaseExpression):
        return
    found = _vanishing_sum(site, operand_node(site))
    if found is None or not is_simple(found[1]):
        return
    total, value = found
    if site.is_tf:
        up = expr(_tf_call(site, "cast", site.code(value), site.spell("tensorflow.float32")))
    else:
        up = expr(f"{atomic_text(site, value)}.float()")
    upcast = replace_in(node, total, total.with_changes(
        left=up if total.left is value else total.left,
        right=up if total.right is value else total.right))
    assert isinstance(upcast, cst.BaseExpression)
    text = site.code(upcast)
    back = _tf_call(site, "cast", text, f"{site.code(value)}.dtype") if site.is_tf else \
        f"{atomic_text(site, upcast)}.to({site.code(value)}.dtype)"
    yield Edit("upcast", "float32-eps", f"compute `{site.code(total)}` in float32, where the "
               "epsilon is not 0.0 as in float16, and cast the result back",
               node, expr(back), site.take_imports(), ())


def t_xlogy(site: Site) -> Iterator[Edit]:
    found = _log_call(site)
    if found is None:
        return
    outer, y = found
    parent = site.parent(site.node)
    if not (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator,
                                                                   cst.Multiply)):
        return
    other = parent.left if parent.right is site.node else parent.right
    if other is site.node:
        return
    name = "tensorflow.math.xlogy" if site.is_tf else "torch.xlogy"
    text = f"{site.spell(name)}({site.code(other)}, {site.code(y)})"
    new = expr(text)  # a call: the product's parentheses are not needed any more
    yield Edit("stable-api", "xlogy", "x * log(y) -> xlogy(x, y): 0 where x is 0", parent,
               new, site.take_imports(), ())


def t_logit_eps(site: Site) -> Iterator[Edit]:
    v = view(site, site.node)
    if v is None or v.spec is None or v.spec.op != "logit" or v.receiver is not None and \
            site.is_tf:
        return
    eps = bounds.literal(bounds.epsilon(site.request.dtype))
    yield Edit("stable-api", "logit-eps", f"logit(p) -> logit(p, eps={eps}): clamps p into "
               "[eps, 1 - eps] first", site.node, with_keyword(v.node, "eps", eps), (),
               ("logit",))


def t_divide_no_nan(site: Site) -> Iterator[Edit]:
    node = site.node
    if not site.is_tf or site.request.op != "div" or site.request.nonnegative:
        return
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        num, den = node.left, node.right
    else:
        v = view(site, node)
        if v is None or v.receiver is not None or not isinstance(node, cst.Call) or \
                len(node.args) < 2:
            return
        num, den = node.args[0].value, node.args[1].value
    text = f"{site.spell('tensorflow.math.divide_no_nan')}({site.code(num)}, {site.code(den)})"
    new = expr(text)
    yield Edit("stable-api", "divide-no-nan", "x / y -> tf.math.divide_no_nan(x, y): 0 where "
               "y is 0", node, new, site.take_imports(), ())


def _pow_exponent(site: Site) -> cst.BaseExpression | None:
    node = site.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        return node.right
    v = view(site, node)
    if v is not None:
        arg = v.arg(0 if v.receiver is not None else 1, ("exponent",))
        return arg.value if arg is not None else None
    return None


def _literal_value(node: cst.BaseExpression | None) -> float | None:
    if isinstance(node, cst.Float | cst.Integer):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal_value(node.expression)
        return None if inner is None else -inner
    return None


def t_pow_abs(site: Site) -> Iterator[Edit]:
    """Catalogue: `x.abs() ** y` for a fractional power of a value whose sign is meaningless."""
    if site.request.op != "pow" or site.is_tf or "stable-api" not in catalogue_kinds("pow"):
        return
    exponent = _pow_exponent(site)
    if not isinstance(exponent, cst.Float):
        return
    yield substitute_operand(site, lambda x: f"{atomic_text(site, x)}.abs()", "stable-api",
                             "pow-abs", "x ** y -> x.abs() ** y for a fractional y")


# ---------------------------------------------------------------------------------- epsilon

def catalogue_kinds(op: str) -> frozenset[str]:
    """The fix kinds the catalogue lists for an op: the generic domain fixes (epsilon, clamp,
    where) are tried only where it lists them."""
    spec = CATALOGUE.by_op.get(op)
    return frozenset(f.kind for f in spec.fixes) if spec is not None else frozenset()


POSITIVE_OPS = ("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma", "pow")
NONZERO_OPS = ("div", "reciprocal")
NONNEG_LEAVES = frozenset({"abs", "absolute", "square", "relu", "relu6", "norm", "vector_norm",
                           "exp", "softmax", "sigmoid", "softplus", "std", "var",
                           "reduce_euclidean_norm", "reduce_std", "reduce_variance"})


def _syntactically_nonneg(site: Site, node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power) and \
            isinstance(node.right, cst.Integer) and node.right.evaluated_value % 2 == 0:
        return True
    v = view(site, node)
    if v is None:
        return False
    if v.name in ("sum", "mean", "reduce_sum", "reduce_mean"):
        inner = v.operand()
        return inner is not None and _syntactically_nonneg(site, inner)
    return v.name in NONNEG_LEAVES


def _terms(node: cst.BaseExpression, sign: int = 1) -> list[tuple[int, cst.BaseExpression]]:
    if isinstance(node, cst.BinaryOperation) and not node.lpar and \
            isinstance(node.operator, cst.Add | cst.Subtract):
        right_sign = sign if isinstance(node.operator, cst.Add) else -sign
        return _terms(node.left, sign) + [(right_sign, node.right)]
    return [(sign, node)]


def t_root_divisor_eps(site: Site) -> Iterator[Edit]:
    """`x / sqrt(v)` -> `x / sqrt(v + eps)`: an epsilon after the root (`sqrt(v) + eps`)
    keeps the quotient finite but not the root's own gradient at 0 (1 / (2 sqrt(0))); under
    the root both stay finite, and the root moves by about sqrt(eps) (LayerNorm's form)."""
    request = site.request
    if request.op != "div":
        return
    divisor = operand_node(site)
    v = view(site, divisor)
    inner = v.operand() if v is not None and v.spec is not None and v.spec.op == "sqrt" \
        else None
    if inner is None:
        return
    eps = bounds.literal(bounds.epsilon_under_root(request.dtype))
    bare = inner.with_changes(lpar=[], rpar=[]) if inner.lpar else inner
    new_inner = expr(f"{site.code(bare)} + {eps}")
    if v is not None and v.receiver is not None:  # `power.sqrt()`: `(power + eps).sqrt()`
        new_inner = atomic(new_inner)
    yield substitute_operand(site, lambda d: site.code(replace_in(d, inner, new_inner)),
                             "epsilon", "epsilon-under-root",
                             f"add {eps} under the root of the divisor: the quotient and the "
                             "root's gradient stay finite where the sum reaches 0")


def t_epsilon(site: Site) -> Iterator[Edit]:
    request = site.request
    if request.op not in POSITIVE_OPS + NONZERO_OPS or "epsilon" not in \
            catalogue_kinds(request.op):
        return
    operand = operand_node(site)
    eps = bounds.epsilon(request.dtype, request.hi if request.nonnegative else None)
    eps_text = bounds.literal(eps)
    terms = _terms(operand.with_changes(lpar=[], rpar=[]))
    intended = [t for t in terms if t[0] > 0 and is_small_literal(t[1])]
    if intended and len(terms) > 1:
        # the author meant an epsilon: keep theirs out of the way of rounding (absorbed next
        # to a large term, or 0.0 in float16) and add one the dtype represents, last
        kept = [t for t in terms if t[1] is not intended[0][1]]

        def rebuild(_: cst.BaseExpression) -> str:
            text = site.code(kept[0][1]) if kept[0][0] > 0 else \
                "-" + atomic_text(site, kept[0][1])
            for sign, term in kept[1:]:
                text += (" + " if sign > 0 else " - ") + site.code(term)
            return f"{text} + {eps_text}"

        old = site.code(intended[0][1])
        yield substitute_operand(site, rebuild, "epsilon", "epsilon",
                                 f"the epsilon {old} guards nothing in {request.dtype}; "
                                 f"add {eps_text} next to the value that reaches 0")
        return
    if not (request.nonnegative or _syntactically_nonneg(site, operand)):
        return
    if request.op == "pow":
        return
    yield substitute_operand(site, lambda x: f"{site.code(x)} + {eps_text}", "epsilon",
                             "epsilon", f"add {eps_text} (normal in {request.dtype}) to the "
                             "non-negative operand: keeps the gradient flowing")


# ---------------------------------------------------------------------------------- clamp

def _tf_call(site: Site, name: str, *args: str) -> str:
    return f"{site.spell('tensorflow.' + name)}({', '.join(args)})"


def t_clamp(site: Site) -> Iterator[Edit]:
    request = site.request
    spec = CATALOGUE.by_op.get(request.op)
    if spec is None or "clamp" not in catalogue_kinds(request.op):
        return
    dtype = request.dtype
    tf = site.is_tf
    eps = bounds.literal(bounds.unit_margin(dtype))
    requirement = spec.requires
    if request.op == "pow":
        requirement = "positive"

    def torch_min(x: cst.BaseExpression, bound: str) -> str:
        return f"{atomic_text(site, x)}.clamp_min({bound})"

    exponent = _literal_value(_pow_exponent(site)) if request.op == "pow" else None
    # x ** y with y < 0 (or unknown): tiny ** y, or the gradient y * tiny ** (y - 1), is
    # inf; a bound sized like an epsilon keeps both finite
    tiny_is_enough = request.op != "pow" or (exponent is not None and exponent >= 0)

    def tiny(x: cst.BaseExpression) -> str:
        if not tiny_is_enough:
            return bounds.literal(bounds.epsilon(dtype))
        if is_simple(x):
            return f"{site.spell('torch.finfo')}({site.code(x)}.dtype).tiny"
        return bounds.tiny_literal(dtype)

    def floor(bound: str) -> Callable[[cst.BaseExpression], str]:
        """A constant lower bound: `tf.maximum(x, bound)`, `x.clamp_min(bound)`."""
        if tf:
            return lambda x: _tf_call(site, "maximum", site.code(x), bound)
        return lambda x: torch_min(x, bound)

    make: Callable[[cst.BaseExpression], str] | None = None
    description = ""
    if requirement == "positive" and request.op in ("log", "log2", "log10", "sqrt", "pow"):
        if tf:
            def make(x: cst.BaseExpression) -> str:
                bound = bounds.tiny_literal(dtype) if tiny_is_enough else \
                    bounds.literal(bounds.epsilon(dtype))
                return _tf_call(site, "maximum", site.code(x), bound)
        else:
            def make(x: cst.BaseExpression) -> str:
                return torch_min(x, tiny(x))
        description = f"clamp the operand to the smallest normal {dtype} (RANUM's " \
                      "precondition): finite, but no gradient below it" if tiny_is_enough \
            else f"clamp the base at {bounds.literal(bounds.epsilon(dtype))}: a negative " \
                 "or unknown exponent makes tiny ** y (or its gradient) inf"
    elif requirement == "positive" and request.op in ("lgamma", "digamma"):
        # tiny would do for the value, not for the gradient (trigamma(tiny) = 1/tiny**2 = inf)
        bound = bounds.literal(bounds.epsilon(dtype))
        make = floor(bound)
        description = f"clamp the argument at {bound}: {request.op} and its gradient stay " \
                      f"finite in {dtype}"
    elif request.op in ("rsqrt", "reciprocal") or (request.op == "div" and (
            request.nonnegative or _syntactically_nonneg(site, operand_node(site)))):
        bound = bounds.literal(bounds.epsilon(dtype))
        make = floor(bound)
        description = f"clamp the non-negative divisor at {bound}, so the quotient stays " \
                      f"finite in {dtype}"
    elif request.op == "div":
        # a one-sided floor is right for the usual divisor (a count, a sum of mask weights)
        # and reads simply; the equivalence check rejects it where normal inputs give a
        # negative divisor (`x / (width - 1.0)`), and the sign-keeping clamp, which names the
        # divisor three times, comes next
        bound = bounds.literal(bounds.epsilon(dtype))
        if not is_simple(operand_node(site)):
            yield substitute_operand(
                site, floor(bound), "clamp", "clamp",
                f"clamp the divisor at {bound}: for a non-negative divisor (a count, a sum "
                "of weights); a negative one would change the outputs")
        if tf:
            def make(x: cst.BaseExpression) -> str:
                c = site.code(x)
                return _tf_call(site, "where", f"{c} < 0", _tf_call(site, "minimum", c,
                                                                  f"-{bound}"),
                                _tf_call(site, "maximum", c, bound))
        else:
            def make(x: cst.BaseExpression) -> str:
                c, a = site.code(x), atomic_text(site, x)
                return f"{site.spell('torch.where')}({c} < 0, {a}.clamp_max(-{bound}), " \
                       f"{a}.clamp_min({bound}))"
        description = f"keep the divisor's magnitude at least {bound}, its sign kept"
    elif requirement == "open_unit":
        if tf:
            def make(x: cst.BaseExpression) -> str:
                return _tf_call(site, "clip_by_value", site.code(x), f"-1 + {eps}", f"1 - {eps}")
        else:
            def make(x: cst.BaseExpression) -> str:
                return f"{atomic_text(site, x)}.clamp(-1 + {eps}, 1 - {eps})"
        description = f"clamp strictly inside (-1, 1) by {eps}, where the gradient is finite"
    elif requirement == "gt_minus_one":
        make = floor(f"-1 + {eps}")
        description = f"clamp above -1 by {eps}"
    elif requirement == "ge_one":
        make = floor(f"1 + {eps}")
        description = f"clamp above 1 by {eps}"
    elif requirement == "open_probability":
        if tf:
            return
        make = lambda x: f"{atomic_text(site, x)}.clamp({eps}, 1 - {eps})"  # noqa: E731
        description = f"clamp into [{eps}, 1 - {eps}]"
    elif requirement == "below_exp_max":
        threshold = spec.thresholds.get(dtype)
        bound = bounds.exp_bound(dtype, threshold)
        two_sided = request.op in ("cosh", "sinh")
        if tf:
            def make(x: cst.BaseExpression) -> str:
                if two_sided:
                    return _tf_call(site, "clip_by_value", site.code(x), f"-{bound}", bound)
                return _tf_call(site, "minimum", site.code(x), bound)
        else:
            def make(x: cst.BaseExpression) -> str:
                if two_sided:
                    return f"{atomic_text(site, x)}.clamp(-{bound}, {bound})"
                return f"{atomic_text(site, x)}.clamp_max({bound})"
        description = f"clamp the exponent at {bound} = log(max) of {dtype}"
    if make is None:
        return
    yield substitute_operand(site, make, "clamp", "clamp", description)


# ---------------------------------------------------------------------------------- where

SAFE_VALUE = {"positive": 1.0, "nonzero": 1.0, "gt_minus_one": 0.0, "open_unit": 0.0,
              "open_probability": 0.5, "below_exp_max": 0.0, "ge_one": 2.0}


def _safe_like(site: Site, prefix: str, x: str, value: float) -> str:
    root = prefix
    if value == 1.0:
        return f"{root}.ones_like({x})"
    if value == 0.0:
        return f"{root}.zeros_like({x})"
    if site.is_tf:
        return f"{root}.ones_like({x}) * {value!r}"
    return f"{root}.full_like({x}, {value!r})"


def _enclosing_where(site: Site) -> tuple[cst.Call, int] | None:
    child: cst.CSTNode = site.node
    parent = site.parent(child)
    while parent is not None and not isinstance(parent, cst.BaseStatement):
        if isinstance(parent, cst.Call):
            v = view(site, parent)
            if v is not None and v.spec is not None and v.spec.op == "where" and \
                    v.receiver is None and len(parent.args) >= 3:
                for index, arg in enumerate(parent.args[:3]):
                    if arg is child:
                        return (parent, index) if index in (1, 2) else None
        child, parent = parent, site.parent(parent)
    return None


def t_double_where(site: Site) -> Iterator[Edit]:
    spec = CATALOGUE.by_op.get(site.request.op)
    if spec is None or spec.requires not in SAFE_VALUE or \
            site.request.rule not in ("where-grad-leak", ""):
        return  # a where whose condition does not guard the operand is no double where
    found = _enclosing_where(site)
    if found is None:
        return
    where, branch = found
    operand = operand_node(site)
    if not is_simple(operand) and not isinstance(operand, cst.Subscript):
        return
    func = site.code(where.func)
    prefix = func.rsplit(".", 1)[0] if "." in func else site.spell(site.prefix())
    cond = site.code(where.args[0].value).strip()
    safe_value = SAFE_VALUE[spec.requires]

    def make(x: cst.BaseExpression) -> str:
        c = site.code(x)
        safe = _safe_like(site, prefix, c, safe_value)
        return f"{func}({cond}, {c}, {safe})" if branch == 1 else f"{func}({cond}, {safe}, {c})"

    yield substitute_operand(site, make, "where", "double-where",
                             "double where: the masked branch's input is made safe too, so "
                             "its gradient is not NaN (pytorch#68425)")


def t_where(site: Site) -> Iterator[Edit]:
    """Catalogue's `where(x > 0, x, 1)` for log/sqrt: NaN/-inf becomes op(1)."""
    if "where" not in catalogue_kinds(site.request.op) or _enclosing_where(site) is not None:
        return
    operand = operand_node(site)
    if not is_simple(operand):
        return
    root = site.spell(site.prefix())

    def make(x: cst.BaseExpression) -> str:
        c = site.code(x)
        return f"{root}.where({c} > 0, {c}, {root}.ones_like({c}))"

    yield substitute_operand(site, make, "where", "where",
                             "select a safe input where the operand is not positive")


def _repeatable(node: cst.BaseExpression) -> bool:
    """Side-effect free and cheap enough to write twice: names, attributes, and subscripts of
    them with literal or ellipsis indices (`disp[..., 0]`)."""
    if is_simple(node):
        return True
    if isinstance(node, cst.Subscript) and _repeatable(node.value):
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index) or not isinstance(
                    index.value, cst.Integer | cst.Ellipsis | cst.Name | cst.UnaryOperation):
                return False
        return True
    return False


def t_atan2(site: Site) -> Iterator[Edit]:
    """atan2(y, x) -> atan2(y, where(x * x + y * y < tiny, 1, x)): where the gradient's
    denominator is 0 or subnormal, a safe point instead (the double-where pattern,
    pytorch#68425); the value is unchanged at the origin (atan2(0, 1) = atan2(0, 0) = 0) and
    elsewhere, except for vectors too short to have a direction in the dtype."""
    if site.request.op != "atan2" or "where" not in catalogue_kinds("atan2"):
        return
    v = view(site, site.node)
    if v is None or v.receiver is not None or not isinstance(site.node, cst.Call):
        return
    y_arg, x_arg = v.arg(0, ("input", "y")), v.arg(1, ("other", "x"))
    if y_arg is None or x_arg is None or not (_repeatable(y_arg.value) and
                                              _repeatable(x_arg.value)):
        return
    y, x = site.code(y_arg.value), site.code(x_arg.value)
    root = site.spell(site.prefix())
    # the gradient is y / (x**2 + y**2): 0/0 at the origin, and inf already where the
    # squares are subnormal (|x|, |y| below ~1e-19 in float32; CPUs may flush them to 0)
    condition = f"{x} * {x} + {y} * {y} < {bounds.tiny_literal(site.request.dtype)}"
    safe = f"{root}.where({condition}, {root}.ones_like({x}), {x})"
    yield Edit("where", "double-where", "atan2's gradient is not finite where x**2 + y**2 "
               "is 0 or subnormal (at the origin, and next to it): take it at x = 1 there "
               "instead",
               x_arg.value, expr(safe), site.take_imports(), ("atan2",))


# ---------------------------------------------------------------------------------- masked fill

def neg_inf(node: cst.BaseExpression) -> bool:
    """`float('-inf')`, `-float("inf")`, `-math.inf`, `-torch.inf`, `-np.inf`."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = node.expression
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and \
                inner.func.value == "float" and len(inner.args) == 1 and \
                isinstance(inner.args[0].value, cst.SimpleString):
            return str(inner.args[0].value.evaluated_value).lower() in ("inf", "infinity")
        dotted = dotted_name(inner)
        return dotted is not None and dotted.rsplit(".", 1)[-1] == "inf"
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and \
            node.func.value == "float" and len(node.args) == 1 and \
            isinstance(node.args[0].value, cst.SimpleString):
        return str(node.args[0].value.evaluated_value).lower() in ("-inf", "-infinity")
    return False


def t_masked_fill(site: Site) -> Iterator[Edit]:
    if site.request.op != "softmax":
        return
    operand = operand_node(site)
    name = site.code(operand).strip()
    edits: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    # inline: softmax(s.masked_fill(m, -inf))
    for fill in _fills(site, operand):
        edits.append(fill)
    if not edits and is_simple(operand):
        statement = _statement_of(site, site.node)
        block = site.parent(statement) if statement is not None else None
        body = getattr(block, "body", None)
        if isinstance(body, Sequence) and statement in body:
            for previous in reversed(list(body[: list(body).index(statement)])):
                found = _fill_statement(site, previous, name)
                if found:
                    edits = found
                    break
    if not edits:
        return
    old, new = edits[0]
    yield Edit("masked-fill", "finfo-min", "fill masked scores with the dtype's lowest finite "
               "value instead of -inf: a fully masked row gives a uniform row, not 0/0",
               old, new, site.take_imports())


def _min_text(site: Site, base: str) -> str:
    if site.is_tf:
        return f"{base}.dtype.min"
    return f"{site.spell('torch.finfo')}({base}.dtype).min"


def _fills(site: Site, root: cst.CSTNode) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """masked_fill / where calls under `root` that put -inf in: (old, new) pairs."""
    out: list[tuple[cst.CSTNode, cst.CSTNode]] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("masked_fill",
                                                                       "masked_fill_"):
                v = CallView(node, None, func.attr.value, func.value, None)
                value = v.arg(1, ("value",))
                if value is not None and neg_inf(value.value) and is_simple(func.value):
                    new_value = expr(_min_text(site, site.code(func.value)))
                    out.append((value.value, new_value))
                    return False
            v2 = view(site, node)
            if v2 is not None and v2.spec is not None and v2.spec.op == "where" and \
                    len(node.args) >= 3:
                for index in (1, 2):
                    other = node.args[3 - index].value
                    given = node.args[index].value
                    infinity = given if neg_inf(given) else _filled_with(given)
                    if infinity is not None and is_simple(other):
                        out.append((infinity, expr(_min_text(site, site.code(other)))))
                        return False
            return True

    root.visit(Finder())
    return out


def _filled_with(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The -inf of a constant fill, `tf.fill(shape, -np.inf)` or `torch.full(..., -inf)` /
    `full_like`, as the masked branch of a `where`; else None."""
    if not isinstance(node, cst.Call) or len(node.args) < 2:
        return None
    name = dotted_name(node.func)
    if name is None or name.rsplit(".", 1)[-1] not in ("fill", "full", "full_like"):
        return None
    value = node.args[1].value
    return value if neg_inf(value) else None


def _statement_of(site: Site, node: cst.CSTNode) -> cst.CSTNode | None:
    current: cst.CSTNode | None = node
    while current is not None and not isinstance(current, cst.SimpleStatementLine |
                                                 cst.BaseCompoundStatement):
        current = site.parent(current)
    return current


def _simple_lines(statement: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    """The simple statements in a statement, in source order (inside `if mask is not None:`
    too, where attention code usually fills)."""
    found: list[cst.SimpleStatementLine] = []

    class Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            found.append(node)
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    statement.visit(Lines())
    return found


def _fill_statement(site: Site, statement: cst.CSTNode,
                    name: str) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    if not isinstance(statement, cst.SimpleStatementLine):
        for line in reversed(_simple_lines(statement)):
            found = _fill_statement(site, line, name)
            if found:
                return found
        return []
    for small in statement.body:
        if isinstance(small, cst.Assign):
            targets = [site.code(t.target).strip() for t in small.targets]
            if name in targets:
                return _fills(site, small.value)
            for t in small.targets:  # scores[mask] = float('-inf')
                if isinstance(t.target, cst.Subscript) and \
                        site.code(t.target.value).strip() == name and neg_inf(small.value):
                    return [(small.value, expr(_min_text(site, name)))]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value == "masked_fill_" and \
                    site.code(func.value).strip() == name:
                return _fills(site, small.value)
    return []


# ---------------------------------------------------------------------------------- discarded guard

def t_discarded_guard(site: Site) -> Iterator[Edit]:
    """`tf.clip_by_value(p, lo, hi)` as a bare statement -> `p = tf.clip_by_value(p, lo, hi)`."""
    if site.request.rule != "discarded-guard" or not isinstance(site.node, cst.Call):
        return
    statement = site.parent(site.node)
    if not isinstance(statement, cst.Expr) or statement.value is not site.node:
        return
    target = expr(site.request.operand.strip())
    if not is_simple(target) or not isinstance(target, cst.Name | cst.Attribute):
        return
    new = cst.Assign(targets=[cst.AssignTarget(target=target)], value=site.node,
                     semicolon=statement.semicolon)
    yield Edit("clamp", "assign-guard", f"assign the guard's result back to "
               f"`{site.request.operand.strip()}`: clamp and clip return a new tensor",
               statement, new, (), ())


# ---------------------------------------------------------------------------------- registry

Transform = Callable[[Site], Iterator[Edit]]

# The rule's own fix first where a pattern has one, then developers' order of kinds.
TRANSFORMS: tuple[Transform, ...] = (
    t_log_softmax, t_log_softmax_picked, t_log_softmax_ratio, t_log_of_exp,
    t_bce_hand_written, t_log_sigmoid, t_bce_logits, t_logsumexp, t_log_mean_exp,
    t_exp_normalised, t_log1p, t_expm1, t_tanh,
    t_normalize, t_tf_norm_eps, t_xlogy, t_logit_eps, t_divide_no_nan, t_pow_abs,
    t_double_where, t_atan2, t_masked_fill, t_float32_scores, t_discarded_guard,
    t_root_divisor_eps, t_epsilon, t_clamp, t_where, t_float32_eps,
)


def edits_for(site: Site, strict: bool = False) -> list[Edit]:
    """Every edit the transforms propose for the site, in TRANSFORMS order. A transform that
    fails on code it did not foresee costs only its own candidates (`strict` re-raises, for
    the tests)."""
    out: list[Edit] = []
    for transform in TRANSFORMS:
        try:
            out.extend(transform(site))
        except (Unsupported, cst.ParserSyntaxError):
            site.take_imports()
        except Exception:
            site.take_imports()
            if strict:
                raise
    return out
