"""The vocabulary of the analysis: method names, annotations and constants it recognises.

Tables, not logic: add a name here when a real codebase uses a spelling we miss.
"""

from __future__ import annotations

import re

from analyzers.catalogue import CATALOGUE
from analyzers.static.rules import RuleId

TENSOR_ANNOTATION = re.compile(
    r"\b(Tensor|ndarray|Array|ArrayLike|Variable|Float\[|Int\[|Shaped\[|TensorType)"
)
SCALAR_ANNOTATION = re.compile(r"^(int|float|bool|str|complex)$")
MODEL_METHODS = ("forward", "call", "__call__", "training_step", "validation_step")
# The top-level modules a catalogued call starts with, and `tf_keras`, which the catalogue
# reads as tensorflow.keras (normalise_qualname).
FRAMEWORK_ROOTS: tuple[str, ...] = (
    *sorted({qual.split(".", 1)[0] for spec in CATALOGUE.entries for _, qual in spec.qualnames()}),
    "tf_keras",
)

# Tensor methods that are an operator spelled as a call: `x.add(1)` is `x + 1`.
ARITHMETIC_METHODS = {
    "add": "+",
    "sub": "-",
    "subtract": "-",
    "mul": "*",
    "multiply": "*",
}

# Tensor methods that hand back the same values (or a view of them).
SAME_VALUE_METHODS = frozenset(
    {
        "detach",
        "float",
        "double",
        "half",
        "bfloat16",
        "to",
        "cuda",
        "cpu",
        "contiguous",
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "unsqueeze",
        "squeeze",
        "flatten",
        "permute",
        "transpose",
        "t",
        "expand",
        "expand_as",
        "repeat",
        "clone",
        "type_as",
        "type",
        "numpy",
        "squeeze_",
        "unsqueeze_",
        "requires_grad_",
        "movedim",
        "narrow",
        "chunk",
        "split",
        "gather",
        "index_select",
        "masked_select",
        "roll",
        "flip",
        "tile",
        "astype",
    }
)
SAME_RANGE_REDUCTIONS = frozenset(
    {
        "mean",
        "max",
        "min",
        "amax",
        "amin",
        "median",
        "nanmean",
        "reduce_mean",
        "reduce_max",
        "reduce_min",
        "nanmedian",
    }
)
SUM_REDUCTIONS = frozenset({"sum", "reduce_sum", "nansum", "cumsum"})
SCALAR_METHODS = frozenset(
    {
        "item",
        "size",
        "dim",
        "numel",
        "tolist",
        "nelement",
        "ndimension",
        "get_shape",
        "element_size",
    }
)
BOOL_METHODS = frozenset(
    {
        "all",
        "any",
        "gt",
        "ge",
        "lt",
        "le",
        "eq",
        "ne",
        "isnan",
        "isinf",
        "isfinite",
        "logical_and",
        "logical_or",
        "logical_not",
    }
)
CONST_LIKE = {"ones_like": 1.0, "zeros_like": 0.0, "ones": 1.0, "zeros": 0.0}
NEG_INF_NAMES = ("math.inf", "numpy.inf", "torch.inf", "jax.numpy.inf", "numpy.Inf")
TENSOR_FACTORIES = frozenset(
    {
        "tensor",
        "as_tensor",
        "constant",
        "convert_to_tensor",
        "array",
        "asarray",
        "scalar_tensor",
        "full",
        "full_like",
        "Variable",
    }
)
# log(producer(x)) with a stable API: the rule each producer triggers.
LOG_PATTERNS = {
    "softmax": RuleId.LOG_SOFTMAX,
    "sigmoid": RuleId.LOG_SIGMOID,
    "one_minus_sigmoid": RuleId.LOG_SIGMOID,
    "sum_exp": RuleId.LOG_SUM_EXP,
    "one_plus": RuleId.LOG1P,
}
# exp(producer(x)): the producer whose log it undoes (probabilities from log-probabilities).
EXP_OF_LOG = {"log_softmax": "softmax", "logsigmoid": "sigmoid"}


# Framework helpers whose names say they return a Python number, not a tensor.
SCALAR_HELPER = re.compile(r"(^|_)(size|numel|ndim|dim|shape|len|count|rank)s?$|^(is_|has_)")
# Calls that stop the program unless their first argument holds, like `assert`.
CHECK_FUNCTIONS = frozenset(
    {"torch._check", "torch._check_value", "torch._assert", "torch._check_with", "jax.debug.check"}
)
# `tf.debugging.assert_positive(x)` and friends: the bound they establish on x.
ASSERT_BOUNDS: dict[str, tuple[float, bool]] = {
    "tensorflow.debugging.assert_positive": (0.0, True),
    "tensorflow.debugging.assert_non_negative": (0.0, False),
    "tensorflow.compat.v1.assert_positive": (0.0, True),
    "tensorflow.assert_positive": (0.0, True),
    "tensorflow.assert_non_negative": (0.0, False),
}

# TensorFlow's Euclidean norms are sqrt(reduce_sum(x * x)) with no special case at 0: their
# gradient is NaN for an all-zero vector (a producer in the catalogue, checked by the pass)
TF_EUCLIDEAN_NORMS = frozenset(CATALOGUE.by_op["norm"].functions["tensorflow"])

# Products whose float16 result overflows past 65504 before any scale applied afterwards
# (attention scores q @ k^T: docs/numerics.md #12); an upcast before the softmax is the fix
# practitioners use (the scores, then the softmax, in float32).
MATMULS = frozenset({"matmul", "bmm", "mm", "einsum", "baddbmm"})
UPCASTS = frozenset({"float", "double", "to", "cast", "astype"})
# tensor methods that may change the dtype (Value.dtype): those that name it, and the rest
CASTS_TO = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16"}
CASTS = frozenset({*CASTS_TO, "to", "type", "astype"})
