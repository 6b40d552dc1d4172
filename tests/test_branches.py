"""Which flag values lead to a line (analyzers/dynamic/branches.py): a synthesised call sets
the flags the `if` statements around the flagged line test, instead of their defaults."""

from __future__ import annotations

import inspect
import math

from analyzers.dynamic.branches import branch_values


def probs_and_logits(ps=None, logits=None, is_multidimensional=True):  # type: ignore[no-untyped-def]
    """pyro's get_probs_and_logits, as the bug's commit had it."""
    if is_multidimensional:
        if ps is None:
            ps = logits
        else:
            logits = math.log(ps)
    else:
        if ps is None:
            ps = logits
        else:
            logits = math.log(ps) - math.log1p(-ps)  # the flagged line
    return ps, logits


def chained(x, fast=False, exact=True, legacy=False):  # type: ignore[no-untyped-def]
    if fast and not exact:
        return x
    elif legacy or exact:
        for _ in range(2):
            try:
                x = x + 1
            except ValueError:
                if not legacy:
                    x = math.log(x)  # under a loop, a try and a handler
        return x

    def inner(fast=True):  # noqa: E306 - its own parameters are not the function's
        if fast:
            return math.log(x)
        return x

    return inner()


def reduce(confmat, average, ignore=None):  # type: ignore[no-untyped-def]
    """torchmetrics' _jaccard_index_reduce, as the bug's commit had it."""
    if average == "binary":
        return confmat[1][1] / (confmat[0][1] + confmat[1][0] + confmat[1][1])
    elif average in ("micro", "macro") and ignore == 3:
        return 1 / confmat
    return confmat


def _line(fn, text: str) -> int:  # type: ignore[no-untyped-def]
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_the_else_of_a_flag_needs_it_false() -> None:
    line = _line(probs_and_logits, "math.log(ps) - math.log1p(-ps)")
    assert branch_values(probs_and_logits, line) == {"is_multidimensional": False}
    assert branch_values(probs_and_logits, _line(probs_and_logits, "logits = math.log(ps)\n")) == {
        "is_multidimensional": True
    }


def test_and_or_not_elif_loops_and_handlers() -> None:
    assert branch_values(chained, _line(chained, "return x\n")) == {"fast": True, "exact": False}
    # the elif: the first test false says nothing of an `and`; `legacy or exact` is not one
    # value; `not legacy` inside the handler is
    assert branch_values(chained, _line(chained, "x = math.log(x)")) == {"legacy": False}
    assert branch_values(chained, _line(chained, "return math.log(x)")) == {}
    assert branch_values(chained, 1) == {} and branch_values(len, 3) == {}


def test_a_mode_compared_with_a_constant_takes_that_constant() -> None:
    assert branch_values(reduce, _line(reduce, "return confmat[1][1]")) == {"average": "binary"}
    assert branch_values(reduce, _line(reduce, "return 1 / confmat")) == {
        "average": "micro",
        "ignore": 3,
    }
    assert branch_values(reduce, _line(reduce, "return confmat\n")) == {}


# fmt: off
def focal(inp, target, alpha=0.25, gamma=2.0, order=2):  # type: ignore[no-untyped-def]
    """kornia's binary focal loss, as the bug's commit had it (torch spelled as a method)."""
    probs = inp
    loss = -alpha * (1.0 - probs).pow(gamma) * target \
        - (1 - alpha) * probs ** gamma * (1.0 - target)  # a power spread over two lines
    return loss + abs(inp) ** order + pow(inp, alpha)
# fmt: on


def test_a_float_exponent_on_the_line_is_made_fractional() -> None:
    """`x ** gamma` has an infinite derivative at 0 only for 0 < gamma < 1, which the
    default 2.0 never reaches; an exponent elsewhere in the function is left alone."""
    from analyzers.dynamic.branches import FRACTIONAL_EXPONENT, exponent_values

    assert exponent_values(focal, _line(focal, "(1.0 - probs).pow(gamma)")) == {
        "gamma": FRACTIONAL_EXPONENT
    }
    assert exponent_values(focal, _line(focal, "probs ** gamma")) == {"gamma": 0.5}
    # `order` is the exponent too, and `alpha` the builtin pow's: the caller keeps an int
    # default (signatures.fits); both are on another line than the ones above
    assert exponent_values(focal, _line(focal, "abs(inp) ** order")) == {"order": 0.5, "alpha": 0.5}
    assert exponent_values(focal, _line(focal, "probs = inp")) == {}
