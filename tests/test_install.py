"""The development install is the lean one the project promises: tensorflow-cpu, never the full
`tensorflow` wheel beside it (tf_keras declares that one; scripts/setup installs tf_keras from
requirements-no-deps.txt without it)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_tensorflow_cpu_is_the_only_tensorflow() -> None:
    if not _installed("tensorflow-cpu"):
        pytest.skip("no TensorFlow in this install (scripts/setup --dev installs it)")
    assert not _installed("tensorflow"), (
        "the full tensorflow wheel is installed beside tensorflow-cpu; "
        "run ./scripts/setup --dev, which removes it"
    )
    import tensorflow as tf
    import tf_keras

    assert tf_keras.__version__ == tf.__version__
    layer = tf_keras.layers.Dense(2)
    assert tuple(layer(tf.ones((3, 4))).shape) == (3, 2)


def test_every_no_deps_requirement_is_pinned_and_installed() -> None:
    lines = (ROOT / "requirements-no-deps.txt").read_text(encoding="utf-8").splitlines()
    pins = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert pins
    dev_install = _installed("tensorflow-cpu")  # what scripts/setup --dev installs
    for pin in pins:
        name, sep, version = pin.partition("==")
        assert sep and version, f"not pinned: {pin}"
        if dev_install:
            assert importlib.metadata.version(name) == version, pin
