"""Find a concrete input that makes one op produce NaN/Inf, forward or in its gradient.

Stages, cheapest first, each stopping at the first trigger:
1. random restarts inside the box (RANUM), several per call where the entry takes a batch
   (every input shares a leading batch dimension and the outputs keep it), in batches that
   double from one draw to `Budget.batch`; a batched run that fails has its restarts run
   alone, closest first, and only a restart evaluated alone counts as a trigger;
2. snapping the best point: rounding to coarser grids, zeroing small values, equalising, the
   box's corners and shrinking towards 0 until squares underflow, which hits the measure-zero
   sets gradients only approach (std of a constant batch, the norm of a zero vector, lgamma at
   -2, atan2 just off the origin); a dozen runs, so it goes early;
3. GRIST's linear solve for values loaded once: from the best point, the step a linear model
   of the suspect loss L says reaches the invalid boundary in one go, x - L g / |g|^2 (all
   inputs together and each alone, and 1.5 times that to cross it), clipped to the box, for a
   few Newton rounds; a handful of runs, so it precedes the iterative steps;
4. sign-gradient steps on the suspect loss from the best starts (GRIST), clipped to the box,
   then snapping again from where they ended;
5. a gradient-free evolutionary fallback where gradients vanish (saturation, masks, ints).
A trigger is a run where the op's output or its local derivative goes non-finite; with
`require_visible` (the harness) it must also show where the reproducer looks, in the entry's
output or in the gradient reaching its inputs or its module's parameters
(`Evaluation.visible`), so that a NaN the code
absorbs is never reported and the minimiser keeps what the script checks (`still_fails`).
The suspect loss is the catalogue's, implemented in `suspect.py`. Deterministic under a seed;
bounded by seconds and evaluations (a batched run of k restarts counts as k evaluations).
Each evaluation judged goes into a thinned `SearchTrace` (`Outcome.search_trace`), which the
report page plots against the objective's invalid boundary.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from analyzers.catalogue import CATALOGUE
from analyzers.dtypes import limits
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.evaluation import (
    Evaluation,
    chunk_losses,
    keeps_rows,
    suspect_loss_or_none,
)
from analyzers.dynamic.probe import Hit, OpProbe, tensors_in
from analyzers.dynamic.raised import failed
from analyzers.dynamic.searchtrace import SearchTrace
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.tensors import sample

STAGES = ("restarts", "snap", "solve", "gradient", "snap", "evolution")
# without the open-ended fallback: a box tried before a wider one ends when its directed
# stages are spent, and leaves the rest of the budget to the wider box
DIRECTED_STAGES = STAGES[:-1]


# Draws in a row, none reaching the op, that raise the very same structural error before the
# search gives up on the entry: a wrong type, a missing attribute or mismatched shapes
# (`TypeError: Scalar tensor has no len()`) come from the call's structure, and more draws
# only spend the budget. jax-md's PR of 81 findings tried each failing entry for its whole
# budget, shape after shape, and 60 findings never got their turn. A value check (`raise
# ValueError("probs must be non-negative")`) is not structural: a later stage's zeros or
# corners may pass it.
SAME_ERROR_LIMIT = 8
# evaluations that reached the op, all with one objective, before `Searcher.flat` says the
# searched values cannot move it
FLAT_EVIDENCE = 16
STRUCTURAL_ERRORS = frozenset(
    {
        "TypeError",
        "AttributeError",
        "NameError",
        "UnboundLocalError",
        "ImportError",
        "ModuleNotFoundError",
        "NotImplementedError",
    }
)
_SHAPE_WORDS = ("shape", "broadcast", "size of tensor", "dimension", "rank")


def structural(error: str) -> bool:
    """An evaluation's error (`Type: message`) that no choice of values avoids: see
    SAME_ERROR_LIMIT."""
    kind, _, message = error.partition(":")
    lowered = message.lower()
    return kind.strip() in STRUCTURAL_ERRORS or any(w in lowered for w in _SHAPE_WORDS)


@dataclass(frozen=True)
class Budget:
    seconds: float = 5.0
    evaluations: int = 4000
    restarts: int = 32
    gradient_starts: int = 4
    gradient_steps: int = 150
    batch: int = 8  # restarts per call, where the entry takes a batch (see _restarts)
    solve_rounds: int = 3


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
    error_lines: tuple[int, ...] = ()  # Evaluation.error_lines of that error
    trace: list[tuple[int, float, str]] = field(default_factory=list)  # (eval, loss, stage)
    # every judged evaluation, thinned to a couple of hundred (searchtrace.py): the report
    # page's plot of the objective against evaluations and seconds, with its boundary
    search_trace: dict[str, Any] | None = None


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


def _local_derivative_fails(hit: Hit) -> bool:
    """Is the op's own derivative non-finite, with respect to any float operand it read?"""
    outputs = [o for o in _float_outputs(hit.output)]
    wrt = [t for t in hit.float_operands if t.requires_grad]
    if not outputs or not wrt:
        return False
    try:
        local = torch.autograd.grad(
            outputs,
            wrt,
            [torch.ones_like(o) for o in outputs],
            retain_graph=True,
            allow_unused=True,
        )
    except RuntimeError:  # an earlier training step's graph, freed by the script's backward
        return False
    return any(g is not None and not _finite(g) for g in local)


