"""Entries for members of plain classes: a distribution's `log_prob`, a kernel's `K`, a
metric's `result`, a `lazy_property` such as `norm_const`.

Real code keeps much of its numerics in objects that are not `nn.Module`s or Keras layers,
and there the NaN usually comes from what the object was built with (a scale of 0, logits
100 apart), not from the argument of the method. So the constructor's tensor parameters are
searched along with the method's own: the entry's function (`ObjectCall`) builds the object
from the first inputs on every call, then calls the member with the rest.

Which constructor parameters are inputs, and their shapes, is found by trying: the required
tensor parameters first, then each optional one that defaults to None (`Categorical(probs=None,
logits=None)` needs one of them); for each, scalars first (they broadcast against anything),
then vectors, then the (batch, features) default, in every combination. A trial uses normal
values (0.5 to 1.5), so the object's own argument validation stays on, as the code's users
have it. A method whose body never reads `self` (a helper that could have been a
staticmethod) is called on an object made without its constructor: nothing the object was
built with can change its result, and its constructor may need what numcheck cannot make up
(flax's `WeightNorm(wrapped_optimizer)`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from analyzers.dynamic.branches import path_values
from analyzers.dynamic.defaults import package_default
from analyzers.dynamic.linen import apply_member, is_linen_module, streams, unbound_init
from analyzers.dynamic.lists import SearchedList, filled
from analyzers.dynamic.parts import ObjectPart, part_candidates
from analyzers.dynamic.probe import LineWatch
from analyzers.dynamic.raised import raised_by_any_op
from analyzers.dynamic.signatures import (
    TENSOR_HINT,
    EntryError,
    annotation_text,
    constructor_args,
    fits,
    named_domain,
    positional_names,
    signature_inputs,
    undecorated,
)
from analyzers.dynamic.specs import InputSpec, default_spec
from analyzers.dynamic.usage import parameter_uses, reads_self

# Shapes tried for each of the constructor's tensors (see the module's docstring): every
# combination, scalars first, at most MAX_SHAPE_TRIALS of them per set of parameters (a
# mixture's locs (K, D), scale (D,) and logits (K,) need three different ones).
CONSTRUCTOR_SHAPES: tuple[tuple[int, ...], ...] = ((), (8,), (4,), (4, 8))
MAX_SHAPE_TRIALS = 64
MAX_OPTIONAL = 4  # optional (None-default) constructor parameters tried, one at a time
MAX_PART_TRIALS = 4  # combinations of the classes constructor arguments may be (parts.py)


@dataclass
class ObjectCall:
    """`owner(**{name: input})` then its member, called with the remaining inputs (or read,
    for a property). A new object per call: a search's inputs never leak into the next."""

    owner: type
    member: str
    init_names: tuple[str, ...]  # the first len(init_names) inputs, passed by keyword
    init: dict[str, Any] = field(default_factory=dict)  # constructor constants
    is_property: bool = False
    bare: bool = False  # the member never reads `self`: no constructor runs (usage.reads_self)
    parts: tuple[ObjectPart, ...] = ()  # objects it is built with, from the first inputs
    # draws that make an empty support are refused (`refuse_empty_support`); not while
    # trying shapes on arbitrary normal values, where half the pairs have low > high
    checks_support: bool = True
    # the member's searched arguments where one is a list of inputs (lists.py); () when
    # each is one tensor
    slots: tuple[SearchedList | None, ...] = ()
    seed: int | None = None  # torch's seed before each construction (an nn.Module's weights)
    # a flax linen Module's random streams: the member runs through `apply` (linen.py)
    streams: tuple[str, ...] | None = None

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        built: dict[str, Any] = {}
        for part in self.parts:
            taken = len(part.init_names)
            built[part.name] = part.build(list(inputs[:taken]))
            inputs = inputs[taken:]
        count = len(self.init_names)
        owner: Any = self.owner  # as the reproducer makes it: `Owner.__new__(Owner)`
        instance = owner.__new__(owner) if self.bare else self._built(inputs[:count], built)
        if self.checks_support and not self.bare:
            refuse_empty_support(instance)
        rest = inputs[count:]
        args = filled(self.slots, rest) if self.slots else rest
        if self.streams is not None and not self.bare:
            return apply_member(
                instance, self.member, tuple(args), kwargs, self.streams, self.seed or 0
            )
        member = getattr(instance, self.member)
        if self.is_property:
            return member
        return member(*args, **kwargs)

    def _built(self, inputs: Sequence[Any], built: dict[str, Any]) -> Any:
        """The object from its constructor inputs; under `seed` when there is one, so each
        call builds the same weights (as the reproducer does after `torch.manual_seed`)."""
        given = {**dict(zip(self.init_names, inputs, strict=True)), **built, **self.init}
        if self.seed is None:
            return self.owner(**given)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return self.owner(**given)

    def with_owner(self, owner: type) -> ObjectCall:
        """The same call on another class (the fix stage's patched copy of it)."""
        return replace(self, owner=owner)


