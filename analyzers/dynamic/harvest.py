"""Harvested entries: calls recorded while the repository's own tests run.

Before pytest imports anything, each function (or method) enclosing a finding is wrapped so
that its first calls are recorded: the arguments (tensors cloned), the module instance for a
method. A recorded call is the best entry there is: real shapes, real dtypes, real module state,
and values that say what range an input lives in. Runs only inside the sandboxed harness.

Methods of `nn.Module` subclasses are replayed on the module as the test had it when it made
the call (a deep copy taken then). The class's constructor is wrapped too, so the arguments
it was built with are known: a standalone reproducer rebuilds the module from them, under the
seed the test had set when there was one, and embeds only the state that differs from that
fresh build. When that cannot be written as a script (arguments a script cannot spell, state
too large to embed, a rebuilt module that does not behave like the recorded one), the entry
still serves the search and `ModuleScript.reason` says why there is no reproducer.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import importlib
import importlib.util
import inspect
import io
import os
import signal
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from analyzers.dynamic.encoding import encode_keywords, encode_value, tensor_data
from analyzers.dynamic.entries import module_name_for
from analyzers.dynamic.entry import Entry
from analyzers.dynamic.harvest_keras import (
    KerasOwner,
    KerasReplay,
    KerasScript,
    is_layer,
    is_symbolic,
    is_tf_value,
    plan_script,
    to_torch,
)
from analyzers.dynamic.harvest_order import defined_names, test_files, tests_naming
from analyzers.dynamic.layout import on_sys_path
from analyzers.dynamic.lists import SearchedList, element_names
from analyzers.dynamic.loading import is_program
from analyzers.dynamic.objects import ObjectCall
from analyzers.dynamic.probe import tensors_in
from analyzers.dynamic.specs import InputSpec
from analyzers.dynamic.tensors import same_answers
from analyzers.dynamic.writer import arguments, state_literal

CALLS_KEPT = 3
TEST_FILES_RUN = 50  # test files beside the code run after those naming a target
NO_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"  # pytest's own switch for entry-point plugins
NOT_STARTED = (3, 4)  # pytest.ExitCode.INTERNAL_ERROR and USAGE_ERROR: a plugin that failed
STATE_LIMIT = 48 * 1024  # bytes of torch.save output a reproducer may embed (base64: 4/3 more)
LITERAL_LIMIT = 64  # differing state of at most this many values is written out as numbers
COMMON_SEEDS = (0, 42, 1, 1234, 123)  # tried when the test seeded through another function


@dataclass
class Construction:
    """How a recorded module was built: the constructor's arguments (copied before it ran),
    and the seed `torch.manual_seed` had just set, when the RNG was untouched since."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    seed: int | None = None


