"""What counts as an epsilon guard: a small positive literal (below 1e-3) or a name that says
so (`eps`, `self.variance_epsilon`), added to the value it keeps away from 0.

One notion for two readers: the fix pass, which looks for the sum an epsilon vanishes from,
and the publishing policy (analyzers/trust.py), which asks whether an operand is written
`a + eps`. Such an operand reaches 0 only when `a` goes below 0, which the author's epsilon
says it never does.
"""

from __future__ import annotations

import functools
import re

import libcst as cst

SMALL = 1e-3
# `eps` or `epsilon` as a whole part of a name: `eps`, `adam_eps`, `eps2`, `EPSILON`,
# `layerNormEps`; not the letters inside another word (`steps`, `num_reps`), whose sum
# `total + num_steps` is no guard.
EPS_NAME = re.compile(
    r"(^|_)(eps|epsilon|EPS|EPSILON|Eps|Epsilon)(\d*)(_|$)"
    r"|(?<=[a-z0-9])(Eps|Epsilon)(\d*)([A-Z_]|$)"
)
# What a guard parameter that has no default is given when numcheck calls the function itself
# (analyzers/dynamic/signatures.py): positive, as every caller passes it, and large enough to
# be one in float16 too (1e-8 is 0.0 there).
GUARD_VALUE = 1e-6


def is_epsilon_name(name: str) -> bool:
    """Does the last part of a dotted name say epsilon (`self.variance_epsilon`)?"""
    return EPS_NAME.search(name.rsplit(".", 1)[-1]) is not None


def is_small_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Float | cst.Integer) and 0 < float(node.evaluated_value) < SMALL


def is_epsilon(node: cst.BaseExpression, text: str) -> bool:
    """`node` (written `text`) is an epsilon: a small positive literal, or a name or attribute
    whose last part says eps (`eps`, `self.eps`, `layer_norm_epsilon`)."""
    if is_small_literal(node):
        return True
    return isinstance(node, cst.Name | cst.Attribute) and is_epsilon_name(text)


@functools.lru_cache(maxsize=1024)
def guarded_part(operand: str) -> str | None:
    """`a` when the operand's text is `a + eps` (or `eps + a`) at its top level, else None;
    also None for text that is not one expression. Cached: one review asks it of the same
    confirmed finding for each place that decides whether it is inline."""
    try:
        node = cst.parse_expression(operand.strip())
    except cst.ParserSyntaxError:
        return None
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, cst.Add):
        return None
    module = cst.Module(body=[])
    for eps, other in ((node.right, node.left), (node.left, node.right)):
        if is_epsilon(eps, module.code_for_node(eps)):
            return module.code_for_node(other).strip()
    return None