def _grads(
    loss: torch.Tensor, last: torch.Tensor, leaves: list[torch.Tensor]
) -> list[torch.Tensor | None]:
    """The gradient of the suspect loss; where the min fell on an earlier training step of a
    script, whose graph the script's own backward freed, the last step's (still whole)."""
    for objective in (loss, last):
        if objective.requires_grad:
            try:
                return list(
                    torch.autograd.grad(objective, leaves, retain_graph=True, allow_unused=True)
                )
            except RuntimeError:
                continue
    return []


class Searcher:
    def __init__(
        self,
        entry: Entry,
        path: str,
        lines: frozenset[int],
        op: str,
        dtype: str = "float32",
        seed: int = 0,
        budget: Budget | None = None,
        require_visible: bool = False,
        stages: tuple[str, ...] = STAGES,
    ) -> None:
        self.entry = entry
        self.op = op
        self.dtype = dtype
        self.probe = OpProbe(path, lines, op)
        if entry.framework == "tensorflow":
            from analyzers.dynamic.tf_backend import TFProbe

            self.tf_probe = TFProbe(path, lines, op)
        if entry.framework == "jax":
            from analyzers.dynamic.jax_backend import JaxProbe

            self.jax_probe = JaxProbe(path, lines, op)
        if entry.framework == "numpy":
            from analyzers.dynamic.numpy_backend import NumpyProbe

            self.numpy_probe = NumpyProbe(path, lines, op)
        self.budget = budget or Budget()
        self.stages = stages
        # the harness asks for triggers its reproducer can show (`accepts`); the fix stage's
        # re-search and bench.dynamic count any NaN/Inf the op makes
        self.require_visible = require_visible
        self.generator = torch.Generator().manual_seed(seed)
        self.count = 0
        self.started = 0.0
        self.best: tuple[float, list[torch.Tensor]] | None = None
        self._batch: int | None = None  # restarts per call, once a batched run has shown it
        self._last: Evaluation | None = None  # what `run` made of the last point yielded
        self.trace: list[tuple[int, float, str]] = []
        self.reached_count = 0  # evaluations that reached the op, and their objective's range
        self.lowest, self.highest = math.inf, -math.inf
        spec = CATALOGUE.by_op.get(op)
        self.search_trace = SearchTrace(spec.suspect_loss if spec and spec.suspect_loss else op)

    # ------------------------------------------------------------------ one evaluation
    def evaluate(
        self, inputs: Sequence[torch.Tensor], want_grad: bool = False, chunks: int = 1
    ) -> Evaluation:
        """One run of the entry. `chunks` > 1: the inputs are that many restarts concatenated
        along dim 0 (counted as that many evaluations), and `chunk_losses` says how close each
        came; such a run is only ever a hint, never a trigger (see `_restarts`)."""
        self.count += chunks
        if self.entry.framework == "tensorflow":
            from analyzers.dynamic.tf_backend import evaluate_tf

            return evaluate_tf(
                self.tf_probe, self.entry, self.op, self.dtype, list(inputs), want_grad, chunks
            )
        if self.entry.framework == "jax":  # gradient-free: want_grad finds no grads
            from analyzers.dynamic.jax_backend import evaluate_jax

            return evaluate_jax(
                self.jax_probe, self.entry, self.op, self.dtype, list(inputs), chunks
            )
        if self.entry.framework == "numpy":  # gradient-free, as JAX
            from analyzers.dynamic.numpy_backend import evaluate_numpy

            return evaluate_numpy(
                self.numpy_probe, self.entry, self.op, self.dtype, list(inputs), chunks
            )
        leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
        self.probe.reset()
        try:
            with self.probe:
                output = self.entry.call(leaves)
        except Exception as exc:  # the PR's code may raise on any input
            return failed(exc, self.probe.watch, self.op)
        hits = self.probe.hits
        kept = bool(inputs) and inputs[0].dim() >= 1 and keeps_rows(output, inputs[0].shape[0])
        if not hits:
            return Evaluation(batch_kept=kept)
        result = Evaluation(reached=True, batch_kept=kept)
        losses: list[torch.Tensor] = []
        per_chunk = [math.inf] * chunks if chunks > 1 else []
        for hit in hits:
            # softmax's -inf entries are the mask itself; elsewhere an already non-finite
            # operand, or any other argument (a numerator made NaN on an earlier line), means
            # the NaN/Inf was made upstream, not by this op
            operand_ok = (
                (not bool(torch.isnan(hit.operand).any()))
                if self.op == "softmax"
                else _finite(hit.operand) and _finite(hit.call.rest)  # `others` are in `rest`
            )
            if operand_ok and not _finite(hit.output):
                result.forward = True
            if operand_ok and hit.operand.is_floating_point():
                loss_value = suspect_loss_or_none(self.op, hit.operand, self.dtype, hit.call)
                if loss_value is not None:
                    losses.append(loss_value)
                if per_chunk:
                    for i, value in enumerate(chunk_losses(self.op, hit, self.dtype, chunks)):
                        per_chunk[i] = min(per_chunk[i], value)
            # a derivative read at a NaN/Inf operand is NaN whatever the op: not this op's
            if operand_ok and not result.forward and _local_derivative_fails(hit):
                result.backward = True
        result.chunk_losses = per_chunk
        if losses:
            loss = torch.stack([v.reshape(()).to(torch.float64) for v in losses]).min()
            result.loss = float(loss.detach())
            float_leaves = [x for x in leaves if x.requires_grad]
            if want_grad and loss.requires_grad and float_leaves:
                result.grads = _grads(loss, losses[-1], float_leaves)
        if result.forward or result.backward:
            if not _finite(output):
                result.visible = "output"
            else:  # what the reproducer checks next: the gradients of inputs, then weights
                result.visible = self._visible_in_gradients(output, leaves)
            result.reaches_output = result.visible is not None
        return result

    def _visible_in_gradients(self, output: Any, leaves: list[torch.Tensor]) -> str | None:
        """ "gradient" when the backward pass of the output's sum makes an input's gradient
        non-finite, "parameters" when only the module's parameters get one (the step the
        optimiser takes is then NaN), else None."""
        outputs = _float_outputs(output)
        inputs = [x for x in leaves if x.requires_grad]
        parameters = self.entry.parameters()
        if not outputs or not (inputs or parameters):
            return None
        total = torch.stack([o.sum() for o in outputs]).sum()
        try:
            grads = torch.autograd.grad(total, inputs + parameters, allow_unused=True)
        except RuntimeError:  # a script's own backward freed the graph (its training step)
            return None
        if not all(g is None or _finite(g) for g in grads[: len(inputs)]):
            return "gradient"
        if not all(g is None or _finite(g) for g in grads[len(inputs) :]):
            return "parameters"
        return None

    def accepts(self, evaluation: Evaluation) -> bool:
        """Is this run a trigger? The op failed (forward or in its local derivative) and, with
        `require_visible` (the harness, for entries whose reproducer runs the entry: not script
        mode, whose reproducer checks the op itself), the failure shows where the reproducer
        looks: in the entry's output or the gradient reaching its inputs. A NaN the code
        absorbs (masked, clamped away, multiplied by a zero gradient) is then no trigger: the
        search goes on for one that shows."""
        if not (evaluation.forward or evaluation.backward):
            return False
        return not self.require_visible or evaluation.visible is not None

    def failing_call(self, inputs: Sequence[torch.Tensor]) -> int | None:
        """Which call of the op (1 for its first) fails on `inputs`: for a script run over
        training steps, the step the trigger needs. None when no call fails."""
        self.evaluate(inputs)
        for number, hit in enumerate(self.probe.hits, start=1):
            if not _finite(hit.output) or _local_derivative_fails(hit):
                return number
        return None

    def still_fails(self, inputs: Sequence[torch.Tensor], where: str | None) -> bool:
        """The minimiser's predicate: the trigger persists as the reproducer will check it
        (a forward trigger stays a forward one; see `accepts`)."""
        evaluation = self.evaluate(inputs)
        if where == "forward" and not evaluation.forward:
            return False
        return self.accepts(evaluation)

    # ------------------------------------------------------------------ bookkeeping
    @property
    def flat(self) -> bool:
        """Every evaluation that reached the op, FLAT_EVIDENCE of them at least, saw one and
        the same objective: the searched values do not move the operand (a divisor made of
        the inputs' sizes, `channels // 2 - 1`), so only other sizes could (sizes.py)."""
        return self.reached_count >= FLAT_EVIDENCE and self.lowest == self.highest

    def _out_of_budget(self) -> bool:
        return (
            self.count >= self.budget.evaluations
            or time.perf_counter() - self.started > self.budget.seconds
        )

    def _note(
        self, inputs: list[torch.Tensor], evaluation: Evaluation, stage: str, restart: bool = False
    ) -> bool:
        if evaluation.reached and (self.best is None or evaluation.loss < self.best[0]):
            self.best = (evaluation.loss, [x.detach().clone() for x in inputs])
            self.trace.append((self.count, evaluation.loss, stage))
        accepted = self.accepts(evaluation)
        if evaluation.reached:
            self.reached_count += 1
            self.lowest = min(self.lowest, evaluation.loss)
            self.highest = max(self.highest, evaluation.loss)
            self.search_trace.add(
                self.count,
                time.perf_counter() - self.started,
                evaluation.loss,
                stage,
                restart=restart,
                last=accepted,
            )
        return accepted

    def _outcome(self, inputs: list[torch.Tensor], evaluation: Evaluation, stage: str) -> Outcome:
        return Outcome(
            True,
            "forward" if evaluation.forward else "backward",
            stage,
            [x.detach().clone() for x in inputs],
            self.count,
            time.perf_counter() - self.started,
            True,
            evaluation.reaches_output,
            evaluation.loss,
            trace=self.trace,
            search_trace=self.search_trace.to_json(triggered=True),
        )

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
        last_lines: tuple[int, ...] = ()
        repeated = 0  # evaluations in a row that raised `last_error`, word for word
        reached = stuck = False
        for stage in self.stages:
            for inputs in self._stage(stage, start):
                if self._out_of_budget():
                    break
                evaluation = self.evaluate(inputs)
                self._last = evaluation
                if evaluation.error:
                    same = evaluation.error == last_error and structural(evaluation.error)
                    repeated = repeated + 1 if same else 1
                    last_error, last_lines = evaluation.error, evaluation.error_lines
                    # the call fails whatever the values: see SAME_ERROR_LIMIT
                    stuck = repeated >= SAME_ERROR_LIMIT and not reached
                    if stuck:
                        break
                    continue
                repeated = 0
                reached = reached or evaluation.reached
                if self._note(inputs, evaluation, stage, restart=stage == "restarts"):
                    return self._outcome(inputs, evaluation, stage)
            if stuck or self._out_of_budget():
                break
        return Outcome(
            False,
            evaluations=self.count,
            seconds=time.perf_counter() - self.started,
            reached=reached,
            best_loss=self.best[0] if self.best else math.inf,
            error=None if reached else last_error,
            error_lines=() if reached else last_lines,
            trace=self.trace,
            search_trace=self.search_trace.to_json(triggered=False),
        )

    def _stage(self, stage: str, start: list[torch.Tensor] | None) -> Any:
        if stage == "restarts":
            yield from self._restarts(start)
        elif stage == "solve":
            yield from self._solve()
        elif stage == "gradient":
            yield from self._gradient()
        elif stage == "snap":
            yield from self._snap()
        else:
            yield from self._evolution()

    def _restarts(self, start: list[torch.Tensor] | None) -> Any:
        """`Budget.restarts` uniform draws from the box (RANUM). Where the entry takes a batch,
        several draws go through one call, in batches that double from a single draw up to
        `Budget.batch` (1, 2, 4, 8, 8, ...). A batch of k counts k evaluations, and a trigger
        at the n-th draw costs every batch up to the one holding it, then its own run alone
        (first, where the batch's losses point at it): while batches double that is at most
        2n evaluations (plain sampling's n, at most twice over) in about log2(n) calls, and
        n + 8 at most once they are full; a full batch right after the first draw would make
        an entry that fails on every other draw pay 10 evaluations, not about 2, whenever its
        first draw passes. A batched run that fails has its draws run alone, closest
        first (`_suspects`), and only a single draw, evaluated alone by `run`, can be a
        trigger: restarts mixed through batch statistics never confirm anything. A batch whose
        failure does not show (`accepts` says no: a `where` masks the op's NaN) counts as
        passed: its draws alone would be masked the same way, and running each of them cost a
        `where`-guarded JAX log its whole budget before the `snap` stage reached the zero that
        makes its gradient NaN. The first
        draw always goes alone, and batching is tried only if its outputs all kept the batch's
        rows; the first batched run (two draws, so an entry that cannot take a batch wastes two
        evaluations, not eight) then settles it. The closest restart of the batches that did
        not fail is run alone once, at the end, for the next stages. Either way the draws are
        the same sequence, and the outcome under a seed is the same from one search to the
        next."""
        if start is not None:
            yield self._clip(start)
        left, size = self.budget.restarts, 1
        closest: tuple[float, list[torch.Tensor]] | None = None  # of the batches that passed
        while left > 0:
            points = [
                [sample(spec, self.generator) for spec in self.entry.specs]
                for _ in range(min(size, self._batch_size(), left))
            ]
            left -= len(points)
            size *= 2
            if len(points) == 1:
                yield points[0]
                # the first draw goes alone: an output without its batch rows (a loss
                # averaged over the batch) rules batching out before any batched run
                if self._batch is None and not (self._last and self._last.batch_kept):
                    self._decide_batch(False)
                continue
            if self._out_of_budget():
                return
            batched = self.evaluate(_concat(points), chunks=len(points))
            if self._batch is None:  # the first batched run is the test of batching
                self._decide_batch(batched.error is None and batched.batch_kept)
                if self._batch_size() == 1:
                    yield from points
                    continue
            if batched.error or not batched.reached:
                yield from points  # the batch broke something: one at a time
            elif self.accepts(batched):
                yield from self._suspects(points, batched.chunk_losses)
            elif batched.chunk_losses:
                index = min(range(len(points)), key=batched.chunk_losses.__getitem__)
                if closest is None or batched.chunk_losses[index] < closest[0]:
                    closest = (batched.chunk_losses[index], points[index])
        if closest is not None and (self.best is None or closest[0] < self.best[0]):
            yield closest[1]  # the closest restart, alone, for the next stages

    def _suspects(self, points: list[list[torch.Tensor]], losses: list[float]) -> Any:
        """The draws of a failing batch, each alone, in the order of their suspect losses in
        the batch (the lowest is usually the trigger itself); ties, and batches without
        per-restart losses, in draw order. Alone, a draw is its own test and confirmation.
        Halving the batch instead (k/2 draws per run, then k/4, ...) costs more: with one
        trigger among 8 and no loss to go by, 10.5 evaluations in 4.5 calls on average, where
        the draws in turn take 4.5 in 4.5 (fewer with several triggers), and where batch
        statistics make every half fail, it costs more than k."""
        order = list(range(len(points)))
        if len(losses) == len(points):
            order = sorted(
                order, key=lambda i: (losses[i] if not math.isnan(losses[i]) else math.inf, i)
            )
        for i in order:
            yield points[i]

    def _batch_size(self) -> int:
        """How many restarts one call may carry: `Budget.batch` when every searched input
        shares a leading batch dimension, else 1. Until the first batched run has shown
        that the entry takes the batch and keeps it in every output (`_decide_batch`), the
        answer is provisional; then it is fixed for the entry (this searcher's: a decision
        shared between searches would make a search's evaluations depend on the ones
        before it, and the outcome under a seed would not be the same)."""
        if self._batch is not None:
            return self._batch
        specs = self.entry.specs  # configured weights (weights.py) are no batch: one run each
        if (
            self.budget.batch > 1
            and specs
            and not self.entry.weights
            and all(len(s.shape) >= 1 for s in specs)
            and len({s.shape[0] for s in specs}) == 1
            and specs[0].shape[0] > 0
        ):
            return self.budget.batch
        self._decide_batch(False)
        return 1

    def _decide_batch(self, works: bool) -> None:
        self._batch = self.budget.batch if works else 1

    def _solve(self) -> Any:
        """GRIST's linear solve, for values loaded once: from the best point, the step that a
        linear model of the suspect loss says lands on its invalid boundary, x - L g / |g|^2
        (all inputs together, each input alone, and 1.5 times as far to cross the boundary),
        clipped to the box. A few rounds, each from the best point so far (Newton/secant);
        it stops when a round does not improve the loss."""
        for _ in range(self.budget.solve_rounds):
            if self.best is None or self._out_of_budget() or not 0 < self.best[0] < math.inf:
                return
            before, base = self.best
            evaluation = self.evaluate(base, want_grad=True)
            if evaluation.error or not evaluation.reached:
                return
            if self.accepts(evaluation):
                yield base
                return
            grads = iter(evaluation.grads)
            per_input = [
                _free(x, next(grads, None), spec) if x.is_floating_point() else None
                for x, spec in zip(base, self.entry.specs, strict=True)
            ]
            norms = [0.0 if g is None else float((g.double() ** 2).sum()) for g in per_input]
            total = sum(norms)
            loss = evaluation.loss
            if not (total > 0 and math.isfinite(total) and 0 < loss < math.inf):
                return
            for factor in (1.0, 1.5):
                yield self._clip(
                    [
                        x if g is None else _step(x, g, factor * loss / total)
                        for x, g in zip(base, per_input, strict=True)
                    ]
                )
            if sum(n > 0 for n in norms) > 1:
                for i, (g, norm) in enumerate(zip(per_input, norms, strict=True)):
                    if g is not None and norm > 0:
                        moved = list(base)
                        moved[i] = _step(base[i], g, loss / norm)
                        yield self._clip(moved)
            if self.best is None or self.best[0] >= before:
                return

    def _gradient(self) -> Any:
        """Sign-gradient descent on the suspect loss; the step shrinks when progress stalls.
        Steps are evaluated here (they need gradients); only a triggering point is yielded."""
        if self.best is None:
            return
        starts = [self.best[1]] + [
            [sample(s, self.generator) for s in self.entry.specs]
            for _ in range(self.budget.gradient_starts - 1)
        ]
        for begin in starts:
            point = [x.clone() for x in begin]
            first = True
            widths = [(s.hi - s.lo) for s in self.entry.specs]
            step = [w * 0.05 for w in widths]
            previous = math.inf
            for _ in range(self.budget.gradient_steps):
                if self._out_of_budget():
                    return
                evaluation = self.evaluate(point, want_grad=True)
                if evaluation.error or not evaluation.reached:
                    break
                if self.accepts(evaluation):
                    yield point
                    return
                if evaluation.forward or evaluation.backward:
                    break  # a failure the code absorbs: its gradient leads nowhere; next start
                self._note(point, evaluation, "gradient", restart=first)
                first = False
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
            yield self._clip(
                [
                    _quantise(x, quantum, spec)
                    for x, spec in zip(base, self.entry.specs, strict=True)
                ]
            )
        yield self._clip(
            [_equalise(x, spec) for x, spec in zip(base, self.entry.specs, strict=True)]
        )
        for corner in ("lo", "hi", "zero"):
            yield self._clip(
                [_corner(x, spec, corner) for x, spec in zip(base, self.entry.specs, strict=True)]
            )
        floats = [i for i, spec in enumerate(self.entry.specs) if spec.is_float]
        yield self._clip([_shrink(x, spec) for x, spec in zip(base, self.entry.specs, strict=True)])
        if len(floats) > 1:
            for i in floats:
                moved = list(base)
                moved[i] = _shrink(base[i], self.entry.specs[i])
                yield self._clip(moved)

    def _evolution(self) -> Any:
        """Mutate the best points: noise, resets to the box's ends and to zero."""
        if self.best is None:
            pool = [[sample(s, self.generator) for s in self.entry.specs]]
        else:
            pool = [self.best[1]]
        while not self._out_of_budget():
            parent = pool[int(torch.randint(len(pool), (1,), generator=self.generator))]
            child = [
                self._mutate(x, spec) for x, spec in zip(parent, self.entry.specs, strict=True)
            ]
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
            ends = torch.where(
                choice < 0.5, torch.full_like(x, spec.lo), torch.full_like(x, spec.hi)
            )
            zero_ok = spec.lo <= 0 <= spec.hi
            ends = torch.where(choice < 0.15, torch.zeros_like(x), ends) if zero_ok else ends
            noise = (
                x
                + torch.randn(x.shape, generator=self.generator, dtype=torch.float64).to(x.dtype)
                * (spec.hi - spec.lo)
                * 0.05
            )
            replacement = torch.where(
                torch.rand(x.shape, generator=self.generator) < 0.5, ends, noise
            )
            return torch.where(mask, replacement, x).clamp(spec.lo, spec.hi)
        return torch.where(mask, fresh, x)