@dataclass
class Recorded:
    """One call: positional and keyword arguments, with tensors cloned."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    owner: Any = None  # `self` for a method (a deep copy taken before the call; for a Keras
    # layer, a harvest_keras.KerasOwner: the layer and its variables at the call)
    init: Construction | None = None  # how `owner` was built, when that was recorded
    framework: str = "torch"  # "tensorflow": the tensors were tf tensors (kept as torch here)


@dataclass
class Harvest:
    calls: dict[str, list[Recorded]] = field(default_factory=dict)  # "module:qualname" -> calls
    ran: bool = False
    note: str = ""

    def tests_said(self, key: str) -> str:
        """What the repository's tests tell of `key` ("module:qualname"): recorded calls
        ("called"), none though the tests ran ("no-call"), no test files ("no-tests"), or
        tests that could not run ("not-run"). A proof on a call numcheck made up says which,
        so the reader knows there were no values of the repository's own to search from
        (summary.TESTS_SAID)."""
        if self.calls.get(key):
            return "called"
        if self.ran:
            return "no-call"
        return "no-tests" if self.note == NO_TESTS else "not-run"


NO_TESTS = "no tests found"


# module instance -> how it was built (weak: the tests' modules die as usual)
_BUILT: weakref.WeakKeyDictionary[Any, Construction] = weakref.WeakKeyDictionary()
_LAST_SEED: list[int] = []


def is_jax_value(value: Any) -> bool:
    """A concrete JAX array; not a tracer (a call made inside `jax.jit` or `jax.grad`, whose
    arguments have no values to record). JAX is never imported here for the asking."""
    jax = sys.modules.get("jax")
    return (
        jax is not None and isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer)
    )


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if is_tf_value(value):
        return to_torch(value)
    if is_jax_value(value):  # the searcher's currency; it crosses back at each call
        return torch.from_numpy(np.array(value))
    if isinstance(value, list | tuple):
        return type(value)(_clone(v) for v in value)
    return value


def _copied(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # an argument that cannot be copied is kept as is (never spelled)
        return value


def _construction_seed() -> int | None:
    """The seed whose fresh state the global RNG is in right now, if one of the likely ones."""
    try:
        state = torch.random.get_rng_state()
        for seed in dict.fromkeys([*_LAST_SEED[-1:], *COMMON_SEEDS]):
            if torch.equal(torch.Generator().manual_seed(seed).get_state(), state):
                return seed
    except Exception:  # odd seeds (negative, huge) are simply not matched
        return None
    return None


def _wrap(store: list[Recorded], original: Any, is_method: bool) -> Any:
    @functools.wraps(original)
    def recording(*args: Any, **kwargs: Any) -> Any:
        if len(store) < CALLS_KEPT and not any(is_symbolic(v) for v in (*args, *kwargs.values())):
            owner = None
            init = None
            rest = args
            if is_method and args:
                with contextlib.suppress(Exception):
                    owner = (
                        KerasOwner.at_call(args[0]) if is_layer(args[0]) else copy.deepcopy(args[0])
                    )
                with contextlib.suppress(Exception):
                    init = _BUILT.get(args[0])
                rest = args[1:]
            store.append(
                Recorded(
                    tuple(_clone(a) for a in rest),
                    {k: _clone(v) for k, v in kwargs.items()},
                    owner,
                    init,
                    _framework(owner, (*rest, *kwargs.values())),
                )
            )
        return original(*args, **kwargs)

    return _same_signature(recording, original)


def _framework(owner: Any, values: tuple[Any, ...]) -> str:
    """Which framework a recorded call's tensors came from (they are kept as torch tensors)."""
    if isinstance(owner, KerasOwner) or any(is_tf_value(v) for v in values):
        return "tensorflow"
    if owner is None and any(is_jax_value(v) for v in values):
        return "jax"
    return "torch"


def _same_signature(wrapper: Any, original: Any) -> Any:
    """`inspect.getfullargspec` ignores `__wrapped__` but reads `__signature__`: Keras reads
    a layer's constructor that way (its auto-config) and would see `*args, **kwargs`."""
    with contextlib.suppress(TypeError, ValueError):
        wrapper.__signature__ = inspect.signature(original)
    return wrapper


def _wrap_init(cls: type, original: Any) -> Any:
    """Record the arguments an instance of exactly `cls` is built with (a subclass passes
    its own arguments to its own constructor: those are not these)."""

    @functools.wraps(original)
    def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
        built = None
        if type(self) is cls:
            built = Construction(
                tuple(_copied(a) for a in args),
                {k: _copied(v) for k, v in kwargs.items()},
                _construction_seed(),
            )
        original(self, *args, **kwargs)
        if built is not None:
            with contextlib.suppress(Exception):
                _BUILT.setdefault(self, built)

    return _same_signature(recording_init, original)


def _wrap_seed(original: Any) -> Any:
    @functools.wraps(original)
    def seeding(seed: Any) -> Any:
        with contextlib.suppress(Exception):
            _LAST_SEED[:] = [int(seed)]
        return original(seed)

    return seeding


def _patch(
    patched: list[tuple[Any, str, Any, bool]], owner: Any, name: str, replacement: Any
) -> None:
    """Set `owner.name`, remembering how to undo it (delete what was only inherited)."""
    own = name in vars(owner)
    patched.append((owner, name, vars(owner).get(name), own))
    setattr(owner, name, replacement)


