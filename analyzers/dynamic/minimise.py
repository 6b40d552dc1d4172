"""Delta debugging of a trigger: chunks of each input go back to a plain base value (0 where
the box allows it) while the trigger persists, so a reproducer shows the few values that
matter instead of a wall of numbers. Used for reproducers, weights and script values.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import torch

from analyzers.dynamic.specs import InputSpec


def base_value(spec: InputSpec) -> float:
    return 0.0 if spec.lo <= 0 <= spec.hi else spec.lo


def minimise(
    inputs: list[torch.Tensor],
    specs: list[InputSpec],
    still_fails: Callable[[list[torch.Tensor]], bool],
    budget: int = 300,
) -> list[torch.Tensor]:
    """ddmin over elements: reset chunks to the base value while the trigger persists."""
    bases = [torch.full_like(x, base_value(spec)) for x, spec in zip(inputs, specs, strict=True)]
    return minimise_toward(inputs, bases, still_fails, budget)


def minimise_toward(
    inputs: list[torch.Tensor],
    bases: Sequence[torch.Tensor | None],
    still_fails: Callable[[list[torch.Tensor]], bool],
    budget: int,
    seconds: float = math.inf,
) -> list[torch.Tensor]:
    """ddmin over elements: chunks of each input go back to its base (same shape; None: the
    input is left as it is) while the trigger persists, within `budget` trials and `seconds`."""
    current = [x.detach().clone() for x in inputs]
    spent, started = 0, time.perf_counter()

    def exhausted() -> bool:
        return spent >= budget or time.perf_counter() - started > seconds

    for which, base in enumerate(bases):
        if base is None:
            continue
        natural = base.detach().reshape(-1).to(current[which].dtype)
        differing = [
            int(i) for i in torch.nonzero(current[which].reshape(-1) != natural).reshape(-1)
        ]
        chunks = 2
        while differing and not exhausted():
            size = max(1, len(differing) // chunks)
            removed = False
            for start in range(0, len(differing), size):
                if exhausted():
                    break
                chunk = differing[start : start + size]
                trial = [x.clone() for x in current]
                flat = trial[which].reshape(-1)
                flat[chunk] = natural[chunk]
                trial[which] = flat.reshape(current[which].shape)
                spent += 1
                if still_fails(trial):
                    current = trial
                    gone = set(chunk)
                    differing = [i for i in differing if i not in gone]
                    removed = True
                    break
            if not removed:
                if size == 1:
                    break
                chunks = min(len(differing), chunks * 2)
    return current
