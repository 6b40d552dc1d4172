"""A cheap first look at a file with CPython's own parser.

libcst with position metadata runs at a few thousand lines a second; `ast` is about thirty
times faster. This pass resolves imports, collects module constants and class facts, and
finds the functions that contain anything the catalogue calls risky, so that libcst only
parses those functions. Everything it decides is conservative: a function it keeps may still
produce no finding, but a function it drops cannot produce one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers.catalogue import CATALOGUE, normalise_qualname
from analyzers.static.vocabulary import FRAMEWORK_ROOTS, TF_EUCLIDEAN_NORMS

MODULE_BASE_HINTS = ("Module", "Layer", "Model", "Sequential", "LightningModule")
HALF_PRECISION_HINTS = (
    ".half(",
    "float16",
    "torch.half",
    "autocast",
    "cuda.amp",
    "mixed_precision",
    "bfloat16",
    "fp16",
)


_COMMENT = re.compile(r"#[^\n]*")

# Libraries whose tensors are a framework's: what a file that imports only them computes on.
JAX_LIBRARIES = frozenset(
    {
        "flax",
        "optax",
        "haiku",
        "equinox",
        "numpyro",
        "distrax",
        "chex",
        "jraph",
        "jaxopt",
        "jax_md",
        "trax",
    }
)
TENSORFLOW_LIBRARIES = frozenset(
    {"tensorflow_probability", "tensorflow_addons", "sonnet", "tensor2tensor"}
)


def ecosystem(root: str) -> str | None:
    """The framework a library's top-level package is built on (`torch_geometric`,
    `torchvision` -> torch), or None."""
    if root.startswith("torch"):
        return "torch"
    if root in JAX_LIBRARIES:
        return "jax"
    if root in TENSORFLOW_LIBRARIES:
        return "tensorflow"
    return None


# A package's own backend layer, imported by these names (`from . import backend as K`,
# `from keras.src import backend`, `from ..backend import ops`), mirrors a framework API:
# `K.exp(x)`, `backend.math.rsqrt(s)`. Its functions are looked up by their last name in the
# API it mirrors (BACKEND_APIS), when the full name is not in the catalogue.
BACKEND_MODULES = frozenset({"backend", "ops"})
BACKEND_APIS = ("keras.ops", "keras.backend")


@dataclass
class ImportMap:
    """Local name -> fully qualified name, for every import in the file."""

    names: dict[str, str] = field(default_factory=dict)
    backends: set[str] = field(default_factory=set)  # local names of a backend layer

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:
                    root = alias.name.split(".", 1)[0]
                    self.names[root] = root
            return
        for alias in node.names:
            if alias.name in BACKEND_MODULES:
                self.backends.add(alias.asname or alias.name)
        if node.level or not node.module:
            return
        for alias in node.names:
            if alias.name == "*":
                continue
            self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def resolve(self, dotted: str) -> str | None:
        """`t.nn.functional.softmax` -> `torch.nn.functional.softmax` when `t` is torch;
        `K.exp` -> `keras.ops.exp` when `K` is the package's own backend layer."""
        head, _, rest = dotted.partition(".")
        target = self.names.get(head)
        qual = (
            None if target is None else normalise_qualname(f"{target}.{rest}" if rest else target)
        )
        if head in self.backends and rest and (qual is None or CATALOGUE.lookup(qual) is None):
            leaf = rest.rsplit(".", 1)[-1]
            return next(
                (
                    f"{api}.{leaf}"
                    for api in BACKEND_APIS
                    if CATALOGUE.lookup(f"{api}.{leaf}") is not None
                ),
                qual,
            )
        return qual

    def frameworks(self) -> set[str]:
        """The frameworks the file's imports belong to; a library built on one counts as it
        (`from torch_scatter import scatter_add` makes `src.exp()` a torch method call)."""
        roots = {q.split(".", 1)[0] for q in self.names.values()}
        return (roots & set(FRAMEWORK_ROOTS)) | {
            framework for root in roots for framework in [ecosystem(root)] if framework
        }