@dataclass(frozen=True)
class ObjectInputs:
    call: ObjectCall
    specs: list[InputSpec]  # the constructor's, then the member's
    constants: dict[str, Any]  # the member's keyword constants
    chosen: dict[str, Any]  # of those, the ones numcheck chose (the reproducer passes them)
    param_names: list[str]


def object_inputs(
    owner: type, member: str, framework: str, line: int | None = None, seed: int | None = None
) -> ObjectInputs:
    """The call of `owner`'s member, built from searched constructor inputs (see the
    module's docstring); `line`, the flagged line, whose enclosing tests choose text
    constructor values; `seed`, set before every construction (an nn.Module's weights)."""
    attribute = inspect.getattr_static(owner, member, None)
    if attribute is None:
        raise EntryError(f"{owner.__name__} has no {member}; configure an entry")
    if isinstance(attribute, classmethod):
        raise EntryError(f"{owner.__name__}.{member} is a classmethod; configure an entry")
    is_property = not callable(attribute)  # property, cached_property, lazy_property
    linen = streams(owner) if is_linen_module(owner) else None
    if linen is not None and is_property:
        raise EntryError(
            f"{owner.__name__}.{member} is a property of a flax Module, which "
            "runs only bound; configure an entry"
        )
    specs: list[InputSpec] = []
    constants: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    names: list[str] = []
    slots: tuple[SearchedList | None, ...] = ()
    if not is_property:
        function = getattr(owner, member)
        source = undecorated(function, member)  # its signature, not its wrapper's
        static = isinstance(attribute, staticmethod)
        # a method's signature without `self`
        target = source if static else functools.partial(source, None)
        found = signature_inputs(
            target, None, allow_empty=True, uses=parameter_uses(source), framework=framework
        )
        specs, constants, chosen = found.specs, found.constants, found.chosen
        slots = tuple(found.slots) if found.template() is not None else ()
        names = (
            found.names if slots else positional_names(source)[0 if static else 1 :][: len(specs)]
        )
        if not static and specs and not reads_self(function) and not reads_self(source):
            return ObjectInputs(
                ObjectCall(owner, member, (), bare=True, slots=slots),
                specs,
                constants,
                chosen,
                names,
            )
    needs = (
        path_values(getattr(owner, member), line) if line is not None and not is_property else {}
    )
    required, optional, init = _constructor(owner, needs, framework)
    candidates = part_candidates(owner, required)  # objects the constructor checks for
    required = [name for name in required if name not in candidates]
    first: Exception | None = None  # the error of the plainest try, the one worth reading
    for parts, extra in itertools.product(
        itertools.islice(itertools.product(*candidates.values()), MAX_PART_TRIALS),
        [None, *optional[:MAX_OPTIONAL]],
    ):
        init_names = (*required, *([extra] if extra else []))
        part_names = [n for part in parts for n in part.input_names()]
        if not init_names and not specs and not part_names:
            continue
        call = ObjectCall(
            owner,
            member,
            tuple(init_names),
            init,
            is_property,
            parts=tuple(parts),
            slots=slots,
            seed=seed,
            streams=linen,
        )
        shapes = itertools.islice(
            itertools.product(CONSTRUCTOR_SHAPES, repeat=len(part_names) + len(init_names)),
            MAX_SHAPE_TRIALS,
        )
        for combination in shapes:
            init_specs = [default_spec(shape) for shape in combination]
            try:
                _trial(call, [*init_specs, *specs], constants, framework)
            except Exception as exc:  # the PR's code: any failure means "not this way"
                first = first or exc
                continue
            init_specs = _signs_accepted(call, init_specs, specs, constants, framework)
            init_specs = _declared_ranges(owner, init_names, init_specs)
            # a constructor's `decay_steps` or `stddev` keeps the side of 0 its name says
            init_specs = [
                named_domain(name, spec)
                for name, spec in zip([*part_names, *init_names], init_specs, strict=True)
            ]
            return ObjectInputs(
                call,
                [*init_specs, *specs],
                constants,
                chosen,
                [*part_names, *init_names, *names],
            )
    if not specs and not required and not candidates:
        # nothing to search: the object as its constants make it, and the member called once
        # (a Keras metric's result() before any update_state, a fresh accumulator's mean)
        plain = ObjectCall(
            owner, member, (), init, is_property, slots=slots, seed=seed, streams=linen
        )
        try:
            _trial(plain, [], constants, framework)
        except Exception as exc:  # the PR's code
            if line is not None and _raised_at(exc, owner, member, line):
                # the flagged line itself raised its arithmetic error (allennlp's fresh
                # Pearson metric: 0.0 / 0.0): that is the finding for the search to prove,
                # not a call that cannot be made
                return ObjectInputs(plain, [], constants, chosen, [])
            first = first or exc
        else:
            return ObjectInputs(plain, [], constants, chosen, [])
    if first is None:
        raise EntryError(
            f"{owner.__name__}.{member} takes no tensor and its constructor "
            "none either; configure an entry"
        )
    raise EntryError(
        f"{owner.__name__} could not be built and its {member} called from their "
        f"signatures ({type(first).__name__}: {str(first)[:160]}); configure an "
        "entry with `init`"
    )


