"""Ops reached through an alias are the ops themselves (analyzers/static/prefilter.py).

On real pull requests these were misses: a package's own backend layer (`from . import
backend as K; K.exp(x)` in Keras, `backend.math.rsqrt(s)`) and a function kept on the module
(`self.attn_fn = F.softmax` in `__init__`, called as `self.attn_fn(scores)`).
"""

from __future__ import annotations

import pytest

from analyzers.static import scan_source


def _ops(code: str) -> list[tuple[int, str, str]]:
    scan = scan_source(code, "pkg/layers.py")
    assert scan.error is None
    return [(f.line, f.op, f.rule) for f in scan.findings]


@pytest.mark.parametrize(
    "imports",
    [
        "from . import backend as K",
        "from .. import backend as K",
        "from keras.src import backend as K",
        "from mypkg.core import ops as K",
    ],
)
def test_a_package_backend_layer_is_the_api_it_mirrors(imports: str) -> None:
    code = f"{imports}\n\n\ndef f(x, s):\n    return K.exp(x) + K.math.rsqrt(s)\n"
    assert [(line, op) for line, op, _ in _ops(code)] == [(5, "exp"), (5, "rsqrt")]


def test_other_package_modules_are_not_taken_for_a_backend() -> None:
    """`utils.log(message)` is a logger: only modules named like a backend layer count."""
    code = "from . import utils\n\n\ndef f(x):\n    utils.log('step')\n    return utils.exp(x)\n"
    assert _ops(code) == []


def test_a_backend_function_the_catalogue_does_not_know_stays_unknown() -> None:
    code = "from . import backend as K\n\n\ndef f(x):\n    return K.reshape(x, (2, -1))\n"
    assert _ops(code) == []


@pytest.mark.parametrize(
    ("framework", "softmax", "log"),
    [
        ("import torch\nimport torch.nn.functional as F", "F.softmax", "torch.log"),
        ("import tensorflow as tf", "tf.nn.softmax", "tf.math.log"),
    ],
)
def test_a_function_kept_on_the_module_is_that_function(
    framework: str, softmax: str, log: str
) -> None:
    code = (
        f"{framework}\n\n\nclass Attention:\n"
        "    def __init__(self):\n"
        f"        self.attn_fn = {softmax}\n\n"
        "    def forward(self, scores):\n"
        f"        return {log}(self.attn_fn(scores))\n"
    )
    assert _ops(code) == [(code.count("\n"), "log", "log-softmax")]


def test_a_kept_risky_function_is_checked_where_it_is_called() -> None:
    code = (
        "import torch\n\n\nclass Norm:\n"
        "    def __init__(self):\n        self.root = torch.sqrt\n\n"
        "    def forward(self, x):\n        return self.root(x)\n"
    )
    assert [(line, op) for line, op, _ in _ops(code)] == [(9, "sqrt")]


@pytest.mark.parametrize(
    ("imports", "framework"),
    [
        ("from torch_scatter import scatter_add", "torch"),
        ("import torchvision", "torch"),
        ("import flax.linen as nn", "jax"),
        ("import tensorflow_probability as tfp", "tensorflow"),
    ],
)
def test_a_library_built_on_a_framework_makes_its_tensors(imports: str, framework: str) -> None:
    """pytorch_geometric's `softmax(src, index)` imports only torch_scatter: `src.exp()` is a
    torch method call, which the dynamic pass can run."""
    code = f"{imports}\n\n\ndef softmax(src, index):\n    return src.exp()\n"
    scan = scan_source(code, "pkg/softmax.py")
    assert [(f.op, f.framework) for f in scan.findings] == [("exp", framework)]
