"""Script mode (GRIST's driver): run a configured command with its external values substituted.

`[tool.numcheck.script]` names a Python script of the repository (a training script for a few
steps, say). The script runs in-process (runpy, its own `sys.argv`, the repository as working
directory) while `ExternalValues` intercepts the values that come from outside the code, at
their call sites:

* random draws made by the repository's own code (`torch.randn`, `rand_like`, `normal`,
  `bernoulli`, `Tensor.uniform_`, ...); draws made inside libraries (weight initialisation,
  dropout, samplers) are not external values: they follow the seed;
* data batches: whatever a `torch.utils.data.DataLoader` iterator yields, tensor by tensor
  inside tuples, lists and dicts, keyed at the nearest repository frame that asked for it;
* data the repository's own code builds or reads: `torch.tensor`/`as_tensor` of values,
  `torch.FloatTensor(list)` and its float siblings, `torch.from_numpy`, and the float arrays
  `numpy.load`/`loadtxt`/`genfromtxt` return (a tutorial's `x_train`); scalars are left
  alone, since they are the code's constants (an epsilon, a threshold), not its data.

A value's label is its kind, call site and occurrence there: `data train.py:41 #0[0]` is the
first tensor of the first batch the loop on line 41 of train.py received. A recording run
stops shortly after the watched op first ran (at the next framework call off the op's line, or
the next external value); the float values seen before that are the entry's inputs, their
observed ranges (widened, as for harvested calls) or configured bounds its box. Every
evaluation of the search re-runs the script with its values substituted, stopped the same way
and bounded by a per-run limit. The reproducer carries a copy of the interception code
(`writer.runtime_lines`, read from this file), so it stands alone: it re-runs the script
with the triggering values substituted and asserts that the flagged line stays finite.

Runs only inside the sandboxed harness: it executes the PR's code.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import runpy
import shlex
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import torch
from torch.overrides import TorchFunctionMode

from analyzers.config import SCRIPT_RUN_SECONDS, script_argv
from analyzers.dynamic.callsites import CallSites, StopScript
from analyzers.dynamic.entries import EntryError
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.harvest import observed_box
from analyzers.dynamic.layout import search_path
from analyzers.dynamic.minimise import MINIMISE_SECONDS, minimise_toward
from analyzers.dynamic.probe import tensors_in
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.suspect import op_names, operand_of
from analyzers.dynamic.writer import unravel, written

DEFAULT_RUN_SECONDS = SCRIPT_RUN_SECONDS
DEFAULT_MAX_VALUES = 8
TRAINING_STEPS = 20  # how many executions of the op a run may go through (the last stage)
VALUE_KINDS = ("data", "random")

# ---------------------------------------------------------------- the runtime
# `RANDOM_DRAWS` to `run_script` below, with callsites.py, need only os, random, runpy, sys,
# torch (and numpy when the script uses it): the reproducer carries a copy of their source,
# so it substitutes exactly as the search did.

RANDOM_DRAWS = frozenset(
    {
        "rand",
        "randn",
        "rand_like",
        "randn_like",
        "normal",
        "bernoulli",
        "poisson",
        "uniform_",
        "normal_",
        "bernoulli_",
        "exponential_",
        "log_normal_",
        "cauchy_",
        "geometric_",
        "random_",
        "randint",
        "randint_like",
        "randperm",
        "multinomial",
    }
)
BUILT = frozenset({"tensor", "as_tensor"})  # torch functions that make a tensor of data
# the legacy constructors a tutorial builds its data with, `torch.FloatTensor(list)`: no
# torch function of theirs reaches a TorchFunctionMode, so the run wraps them (`_Built`)
BUILT_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor")


class ExternalValues(CallSites, TorchFunctionMode):
    """Intercepts external values at their call sites and watches one op on given lines:
    PyTorch's draws and DataLoader batches, numpy's draws."""

    def __init__(
        self, root: str, watch_path: str, watch_lines: Any, watch_names: Any, on_value: Any
    ) -> None:
        TorchFunctionMode.__init__(self)
        CallSites.__init__(self, root, watch_path, watch_lines, on_value)
        self.watch_names = frozenset(watch_names)

    def _put(self, natural: Any, value: Any, in_place: bool) -> Any:
        out = self._substituted(natural, value, in_place)
        self.handed.append(out)
        return out

    def _substituted(self, natural: Any, value: Any, in_place: bool) -> Any:
        if (
            value is natural
            or not isinstance(value, torch.Tensor)
            or tuple(value.shape) != tuple(natural.shape)
        ):
            return natural
        value = value.to(dtype=natural.dtype, device=natural.device)
        if in_place:  # x.uniform_(): the script holds x itself
            try:
                natural.copy_(value)
            except RuntimeError:  # a leaf that requires grad (a parameter)
                with torch.no_grad():
                    natural.copy_(value)
            return natural
        if natural.requires_grad and natural.is_leaf:  # randn(..., requires_grad=True)
            return value.detach().clone().requires_grad_(True)
        return value.clone()

    def _leaf(self, label: str, value: Any) -> Any:
        """One tensor of a batch, substituted; None for what is not a tensor."""
        if isinstance(value, torch.Tensor):
            return self._put(value, self.on_value(label, value), False)
        return None

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self._expire()
        caller = sys._getframe(1)
        on_line = self._on_watched_line(caller)
        if not on_line:
            self._off_line()
            if self._done():
                raise StopScript()
        out = func(*args, **kwargs)
        if on_line:
            self._on_line(out)
        name = getattr(func, "__name__", "")
        if name in RANDOM_DRAWS and not self.ran and isinstance(out, torch.Tensor):
            site = self._site(caller, walk=False)
            if site is not None:
                label = self._label("random", site)
                out = self._put(out, self.on_value(label, out), name.endswith("_"))
        elif name in BUILT and not self.ran:
            out = self._built(caller, out, args[0] if args else kwargs.get("data"))
        if name in self.watch_names and on_line:
            self.ran = True
            self.hits.append((out, args, kwargs, name))
        return out

    def _built(self, caller: Any, out: Any, made_of: Any = None) -> Any:
        """A tensor of data the repository's code built (`torch.tensor(list)`) from
        `made_of`, substituted where it is a float tensor with at least one dimension made of
        something else than a value the run handed out already."""
        if (
            self.ran
            or not isinstance(out, torch.Tensor)
            or not out.is_floating_point()
            or out.dim() == 0
            or any(made_of is value for value in self.handed)
        ):
            return out
        site = self._site(caller, walk=False)
        if site is None:
            return out
        return self._put(out, self.on_value(self._label("data", site), out), False)

    def _wrap_builders(self) -> None:
        """`torch.from_numpy` and the legacy float constructors, which no TorchFunctionMode
        sees, replaced for the run by callables that hand their tensor to `_built`."""
        mode = self

        def from_numpy(array: Any) -> Any:
            return mode._built(sys._getframe(1), original(array), array)

        original = getattr(torch.from_numpy, "_numcheck_original", torch.from_numpy)
        from_numpy._numcheck_original = original  # type: ignore[attr-defined]
        self._restore.append((torch, "from_numpy", original))
        setattr(torch, "from_numpy", from_numpy)  # noqa: B010 (patched for the run)
        for name in BUILT_TYPES:
            legacy = getattr(torch, name, None)
            if legacy is not None:
                legacy = getattr(legacy, "_numcheck_original", legacy)
                self._restore.append((torch, name, legacy))
                setattr(torch, name, _Built(legacy, self))

    def _array(self, label: str, natural: Any) -> Any:
        """A numpy draw: searched as a float64 tensor, handed back as numpy (or a float)."""
        import numpy

        array = numpy.asarray(natural)
        if array.dtype.kind != "f":
            return natural
        tensor = torch.from_numpy(array.copy())
        value = self.on_value(label, tensor)
        out = natural
        if (
            value is not tensor
            and isinstance(value, torch.Tensor)
            and tuple(value.shape) == array.shape
        ):
            out = value.detach().cpu().numpy().astype(array.dtype)
            out = out if isinstance(natural, numpy.ndarray) else out.item()
        self.handed.append(out)
        return out

    def __enter__(self) -> Any:
        from torch.utils.data import dataloader

        base = dataloader._BaseDataLoaderIter
        original = getattr(base.__next__, "_numcheck_original", base.__next__)
        __next__ = self._next(original)
        __next__._numcheck_original = original
        self._restore = [(base, "__next__", original)]
        setattr(base, "__next__", __next__)  # noqa: B010 (a method, patched for the run)
        self._patch_numpy()
        self._wrap_builders()
        CallSites.active.append(self)
        return TorchFunctionMode.__enter__(self)

    def __exit__(self, *exc: Any) -> Any:
        CallSites.active.remove(self)
        self._unpatch()
        return TorchFunctionMode.__exit__(self, *exc)


class _Built:
    """`torch.FloatTensor` (and its float siblings) during a run: calling it builds the tensor
    and hands it to the mode as data; `isinstance(x, torch.FloatTensor)` and attribute reads
    still answer as the real type does."""

    def __init__(self, legacy: Any, mode: Any) -> None:
        self._numcheck_original = legacy
        self._mode = mode

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self._numcheck_original(*args, **kwargs)
        if not args or isinstance(args[0], int | torch.Size):  # `FloatTensor(3, 4)`: no data
            return out
        return self._mode._built(sys._getframe(1), out, args[0])

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self._numcheck_original)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._numcheck_original, name)


def run_script(root: str, argv: Any, seed: int, mode: Any, folders: Any = ()) -> None:
    """Run `python argv...` in this process from `root`, under `mode`, seeded (the frameworks
    already loaded; Keras's initialisers follow `random`); returns when the script ends or
    when the watched op has run (the rest is cut off). `folders` go first on sys.path after
    the script's own folder (the checkout's source roots, which an install would provide)."""
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
    if "tensorflow" in sys.modules:
        sys.modules["tensorflow"].random.set_seed(seed)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    os.chdir(root)
    try:
        with mode:
            if argv[0] == "-m":
                sys.argv = [argv[1], *argv[2:]]
                sys.path[0:0] = [root, *folders]
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            else:
                script = os.path.join(root, argv[0])
                sys.argv = list(argv)
                sys.path[0:0] = [os.path.dirname(script), *folders]
                runpy.run_path(script, run_name="__main__")
    except StopScript:
        pass
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)


# ---------------------------------------------------------------- the configuration


@dataclass(frozen=True)
class ScriptConfig:
    """`[tool.numcheck.script]`, as the job carries it (validated by analyzers.config)."""

    argv: tuple[str, ...]  # ("train.py", "--steps", "2") or ("-m", "pkg.train", ...)
    run_seconds: float = DEFAULT_RUN_SECONDS
    max_values: int = DEFAULT_MAX_VALUES
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScriptConfig:
        return cls(
            script_argv(data["command"]),
            float(data.get("run_seconds", DEFAULT_RUN_SECONDS)),
            int(data.get("max_values", DEFAULT_MAX_VALUES)),
            {str(k): (float(v[0]), float(v[1])) for k, v in dict(data.get("bounds", {})).items()},
        )

    def bounds_for(self, label: str) -> tuple[float, float] | None:
        """The configured box of a value: by its site (`train.py:41`), else by its kind."""
        kind, _, rest = label.partition(" ")
        site = rest.split(" #", 1)[0]
        return self.bounds.get(site) or self.bounds.get(kind)


# ---------------------------------------------------------------- runs in the harness


FIRST_RUN_FACTOR = 3  # the first run in a process imports what the script needs (torch.optim
# pulls in torch._dynamo: over a second), so it gets this many times run_seconds
_WARM: list[bool] = []  # not empty once a script has run in this process


class ScriptFailed(Exception):
    """One run of the script went wrong; the message says how."""


class ScriptTimeout(BaseException):
    """The per-run limit: a BaseException, so the script cannot swallow it."""


@contextlib.contextmanager
def _run_limit(seconds: float) -> Iterator[None]:
    """SIGALRM after `seconds`, nested inside the harness's own deadline for the finding:
    whichever comes first fires, and the outer one is re-armed with what is left of it."""
    try:
        outer_handler = signal.getsignal(signal.SIGALRM)
        outer_left, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    except ValueError:  # not the main thread: no per-run limit here
        yield
        return
    started = time.monotonic()
    deferred: list[bool] = []

    def expire(signum: int, frame: Any) -> None:
        outer = (
            outer_handler
            if outer_left
            and callable(outer_handler)
            and time.monotonic() - started >= outer_left - 0.01
            else None
        )

        def ending() -> None:
            if outer is not None:
                outer(signum, frame)  # the finding's deadline came first
            raise ScriptTimeout()

        if CallSites.active and not deferred:  # at the run's next safe point (`_expire`);
            deferred.append(True)  # a script stuck in plain Python: the next alarm, 1 s on
            for mode in CallSites.active:
                mode.expired = ending
            return
        ending()

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer_left) if outer_left else seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, outer_handler)
        if outer_left:  # the finding's deadline goes on (if it already fired: fires again)
            left = outer_left - (time.monotonic() - started)
            signal.setitimer(
                signal.ITIMER_REAL, left if left > 0 else outer_interval or 0.001, outer_interval
            )


class _Tail(io.TextIOBase):
    """Where the script's prints go during runs: only the end is kept, for error messages."""

    def __init__(self, keep: int = 2000) -> None:
        self.keep = keep
        self.text = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text = (self.text + text)[-self.keep :]
        return len(text)


