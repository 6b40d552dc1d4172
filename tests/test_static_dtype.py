"""Per-value dtypes in the static pass: an explicit cast (`x.float()`, `x.to(torch.float32)`,
`tf.cast(x, tf.float32)`) puts a value, and what is computed from it by type promotion, in
that dtype, whatever the unit's; `self.eps` set from a constructor default is that number.
"""

from __future__ import annotations

import pytest

from analyzers.config import Config
from analyzers.static import scan_source
from analyzers.static.values import UNKNOWN, Interval, Value, cast_target, promoted

HEADER = "import tensorflow as tf\nimport torch\n\n\ndef f(x: torch.Tensor):\n    v = x * x\n"


def flagged(line: str, dtype: str = "float16") -> list[tuple[str, str]]:
    scan = scan_source(HEADER + f"    return {line}\n", "m.py", Config(dtype=dtype))
    assert scan.error is None, scan.error
    return [(f.op, f.rule) for f in scan.findings]


@pytest.mark.parametrize(
    "line",
    [
        "torch.log(v.float() + 1e-8)",
        "torch.log(v.double() + 1e-8)",
        "torch.log(v.to(torch.float32) + 1e-8)",
        "torch.log(v.to(dtype=torch.float32) + 1e-8)",
        "torch.log(v.type(torch.float) + 1e-8)",
        "torch.sqrt(v.float() + 1e-8).to(x.dtype)",
        "tf.math.rsqrt(tf.cast(v, tf.float32) + 1e-8)",
        "tf.math.log(tf.cast(v, 'float32') + 1e-8)",
        "torch.log(v + v.float() * 0 + 1e-8)",  # float16 + float32 tensors: float32
    ],
)
def test_an_upcast_sum_keeps_its_epsilon_in_a_float16_unit(line: str) -> None:
    assert flagged(line) == []


@pytest.mark.parametrize(
    "line",
    [
        "torch.log(v + 1e-8)",
        "torch.log(v.float().half() + 1e-8)",  # cast back before the sum
        "torch.log(v.float().to(x.dtype) + 1e-8)",  # a runtime dtype: the unit's
        "tf.math.rsqrt(tf.cast(v, tf.int32) + 1e-8)",
    ],
)
def test_a_float16_sum_still_loses_its_epsilon(line: str) -> None:
    assert "eps-underflow-fp16" in {rule for _, rule in flagged(line)}, flagged(line)


def test_a_half_cast_in_a_float32_unit_is_checked_in_float16() -> None:
    assert flagged("torch.log(v + 1e-8)", "float32") == []
    assert [rule for _, rule in flagged("torch.log(v.half() + 1e-8)", "float32")] == [
        "eps-underflow-fp16"
    ]


def test_an_upcast_is_not_taken_for_a_wider_dtype_than_it_names() -> None:
    # 1e-50 is 0.0 in float32 too: the upcast does not save it
    assert flagged("torch.log(v.float() + 1e-50)") != []


ATTRIBUTE = """\
import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, eps: float = {eps}) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rsqrt((x * x).mean(-1) + self.eps)
"""


@pytest.mark.parametrize(
    ("eps", "dtype", "expected"),
    [
        ("1e-5", "float16", []),
        ("1e-8", "float32", []),
        ("1e-8", "float16", [("rsqrt", "eps-underflow-fp16")]),
        ("0.0", "float32", [("rsqrt", "unguarded-domain")]),
    ],
)
def test_self_attribute_set_from_a_constructor_default_is_that_number(
    eps: str, dtype: str, expected: list[tuple[str, str]]
) -> None:
    scan = scan_source(ATTRIBUTE.format(eps=eps), "m.py", Config(dtype=dtype))
    assert [(f.op, f.rule) for f in scan.findings] == expected


def test_an_attribute_assigned_again_elsewhere_is_not_taken_as_its_default() -> None:
    source = (
        ATTRIBUTE.format(eps="1e-5") + "\n    def decay(self) -> None:\n"
        "        self.eps = self.eps * 0.1\n"
    )
    scan = scan_source(source, "m.py", Config(dtype="float32"))
    assert [(f.op, f.rule) for f in scan.findings] == [("rsqrt", "unguarded-domain")]


def test_cast_target_and_promotion() -> None:
    assert [
        cast_target(t)
        for t in (
            "torch.float32",
            "tf.float16",
            "'bfloat16'",
            "torch.half",
            "torch.double",
            "torch.float",
            "x.dtype",
            "torch.int64",
        )
    ] == ["float32", "float16", "bfloat16", "float16", "float64", "float32", None, None]
    tensor = Value("tensor", Interval())
    assert promoted("float16", tensor, tensor.with_(dtype="float32")) == "float32"
    assert promoted("float32", tensor, tensor.with_(dtype="float16")) is None
    assert promoted("float32", tensor.with_(dtype="float16")) == "float16"
    assert promoted("float16", UNKNOWN.with_(kind="scalar", dtype="float32"), tensor) is None
