"""Find a concrete input that makes one op produce NaN/Inf, forward or in its gradient.

Stages, cheapest first, each stopping at the first trigger:
1. random restarts inside the box (RANUM);
2. snapping the best point: rounding to coarser grids, zeroing small values, equalising and
   the box's corners, which hits the measure-zero sets gradients only approach (std of a
   constant batch, the norm of a zero vector, lgamma at -2); a dozen runs, so it goes first;
3. sign-gradient steps on the suspect loss from the best starts (GRIST), clipped to the box,
   then snapping again from where they ended;
4. a gradient-free evolutionary fallback where gradients vanish (saturation, masks, ints).
Deterministic under a seed; bounded by seconds and evaluations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from analyzers.dynamic.entries import Entry, sample
from analyzers.dynamic.probe import OpProbe, tensors_in
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.suspect import suspect_loss

STAGES = ("restarts", "snap", "gradient", "snap", "evolution")


@dataclass(frozen=True)
class Budget:
    seconds: float = 5.0
    evaluations: int = 4000
    restarts: int = 32
    gradient_starts: int = 4
    gradient_steps: int = 150


@dataclass
class Evaluation:
    """One run of the entry under the probe."""

    reached: bool = False  # the watched op ran at all
    loss: float = math.inf
    forward: bool = False  # the op's output went non-finite from finite operands
    backward: bool = False  # the op's local derivative went non-finite
    reaches_output: bool = False
    error: str | None = None
    grads: list[torch.Tensor | None] = field(default_factory=list)


@dataclass
class Outcome:
    triggered: bool
    where: str | None = None  # "forward" | "backward"
    stage: str | None = None
    inputs: list[torch.Tensor] = field(default_factory=list)
    evaluations: int = 0
    seconds: float = 0.0
    reached: bool = False
    reaches_output: bool = False
    best_loss: float = math.inf
    error: str | None = None
    trace: list[tuple[int, float, str]] = field(default_factory=list)  # (eval, loss, stage)


def _finite(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point() and not value.is_complex():
            return True
        return bool(torch.isfinite(value).all())
    if isinstance(value, tuple | list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, float):
        return math.isfinite(value)
    return True


def _float_outputs(value: Any) -> list[torch.Tensor]:
    return [t for t in tensors_in(value) if t.is_floating_point() and t.requires_grad]


class Searcher:
    def __init__(self, entry: Entry, path: str, lines: frozenset[int], op: str,
                 dtype: str = "float32", seed: int = 0, budget: Budget | None = None) -> None:
        self.entry = entry
        self.op = op
        self.dtype = dtype
        self.probe = OpProbe(path, lines, op)
        if entry.framework == "tensorflow":
            from analyzers.dynamic.tf_backend import TFProbe

            self.tf_probe = TFProbe(path, lines, op)
        self.budget = budget or Budget()
        self.generator = torch.Generator().manual_seed(seed)
        self.count = 0
        self.started = 0.0
        self.best: tuple[float, list[torch.Tensor]] | None = None
        self.trace: list[tuple[int, float, str]] = []

    # ------------------------------------------------------------------ one evaluation
    def evaluate(self, inputs: Sequence[torch.Tensor], want_grad: bool = False) -> Evaluation:
        self.count += 1
        if self.entry.framework == "tensorflow":
            from analyzers.dynamic.tf_backend import evaluate_tf

            return evaluate_tf(self, list(inputs), want_grad)
        leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
        self.probe.reset()
        try:
            with self.probe:
                output = self.entry.call(leaves)
        except Exception as exc:  # the PR's code may raise on any input
            return Evaluation(error=f"{type(exc).__name__}: {exc}")
        hits = self.probe.hits
        if not hits:
            return Evaluation()
        result = Evaluation(reached=True)
        losses: list[torch.Tensor] = []
        for hit in hits:
            # softmax's -inf entries are the mask itself; elsewhere an already non-finite
            # operand means the NaN/Inf was made upstream, not by this op
            operand_ok = (not bool(torch.isnan(hit.operand).any())) if self.op == "softmax" \
                else _finite(hit.operand)
            if operand_ok and not _finite(hit.output):
                result.forward = True
            if operand_ok and hit.operand.is_floating_point():
                loss_value = suspect_loss(self.op, hit.operand, self.dtype)
                if loss_value is not None:
                    losses.append(loss_value)
            if not result.forward and hit.operand.requires_grad and hit.output.requires_grad:
                (local,) = torch.autograd.grad(hit.output, hit.operand,
                                               torch.ones_like(hit.output), retain_graph=True,
                                               allow_unused=True)
                if local is not None and not _finite(local):
                    result.backward = True
        if losses:
            loss = torch.stack([v.reshape(()) for v in losses]).min()
            result.loss = float(loss.detach())
            float_leaves = [x for x in leaves if x.requires_grad]
            if want_grad and loss.requires_grad and float_leaves:
                result.grads = list(torch.autograd.grad(loss, float_leaves, retain_graph=True,
                                                        allow_unused=True))
        if result.forward:
            result.reaches_output = not _finite(output)
        elif result.backward:
            outputs = [o for o in _float_outputs(output) if _finite(o)]
            float_leaves = [x for x in leaves if x.requires_grad]
            if outputs and float_leaves:
                total = torch.stack([o.sum() for o in outputs]).sum()
                grads = torch.autograd.grad(total, float_leaves, allow_unused=True)
                result.reaches_output = not all(g is None or _finite(g) for g in grads)
        return result

    # ------------------------------------------------------------------ bookkeeping
    def _out_of_budget(self) -> bool:
        return (self.count >= self.budget.evaluations
                or time.perf_counter() - self.started > self.budget.seconds)

    def _note(self, inputs: list[torch.Tensor], evaluation: Evaluation, stage: str) -> bool:
        if evaluation.reached and (self.best is None or evaluation.loss < self.best[0]):
            self.best = (evaluation.loss, [x.detach().clone() for x in inputs])
            self.trace.append((self.count, evaluation.loss, stage))
        return evaluation.forward or evaluation.backward

    def _outcome(self, inputs: list[torch.Tensor], evaluation: Evaluation,
                 stage: str) -> Outcome:
        return Outcome(True, "forward" if evaluation.forward else "backward", stage,
                       [x.detach().clone() for x in inputs], self.count,
                       time.perf_counter() - self.started, True, evaluation.reaches_output,
                       evaluation.loss, trace=self.trace)

    def _clip(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        out = []
        for x, spec in zip(inputs, self.entry.specs, strict=True):
            if spec.is_float:
                x = x.clamp(spec.lo, spec.hi)
            out.append(x)
        return out

    # ------------------------------------------------------------------ the stages
    def run(self, start: list[torch.Tensor] | None = None) -> Outcome:
        self.started = time.perf_counter()
        last_error: str | None = None
        reached = False
        for stage in STAGES:
            for inputs in self._stage(stage, start):
                if self._out_of_budget():
                    break
                evaluation = self.evaluate(inputs)
                if evaluation.error:
                    last_error = evaluation.error
                    continue
                reached = reached or evaluation.reached
                if self._note(inputs, evaluation, stage):
                    return self._outcome(inputs, evaluation, stage)
            if self._out_of_budget():
                break
        return Outcome(False, evaluations=self.count,
                       seconds=time.perf_counter() - self.started, reached=reached,
                       best_loss=self.best[0] if self.best else math.inf,
                       error=None if reached else last_error, trace=self.trace)

    def _stage(self, stage: str, start: list[torch.Tensor] | None) -> Any:
        if stage == "restarts":
            if start is not None:
                yield self._clip(start)
            for _ in range(self.budget.restarts):
                yield [sample(spec, self.generator) for spec in self.entry.specs]
        elif stage == "gradient":
            yield from self._gradient()
        elif stage == "snap":
            yield from self._snap()
        else:
            yield from self._evolution()

    def _gradient(self) -> Any:
        """Sign-gradient descent on the suspect loss; the step shrinks when progress stalls.
        Steps are evaluated here (they need gradients); only a triggering point is yielded."""
        if self.best is None:
            return
        starts = [self.best[1]] + [[sample(s, self.generator) for s in self.entry.specs]
                                   for _ in range(self.budget.gradient_starts - 1)]
        for begin in starts:
            point = [x.clone() for x in begin]
            widths = [(s.hi - s.lo) for s in self.entry.specs]
            step = [w * 0.05 for w in widths]
            previous = math.inf
            for _ in range(self.budget.gradient_steps):
                if self._out_of_budget():
                    return
                evaluation = self.evaluate(point, want_grad=True)
                if evaluation.error or not evaluation.reached:
                    break
                if evaluation.forward or evaluation.backward:
                    yield point
                    return
                self._note(point, evaluation, "gradient")
                if all(g is None or not bool(g.any()) for g in evaluation.grads):
                    break  # nothing to follow here (masks, ints, saturation): next stages
                if evaluation.loss >= previous:
                    step = [s * 0.5 for s in step]
                previous = evaluation.loss
                grads = iter(evaluation.grads)
                moved = []
                for x, spec, size in zip(point, self.entry.specs, step, strict=True):
                    if spec.is_float:
                        g = next(grads, None)
                        if g is not None:
                            x = (x - size * torch.sign(g).to(x.dtype)).clamp(spec.lo, spec.hi)
                    moved.append(x)
                point = moved

    def _snap(self) -> Any:
        """Round the best point onto coarser grids: exact zeros, ties and integers."""
        if self.best is None:
            return
        base = self.best[1]
        for quantum in (0.0, 1e-3, 1e-2, 0.1, 1.0, 10.0):
            yield self._clip([_quantise(x, quantum, spec)
                              for x, spec in zip(base, self.entry.specs, strict=True)])
        yield self._clip([_equalise(x, spec) for x, spec in
                          zip(base, self.entry.specs, strict=True)])
        for corner in ("lo", "hi", "zero"):
            yield self._clip([_corner(x, spec, corner) for x, spec in
                              zip(base, self.entry.specs, strict=True)])

    def _evolution(self) -> Any:
        """Mutate the best points: noise, resets to the box's ends and to zero."""
        if self.best is None:
            pool = [[sample(s, self.generator) for s in self.entry.specs]]
        else:
            pool = [self.best[1]]
        while not self._out_of_budget():
            parent = pool[int(torch.randint(len(pool), (1,), generator=self.generator))]
            child = [self._mutate(x, spec) for x, spec in
                     zip(parent, self.entry.specs, strict=True)]
            yield child
            if self.best is not None and self.best[1] is not parent:
                pool = ([self.best[1]] + pool)[:8]

    def _mutate(self, x: torch.Tensor, spec: InputSpec) -> torch.Tensor:
        if x.numel() == 0:
            return x
        fresh = sample(spec, self.generator)
        mask = torch.rand(x.shape, generator=self.generator) < 0.2
        if spec.is_float:
            choice = torch.rand(x.shape, generator=self.generator)
            ends = torch.where(choice < 0.5, torch.full_like(x, spec.lo),
                               torch.full_like(x, spec.hi))
            zero_ok = spec.lo <= 0 <= spec.hi
            ends = torch.where(choice < 0.15, torch.zeros_like(x), ends) if zero_ok else ends
            noise = x + torch.randn(x.shape, generator=self.generator, dtype=torch.float64).to(
                x.dtype) * (spec.hi - spec.lo) * 0.05
            replacement = torch.where(torch.rand(x.shape, generator=self.generator) < 0.5,
                                      ends, noise)
            return torch.where(mask, replacement, x).clamp(spec.lo, spec.hi)
        return torch.where(mask, fresh, x)


def _quantise(x: torch.Tensor, quantum: float, spec: InputSpec) -> torch.Tensor:
    if not spec.is_float:
        return x
    if quantum == 0.0:  # zero what is already tiny
        scale = x.abs().amax() if x.numel() else x.new_tensor(0.0)
        return torch.where(x.abs() < 0.05 * scale, torch.zeros_like(x), x)
    return torch.round(x / quantum) * quantum


def _equalise(x: torch.Tensor, spec: InputSpec) -> torch.Tensor:
    """Every element set to the mean: the std of a constant batch is exactly 0."""
    if not spec.is_float or x.numel() == 0:
        return x
    return torch.full_like(x, float(x.double().mean()))


def _corner(x: torch.Tensor, spec: InputSpec, which: str) -> torch.Tensor:
    if not spec.is_float:
        return x
    if which == "zero":
        return torch.zeros_like(x) if spec.lo <= 0 <= spec.hi else x
    value = spec.lo if which == "lo" else spec.hi
    return torch.where(x < 0, torch.full_like(x, spec.lo), torch.full_like(x, spec.hi)) \
        if which == "hi" else torch.full_like(x, value)