@dataclass
class Recorded:
    label: str
    value: torch.Tensor


class ScriptRun:
    """The Entry's callable: one run of the script with the searched values substituted.
    Returns the flagged line's value (the output of its last framework call, as one item;
    empty when the script ended without reaching the line): what the op's NaN reaches on the
    line, and what a fix is compared on, the op removed or not."""

    def __init__(
        self,
        repo: Path,
        config: ScriptConfig,
        path: str,
        lines: frozenset[int],
        op: str,
        seed: int,
        shadows: Path | None = None,
        framework: str = "torch",
        steps: int = 1,
    ) -> None:
        self.repo = Path(repo).resolve()
        self.steps = steps  # the run ends after this many executions of the op
        self.framework = framework  # "tensorflow": script_tf.TFExternalValues intercepts
        # a patched copy of `shadows` (the fix stage): its modules have the same names as the
        # original's, so each run imports them afresh and forgets them afterwards
        self.shadows = Path(shadows).resolve() if shadows is not None else None
        self.config = config
        self.path = path  # relative to the repository
        self.lines = lines
        self.op = op
        self.names = tuple(sorted(op_names(op)))
        self.seed = seed
        self.labels: list[str] = []  # the searched values, in the entry's order
        self.last: CallSites | None = None
        self.watched: list[tuple[str, str]] = []  # TensorFlow: the op's functions, by owner
        if framework == "tensorflow":
            from analyzers.dynamic.script_tf import watch_functions

            self.watched = watch_functions(op)

    def where(self) -> str:
        return f"{self.path}:{min(self.lines)}"

    def mode(self, on_value: Callable[[str, Any], Any]) -> CallSites:
        """The interceptor for one run: PyTorch's, or TensorFlow's for a TF finding. In a
        patched copy the op may be gone (a fused API): the run ends once the line has run."""
        mode: CallSites
        if self.framework == "tensorflow":
            from analyzers.dynamic.script_tf import TFExternalValues

            mode = TFExternalValues(
                str(self.repo), str(self.repo / self.path), self.lines, self.watched, on_value
            )
        else:
            mode = ExternalValues(
                str(self.repo), str(self.repo / self.path), self.lines, self.names, on_value
            )
        mode.stop_at_line = self.shadows is not None
        mode.stop_after = self.steps
        return mode

    def run(self, on_value: Callable[[str, Any], Any]) -> CallSites:
        mode = self.mode(on_value)
        tail = _Tail()
        first = not _WARM
        limit = self.config.run_seconds * (FIRST_RUN_FACTOR if first else 1)
        _WARM.append(True)
        roots = (self.repo, self.shadows) if self.shadows is not None else ()
        _forget_modules(roots)
        try:
            with (
                _run_limit(limit),
                contextlib.redirect_stdout(tail),
                contextlib.redirect_stderr(tail),
            ):
                # the checkout's root and source roots, a patched copy's before the checkout's
                run_script(
                    str(self.repo), self.config.argv, self.seed, mode, search_path(self.repo)
                )
        except ScriptTimeout:
            # past the op (its later steps too slow to reach, or code that no stop rule cut
            # short): what ran is enough
            if mode.ran or mode._done():
                self.last = mode
                return mode
            why = (
                f"run_seconds, times {FIRST_RUN_FACTOR} for the first run, which pays the imports"
                if first
                else "run_seconds"
            )
            raise ScriptFailed(
                f"the script did not reach {self.where()} within its per-run "
                f"limit of {limit:g} s ({why})"
            ) from None
        except SystemExit as exc:
            raise ScriptFailed(
                f"the script exited with status {exc.code!r} before reaching "
                f"{self.where()}{_said(tail)}"
            ) from None
        except Exception as exc:
            raise ScriptFailed(
                f"the script raised {type(exc).__name__}: {exc}"
                f"{self._raised_at(exc)} before reaching {self.where()}"
                f"{_said(tail)}"
            ) from None
        finally:
            _forget_modules(roots)
        self.last = mode
        return mode

    def _raised_at(self, exc: BaseException) -> str:
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if _inside(f.filename, self.repo)
        ]
        if not frames:
            return ""
        return (
            f" at {Path(frames[-1].filename).resolve().relative_to(self.repo)}:{frames[-1].lineno}"
        )

    def __call__(self, *values: Any) -> Any:
        table = dict(zip(self.labels, values, strict=True))
        mode = self.run(lambda label, natural: table.get(label, natural))
        return [] if mode.line_value is None else [mode.line_value]

    def operand_index(self) -> int | None:
        """Which tensor argument of the last run's first hit is the op's operand (for the
        reproducer's gradient check)."""
        if self.last is None or not self.last.hits or self.framework != "torch":
            return None
        _, args, kwargs, name = self.last.hits[0]
        operand = operand_of(self.op, name, args, kwargs)
        tensors = tensors_in((args, kwargs))
        return next((i for i, t in enumerate(tensors) if t is operand), None)