def harvest(repo: Path, targets: list[tuple[str, str]], seconds: float) -> Harvest:
    """Run the repository's tests once with every (path, function) target wrapped: first
    the files that name a target (harvest_order.py), then the rest with the time left."""
    result = Harvest()
    # a tests folder, else the test files beside the code (`loss_test.py` in JAX and
    # TensorFlow libraries, `test_loss.py`), from which the files naming a target are chosen
    folders = [p for p in ("tests", "test") if (repo / p).is_dir()]
    beside = [] if folders else [str(p.relative_to(repo)) for p in test_files(repo, ["."])]
    tests = folders or beside[:TEST_FILES_RUN]
    if not tests:
        result.note = NO_TESTS
        return result
    patched: list[tuple[Any, str, Any, bool]] = []
    classes: set[type] = set()
    names: set[str] = set()  # what a test exercising the targets would write
    on_sys_path(repo)
    for path, function in targets:
        key = f"{module_name_for(repo, path)}:{function}"
        if key in result.calls or "<" in function or is_program(repo / path):
            continue  # a program is never imported (loading.top_level_work)
        try:
            module = importlib.import_module(module_name_for(repo, path))
            owner: Any = module
            parts = function.split(".")
            for part in parts[:-1]:
                owner = getattr(owner, part)
            original = inspect.getattr_static(owner, parts[-1])
        except Exception:  # an import that fails is reported by the entry that needs it
            continue
        names |= defined_names(module) | {parts[0]}
        store: list[Recorded] = []
        result.calls[key] = store
        is_method = inspect.isclass(owner) and not isinstance(original, staticmethod | classmethod)
        function_obj = original.__func__ if isinstance(original, staticmethod) else original
        if not callable(function_obj):
            continue
        _patch(patched, owner, parts[-1], _wrap(store, function_obj, is_method))
        if (
            is_method
            and (issubclass(owner, torch.nn.Module) or is_layer(owner))
            and owner not in classes
        ):
            classes.add(owner)
            _patch(patched, owner, "__init__", _wrap_init(owner, owner.__init__))
    if classes:
        for home in (torch, torch.random):
            _patch(patched, home, "manual_seed", _wrap_seed(vars(home)["manual_seed"]))
    first = [str(repo / path) for path in tests_naming(repo, folders or beside, names)]
    rest = [str(repo / path) for path in tests if str(repo / path) not in first]
    rest += [f"--ignore={path}" for path in first]  # inside a folder run after them
    try:
        runs = [args for args in (first, rest) if any(not a.startswith("-") for a in args)]
        result.ran = _run_pytest(repo, runs, seconds)
    finally:
        for owner, name, original, own in reversed(patched):
            if own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
    return result


class HarvestTimeout(KeyboardInterrupt):
    """The harvest's limit. A KeyboardInterrupt, so pytest ends the whole session (a plain
    exception would fail one test and let the next run) and a test's `except Exception`
    does not swallow it. A test that catches BaseException can still keep going: the run's
    own wall clock, enforced by the runner from outside, is the limit behind this one."""


def _run_pytest(repo: Path, runs: list[list[str]], seconds: float) -> bool:
    """One pytest session per item of `runs` (the tests naming the targets, then the rest),
    all within `seconds`. A test file that fails to import is reported and skipped, not the
    end of the session: one module needing a dependency the sandbox lacks must not keep the
    others from running. When pytest cannot start with the plugins the environment brings
    (kornia's pinned `pytest-mypy==0.7.0` fails pytest 9's hook validation, and then not one
    test runs), the sessions run again without them."""
    try:
        import pytest
    except ImportError:
        return False

    fired: list[bool] = []

    def expire(signum: int, frame: object) -> None:
        fired.append(True)
        raise HarvestTimeout("harvesting the tests ran out of time")

    deadline = time.monotonic() + seconds
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)  # once: nothing may fire after the harvest
    own_autoload = os.environ.get(NO_AUTOLOAD)
    autoload = own_autoload != "1"
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for args in runs:
                if fired or time.monotonic() >= deadline:  # the limit ended the last run
                    break
                code = pytest.main(_pytest_options(repo, autoload) + args)
                if autoload and code in NOT_STARTED:
                    autoload = False  # for this run and the next
                    os.environ[NO_AUTOLOAD] = "1"
                    if not fired:
                        pytest.main(_pytest_options(repo, autoload) + args)
    except (HarvestTimeout, Exception):  # noqa: BLE001 - the limit can land anywhere,
        pass  # pytest's own parsing included; whatever was recorded before it still counts
    finally:
        _disarm(previous)
        if own_autoload is None:
            os.environ.pop(NO_AUTOLOAD, None)
    return True


