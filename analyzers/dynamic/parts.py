"""Constructor arguments that are objects themselves: a base distribution, a kernel.

numpyro's `TwoSidedTruncatedDistribution(base_dist, low=0., high=1.)` starts with `assert
isinstance(base_dist, self.supported_types)`: a tensor for `base_dist` never builds it, and
its `log_prob` ended "could not be built ... (AssertionError: )". The check names the classes
it takes, so the argument is built from one of them (`ObjectPart`), and that object's numbers
are searched with the rest: what a caller wraps is their data as much as a tensor is.

Of the part's constructor, the parameters searched are those a tensor goes to (no default and
no annotation that says otherwise, or a tensor annotation) and those whose default is a float
(`Normal(loc=0., scale=1.)`: numpyro's distributions default every number). A class is taken
only from the owner's own top-level package, so the reproducer imports nothing the PR does
not bring (writer.py holds a plan's parts to the same rule).
"""

from __future__ import annotations

import ast
import builtins
import inspect
from dataclasses import dataclass
from typing import Any

from analyzers.dynamic.signatures import TENSOR_HINT, annotation_text
from analyzers.dynamic.usage import isinstance_checks

MAX_CANDIDATES = 3  # classes tried for one argument, in the order the check lists them


@dataclass(frozen=True)
class ObjectPart:
    """`name=owner(**dict(zip(init_names, inputs)))`, built before the object it goes to."""

    name: str  # the parameter of the outer constructor it is passed as
    owner: type
    init_names: tuple[str, ...]  # its searched constructor parameters, by keyword

    def build(self, inputs: list[Any]) -> Any:
        return self.owner(**dict(zip(self.init_names, inputs, strict=True)))

    def input_names(self) -> list[str]:
        """The reproducer's names of its inputs (`base_dist_loc`)."""
        return [f"{self.name}_{n}" for n in self.init_names]


def part_candidates(owner: type, required: list[str]) -> dict[str, list[ObjectPart]]:
    """{required parameter: the parts it may be built as} for each one the constructor
    checks with `isinstance` against classes of the owner's own package that can be built
    from searched values alone."""
    init = getattr(owner, "__init__", None)
    if not inspect.isfunction(init):
        return {}
    found: dict[str, list[ObjectPart]] = {}
    for name, expression in isinstance_checks(init).items():
        if name not in required:
            continue
        classes = [
            c for c in _classes(_resolve(expression, owner, init)) if _same_package(c, owner)
        ]
        parts = [part for c in classes[:MAX_CANDIDATES] if (part := _part(name, c)) is not None]
        if parts:
            found[name] = parts
    return found


def _part(name: str, cls: type) -> ObjectPart | None:
    """The part built from `cls`'s searched parameters, or None when one it needs is neither
    searched nor defaulted (nothing numcheck could pass)."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    searched: list[str] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        text = annotation_text(param)
        if param.default is inspect.Parameter.empty:
            if text and not TENSOR_HINT.search(text):
                return None
            searched.append(param.name)
        elif type(param.default) is float:
            searched.append(param.name)
    return ObjectPart(name, cls, tuple(searched)) if searched else None


def _resolve(expression: ast.expr, owner: type, function: Any) -> Any:
    """The value of a class expression of the check, read without running code: `self.x`
    (the owner's class attribute), a name of the function's module, `module.Class`, or a
    tuple of those; None when it is anything else."""
    if isinstance(expression, ast.Tuple):
        return tuple(_resolve(e, owner, function) for e in expression.elts)
    chain: list[str] = []
    while isinstance(expression, ast.Attribute):
        chain.insert(0, expression.attr)
        expression = expression.value
    if not isinstance(expression, ast.Name):
        return None
    if expression.id in ("self", "cls") and chain:
        value: Any = inspect.getattr_static(owner, chain.pop(0), None)
    else:
        scope = getattr(function, "__globals__", {})
        value = scope.get(expression.id, getattr(builtins, expression.id, None))
    for attribute in chain:
        value = inspect.getattr_static(value, attribute, None)
    return value


def _classes(value: Any) -> list[type]:
    if isinstance(value, type):
        return [value]
    if isinstance(value, tuple | list):
        return [c for v in value for c in _classes(v)]
    return []


def _same_package(cls: type, owner: type) -> bool:
    return cls.__module__.split(".")[0] == owner.__module__.split(".")[
        0
    ] and not inspect.isabstract(cls)