def _forget_modules(roots: tuple[Path, ...]) -> None:
    """Drop the modules imported from under `roots` from sys.modules, so that the next import
    of the same name reads the file under whichever root is on sys.path then."""
    if not roots:
        return
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and any(_inside(file, root) for root in roots):
            del sys.modules[name]


def _said(tail: _Tail) -> str:
    text = tail.text.strip()
    return f" (its last output: {text[-300:]!r})" if text else ""


def _inside(filename: str, root: Path) -> bool:
    try:
        Path(filename).resolve().relative_to(root)
    except ValueError:
        return False
    return "site-packages" not in filename


class ScriptEntry(Entry):
    """An Entry whose inputs are a script's external values; its box names their sites."""

    @property
    def script(self) -> ScriptRun:
        return cast(ScriptRun, self.fn)

    def on_copy(self, repo: Path) -> ScriptEntry:
        """The same entry (values, box, labels) running the script in `repo`, a patched copy
        of the repository (the fix stage validates a candidate there)."""
        old = self.script
        run = ScriptRun(
            repo,
            old.config,
            old.path,
            old.lines,
            old.op,
            old.seed,
            shadows=old.repo,
            framework=old.framework,
            steps=old.steps,
        )
        run.labels = list(old.labels)
        return replace(self, fn=run)

    def over_steps(self, steps: int) -> ScriptEntry:
        """The same entry with each run going on until the op has run `steps` times: a bug
        that needs the weights to move (a sigmoid that saturates once training grew them)
        shows at a later step, and the search steers the values every step sees."""
        old = self.script
        run = ScriptRun(
            old.repo,
            old.config,
            old.path,
            old.lines,
            old.op,
            old.seed,
            shadows=old.shadows,
            framework=old.framework,
            steps=steps,
        )
        run.labels = list(old.labels)
        return replace(self, fn=run)

    def differentiable_outputs(self, output: Any) -> Any:
        """The line's value in the run's last pass over it, not its first (`output`): a
        training script has called `backward` on the first pass's graph and stepped its
        optimiser since (autograd: "backward through the graph a second time"), while the
        run stops right after the last pass, before either."""
        last = self.script.last
        if last is None or last.latest_line_value is None:
            return output
        return [last.latest_line_value]

    def describe_box(self) -> list[dict[str, Any]]:
        boxes = super().describe_box()
        for box, label in zip(boxes, self.script.labels, strict=True):
            box["site"] = label
        return boxes