def _pytest_options(repo: Path, autoload: bool) -> list[str]:
    return [
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--continue-on-collection-errors",
        # every test in this process, where the targets are wrapped, even when the
        # repository's own options ask for pytest-xdist workers
        *(["-n", "0"] if autoload and importlib.util.find_spec("xdist") else []),
        "--rootdir",
        str(repo),
    ]


def _disarm(previous: Any) -> None:
    """The timer off and the old handler back, even when the limit fires right here."""
    while True:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            return
        except HarvestTimeout:
            continue


def observed_box(values: torch.Tensor) -> tuple[float, float]:
    """The range a harvested input may take: what the tests showed, widened tenfold while
    keeping the shape of the range (probabilities stay in [0, 1], non-negatives >= 0,
    non-positives such as log-probabilities <= 0)."""
    flat = values.detach().double().reshape(-1)
    if flat.numel() == 0:
        return -1.0, 1.0
    lo, hi = float(flat.min()), float(flat.max())
    if lo >= 0.0 and hi <= 1.0:
        return 0.0, 1.0
    magnitude = max(abs(lo), abs(hi), 1.0) * 10.0
    if lo >= 0.0:
        return 0.0, magnitude
    if hi <= 0.0:
        return -magnitude, 0.0
    return -magnitude, magnitude


REPLAYABLE = (int, float, bool, str, type(None))


@dataclass
class ModuleScript:
    """How a standalone script rebuilds the recorded module, or (`reason`) why it cannot."""

    class_path: str = ""  # "Net" or "Outer.Inner", imported from the entry's module
    # the constructor's arguments, encoded (encoding.encode_value)
    args: list[Any] = field(default_factory=list)
    kwargs: list[list[Any]] = field(default_factory=list)
    base_seed: int = 0  # torch.manual_seed before the constructor runs
    call_seed: int = 0  # torch.manual_seed before the method runs (dropout in train mode)
    dtype: str | None = None  # `.to(torch.<dtype>)` after construction, when the test did
    # what differs from a fresh build: every value when small, else base64 of torch.save
    state_values: dict[str, Any] | None = None
    state: str = ""
    state_keys: list[str] = field(default_factory=list)
    training: bool = True
    modes: list[tuple[str, bool]] = field(default_factory=list)  # submodules unlike the root
    reason: str | None = None

    def plan(self) -> dict[str, Any]:
        """The reproducer plan's `rebuild` (writer._rebuild_lines writes it)."""
        return {
            "class_path": self.class_path,
            "args": self.args,
            "kwargs": self.kwargs,
            "base_seed": self.base_seed,
            "call_seed": self.call_seed,
            "dtype": self.dtype,
            "state_literal": self.state_values,
            "state": self.state,
            "state_keys": self.state_keys,
            "training": self.training,
            "modes": [list(mode) for mode in self.modes],
        }


@dataclass
class HarvestedMethod(Entry):
    """A recorded method call: `fn` is a `ModuleReplay` of the recorded module."""

    module_script: ModuleScript | KerasScript = field(default_factory=ModuleScript)


class ModuleReplay:
    """Calls the method on the recorded module, under a fixed seed (dropout in train mode is
    the same every time); on a fresh copy per call when the method changes the module's state
    (BatchNorm's running statistics in train mode), so evaluations stay independent."""

    def __init__(self, module: torch.nn.Module, method: str, fresh: bool, seed: int = 0) -> None:
        self.module = module
        self.method = method
        self.fresh = fresh
        self.seed = seed
        self.last_module: torch.nn.Module = module  # the instance the last call ran on

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = copy.deepcopy(self.module) if self.fresh else self.module
        self.last_module = module
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return getattr(module, self.method)(*args, **kwargs)