def _raised_at(exc: BaseException, owner: type, member: str, line: int) -> bool:
    """Did the member's own file raise `exc` at `line`, as an op raises on Python numbers
    (ZeroDivisionError, math's domain and range errors: raised.py)?"""
    try:
        path = inspect.getsourcefile(inspect.getattr_static(owner, member))
    except TypeError:  # a property, or a member without a source file
        path = inspect.getsourcefile(owner)
    return path is not None and raised_by_any_op(exc, LineWatch(path, frozenset({line})))


def _constructor(
    owner: type, needs: Mapping[str, Any], framework: str
) -> tuple[list[str], list[str], dict[str, Any]]:
    """(required tensor parameters, optional ones that default to None, constants for the
    other parameters without a default). `needs`: values the member's path to the flagged
    line tests names against (branches.path_values)."""
    try:
        signature = inspect.signature(owner)
    except (TypeError, ValueError) as exc:
        raise EntryError(f"cannot read the signature of {owner.__name__}: {exc}") from exc
    # sizes and annotated constants (an `int`, a Literal), then the choices the line needs,
    # the package's own defaults, and the `parent=None` an unbound linen Module may need
    sized = {
        **constructor_args(owner, framework=framework),
        **_choices(owner, signature, needs),
        **(unbound_init(owner) if is_linen_module(owner) else {}),
    }
    required: list[str] = []
    optional: list[str] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        text = annotation_text(param)
        tensor = bool(TENSOR_HINT.search(text))
        if param.default is inspect.Parameter.empty and (
            tensor or (not text and param.name not in sized)
        ):
            required.append(param.name)
        elif param.default is None and (tensor or not text):
            optional.append(param.name)
    init = {k: v for k, v in sized.items() if k not in required}
    missing = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.name not in required
        and p.name not in init
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if missing:
        raise EntryError(
            f"{owner.__name__}() needs {', '.join(missing)}; configure an entry with `init`"
        )
    return required, optional, init


def _choices(owner: type, signature: inspect.Signature, needs: Mapping[str, Any]) -> dict[str, Any]:
    """Values for the constructor's text parameters without a default that `constructor_args`
    cannot fill (`scaler: Union[str, List[str]]`): the value the member's path to the line
    compares a name of the parameter's with (the object keeps it and the member tests it:
    `for scaler in self.scaler: ... elif scaler == 'attenuation':`), else the default the
    package gives a parameter of that name elsewhere (defaults.py)."""
    found: dict[str, Any] = {}
    for param in signature.parameters.values():
        text = annotation_text(param)
        if (
            param.default is not inspect.Parameter.empty
            or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
            or TENSOR_HINT.search(text)
            or "str" not in text
        ):
            continue
        needed = needs.get(param.name)
        if isinstance(needed, str) and fits(needed, param.default, text):
            found[param.name] = needed
        elif (default := package_default(owner, param.name)) is not None:
            found[param.name] = default
    return found


def refuse_empty_support(instance: Any) -> None:
    """Raise when the object is a distribution over an empty interval: a `support` whose
    lower bound is above its upper bound somewhere, or equal to it for a continuous one
    (torch's `Uniform` declares `low < high`). NumPyro's `LogUniform(low, high)` declares
    each bound positive but checks nothing between them, and the search "proved"
    `log(log(high) - log(low))` NaN with low = 97 > high: not a distribution at all, so no
    user can build it. A draw refused here counts as one the class refused. A discrete
    interval may hold one value (`Binomial` with `total_count = 0`)."""
    try:
        support = getattr(instance, "support", None)
        lower = getattr(support, "lower_bound", None)
        upper = getattr(support, "upper_bound", None)
        if lower is None or upper is None:
            return
        empty = upper < lower if getattr(support, "is_discrete", False) else upper <= lower
        empty = bool(empty.any()) if hasattr(empty, "any") else bool(empty)
    except Exception:  # the PR's code, a traced value, a bound that is not a number
        return
    if empty:
        raise ValueError("the object's support interval(low, high) is empty")