def build_script_entry(
    repo: Path,
    config: ScriptConfig,
    path: str,
    lines: frozenset[int],
    op: str,
    seed: int,
    framework: str = "torch",
) -> ScriptEntry:
    """Record one run of the script up to the op; its float external values become the
    entry's inputs (kept as torch tensors, TensorFlow's too). EntryError with the reason
    when the script cannot get there."""
    runner = ScriptRun(repo, config, path, lines, op, seed, framework=framework)
    recorded: list[Recorded] = []

    def record(label: str, natural: Any) -> Any:
        # values are only asked for before the op ran: after it, the run stops
        if isinstance(natural, torch.Tensor):
            recorded.append(Recorded(label, natural.detach().clone()))
        else:
            from analyzers.dynamic.harvest_keras import to_torch

            recorded.append(Recorded(label, to_torch(natural)))
        return natural

    command = f"script `{config.command}`"
    try:
        mode = runner.run(record)
    except ScriptFailed as exc:
        raise EntryError(f"{command}: {exc}") from None
    if not mode.ran:
        raise EntryError(
            f"{command} ran to completion without reaching {runner.where()} ({op} there never ran)"
        )
    floats = [r for r in recorded if r.value.is_floating_point() and r.value.numel() > 0]
    if not floats:
        raise EntryError(
            f"{command} reaches {runner.where()}, but no float external value "
            "(data batch, random draw) came before it: nothing to search"
        )
    chosen = floats[-config.max_values :]  # the values nearest the op
    specs: list[InputSpec] = []
    for item in chosen:
        configured = config.bounds_for(item.label)
        lo, hi = configured or observed_box(item.value)
        specs.append(
            InputSpec(
                str(item.value.dtype).replace("torch.", ""),
                tuple(item.value.shape),
                lo,
                hi,
                "config" if configured else "observed",
            )
        )
    runner.labels = [item.label for item in chosen]
    return ScriptEntry(
        f"script: {config.command}",
        specs,
        runner,
        "script",
        start=[item.value for item in chosen],
        framework=framework,
        param_names=list(runner.labels),
    )  # localisation names them so


