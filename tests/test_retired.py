"""torch 1 code on torch 2: a module that calls `torch.rfft`/`torch.irfft`, retired in torch
1.8 with nothing of the same name in their place, runs with them rebuilt on `torch.fft`
(retired.py), in the search and in the reproducer. The function below normalises a chain's
autocorrelation, computed the 2018 way, by its lag-0 term: a constant chain makes it 0/0.

The rebuilt functions are checked against NumPy's transforms; the proof goes through the
real harness in a child process (the local runner), real torch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness_support import confirmed_reproducer, run_findings, write_repo  # noqa: E402

from analyzers.dynamic import moved, retired  # noqa: E402
from analyzers.dynamic.writer import PlanError, _moved  # noqa: E402

CHAIN = """\
import torch


def lag_correlation(chain):
    n = chain.shape[0]
    centred = chain - chain.mean(dim=0, keepdim=True)
    padded = torch.cat([centred, torch.zeros_like(centred)], dim=0).transpose(0, -1)
    spectrum = torch.rfft(padded, signal_ndim=1, onesided=False)
    power = spectrum.pow(2).sum(-1, keepdim=True)
    power = torch.cat([power, torch.zeros_like(power)], dim=-1)
    lags = torch.irfft(power, signal_ndim=1, onesided=False)[..., :n]
    return (lags / lags[..., :1]).transpose(0, -1)
"""


def _complex(pairs: torch.Tensor) -> np.ndarray:
    return pairs[..., 0].numpy() + 1j * pairs[..., 1].numpy()


def test_the_rebuilt_transforms_are_torch_1s() -> None:
    """Halves, full spectra, normalisation and the way back, against NumPy's FFT."""
    x = torch.randn(3, 10, dtype=torch.float64)
    half = retired.torch_rfft(x, 1)
    assert half.shape == (3, 6, 2)
    np.testing.assert_allclose(_complex(half), np.fft.rfft(x.numpy()), atol=1e-12)
    full = retired.torch_rfft(x, 1, onesided=False)
    np.testing.assert_allclose(_complex(full), np.fft.fft(x.numpy()), atol=1e-12)
    np.testing.assert_allclose(
        retired.torch_rfft(x, 1, normalized=True).numpy(), half.numpy() / np.sqrt(10), atol=1e-12
    )
    for back in (
        retired.torch_irfft(full, 1, onesided=False),
        retired.torch_irfft(half, 1, signal_sizes=(10,)),
        retired.torch_ifft(full, 1)[..., 0],
    ):
        np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-12)
    grid = torch.randn(2, 4, 6, dtype=torch.float64)
    both = retired.torch_rfft(grid, 2)
    np.testing.assert_allclose(_complex(both), np.fft.rfft2(grid.numpy()), atol=1e-12)
    again = retired.torch_irfft(both, 2, signal_sizes=(4, 6))
    np.testing.assert_allclose(again.numpy(), grid.numpy(), atol=1e-12)


def test_a_retired_transform_runs_rebuilt_and_the_division_is_proven(tmp_path: Path) -> None:
    """The 0/0 of a constant chain is proven, and the reproducer, a fresh Python where
    `torch.rfft` does not exist, carries the rebuilt functions before it imports the code."""
    repo = write_repo(tmp_path, {"chains/__init__.py": "", "chains/stats.py": CHAIN})
    run = run_findings(
        repo,
        "chains/stats.py",
        ["lag_correlation"],
        finding_timeout=90,
        timeout=240,
        search_seconds=2.0,
        harvest=False,
        fix=False,
    )
    reproducer = confirmed_reproducer(repo, run)
    assert "def torch_rfft(" in reproducer and "torch.rfft = torch_rfft" in reproducer
    assert "torch.irfft = torch_irfft" in reproducer and "torch_ifft" not in reproducer


def test_only_retired_names_torch_lacks_are_rebuilt() -> None:
    """`torch.fft` is a module today: never replaced; the plan names only RETIRED's."""
    assert retired.used_in("y = torch.fft.rfft(x) + torch.stft(x, 4)") == []
    assert moved.restore_named_in("import torch\ny = torch.fft.fft(x)\n") == []
    assert _moved("torch.rfft") == "torch.rfft"
    with pytest.raises(PlanError):
        _moved("torch.fft")
    with pytest.raises(PlanError):
        _moved("torch.rfft;import os")