def _trial(
    call: ObjectCall,
    specs: Sequence[InputSpec],
    constants: dict[str, Any],
    framework: str,
    negative: int | None = None,
) -> None:
    """One call on normal values (0.5 to 1.5; the input at `negative` negated); raises
    whatever the code raises."""
    generator = torch.Generator().manual_seed(0)
    inputs = [
        (-1.0 if i == negative else 1.0)
        * (0.5 + torch.rand(spec.shape, generator=generator, dtype=torch.float64))
        for i, spec in enumerate(specs)
    ]
    unchecked = replace(call, checks_support=False)
    unchecked(*(_native(x.float(), framework) for x in inputs), **constants)


def _signs_accepted(
    call: ObjectCall,
    init_specs: list[InputSpec],
    specs: list[InputSpec],
    constants: dict[str, Any],
    framework: str,
) -> list[InputSpec]:
    """A constructor input that the object refuses when negative (a scale checked against
    `constraints.positive`) is searched over the non-negative half of its box: a draw the
    validation rejects tells the search nothing, and the code's users cannot pass it."""
    kept = []
    for index, spec in enumerate(init_specs):
        try:
            _trial(call, [*init_specs, *specs], constants, framework, negative=index)
        except Exception:  # refused when negative (or failing there for any other reason)
            kept.append(replace(spec, lo=max(spec.lo, 0.0)))
        else:
            kept.append(spec)
    return kept


def _declared_ranges(
    owner: type, init_names: Sequence[str], init_specs: list[InputSpec]
) -> list[InputSpec]:
    """A constructor input that the class declares a range for (`arg_constraints =
    {"concentration": constraints.positive}`, as torch.distributions, Pyro and NumPyro write
    it) is searched inside that range, whether or not the object checks it: NumPyro checks
    only when asked, and a proof at a value the class's own contract excludes (a concentration
    of exactly 0 in `digamma`) is one its users cannot meet. The constructor's inputs are the
    last `len(init_names)` specs; those before them belong to the objects it is built with."""
    declared = inspect.getattr_static(owner, "arg_constraints", None)
    if not isinstance(declared, dict):  # torch's base class: a property that raises
        return init_specs
    first = len(init_specs) - len(init_names)
    narrowed = list(init_specs)
    for index, name in enumerate(init_names, start=first):
        bounds = declared_bounds(declared.get(name))
        if bounds is None:
            continue
        spec = narrowed[index]
        lo, hi = max(spec.lo, bounds[0]), min(spec.hi, bounds[1])
        if lo <= hi:
            narrowed[index] = replace(spec, lo=lo, hi=hi)
    return narrowed


def declared_bounds(constraint: Any) -> tuple[float, float] | None:
    """(lo, hi) of a constraint object with a numeric `lower_bound` or `upper_bound` (torch's,
    Pyro's and NumPyro's `positive`, `nonnegative`, `unit_interval`, `greater_than(x)`, ...);
    an open end (`positive` excludes 0) is moved inward to the nearest float32 value the
    constraint admits, so the search never sits on the excluded value itself."""
    lower = _bound(getattr(constraint, "lower_bound", None))
    upper = _bound(getattr(constraint, "upper_bound", None))
    if lower is None and upper is None:
        return None
    lo = -math.inf if lower is None else lower
    hi = math.inf if upper is None else upper
    if lower is not None and not _admits(constraint, lower):
        lo = _inward(lower, math.inf)
    if upper is not None and not _admits(constraint, upper):
        hi = _inward(upper, -math.inf)
    return lo, hi


def _bound(value: Any) -> float | None:
    """A plain number; a bound that is a tensor of several values (a dependent `interval`
    over the object's own parameters) says nothing about one input."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError):
        return None
    return number if math.isfinite(number) else None


def _admits(constraint: Any, value: float) -> bool:
    """Does the constraint accept the value itself? torch's and Pyro's constraints have
    `check`; NumPyro's are also callable. One that cannot say is taken as open."""
    check = getattr(constraint, "check", None) or constraint
    try:
        return bool(check(torch.tensor(value, dtype=torch.float64)))
    except Exception:  # the PR's code (a custom constraint): not to be trusted with the end
        return False


def _inward(bound: float, towards: float) -> float:
    """The float32 value next to `bound` in the direction `towards`; from 0, the smallest
    normal float32 (a subnormal would be flushed to zero by TensorFlow on the CPU)."""
    if bound == 0.0:
        return math.copysign(float(torch.finfo(torch.float32).tiny), towards)
    return float(torch.nextafter(torch.tensor(bound), torch.tensor(towards)))


def _native(x: torch.Tensor, framework: str) -> Any:
    if framework == "tensorflow":
        import tensorflow as tf

        return tf.constant(x.numpy())
    if framework == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x.numpy())
    return x
