"""Framework functions retired with nothing of the same name in their place, rebuilt on
today's functions from what their documentation promised.

torch 1.8 removed `torch.rfft`, `torch.irfft` and `torch.ifft`, which held a complex number
as a trailing dimension of 2, for the `torch.fft` module, which takes complex tensors. pyro's
`autocorrelation` of 2018 calls `torch.rfft(centered, signal_ndim=1, onesided=False)` and
divides by the result's lag-0 term; on torch 2 every call fails on the missing name before the
division, and the finding could only end in an error. Unlike a move (moved.py) there is no
function to bind the old name to, so each is written here in a few lines on `torch.fft`: the
same transform, the same normalisation (`normalized`: 1/sqrt(n) both ways; otherwise none
forward and 1/n back), the same one-sided halves and the same real pairs. The reproducer
carries the same source (`source_lines`), so a reader sees what ran in place of the name.

moved.py binds these (`restore`) only where the code calls one and torch lacks it
(`_missing`), and only the names of `RETIRED`, so a plan can name nothing else. No torch at
import: the host writes reproducers without it.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any


def torch_rfft(
    input: Any, signal_ndim: int, normalized: bool = False, onesided: bool = True
) -> Any:
    """torch.rfft of torch 1.7: the real-to-complex transform of the last `signal_ndim`
    dimensions, as real pairs; `onesided=False` gives the full spectrum."""
    import torch

    dims = tuple(range(-signal_ndim, 0))
    norm = "ortho" if normalized else "backward"
    transform = torch.fft.rfftn if onesided else torch.fft.fftn
    return torch.view_as_real(transform(input, dim=dims, norm=norm))


def torch_irfft(
    input: Any,
    signal_ndim: int,
    normalized: bool = False,
    onesided: bool = True,
    signal_sizes: Sequence[int] | None = None,
) -> Any:
    """torch.irfft of torch 1.7: real pairs back to a real signal, the spectrum taken as
    conjugate-symmetric (of a full spectrum, `onesided=False`, only the first half is read,
    as torch 1.7 read it)."""
    import torch

    spectrum = torch.view_as_complex(input.contiguous())
    dims = tuple(range(-signal_ndim, 0))
    last = spectrum.shape[-1]
    if not onesided:
        spectrum = spectrum[..., : last // 2 + 1]
    if signal_sizes is None:
        signal_sizes = [*spectrum.shape[-signal_ndim:-1], last if not onesided else 2 * (last - 1)]
    norm = "ortho" if normalized else "backward"
    return torch.fft.irfftn(spectrum, s=list(signal_sizes), dim=dims, norm=norm)


def torch_ifft(input: Any, signal_ndim: int, normalized: bool = False) -> Any:
    """torch.ifft of torch 1.7: the inverse complex transform, real pairs in and out."""
    import torch

    dims = tuple(range(-signal_ndim, 0))
    norm = "ortho" if normalized else "backward"
    spectrum = torch.view_as_complex(input.contiguous())
    return torch.view_as_real(torch.fft.ifftn(spectrum, dim=dims, norm=norm))


# retired dotted name -> what numcheck runs in its place
RETIRED = {
    "torch.rfft": torch_rfft,
    "torch.irfft": torch_irfft,
    "torch.ifft": torch_ifft,
}


def used_in(source: str) -> list[str]:
    """The retired names `source` reads (`torch.rfft(`), sorted."""
    return sorted(name for name in RETIRED if f"{name}(" in source)


def source_lines(names: Sequence[str]) -> list[str]:
    """The reproducer's lines that bind the retired `names` as the search bound them: each
    rebuilt function's own source, then the binding."""
    names = [name for name in names if name in RETIRED]
    if not names:
        return []
    out = [
        f"# the code calls functions its framework has since retired: {', '.join(names)}; "
        "each is rebuilt on today's functions, as its documentation described it",
        "from collections.abc import Sequence",
        "from typing import Any",
        "",
    ]
    for name in names:
        out += [*inspect.getsource(RETIRED[name]).splitlines(), ""]
    out += [f"import {owner}" for owner in sorted({n.rpartition(".")[0] for n in names})]
    out += [f"{name} = {RETIRED[name].__name__}" for name in names]
    return [*out, ""]