@dataclass
class ClassFacts:
    """What a method needs to know about its class without parsing the class with libcst."""

    name: str
    is_model: bool
    attr_calls: dict[str, str] = field(default_factory=dict)  # self.attr -> qualname assigned
    # self.attr -> the catalogue function assigned to it, uncalled (`self.attn_fn = F.softmax`):
    # calling `self.attn_fn(x)` is calling that function
    attr_funcs: dict[str, str] = field(default_factory=dict)
    # self.attr -> (lo, lo_open, hi), from torch.distributions' `arg_constraints`
    attr_ranges: dict[str, tuple[float, bool, float]] = field(default_factory=dict)
    # self.attr -> the number it is set to in __init__ (a literal, or a parameter's default:
    # `self.eps = eps` with `eps=1e-8`), when nothing else in the class assigns it
    attr_defaults: dict[str, str] = field(default_factory=dict)


@dataclass
class Unit:
    """A region libcst will analyse: one outermost function, or the whole module."""

    start_line: int  # 1-based, first decorator included
    end_line: int
    indent: int
    name: str
    cls: ClassFacts | None = None


@dataclass
class FilePlan:
    imports: ImportMap
    constants: dict[str, float]
    units: list[Unit]
    whole_module: bool
    half_precision: bool
    primary_framework: str


def dotted_name(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _literal_number(node: ast.expr) -> float | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _is_candidate(node: ast.AST, imports: ImportMap, cls: ClassFacts | None = None) -> bool:
    """Could this node be a risky op, or a guard whose result is thrown away?"""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Div | ast.FloorDiv):
            return _literal_number(node.right) in (None, 0.0)
        if isinstance(node.op, ast.Pow):
            exponent = _literal_number(node.right)
            return exponent is None or exponent < 0 or exponent != int(exponent)
        return False
    if isinstance(node, ast.AugAssign):
        return isinstance(node.op, ast.Div | ast.FloorDiv | ast.Pow)
    if isinstance(node, ast.Call):
        return _is_candidate_call(node.func, imports, cls)
    return False


def _is_candidate_call(func: ast.expr, imports: ImportMap, cls: ClassFacts | None) -> bool:
    dotted = dotted_name(func)
    if dotted is None:  # `f(x).sqrt()`, or `nn.BCELoss()(p, y)` (inner call looked at alone)
        return isinstance(func, ast.Attribute) and func.attr in _CANDIDATE_METHODS
    qual = imports.resolve(dotted)
    if qual is not None:
        found = CATALOGUE.lookup(qual)
        return found is not None and (
            found[0].kind != "producer" or normalise_qualname(qual) in TF_EUCLIDEAN_NORMS
        )
    if not isinstance(func, ast.Attribute):
        return False  # a local function: nothing the catalogue knows
    if func.attr in _CANDIDATE_METHODS:
        return True
    if cls is not None and dotted == f"self.{func.attr}" and func.attr in cls.attr_funcs:
        return CATALOGUE.lookup(cls.attr_funcs[func.attr]) is not None
    if cls is not None and dotted == f"self.{func.attr}" and func.attr in cls.attr_calls:
        found = CATALOGUE.lookup(cls.attr_calls[func.attr])
        return found is not None and found[0].kind == "risky"
    return False


_CANDIDATE_METHODS = frozenset(
    method for spec in CATALOGUE.entries if spec.kind != "producer" for method in spec.methods
)


