"""The op catalogue against docs/numerics.md and against the real PyTorch it describes."""

from __future__ import annotations

import math

import pytest
import torch

from analyzers.catalogue import CATALOGUE, KNOWN_OPS, normalise_qualname
from analyzers.dtypes import DTYPES, add_in, round_to

NUMERICS_OPS = {
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "div",
    "exp",
    "expm1",
    "cosh",
    "sinh",
    "softplus",
    "pow",
    "acos",
    "asin",
    "atanh",
    "lgamma",
    "digamma",
    "arange",
    "cross_entropy",
    "log_softmax",
    "softmax",
    "atan2",
    "norm",
    "std",
    "binary_cross_entropy",
    "logsumexp",
    "xlogy",
    "cdist",
    "where",
    "linalg",
}
TORCH_DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}


def _resolve(qualname: str) -> object:
    obj: object = torch
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def test_at_least_seventy_distinct_function_names() -> None:
    assert len(CATALOGUE.function_names()) >= 70


def test_every_op_of_numerics_md_is_catalogued() -> None:
    assert NUMERICS_OPS <= KNOWN_OPS


def test_every_one_of_the_fifteen_patterns_has_an_entry() -> None:
    covered = {p for spec in CATALOGUE.entries for p in spec.patterns}
    assert covered >= set(range(1, 16))


def test_every_risky_op_says_how_it_fails_and_what_to_minimise() -> None:
    for spec in CATALOGUE.entries:
        if spec.kind == "risky":
            assert spec.forward_invalid, spec.op
            assert spec.suspect_loss, spec.op
            if spec.requires == "below_exp_max":
                assert set(spec.thresholds) == set(DTYPES), spec.op


@pytest.mark.parametrize(
    "qualname", sorted(q for s in CATALOGUE.entries for f, q in s.qualnames() if f == "torch")
)
def test_torch_names_exist_in_installed_torch(qualname: str) -> None:
    assert callable(_resolve(qualname))


@pytest.mark.parametrize(
    "method", sorted({m for s in CATALOGUE.entries for m in s.methods if s.qualnames()})
)
def test_tensor_methods_exist(method: str) -> None:
    known_elsewhere = {"logit", "clip", "arctan2"}
    assert hasattr(torch.Tensor, method) or method in known_elsewhere, method


def test_lookup_folds_framework_aliases() -> None:
    assert normalise_qualname("tensorflow.compat.v1.log") == "tensorflow.log"
    found = CATALOGUE.lookup("tensorflow.compat.v1.log")
    assert found is not None and found[0].op == "log" and found[1] == "tensorflow"
    assert CATALOGUE.lookup("torch.Tensor.sqrt") is not None
    assert CATALOGUE.lookup("torch.matmul") is None
    assert CATALOGUE.operator("/") is CATALOGUE.by_op["div"]
    assert CATALOGUE.method("rsqrt") is CATALOGUE.by_op["rsqrt"]


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_dtype_limits_match_torch_finfo(name: str) -> None:
    info = torch.finfo(TORCH_DTYPES[name])
    lim = DTYPES[name]
    assert lim.max == pytest.approx(info.max)
    assert lim.tiny == pytest.approx(info.tiny)
    assert lim.eps == pytest.approx(info.eps)
    assert (
        lim.smallest_subnormal == pytest.approx(info.smallest_normal * info.eps, rel=0.01)
        or name == "bfloat16"
    )
    assert lim.exp_max == pytest.approx(math.log(info.max), rel=1e-6)


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_exp_overflows_exactly_past_the_catalogued_threshold(name: str) -> None:
    dtype = TORCH_DTYPES[name]
    lim = DTYPES[name]
    assert torch.isfinite(torch.exp(torch.tensor(lim.exp_max - 0.01, dtype=dtype)))
    assert torch.isinf(torch.exp(torch.tensor(lim.exp_max + 0.01, dtype=dtype)))


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32"])
def test_softmax_gap_where_a_probability_becomes_exactly_zero(name: str) -> None:
    dtype = TORCH_DTYPES[name]
    gap = DTYPES[name].softmax_zero_gap
    at = torch.softmax(torch.tensor([0.0, -(gap + 1)], dtype=dtype), dim=0)
    before = torch.softmax(torch.tensor([0.0, -(gap - 8)], dtype=dtype), dim=0)
    assert at[1].item() == 0.0
    assert before[1].item() > 0.0


