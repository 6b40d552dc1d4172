"""What a signature says about calling a function: which parameters are tensors to search
(annotations, jaxtyping shapes), which get a constant, and the values a constructor needs.

Shared by the synthesised entries (entries.py) and the entries for methods of plain classes
(objects.py); it imports nothing of the PR's code.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from analyzers.dynamic.lists import SearchedList, element_names, searched_namespace, tensor_list
from analyzers.dynamic.namespaces import Field
from analyzers.dynamic.specs import DEFAULT_SHAPE, InputSpec, default_spec
from analyzers.dynamic.usage import ParameterUses, allowed_values
from analyzers.epsilon import GUARD_VALUE, is_epsilon_name

TENSOR_HINT = re.compile(r"Tensor|ndarray|Array|Float\[|Int\[|Shaped\[")
JAXTYPING_DIMS = re.compile(r"""\[\s*[\w.]+\s*,\s*["']([^"']*)["']\s*\]""")
DEFAULT_BATCH, DEFAULT_FEATURES = 4, 8


class EntryError(Exception):
    """No way to call the code; the message says what to configure."""


# `seed`, `sample_seed`: a random seed is never data. Searched as a float tensor it breaks the
# sampler before the op (TFP's samplers XOR the seed's bits); numcheck passes this one.
_SEED_NAME = re.compile(r"(^|_)seed$")
SEED_VALUE = 0


# `dtype`, `compute_dtype`: the dtype to compute in is never data either. Searched as a float
# tensor it fails at the code's first cast (`x.astype(dtype)`: jax-md's energy functions take
# one); numcheck passes float32, spelled as the framework takes it.
_DTYPE_NAME = re.compile(r"(^|_)dtype$")


def _value_by_name(name: str, framework: str = "torch") -> tuple[bool, Any]:
    """(True, value) for an unannotated parameter whose name says it is not data: an epsilon
    is a guard (`GUARD_VALUE`), a random seed a seed (`SEED_VALUE`), a dtype float32 (a
    `torch.dtype` for torch code, the name `"float32"`, which NumPy, JAX and TensorFlow all
    take, for the others); else (False, None)."""
    if is_epsilon_name(name):
        return True, GUARD_VALUE
    if _SEED_NAME.search(name):
        return True, SEED_VALUE
    if _DTYPE_NAME.search(name):
        if framework == "torch":
            import torch

            return True, torch.float32
        return True, "float32"
    return False, None


# What a tensor parameter's name says its values are, by the field's conventions: a
# log-probability (`log_probs`, `logp`, `log_targets`, `token_log_probs`) is at most 0, a
# probability (`probs`, `keep_prob`) lies in [0, 1], a count or a confusion matrix (`counts`,
# `confmat`) is at least 0, and so are a training step or epoch (`step`, `global_step`,
# `decay_steps`) and a standard deviation (`stddev`, `sigma`). A synthesised call draws such a
# parameter on that side of 0, edges included, since the real bugs sit there (a probability
# of exactly 0, an empty class's count, a schedule of 0 steps): read as reviews,
# `exp(log_targets)` "proved" with a log-probability of 95, a Matthews correlation of negative
# counts, Keras's learning-rate schedules at a negative step and a Laplacian kernel of negative
# width were noise to every reader. Checked in order: a `log_probs` is a log-probability
# before it is a probability.
_NAMED_DOMAINS: tuple[tuple[re.Pattern[str], float | None, float | None], ...] = (
    (
        re.compile(
            r"(^|_)(log_?probs?|log_?probabilit(y|ies)|logp|lprobs?|log_?likelihoods?"
            r"|log_?targets?|log_?p[dm]fs?)$"
        ),
        None,
        0.0,
    ),
    (re.compile(r"(^|_)(probs?|probabilit(y|ies))$"), 0.0, 1.0),
    (re.compile(r"(^|_)(counts?|confmat|conf_?mat(rix)?|confusion_?matri(x|ces))$"), 0.0, None),
    (re.compile(r"(^|_)(steps?|iterations?|epochs?)$"), 0.0, None),
    (re.compile(r"(^|_)(std|stddev|stdev|sigma|std_?dev(iation)?)$"), 0.0, None),
)


def named_domain(name: str, spec: InputSpec) -> InputSpec:
    """`spec` (numcheck's default box) narrowed to the side of 0 that the parameter's name
    allows (`_NAMED_DOMAINS`); a box from anywhere else, or an integer one, as it is."""
    if spec.source != "default" or not spec.is_float:
        return spec
    for pattern, lo, hi in _NAMED_DOMAINS:
        if pattern.search(name.lower()):
            return replace(
                spec,
                lo=spec.lo if lo is None else max(spec.lo, lo),
                hi=spec.hi if hi is None else min(spec.hi, hi),
            )
    return spec


_SIZE_NAME = re.compile(
    r"(^|_)(channels|dim|dims|features|size|hidden|width|d_model|embed)"
    r"(_|$)|^(in|out|n|num)_"
)


def constructor_args(
    owner: type, *, guess_unannotated: bool = False, framework: str = "torch"
) -> dict[str, Any]:
    """Values for an nn.Module's constructor parameters that have no default: an `int` or a
    parameter named like a size (`in_channels`, `dim`, `hidden_size`) is 8, two for heads;
    a value the constructor checks the parameter against (`if nu not in [0.5, 1.5, 2.5]`,
    usage.allowed_values) is the first it allows; an unannotated epsilon (`eps`) is
    `GUARD_VALUE`; otherwise what `constant_for` gives from
    the annotation; with `guess_unannotated` (an nn.Module's, whose tensors come from its
    weights, not from its constructor), None for an unannotated parameter: PyG's
    `GAE(encoder)`, whose `recon_loss` never uses the encoder. Those it cannot fill are left
    out, and the constructor's own error says which."""
    try:
        signature = inspect.signature(owner)
    except (TypeError, ValueError):
        return {}
    init = getattr(owner, "__init__", None)
    allowed = allowed_values(init) if inspect.isfunction(init) else {}
    args: dict[str, Any] = {}
    for param in signature.parameters.values():  # the class's signature has no `self`
        if param.default is not inspect.Parameter.empty or param.kind in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            continue
        text = annotation_text(param)
        if "head" in param.name:
            args[param.name] = 2
        elif text == "int" or (not text and _SIZE_NAME.search(param.name)):
            args[param.name] = 8
        elif param.name in allowed:
            args[param.name] = allowed[param.name]
        elif not text and (by_name := _value_by_name(param.name, framework))[0]:
            args[param.name] = by_name[1]
        else:
            found, value = constant_for(text)
            if found or (guess_unannotated and not text):
                args[param.name] = value
    return args


@dataclass
class SignatureInputs:
    """What `signature_inputs` read: the searched inputs' specs (a list argument's elements
    each one of them), the keyword constants, those of them numcheck chose (the reproducer
    passes them), one slot per searched argument (None for a tensor, a `SearchedList` for a
    list of tensors: lists.py) and one name per searched input."""

    specs: list[InputSpec] = field(default_factory=list)
    constants: dict[str, Any] = field(default_factory=dict)
    chosen: dict[str, Any] = field(default_factory=dict)
    slots: list[SearchedList | None] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def template(self) -> list[Any] | None:
        """The call's template where an argument is a list (`filled` gathers its elements),
        None where every searched argument is one tensor (the inputs go by position)."""
        return list(self.slots) if any(self.slots) else None


def signature_inputs(
    fn: Callable[..., Any],
    first: InputSpec | None,
    shape: tuple[int, ...] | None = None,
    *,
    allow_empty: bool = False,
    operand_names: Collection[str] = (),
    branch: Mapping[str, Any] | None = None,
    uses: ParameterUses | None = None,
    framework: str = "torch",
) -> SignatureInputs:
    """The input specs, keyword constants, the constants numcheck chose for parameters without
    a default (which the reproducer must pass), and the searched arguments' slots. A
    parameter annotated as a sequence of tensors (`List[Tensor]`, `Tuple[Tensor, ...]`) is a
    short list of searched tensors, each shaped as a tensor parameter would be (lists.py).
    `allow_empty`: no tensor parameter is not an error (a method whose inputs all come from
    its object's constructor). `operand_names`:
    the names in the flagged op's operand; a leading parameter among them that defaults to
    None (`def probs_to_logits(probs=None, logits=None)`, torch.distributions' convention for
    two ways to give one tensor) is searched as a tensor, since the op only runs when a
    caller passes it. `branch`: values a flag or mode parameter takes instead of its default,
    where the flagged line needs them (branches.py), when the value fits the parameter.
    `uses`: what the body does with the parameters (usage.py): an unannotated one used as
    an index is an integer tensor, one used as a size gets a shape, one its docstring types
    as an integer (and that has no default) gets `DEFAULT_FEATURES`. An unannotated parameter
    named as an epsilon (`eps`, `wn_eps`) with no default is a guard, not data: it gets
    `GUARD_VALUE`, never a searched tensor; one named as a random seed gets `SEED_VALUE`, one
    named as a dtype float32 as `framework` (the code's) spells it."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise EntryError(f"cannot read the signature of {fn!r}: {exc}") from exc
    read = SignatureInputs()
    specs, constants, chosen = read.specs, read.constants, read.chosen
    skipped = False
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = annotation_text(param)
        hinted = TENSOR_HINT.search(annotation) is not None
        given_by_caller = (
            param.default is None
            and param.name in operand_names
            and not constants
            and not skipped
            and param.kind is not param.KEYWORD_ONLY
            and (not annotation or hinted)
        )
        sized = uses is not None and param.name in uses.sizes and not hinted
        counted = (
            uses is not None
            and param.name in uses.integers
            and not annotation
            and param.default is inspect.Parameter.empty
        )
        # `def _merge_param(self, direction, scale, eps)`: every caller passes a small positive
        # epsilon; searched, it was set to 0 and "proved" `scale / (eps + norm)`
        fixed, fixed_value = (
            _value_by_name(param.name, framework)
            if not annotation and param.default is inspect.Parameter.empty
            else (False, None)
        )
        tensorish = (
            not sized
            and not counted
            and not fixed
            and (
                hinted
                or given_by_caller
                or (not annotation and param.default is inspect.Parameter.empty)
            )
        )
        if not tensorish:
            if fixed:
                chosen[param.name] = fixed_value  # the reproducer passes it too
            elif counted:  # `num_classes: Singleton integer Tensor`: as many as the features
                chosen[param.name] = DEFAULT_FEATURES
            elif sized and param.default is inspect.Parameter.empty:
                # the tensors' own shape: what a sample shape of theirs broadcasts with
                chosen[param.name] = shape or (DEFAULT_BATCH, DEFAULT_FEATURES)
            elif (
                branch
                and param.name in branch
                and branch[param.name] != param.default
                and fits(branch[param.name], param.default, annotation)
            ):
                chosen[param.name] = branch[param.name]  # the reproducer passes it too
            elif param.default is inspect.Parameter.empty:
                found, value = constant_for(str(annotation))
                if not found:
                    raise EntryError(
                        f"parameter {param.name!r} ({annotation}) has no default "
                        "and is not a tensor; configure an entry"
                    )
                chosen[param.name] = value
            constants[param.name] = chosen.get(param.name, param.default)
            continue
        if (
            param.default is not inspect.Parameter.empty
            and not given_by_caller
            and (param.default is None or constants)
        ):
            # `pos_weight: Optional[Tensor] = None` is called without it, as callers do; and a
            # tensor after a keyword-passed constant cannot be passed by position
            skipped = True  # nor can a tensor after this one
            continue
        if param.kind is param.KEYWORD_ONLY:
            raise EntryError(f"keyword-only tensor parameter {param.name!r}; configure an entry")
        if constants:
            raise EntryError(
                f"tensor parameter {param.name!r} follows a non-tensor one "
                f"({next(iter(constants))!r}) and has no default; configure an "
                "entry"
            )
        annotated = JAXTYPING_DIMS.search(str(annotation)) is not None
        listed = tensor_list(annotation)
        bag = uses.namespaces.get(param.name) if uses is not None and not annotation else None
        if bag:  # `force_field.vval2[...]`: one searched input per attribute (namespaces.py)
            listed = searched_namespace(list(bag))
            specs.extend(
                _field_spec(param.name, attribute, read_as) for attribute, read_as in bag.items()
            )
        read.slots.append(listed)
        read.names.extend(element_names(param.name, listed))
        if bag:
            continue
        if uses is not None and param.name in uses.masks and not annotated and not listed:
            specs.append(mask_spec(shape))
            continue
        if uses is not None and param.name in uses.indices and not annotated and not listed:
            specs.append(
                index_spec(uses.rows.get(param.name), shape, uses.ranks.get(param.name, 0))
            )
            continue
        element = named_domain(
            param.name,
            default_spec(
                shape if shape is not None and not annotated else shape_from_annotation(annotation)
            ),
        )
        if listed is not None:
            specs.extend([element] * listed.length)
        elif first is not None and not specs:
            specs.append(named_domain(param.name, first))
        else:
            specs.append(element)
    if not specs and not allow_empty:
        raise EntryError("no tensor parameters to search over; configure an entry")
    return read


def _field_spec(name: str, attribute: str, read_as: Field) -> InputSpec:
    """A namespace attribute's input: an integer index when the body indexes with it, else
    a float array of the rank it is read with (a scalar read bare: it broadcasts with any
    operand), each dimension a valid index for the batch's integer indices, and marked as
    the constant `name.attribute` it stands for."""
    shape = (DEFAULT_BATCH,) * read_as.rank
    if read_as.index:
        return index_spec(None, shape or (DEFAULT_BATCH,))
    spec = named_domain(attribute, default_spec(shape))
    return replace(spec, attribute=f"{name}.{attribute}")


def mask_spec(shape: tuple[int, ...] | None) -> InputSpec:
    """A boolean mask the shape of the other inputs (`nbr_mask & (bo > 0)`)."""
    return InputSpec("bool", shape or DEFAULT_SHAPE, 0.0, 1.0, "default")


def index_spec(rows: int | None, shape: tuple[int, ...] | None, rank: int = 0) -> InputSpec:
    """An integer index into the other inputs, whose first dimension is the batch: every
    value a valid row. Unpacked into `rows` names (`row, col = edge_index`): that many rows
    of twice the batch's entries, so some rows repeat. Subscripted itself with `rank`
    indices (jax-md's `center = body_3_inds[:, 0]`): at least that many dimensions, the
    others as wide as the features, so each column it reads exists."""
    dims = (rows, 2 * DEFAULT_BATCH) if rows else (shape or (DEFAULT_BATCH,))
    if rank > len(dims):
        dims = (*dims, *(DEFAULT_FEATURES,) * (rank - len(dims)))
    return InputSpec("int64", dims, 0, DEFAULT_BATCH - 1, "default")


def fits(value: Any, default: Any, annotation: str) -> bool:
    """A branch's value for a parameter of this default and annotation: of the default's
    type (or a float where the annotation says float), or named by the annotation (`bool`,
    `str`, a `Literal` listing it)."""
    if default is not inspect.Parameter.empty and default is not None:
        # `gamma: float = 2`: the annotation says a float is wanted, whatever the default
        return type(value) is type(default) or (type(value) is float and "float" in annotation)
    if isinstance(value, bool):
        return "bool" in annotation
    if isinstance(value, str):
        return "str" in annotation or repr(value) in annotation or f'"{value}"' in annotation
    if isinstance(value, int):
        return "int" in annotation
    return False


def undecorated(fn: Any, name: str) -> Any:
    """The function a decorator wrapped, where its wrapper hides its signature: numpyro's
    `@validate_sample` returns `wrapper(self, *args, **kwargs)` without `functools.wraps`,
    so `log_prob(value)` read as taking nothing. The wrapped function is the one in the
    wrapper's closure that has the member's own `name`; `fn` itself (unwrapped) when there
    is none. Only the signature is read from it: the call still goes through the wrapper."""
    fn = inspect.unwrap(fn)
    for _ in range(4):  # decorators stacked
        inner = next(
            (
                v
                for cell in getattr(fn, "__closure__", None) or ()
                if inspect.isfunction(v := _contents(cell)) and v.__name__ == name and v is not fn
            ),
            None,
        )
        if inner is None:
            break
        fn = inspect.unwrap(inner)
    return fn


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def operand_names(operand: str) -> frozenset[str]:
    """The plain names an operand's text uses (`ps` and `torch` in `torch.log(ps)`)."""
    return frozenset(re.findall(r"(?<![\w.])[A-Za-z_]\w*", operand))


def positional_names(fn: Any) -> list[str]:
    """Positional parameter names, for readable reproducers (`logits`, not `x0`)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def annotation_text(param: inspect.Parameter) -> str:
    """A parameter's annotation as text: a string annotation as written, a class by name,
    a typing form by its repr without `typing.` (`Optional[Literal['a', 'b']]`)."""
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation).replace("typing.", "")


_LITERAL = re.compile(r"Literal\[\s*('[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?|True|False|None)")


def constant_for(annotation: str) -> tuple[bool, Any]:
    """(found, value) for a non-tensor parameter without a default, from its annotation:
    the first choice of a `Literal[...]`, None for an `Optional`, False for a `bool`, 1 for
    an `int`, 1.0 for a `float`. The reproducer passes the same value by keyword."""
    literal = _LITERAL.search(annotation)
    if literal is not None:
        return True, ast.literal_eval(literal[1])
    if (
        annotation.startswith("Optional[")
        or annotation.endswith("| None")
        or annotation in ("None", "NoneType")
    ):
        return True, None
    return {"bool": (True, False), "int": (True, 1), "float": (True, 1.0)}.get(
        annotation, (False, None)
    )


def shape_from_annotation(annotation: str) -> tuple[int, ...]:
    """jaxtyping `Float[Tensor, "b d"]`: one dimension per name, named sizes kept equal."""
    match = JAXTYPING_DIMS.search(annotation)
    if match is None:
        return (DEFAULT_BATCH, DEFAULT_FEATURES)
    sizes: list[int] = []
    named: dict[str, int] = {}
    for dim in match[1].split():
        if dim.isdigit():
            sizes.append(int(dim))
        elif dim.startswith(("...", "*", "#")):
            continue
        else:
            if dim not in named:  # the first name is the batch; the same name, the same size
                named[dim] = DEFAULT_BATCH if not sizes and not named else DEFAULT_FEATURES
            sizes.append(named[dim])
    return tuple(sizes) or (DEFAULT_FEATURES,)