# ---------------------------------------------------------------- minimising and the reproducer

INLINE_LIMIT = 12  # values with at most this many elements are written out in full
MAX_POINTS = 64  # beyond this many changed elements the value is written out in full


def minimise_script(
    entry: ScriptEntry,
    inputs: list[torch.Tensor],
    still_fails: Callable[[list[torch.Tensor]], bool],
    budget: int = 200,
    seconds: float = MINIMISE_SECONDS,
) -> list[torch.Tensor]:
    """ddmin toward the recorded values (what the seeded script draws and loads): elements
    go back to their natural value while the trigger persists, so the reproducer states only
    the changes that matter."""
    naturals = [x.detach() for x in entry.start or inputs]
    bases: list[torch.Tensor | None] = [
        natural if natural.shape == x.shape else None
        for natural, x in zip(naturals, inputs, strict=False)
    ]
    return minimise_toward(inputs, bases, still_fails, budget, seconds)


def script_plan(
    entry: ScriptEntry, inputs: list[torch.Tensor], target: Any, seed: int
) -> dict[str, Any]:
    """The reproducer as plan data (`writer.write_script` turns it into text, carrying its
    own copy of the interception code): the command, the watched lines, and each external
    value the search changed, small ones in full, large ones as the seeded value's changes."""
    runner = entry.script
    tf_mode = runner.framework == "tensorflow"
    naturals = list(entry.start or [])
    values: list[dict[str, Any]] = []
    for number, (label, x, spec) in enumerate(zip(runner.labels, inputs, entry.specs, strict=True)):
        natural = naturals[number] if number < len(naturals) else None
        if (
            natural is not None
            and natural.shape == x.shape
            and bool((x.detach() == natural.to(x.dtype)).all())
        ):
            continue  # the search left it as the script makes it
        values.append(_value_plan(number, label, x, natural, spec))
    plan: dict[str, Any] = {
        "kind": "script",
        "framework": "tensorflow" if tf_mode else "torch",
        "seed": seed,
        "argv": list(runner.config.argv),
        "command": runner.config.command,
        "path": runner.path,
        "lines": sorted(runner.lines),
        "steps": runner.steps,
        "values": values,
        # the whole run in mixed precision (precision.py): under torch.autocast, or under
        # Keras's global mixed_<dtype> policy for a TensorFlow script
        "autocast": entry.autocast,
    }
    if tf_mode:
        plan["watched"] = [list(w) for w in runner.watched]
    else:
        plan["names"] = list(runner.names)
        plan["operand"] = runner.operand_index() if target.where == "backward" else None
    return plan