def _class_facts(node: ast.ClassDef, imports: ImportMap) -> ClassFacts:
    bases = " ".join(ast.unparse(b) for b in node.bases)
    facts = ClassFacts(node.name, any(h in bases for h in MODULE_BASE_HINTS))
    for item in node.body:
        if isinstance(item, ast.Assign | ast.AnnAssign):
            _constraints(item, facts)
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for sub in ast.walk(item):
            if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Name | ast.Attribute):
                _function_attribute(sub, imports, facts)
            if not (isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call)):
                continue
            callee = dotted_name(sub.value.func)
            qual = imports.resolve(callee) if callee else None
            for target in sub.targets:
                if (
                    qual
                    and isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    facts.attr_calls[target.attr] = qual
    facts.attr_defaults = _attr_defaults(node)
    return facts


def _function_attribute(assign: ast.Assign, imports: ImportMap, facts: ClassFacts) -> None:
    """`self.attn_fn = F.softmax`: a catalogue function (not a class) kept for later calls."""
    dotted = dotted_name(assign.value)
    qual = imports.resolve(dotted) if dotted else None
    if qual is None or CATALOGUE.lookup(qual) is None or not qual.rsplit(".", 1)[-1][:1].islower():
        return
    for target in assign.targets:
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            facts.attr_funcs[target.attr] = qual


def _attr_defaults(node: ast.ClassDef) -> dict[str, str]:
    """`self.eps = eps` (an `__init__` parameter with a number as default) or `self.eps =
    1e-8`: the number, as source. An attribute assigned anywhere else in the class is left
    out: its value is not the one set up."""
    counts: dict[str, int] = {}
    for sub in ast.walk(node):
        targets = (
            sub.targets
            if isinstance(sub, ast.Assign)
            else [sub.target]
            if isinstance(sub, ast.AugAssign | ast.AnnAssign)
            else []
        )
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                counts[target.attr] = counts.get(target.attr, 0) + 1
    init = next(
        (
            item
            for item in node.body
            if isinstance(item, ast.FunctionDef) and item.name == "__init__"
        ),
        None,
    )
    if init is None:
        return {}
    args = init.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(
        zip(
            [a.arg for a in positional[len(positional) - len(args.defaults) :]],
            args.defaults,
            strict=True,
        )
    )
    defaults.update(
        {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
    )
    found: dict[str, str] = {}
    for stmt in init.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and counts.get(target.attr) == 1
        ):
            continue
        value = stmt.value
        if isinstance(value, ast.Name) and value.id in defaults:
            value = defaults[value.id]
        if _literal_number(value) is not None:
            found[target.attr] = ast.unparse(value)
    return found


INF = float("inf")
CONSTRAINT_RANGES: dict[str, tuple[float, bool, float]] = {
    "positive": (0.0, True, INF),
    "nonnegative": (0.0, False, INF),
    "unit_interval": (0.0, False, 1.0),
    "positive_integer": (1.0, False, INF),
    "nonnegative_integer": (0.0, False, INF),
    "simplex": (0.0, False, 1.0),
}


def _constraints(stmt: ast.Assign | ast.AnnAssign, facts: ClassFacts) -> None:
    """`arg_constraints = {"scale": constraints.positive, ...}`: the parameters' ranges."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if not any(isinstance(t, ast.Name) and t.id == "arg_constraints" for t in targets):
        return
    if not isinstance(stmt.value, ast.Dict):
        return
    for key, value in zip(stmt.value.keys, stmt.value.values, strict=False):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        if isinstance(value, ast.Attribute) and value.attr in CONSTRAINT_RANGES:
            facts.attr_ranges[key.value] = CONSTRAINT_RANGES[value.attr]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.args:
            bound = _literal_number(value.args[0])
            name = value.func.attr
            if bound is not None and name in ("greater_than", "greater_than_eq"):
                facts.attr_ranges[key.value] = (bound, name == "greater_than", INF)
            elif (
                bound is not None
                and name in ("interval", "half_open_interval")
                and len(value.args) == 2
            ):
                upper = _literal_number(value.args[1])
                if upper is not None:
                    facts.attr_ranges[key.value] = (bound, False, upper)


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _contains_candidate(
    nodes: Iterable[ast.AST], imports: ImportMap, cls: ClassFacts | None = None
) -> bool:
    return any(_is_candidate(sub, imports, cls) for top in nodes for sub in ast.walk(top))


def plan_file(tree: ast.Module, source: str) -> FilePlan:
    imports = ImportMap()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.add(node)
    constants: dict[str, float] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            value = _literal_number(stmt.value)
            if isinstance(target, ast.Name) and value is not None:
                constants[target.id] = value
    frameworks = imports.frameworks()
    primary = next(
        (f for f in ("torch", "tensorflow", "keras", "jax", "numpy") if f in frameworks), "python"
    )
    code = _COMMENT.sub("", source)
    half = any(h in code for h in HALF_PRECISION_HINTS)

    units: list[Unit] = []
    module_level: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if _contains_candidate([stmt], imports):
                units.append(
                    Unit(
                        _first_line(stmt),
                        stmt.end_lineno or stmt.lineno,
                        stmt.col_offset,
                        stmt.name,
                    )
                )
        elif isinstance(stmt, ast.ClassDef):
            facts = _class_facts(stmt, imports)
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    if _contains_candidate([item], imports, facts):
                        units.append(
                            Unit(
                                _first_line(item),
                                item.end_lineno or item.lineno,
                                item.col_offset,
                                f"{stmt.name}.{item.name}",
                                facts,
                            )
                        )
                elif _contains_candidate([item], imports):
                    module_level.append(item)
        else:
            module_level.append(stmt)
    whole = _contains_candidate(module_level, imports)
    return FilePlan(imports, constants, units, whole, half, primary)