@pytest.mark.parametrize(
    "value",
    [1e-8, 1e-10, 3e-8, 6e-8, 1e-4, 0.1, 1.0 + 1e-3, 65519.0, 70000.0, 3.14159, -2.5e-5, 1e38],
)
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32"])
def test_rounding_matches_torch(value: float, name: str) -> None:
    expected = torch.tensor(value, dtype=TORCH_DTYPES[name]).item()
    assert round_to(value, name) == expected


def test_epsilon_absorption_and_underflow_are_as_numerics_md_says() -> None:
    assert add_in(1.0, 1e-10, "float32") == 1.0
    assert add_in(1.0, 1e-10, "float64") != 1.0
    assert round_to(1e-8, "float16") == 0.0
    assert add_in(1.0, 1e-3, "bfloat16") == 1.0


def _lookup_path(root: object, parts: list[str]) -> bool:
    obj = root
    try:
        for part in parts:
            obj = getattr(obj, part)
    except AttributeError:
        return False
    return callable(obj)


TF_NAMES = sorted(
    q
    for s in CATALOGUE.entries
    for _, q in s.qualnames()
    if q.split(".")[0] in ("tensorflow", "keras")
)


@pytest.mark.parametrize("qualname", TF_NAMES)
def test_tensorflow_and_keras_names_exist(qualname: str) -> None:
    """TF2 names in `tf`, TF1 names in `tf.compat.v1` (what `tf.log` means), Keras 3 in
    `keras`, Keras 2 backend functions (`K.log`) in `tf_keras`."""
    import keras
    import tensorflow as tf
    import tf_keras

    parts = qualname.split(".")
    roots: list[tuple[object, list[str]]] = []
    if parts[0] == "tensorflow":
        roots = [(tf, parts[1:]), (tf.compat.v1, parts[1:])]
        if parts[1] == "keras":
            roots.append((tf_keras, parts[2:]))
    else:
        roots = [(keras, parts[1:]), (tf_keras, parts[1:])]
    assert any(_lookup_path(root, rest) for root, rest in roots), qualname


NUMPY_MATH_NAMES = sorted(
    q for s in CATALOGUE.entries for _, q in s.qualnames() if q.split(".")[0] in ("numpy", "math")
)


@pytest.mark.parametrize("qualname", NUMPY_MATH_NAMES)
def test_numpy_and_math_names_exist(qualname: str) -> None:
    import importlib

    parts = qualname.split(".")
    assert _lookup_path(importlib.import_module(parts[0]), parts[1:]), qualname


# ------------------------------------------------ subnormals: what each framework keeps


def _exp_subnormal(framework: str, dtype: str) -> float:
    """exp of an exponent whose exact result is subnormal in `dtype`, as the framework
    computes it on this machine's CPU."""
    exponent = {"float32": -100.0, "float64": -720.0}[dtype]
    if framework == "torch":
        return float(torch.exp(torch.tensor(exponent, dtype=TORCH_DTYPES[dtype])))
    if framework == "numpy":
        import numpy as np

        return float(np.exp(np.dtype(dtype).type(exponent)))
    import tensorflow as tf

    return float(tf.exp(tf.constant(exponent, dtype=getattr(tf, dtype))))


@pytest.mark.parametrize("framework", ["torch", "numpy", "tensorflow"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_subnormal_flushing_is_what_the_framework_does(framework: str, dtype: str) -> None:
    from analyzers.dtypes import FLUSHES_SUBNORMALS, smallest_positive

    value = _exp_subnormal(framework, dtype)
    if FLUSHES_SUBNORMALS[framework]:
        assert value == 0.0
        assert smallest_positive(dtype, framework) == DTYPES[dtype].tiny
    else:
        assert 0.0 < value < DTYPES[dtype].tiny
        assert smallest_positive(dtype, framework) == DTYPES[dtype].smallest_subnormal


def test_the_static_pass_knows_tensorflow_flushes_exp_to_zero() -> None:
    """sqrt(exp(clip(z, -100, 87))): exp(-100) is 3.8e-44 in torch but 0.0 in TensorFlow,
    where sqrt's gradient is then inf."""
    from analyzers.static import scan_source

    code = (
        "import tensorflow as tf\nimport torch\n"
        "def f(z):\n    return tf.sqrt(tf.exp(tf.clip_by_value(z, -100.0, 87.0)))\n"
        "def g(z):\n    return torch.sqrt(torch.exp(torch.clamp(z, -100.0, 87.0)))\n"
    )
    scan = scan_source(code, "m.py")
    assert [(f.line, f.op) for f in scan.findings] == [(4, "sqrt")]
    assert "flushes its subnormal results" in scan.findings[0].why