def render_script(entry: ScriptEntry, inputs: list[torch.Tensor], target: Any, seed: int) -> str:
    """The reproducer's text, written from its plan as the host will write it."""
    return written(script_plan(entry, inputs, target, seed), target)[1]


def _value_plan(
    number: int, label: str, value: torch.Tensor, natural: torch.Tensor | None, spec: InputSpec
) -> dict[str, Any]:
    """One substitute: small values in full, large ones as the changes to what the script
    made (`natural`)."""
    plan: dict[str, Any] = {
        "number": number,
        "label": label,
        "dtype": spec.dtype,
        "float": spec.is_float,
    }
    changed = _changed(value, natural)
    if value.numel() <= INLINE_LIMIT or changed is None or len(changed) > MAX_POINTS:
        plan["values"] = value.detach().to("cpu").tolist()
        return plan
    flat = value.detach().reshape(-1)
    shape = tuple(value.shape)
    plan["shape"] = list(shape)
    plan["points"] = [[unravel(i, shape), flat[i].item()] for i in changed]
    return plan


def _changed(value: torch.Tensor, natural: torch.Tensor | None) -> list[int] | None:
    """The flat indices where `value` differs from `natural` (None: nothing to compare)."""
    if natural is None or natural.shape != value.shape:
        return None
    flat = value.detach().reshape(-1)
    return [int(i) for i in torch.nonzero(flat != natural.reshape(-1).to(flat.dtype)).reshape(-1)]
