"""A Keras layer configured in float16 gets a float32 twin with its weights
(`Entry.in_dtype`), so its trigger is checked in float32 too (analyzers/dynamic/precision.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tensorflow as tf
import torch

from analyzers.dynamic.entries import EntryConfig, build_configured
from analyzers.dynamic.precision import mark_precision

# RMSNorm whose epsilon is 0 in float16: an all-zero token is 0 * rsqrt(0) = NaN.
LAYER = """\
import tensorflow as tf


class TinyRMSNorm(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.scale = self.add_weight(name="scale", shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        normed = x * tf.math.rsqrt(tf.reduce_mean(tf.square(x), axis=-1, keepdims=True) + 1e-8)
        return normed * tf.cast(self.scale, x.dtype)
"""


@pytest.fixture
def layer_repo(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "tfprecnorm.py").write_text(LAYER, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("tfprecnorm", None)
    while str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def test_a_keras_layer_in_float16_is_rerun_in_float32_with_its_weights(
        layer_repo: Path) -> None:
    entry = build_configured(layer_repo, EntryConfig(
        "tfprecnorm:TinyRMSNorm", ("float16[2,16]",), {"dtype": "float16"}, "float16", None),
        seed=0)
    zero_token = torch.cat([torch.zeros(1, 16), torch.ones(1, 16)]).half()
    output = entry.call([tf.constant(zero_token.numpy())])
    assert not bool(tf.reduce_all(tf.math.is_finite(output)))
    entry.fn.set_weights([w * 3 for w in entry.fn.get_weights()])  # the twin takes them
    twin = entry.in_dtype("float32")
    assert twin is not None and twin.fn.dtype == "float32"
    assert [float(w[0]) for w in twin.fn.get_weights()] == [3.0]
    path = str(layer_repo / "tfprecnorm.py")
    assert mark_precision(entry, path, frozenset({9}), "rsqrt", [zero_token]) == \
        {"dtype": "float16", "mode": "cast", "float32": "finite"}
