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

# The minimiser is anytime: every step it keeps still fails, so one stopped early still hands
# on a proof, only with more values left as the search drew them. A trial re-runs the entry and
# its gradient; through a large function run op by op (JAX with jit off: jax-md's ReaxFF
# valency term) that is about a second, and 300 trials overran the finding's whole deadline
# after the search had found the trigger in its first evaluation.
MINIMISE_SECONDS = 8.0


def base_value(spec: InputSpec) -> float:
    return 0.0 if spec.lo <= 0 <= spec.hi else spec.lo


def minimise(
    inputs: list[torch.Tensor],
    specs: list[InputSpec],
    still_fails: Callable[[list[torch.Tensor]], bool],
    budget: int = 300,
    seconds: float = MINIMISE_SECONDS,
) -> list[torch.Tensor]:
    """ddmin over elements: reset chunks to the base value while the trigger persists. The
    inputs that stand for a parameter's attributes go first: a trigger that needs none of
    those constants at a made-up value is one the code's users can meet with their own
    (analyzers/trust.py), and a minimiser stopped by its time keeps what it reached."""
    bases = [torch.full_like(x, base_value(spec)) for x, spec in zip(inputs, specs, strict=True)]
    constants = [i for i, spec in enumerate(specs) if spec.attribute]
    if constants:  # all of them at once first: one trial where a slow entry allows few
        trial = [bases[i] if i in constants else x for i, x in enumerate(inputs)]
        if still_fails(trial):
            inputs = trial
            budget -= 1
    order = sorted(range(len(specs)), key=lambda i: not specs[i].attribute)
    return minimise_toward(inputs, bases, still_fails, budget, seconds, order)


def minimise_toward(
    inputs: list[torch.Tensor],
    bases: Sequence[torch.Tensor | None],
    still_fails: Callable[[list[torch.Tensor]], bool],
    budget: int,
    seconds: float = math.inf,
    order: Sequence[int] | None = None,
) -> list[torch.Tensor]:
    """ddmin over elements: chunks of each input go back to its base (same shape; None: the
    input is left as it is) while the trigger persists, within `budget` trials and `seconds`,
    the inputs taken in `order` (by default as given)."""
    current = [x.detach().clone() for x in inputs]
    spent, started = 0, time.perf_counter()

    def exhausted() -> bool:
        return spent >= budget or time.perf_counter() - started > seconds

    for which in range(len(bases)) if order is None else order:
        base = bases[which]
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
