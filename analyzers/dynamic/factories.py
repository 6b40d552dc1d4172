"""Entries for closures a factory returns: Keras 2's `weighted_masked_objective(fn)` returns
`weighted(y_true, y_pred, weights, mask)`, a decorator returns its wrapper.

The module exposes only the factory, and calling it runs none of the closure's body: the op
is never reached. So the factory is called with what its signature needs (made-up constants,
and a stand-in function for each parameter its body calls), the closure is found in what it
returned (the value itself, or an element or field of a tuple, list, dict or object that
carries it), and the closure's own parameters are searched. `FactoryCall` builds a fresh
closure for every call, so the search's inputs never leak into the next one, and the
reproducer does the same in plain Python.

A stand-in function returns its last positional argument (`fn(y_true, y_pred)` gives
`y_pred`), unchanged. A proof must not rest on what it returns: where the flagged operand is
the stand-in's result or is computed from it, no entry is made (the failure would say more
about the stand-in than about the code).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from analyzers.dynamic.signatures import EntryError, constructor_args
from analyzers.dynamic.usage import parsed_function

# how far into the factory's result the closure is looked for: `GradientTransformation(init,
# update)` is one level, a dict of them two
MAX_PATH_DEPTH = 2
# a path step: ("index", i) into a tuple or list, ("key", k) into a dict, ("attribute", a)
PathStep = tuple[str, int | str]


def passes_through(*args: Any, **kwargs: Any) -> Any:
    """The stand-in for a function parameter of a factory: its last positional argument."""
    if not args:
        raise TypeError("numcheck's stand-in function needs a positional argument")
    return args[-1]


@dataclass
class FactoryCall:
    """`factory(**init, **{name: passes_through for name in callables})`, the closure at
    `path` in what it returned, then the closure called with the inputs."""

    factory: Callable[..., Any]
    closure: str  # the closure's name, as the factory's body defines it
    path: tuple[PathStep, ...] = ()
    init: dict[str, Any] = field(default_factory=dict)  # constants for the factory
    callables: tuple[str, ...] = ()  # the factory's parameters given `passes_through`

    def made(self) -> Any:
        """A fresh closure."""
        given = {**self.init, **{name: passes_through for name in self.callables}}
        return reach(self.factory(**given), self.path)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.made()(*inputs, **kwargs)

    def with_factory(self, factory: Callable[..., Any]) -> FactoryCall:
        """The same call through another factory (the fix stage's patched copy of it)."""
        return replace(self, factory=factory)


def reach(value: Any, path: tuple[PathStep, ...]) -> Any:
    for kind, step in path:
        value = getattr(value, str(step)) if kind == "attribute" else value[step]
    return value


def factory_call(factory: Callable[..., Any], closure: str, operand: str) -> FactoryCall | None:
    """The call reaching `closure` through `factory`, or None when `factory` does not return
    it (its body defines `closure` but the return does not name it). EntryError when it
    does but no call can be made honestly: the operand rests on a stand-in's result, a
    required parameter has no value, or the factory fails on the values given."""
    parsed = parsed_function(factory)
    if parsed is None:
        return None
    outer, _ = parsed
    inner = _defined(outer, closure)
    if inner is None or not _returned(outer, closure):
        return None
    params = [a.arg for a in [*outer.args.posonlyargs, *outer.args.args, *outer.args.kwonlyargs]]
    called = _called_parameters(outer, set(params))
    rests_on = called | _results_of(inner, called)
    shared = _names(operand) & rests_on
    if shared:
        raise EntryError(
            f"the op's operand comes from {', '.join(sorted(shared))}, a function the factory "
            f"{factory.__name__} is given: numcheck would make it up; configure an entry"
        )
    needed = _required(factory)
    made_up = constructor_args(cast(type, factory))  # a function's signature reads the same
    init = {k: v for k, v in made_up.items() if k not in called}
    missing = [name for name in needed if name not in init and name not in called]
    if missing:
        raise EntryError(
            f"the factory {factory.__name__} needs {', '.join(missing)}, which numcheck cannot "
            "make up; configure an entry"
        )
    callables = tuple(name for name in params if name in called and name in needed)
    probe = FactoryCall(factory, closure, (), init, callables)
    try:
        made = probe.factory(**init, **{name: passes_through for name in callables})
    except Exception as exc:  # the PR's factory, on the values numcheck made up
        raise EntryError(
            f"{factory.__name__}(...) failed: {type(exc).__name__}: {str(exc)[:160]}; "
            "configure an entry"
        ) from exc
    path = find_closure(made, closure, MAX_PATH_DEPTH)
    if path is None:
        raise EntryError(
            f"{factory.__name__}(...) returned {type(made).__name__}, which does not carry "
            f"{closure}; configure an entry"
        )
    return replace(probe, path=path)


def find_closure(value: Any, name: str, depth: int) -> tuple[PathStep, ...] | None:
    """The path to the function called `name` in `value`: () for `value` itself."""
    if inspect.isfunction(value) and value.__name__ == name:
        return ()
    if depth == 0:
        return None
    steps: list[tuple[PathStep, Any]] = []
    if isinstance(value, tuple | list):  # a NamedTuple too: by position
        steps = [(("index", i), v) for i, v in enumerate(value)]
    elif isinstance(value, Mapping):
        steps = [(("key", k), v) for k, v in value.items() if isinstance(k, str)]
    elif hasattr(value, "__dict__") and not inspect.isroutine(value) and not inspect.isclass(value):
        steps = [(("attribute", k), v) for k, v in vars(value).items() if k.isidentifier()]
    for step, inner in steps:
        rest = find_closure(inner, name, depth - 1)
        if rest is not None:
            return (step, *rest)
    return None


def _defined(outer: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.AST | None:
    for node in ast.walk(outer):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node is outer:
            continue
        if node.name == name:
            return node
    return None


def _returned(outer: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether one of `outer`'s own returns (not a nested function's) names `name`."""
    pending: list[ast.AST] = list(outer.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if (
            isinstance(node, ast.Return)
            and node.value is not None
            and name in _names_in(node.value)
        ):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _called_parameters(outer: ast.AST, params: set[str]) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(outer)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in params
    }


def _results_of(inner: ast.AST, called: set[str]) -> set[str]:
    """Names the closure binds from a call of one of `called`, or from such names (the
    stand-in's result and what is computed from it), to a fixed point."""
    bound: set[str] = set()
    while True:
        grown = set(bound)
        for node in ast.walk(inner):
            value = getattr(node, "value", None)
            if not isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) or value is None:
                continue
            if _names_in(value) & (called | grown):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    grown |= _names_in(target)
        if grown == bound:
            return bound
        bound = grown


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _names(text: str) -> set[str]:
    try:
        return _names_in(ast.parse(text, mode="eval"))
    except SyntaxError:
        return set()


def _required(fn: Callable[..., Any]) -> list[str]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