def _snapshot(module: torch.nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    tensors = {k: v.detach().clone() for k, v in module.state_dict().items()}
    scalars = {
        f"{name}.{attr}": value
        for name, sub in module.named_modules()
        for attr, value in vars(sub).items()
        if isinstance(value, REPLAYABLE)
    }
    return tensors, scalars


def _same_state(
    a: tuple[dict[str, torch.Tensor], dict[str, Any]],
    b: tuple[dict[str, torch.Tensor], dict[str, Any]],
) -> bool:
    return (
        a[1] == b[1]
        and a[0].keys() == b[0].keys()
        and all(_same_tensor(a[0][k], b[0][k]) for k in a[0])
    )


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return torch.equal(a, b)


def _mutates(
    module: torch.nn.Module, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> bool:
    """Does one call of the method change the module's state? (Raising counts as yes.)"""
    try:
        probe = copy.deepcopy(module)
        before = _snapshot(probe)
        ModuleReplay(probe, method, fresh=False)(*_clone(args), **_clone(kwargs))
        return not _same_state(before, _snapshot(probe))
    except Exception:
        return True


def _call_parts(call: Recorded) -> tuple[list[InputSpec], list[Any], list[torch.Tensor]]:
    """Searched inputs are the call's float tensors, alone or as the elements of a list or
    tuple of them (a grid given as `[x_grid_0, x_grid_1]`: a `SearchedList` slot, lists.py);
    the other arguments are replayed as recorded when a script can spell them (numbers,
    strings, integer tensors)."""
    specs: list[InputSpec] = []
    template: list[Any] = []
    start: list[torch.Tensor] = []
    for value in call.args:
        if _float_tensor(value):
            template.append(None)
            elements = [value]
        elif isinstance(value, list | tuple) and value and all(map(_float_tensor, value)):
            template.append(SearchedList(len(value), is_tuple=isinstance(value, tuple)))
            elements = list(value)
        elif isinstance(value, (torch.Tensor, *REPLAYABLE)):
            template.append(value)
            continue
        else:
            raise ValueError(f"cannot replay an argument of type {type(value).__name__}")
        for element in elements:
            lo, hi = observed_box(element)
            dtype = str(element.dtype).replace("torch.", "")
            specs.append(
                InputSpec(dtype, tuple(element.shape), lo, hi, "observed", keeps_sign=True)
            )
            start.append(element)
    if not all(isinstance(v, REPLAYABLE) for v in call.kwargs.values()):
        raise ValueError("cannot replay the keyword arguments")
    if not specs:
        raise ValueError("the recorded call has no float tensor arguments")
    return specs, template, start


def _float_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _parameter_names(fn: Any, template: list[Any], skip: int) -> list[str]:
    """One name per searched input: the parameter's, or `xs_0, xs_1` for a list's elements;
    [] when the signature cannot name them all."""
    try:
        params = list(inspect.signature(fn).parameters)[skip:]
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for i, slot in enumerate(template):
        if slot is not None and not isinstance(slot, SearchedList):
            continue  # a recorded value, not searched
        if i >= len(params):
            return []
        names.extend(element_names(params[i], slot))
    return names


def entry_from_call(key: str, call: Recorded, fn: Any) -> Entry:
    """Searched inputs are the call's float tensors, starting from the recorded values inside
    observed boxes; the other arguments are replayed as recorded. A plain function qualifies
    when a script can spell its other arguments; a method, when its owner is an nn.Module
    (the recorded state is replayed; `module_script` says how a script rebuilds it)."""
    specs, template, start = _call_parts(call)
    dtype = specs[0].dtype
    if isinstance(call.owner, KerasOwner):
        return _layer_entry(key, call, fn, specs, template, start)
    if call.owner is not None:
        return _method_entry(key, call, fn, specs, template, start)
    return Entry(
        key,
        specs,
        fn,
        "harvested",
        template=template,
        template_kwargs=dict(call.kwargs),
        start=start,
        dtype=dtype,
        param_names=_parameter_names(fn, template, 0),
        framework=call.framework,
    )


def _layer_entry(
    key: str,
    call: Recorded,
    fn: Any,
    specs: list[InputSpec],
    template: list[Any],
    start: list[torch.Tensor],
) -> HarvestedMethod:
    """A recorded Keras layer method: replayed on the live layer, its variables restored to
    the recording before every call (harvest_keras.py)."""
    method = key.rpartition(".")[2]
    owner = call.owner
    assert isinstance(owner, KerasOwner)
    return HarvestedMethod(
        key,
        specs,
        KerasReplay(owner, method, call.init),
        "harvested",
        template=template,
        template_kwargs=dict(call.kwargs),
        start=start,
        dtype=specs[0].dtype,
        is_method=True,
        framework="tensorflow",
        param_names=_parameter_names(fn, template, 1),
        module_script=plan_script(key, owner, method, call.init, call.args, call.kwargs),
    )


def _method_entry(
    key: str,
    call: Recorded,
    fn: Any,
    specs: list[InputSpec],
    template: list[Any],
    start: list[torch.Tensor],
) -> Entry:
    owner = call.owner
    method = key.rpartition(".")[2]
    if not isinstance(owner, torch.nn.Module):
        return _stateless_entry(key, call, fn, specs, template, start)
    replay = ModuleReplay(owner, method, fresh=_mutates(owner, method, call.args, call.kwargs))
    return HarvestedMethod(
        key,
        specs,
        replay,
        "harvested",
        template=template,
        template_kwargs=dict(call.kwargs),
        start=start,
        dtype=specs[0].dtype,
        is_method=True,
        param_names=_parameter_names(fn, template, 1),
        module_script=module_script(key, call, replay),
    )


def _stateless_entry(
    key: str,
    call: Recorded,
    fn: Any,
    specs: list[InputSpec],
    template: list[Any],
    start: list[torch.Tensor],
) -> Entry:
    """A recorded method of a plain object that holds nothing (gpytorch's `Interpolation()`,
    a namespace of methods): the test's object state is its class alone, so the call is
    replayed on a new `Owner()` per call, as a plain class's synthesised member is
    (objects.ObjectCall) and as the reproducer builds it. An object with state, a class that
    needs constructor arguments, or a call with recorded non-searched arguments is refused."""
    owner = call.owner
    kind = type(owner)
    state = getattr(owner, "__dict__", None)
    recorded = [
        slot for slot in template if slot is not None and not isinstance(slot, SearchedList)
    ]
    if state or state is None or recorded or not _bare(kind):
        raise ValueError(
            f"recorded calls of {kind.__name__} methods need the test's "
            "object state; only nn.Module state and stateless objects are replayed"
        )
    return Entry(
        key,
        specs,
        ObjectCall(
            kind,
            key.rpartition(".")[2],
            (),
            slots=tuple(template) if any(template) else (),
        ),
        "harvested",
        constants=dict(call.kwargs),
        start=start,
        dtype=specs[0].dtype,
        param_names=_parameter_names(fn, template, 1),
        framework=call.framework,
    )


def _bare(kind: type) -> bool:
    """Can the class be built with no arguments, into an object that holds nothing?"""
    try:
        made = kind()
    except Exception:  # the PR's constructor: any failure means it needs something
        return False
    return getattr(made, "__dict__", None) == {}


def module_script(key: str, call: Recorded, replay: ModuleReplay) -> ModuleScript:
    """Plan the rebuild a reproducer writes, and check it here: the module rebuilt exactly
    as the script will rebuild it must hold the recorded state and answer the recorded call
    with the same outputs. Any step that fails becomes the reason there is no reproducer."""
    try:
        return _plan(key, call, replay)
    except Exception as exc:  # the PR's module may fail to compare, save or copy in any way
        return ModuleScript(
            reason=f"checking a rebuild of the recorded module failed: {type(exc).__name__}: {exc}"
        )


def _plan(key: str, call: Recorded, replay: ModuleReplay) -> ModuleScript:
    module_name, _, qualname = key.partition(":")
    class_path = qualname.rpartition(".")[0]
    owner = replay.module
    kind = type(owner)
    if kind.__module__ != module_name or kind.__qualname__ != class_path:
        return ModuleScript(
            reason=f"the tests called {qualname} on a "
            f"{kind.__module__}.{kind.__qualname__}, a subclass whose "
            "constructor call is not recorded"
        )
    if call.init is None:
        return ModuleScript(
            reason=f"the call that built the {class_path} was not recorded "
            "(it was built before the harvest, or copied)"
        )
    try:
        args = [encode_value(a) for a in call.init.args]
        kwargs = encode_keywords(call.init.kwargs)
    except ValueError as exc:
        return ModuleScript(
            reason=f"an argument of the {class_path} constructor is {exc}, "
            "which a script cannot spell"
        )
    init_source = arguments({"args": args, "kwargs": kwargs}, "the constructor")  # messages
    plan = ModuleScript(
        class_path,
        args,
        kwargs,
        base_seed=call.init.seed if call.init.seed is not None else 0,
        call_seed=replay.seed,
        training=owner.training,
    )
    try:
        rebuilt = _rebuild(kind, call.init, plan, owner)
    except _NoScript as exc:
        return ModuleScript(reason=str(exc))
    except Exception as exc:
        return ModuleScript(
            reason=f"rebuilding {class_path}({init_source}) outside the tests "
            f"failed: {type(exc).__name__}: {exc}"
        )
    if not _same_state(_snapshot(owner), _snapshot(rebuilt)):
        return ModuleScript(
            reason=f"{class_path}({init_source}) with the recorded state_dict "
            "loaded does not hold the recorded state"
        )
    if not _same_answer(replay, rebuilt, call):
        return ModuleScript(
            reason=f"{class_path}({init_source}) with the recorded state_dict "
            f"loaded does not answer the recorded call like the "
            "module the tests built (it keeps state outside its "
            "state_dict)"
        )
    return plan


class _NoScript(Exception):
    """The rebuild cannot be written as a script; the message says why."""


def _float_dtype(module: torch.nn.Module) -> torch.dtype | None:
    dtypes = {t.dtype for t in (*module.parameters(), *module.buffers()) if t.is_floating_point()}
    return dtypes.pop() if len(dtypes) == 1 else None


def _rebuild(
    kind: type, init: Construction, plan: ModuleScript, owner: torch.nn.Module
) -> torch.nn.Module:
    """Build the module as the reproducer will, filling in the plan's state and modes."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(plan.base_seed)
        module = kind(*_copied(init.args), **_copied(init.kwargs))
    assert isinstance(module, torch.nn.Module)
    wanted = _float_dtype(owner)
    if wanted is not None and _float_dtype(module) not in (None, wanted):
        plan.dtype = str(wanted).replace("torch.", "")
        module = module.to(wanted)
    recorded = owner.state_dict()
    fresh = module.state_dict()
    if recorded.keys() != fresh.keys():
        extra = sorted(set(recorded) ^ set(fresh))[:3]
        raise _NoScript(
            f"a freshly built {plan.class_path} has other state entries than the "
            f"recorded one ({', '.join(extra)})"
        )
    differing = {
        k: v.detach().clone().contiguous()
        for k, v in recorded.items()
        if not _same_tensor(v, fresh[k])
    }
    if differing:
        plan.state_keys = sorted(differing)
        if sum(t.numel() for t in differing.values()) <= LITERAL_LIMIT:
            plan.state_values = {k: tensor_data(v) for k, v in differing.items()}
            # exactly what the script runs
            loaded = eval(state_literal(plan.state_values), {"torch": torch})  # noqa: S307
        else:
            buffer = io.BytesIO()
            torch.save(differing, buffer)
            size = buffer.getbuffer().nbytes
            if size > STATE_LIMIT:
                raise _NoScript(
                    f"the recorded state of the {plan.class_path} differs from a "
                    f"freshly built one in {len(differing)} tensors "
                    f"({size / 1024:.0f} KiB saved), more than the "
                    f"{STATE_LIMIT // 1024} KiB a reproducer embeds"
                )
            plan.state = base64.b64encode(buffer.getvalue()).decode("ascii")
            loaded = torch.load(io.BytesIO(base64.b64decode(plan.state)), weights_only=True)
        module.load_state_dict(loaded, strict=False)
    module.train(plan.training)
    plan.modes = [
        (name, sub.training)
        for name, sub in owner.named_modules()
        if name and sub.training != plan.training
    ]
    for name, mode in plan.modes:
        module.get_submodule(name).training = mode
    return module


def _same_answer(replay: ModuleReplay, rebuilt: torch.nn.Module, call: Recorded) -> bool:
    """The recorded call on the recorded module and on the rebuilt one: the same outputs."""

    def answer(module: torch.nn.Module) -> list[torch.Tensor]:
        again = ModuleReplay(copy.deepcopy(module), replay.method, False, replay.seed)
        with torch.no_grad():
            return [
                t.detach() for t in tensors_in(again(*_clone(call.args), **_clone(call.kwargs)))
            ]

    return same_answers(answer, replay.module, rebuilt, _same_tensor)