def _free(x: torch.Tensor, g: torch.Tensor | None, spec: InputSpec) -> torch.Tensor | None:
    """The gradient without the coordinates the box pins: at its low end a step x - s g
    with g > 0 cannot move them, nor at its high end with g < 0 (projected Newton)."""
    if g is None or not spec.is_float:
        return g
    g = g.to(x.device)
    pinned = ((x <= spec.lo) & (g > 0)) | ((x >= spec.hi) & (g < 0))
    return torch.where(pinned, torch.zeros_like(g), g)


def _step(x: torch.Tensor, g: torch.Tensor, size: float) -> torch.Tensor:
    return (x.double() - size * g.double().to(x.device)).to(x.dtype)


def _concat(points: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """k restarts as one batch: each input concatenated along dim 0."""
    return [torch.cat(column, dim=0) for column in zip(*points, strict=True)]


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


def _shrink(x: torch.Tensor, spec: InputSpec) -> torch.Tensor:
    """The tensor scaled down until squares of its entries underflow (below the smallest
    normal of its dtype), differences kept: x^2 + y^2 rounds to 0 or a subnormal whose
    reciprocal overflows (atan2's and the norm's gradients just off the origin)."""
    if not spec.is_float or x.numel() == 0:
        return x
    top = float(x.double().abs().amax())
    if top == 0.0:
        return x
    target = math.sqrt(limits(spec.dtype).tiny) * 0.1
    return (x.double() * (target / top)).to(x.dtype)


def _corner(x: torch.Tensor, spec: InputSpec, which: str) -> torch.Tensor:
    if not spec.is_float:
        if spec.dtype == "bool" or x.numel() == 0:
            return x
        if which == "zero":
            return torch.zeros_like(x) if spec.lo <= 0 <= spec.hi else x
        return torch.full_like(x, int(spec.lo if which == "lo" else spec.hi))
    if which == "zero":
        return torch.zeros_like(x) if spec.lo <= 0 <= spec.hi else x
    value = spec.lo if which == "lo" else spec.hi
    return (
        torch.where(x < 0, torch.full_like(x, spec.lo), torch.full_like(x, spec.hi))
        if which == "hi"
        else torch.full_like(x, value)
    )
