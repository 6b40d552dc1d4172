"""Epsilon fixes: an epsilon sized for the dtype, added where the op's domain needs it
(under a root divisor, in a TensorFlow norm's own `epsilon`).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from analyzers.catalogue import CATALOGUE, OpSpec
from analyzers.epsilon import is_small_literal
from analyzers.fix import bounds
from analyzers.fix.kinds.common import syntactically_nonneg, tf_call
from analyzers.fix.kinds.registry import listed, only, transform
from analyzers.fix.site import (
    Edit,
    Site,
    atomic,
    atomic_text,
    expr,
    operand_node,
    replace_in,
    substitute_operand,
    view,
)

TF_NORM_PARAMETERS = {  # positional order after the tensor
    "tensorflow.norm": ("ord", "axis", "keepdims", "name"),
    "tensorflow.linalg.norm": ("ord", "axis", "keepdims", "name"),
    "tensorflow.math.reduce_euclidean_norm": ("axis", "keepdims", "name"),
}


# an epsilon moves the operand away from 0: it serves the ops whose domain excludes 0 (the
# catalogue's `requires`), where the catalogue lists the kind
EPSILON_DOMAINS = ("positive", "nonzero")


def takes_epsilon(spec: OpSpec) -> bool:
    """An op whose catalogue entry lists an epsilon, for a domain an epsilon reaches."""
    return spec.requires in EPSILON_DOMAINS and listed("epsilon")(spec)


def _terms(node: cst.BaseExpression, sign: int = 1) -> list[tuple[int, cst.BaseExpression]]:
    if (
        isinstance(node, cst.BinaryOperation)
        and not node.lpar
        and isinstance(node.operator, cst.Add | cst.Subtract)
    ):
        right_sign = sign if isinstance(node.operator, cst.Add) else -sign
        return _terms(node.left, sign) + [(right_sign, node.right)]
    return [(sign, node)]


@transform(
    "epsilon",
    "epsilon",
    only("sqrt"),
    "tf.norm(x, axis=a) -> tf.sqrt(tf.reduce_sum(tf.square(x), axis=a) + {eps})",
)
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
    if ord_node is not None and site.code(ord_node) not in (
        "2",
        "2.0",
        "'euclidean'",
        '"euclidean"',
        "'fro'",
        '"fro"',
    ):
        return
    named.pop("name", None)
    arguments = "".join(f", {key}={site.code(value)}" for key, value in named.items())
    eps = bounds.literal(bounds.epsilon_under_root(site.request.dtype))
    sqrt, total = site.spell("tensorflow.sqrt"), site.spell("tensorflow.reduce_sum")
    squares = tf_call(site, "square", site.code(x))
    text = f"{sqrt}({total}({squares}{arguments}) + {eps})"
    yield Edit(
        "epsilon",
        "epsilon",
        f"the root of the sum of squares plus {eps}: "
        "finite gradient for an all-zero vector, where tf.norm's is 0/0",
        site.node,
        expr(text),
        site.take_imports(),
        (),
    )


@transform("epsilon", "epsilon-under-root", only("div"), "y / sqrt(v) -> y / sqrt(v + {eps})")
def t_root_divisor_eps(site: Site) -> Iterator[Edit]:
    """`x / sqrt(v)` -> `x / sqrt(v + eps)`: an epsilon after the root (`sqrt(v) + eps`)
    keeps the quotient finite but not the root's own gradient at 0 (1 / (2 sqrt(0))); under
    the root both stay finite, and the root moves by about sqrt(eps) (LayerNorm's form)."""
    request = site.request
    if request.op != "div":
        return
    divisor = operand_node(site)
    v = view(site, divisor)
    inner = v.operand() if v is not None and v.spec is not None and v.spec.op == "sqrt" else None
    if inner is None:
        return
    eps = bounds.literal(bounds.epsilon_under_root(request.dtype))
    bare = inner.with_changes(lpar=[], rpar=[]) if inner.lpar else inner
    new_inner = expr(f"{site.code(bare)} + {eps}")
    if v is not None and v.receiver is not None:  # `power.sqrt()`: `(power + eps).sqrt()`
        new_inner = atomic(new_inner)
    yield substitute_operand(
        site,
        lambda d: site.code(replace_in(d, inner, new_inner)),
        "epsilon",
        "epsilon-under-root",
        f"add {eps} under the root of the divisor: the quotient and the "
        "root's gradient stay finite where the sum reaches 0",
    )


@transform("epsilon", "epsilon", takes_epsilon)
def t_epsilon(site: Site) -> Iterator[Edit]:
    request = site.request
    spec = CATALOGUE.by_op.get(request.op)
    if spec is None or not takes_epsilon(spec):
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
            text = site.code(kept[0][1]) if kept[0][0] > 0 else "-" + atomic_text(site, kept[0][1])
            for sign, term in kept[1:]:
                text += (" + " if sign > 0 else " - ") + site.code(term)
            return f"{text} + {eps_text}"

        old = site.code(intended[0][1])
        yield substitute_operand(
            site,
            rebuild,
            "epsilon",
            "epsilon",
            f"the epsilon {old} guards nothing in {request.dtype}; "
            f"add {eps_text} next to the value that reaches 0",
        )
        return
    if not (request.nonnegative or syntactically_nonneg(site, operand)):
        return
    if request.op == "pow":
        return
    yield substitute_operand(
        site,
        lambda x: f"{site.code(x)} + {eps_text}",
        "epsilon",
        "epsilon",
        f"add {eps_text} (normal in {request.dtype}) to the "
        "non-negative operand: keeps the gradient flowing",
    )
