"""docs/numerics.md against the code and the installed frameworks: the facts on that page
that no other test checks, and the page's tables against `analyzers.dtypes` and the pattern
numbers the corpus accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from analyzers.dtypes import DTYPES
from bench.corpus import PATTERN_NUMBERS

PAGE = Path(__file__).resolve().parent.parent / "docs" / "numerics.md"
TORCH_DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}


def _cell(value: float) -> str:
    return f"{value:.5g}"


def test_the_dtype_table_is_the_code() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for name, lim in DTYPES.items():
        row = (
            "| "
            + " | ".join(
                [
                    name,
                    *(
                        _cell(v)
                        for v in (
                            lim.max,
                            lim.tiny,
                            lim.smallest_subnormal,
                            lim.eps,
                            lim.exp_max,
                            lim.softmax_zero_gap,
                        )
                    ),
                ]
            )
            + " |"
        )
        assert row in text, f"docs/numerics.md lacks the row {row}"


def test_the_page_numbers_every_pattern() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## 3. The fifteen patterns", 1)[1].split("\n## ", 1)[0]
    numbers = [int(n) for n in re.findall(r"^(\d+)\. \*\*", section, re.M)]
    assert tuple(numbers) == PATTERN_NUMBERS


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_smallest_subnormal_is_the_last_nonzero(name: str) -> None:
    dtype, sub = TORCH_DTYPES[name], DTYPES[name].smallest_subnormal
    assert torch.tensor(sub, dtype=dtype).item() == sub > 0
    assert torch.tensor(sub * 0.49, dtype=dtype).item() == 0.0


def test_float64_softmax_gap() -> None:
    gap = DTYPES["float64"].softmax_zero_gap
    at = torch.softmax(torch.tensor([0.0, -(gap + 1)], dtype=torch.float64), dim=0)
    before = torch.softmax(torch.tensor([0.0, -(gap - 8)], dtype=torch.float64), dim=0)
    assert at[1].item() == 0.0
    assert before[1].item() > 0.0


def test_torch_keeps_subnormals_tensorflow_flushes_them() -> None:
    tf = pytest.importorskip("tensorflow")
    assert torch.exp(torch.tensor(-100.0)).item() == pytest.approx(3.78e-44, rel=0.01)
    z = torch.tensor(-100.0, requires_grad=True)
    torch.sqrt(torch.exp(z)).backward()
    assert z.grad is not None and z.grad.item() == pytest.approx(9.7e-23, rel=0.01)

    assert float(tf.exp(tf.constant(-88.0))) == 0.0
    assert float(tf.exp(tf.constant(-87.3))) > 0.0  # about log(tiny): normals survive
    x = tf.constant(-100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sqrt(tf.exp(x))
    assert bool(tf.math.is_nan(tape.gradient(y, x)))
