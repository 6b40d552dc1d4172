"""Check the ground truth of the dynamic NaN/Inf benchmark in ``bench/cases/``.

Run from the repository root::

    .venv/bin/python bench/cases/check_cases.py                # every case
    .venv/bin/python bench/cases/check_cases.py -k p08 -k _tf_ # ids containing p08 or _tf_
    .venv/bin/python bench/cases/check_cases.py --samples 200  # quicker, fewer fixed samples
    .venv/bin/python bench/cases/check_cases.py --markdown     # the coverage table only

For every case (format: ``bench/cases/README.md``) it checks:

1. the layout: ``buggy.py`` carries exactly one ``# numcheck-bug: <op>`` line, ``fixed.py`` none;
   both import only torch / tensorflow / numpy / math / the standard library; the entry exists in
   both with the same signature; ``case.toml`` has every field and a valid input box.
2. the witness (``witness`` in case.toml) lies inside the box and triggers the bug: for
   ``failure = "forward"`` the bug line is where a NaN (or an Inf, from finite inputs)
   first appears and the entry's output or input gradient holds NaN/Inf; for
   ``failure = "backward"`` the output is finite, the gradient of the output sum with
   respect to the inputs is not, and the vector-Jacobian product through the bug line
   alone turns a finite gradient into NaN/Inf.
   The bug line is observed with ``sys.settrace``: its inputs are the names (and ``self.x``
   attributes) it reads, its outputs the names it assigns or the value it returns.
3. the fixed twin is finite (output, gradient with respect to every float input and every
   parameter) on the witness, the box corners, structured inputs (constant tensors, zero and
   duplicated slices, tiny and boundary values, equal arguments) and uniform samples.
4. the needle label: on uniform samples the buggy entry fails (NaN/Inf output or input gradient)
   in fewer than ``--needle-rate`` of them exactly when the case says ``needle = true``.

It prints one row per case and exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import inspect
import io
import math
import os
import re
import sys
import time
import tomllib
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ next to the cases
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

CASES_DIR = Path(__file__).resolve().parent

OPS = frozenset(
    {
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "rsqrt",
        "reciprocal",
        "div",
        "pow",
        "exp",
        "expm1",
        "acos",
        "asin",
        "atanh",
        "lgamma",
        "digamma",
        "softmax",
        "binary_cross_entropy",
        "atan2",
        "logit",
        "cosh",
        "sinh",
    }
)
FRAMEWORKS = ("torch", "tensorflow")
FAILURES = ("forward", "backward")
DTYPES = ("float16", "bfloat16", "float32", "float64", "int64", "bool")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
ALLOWED_THIRD_PARTY = frozenset({"torch", "tensorflow", "numpy", "math"})
BUG_RE = re.compile(r"#\s*numcheck-bug:\s*([A-Za-z0-9_]+)\s*$")
SPEC_RE = re.compile(
    r"^\s*(?P<dtype>[a-z0-9]+)\s*\[(?P<dims>[^\]]*)\]\s+in\s+"
    r"\[\s*(?P<lo>[^,\]]+?)\s*,\s*(?P<hi>[^\]]+?)\s*\]\s*$"
)
CASE_KEYS = frozenset(
    {"framework", "pattern", "failure", "description", "entry", "witness", "needle", "notes"}
)
ENTRY_KEYS = frozenset({"target", "inputs", "init", "weights", "dtype"})
MIN_LINES, MAX_LINES = 10, 60

torch: Any = None
tf: Any = None


def import_torch() -> Any:
    global torch
    if torch is None:
        import torch as _torch

        torch = _torch
        torch.set_num_threads(1)
    return torch


def import_tf() -> Any:
    global tf
    if tf is None:
        # TensorFlow's C++ start-up chatter goes straight to file descriptor 2
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                import tensorflow as _tf
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(devnull)

        tf = _tf
        tf.get_logger().setLevel("ERROR")
        with contextlib.suppress(RuntimeError):
            tf.config.threading.set_inter_op_parallelism_threads(1)
            tf.config.threading.set_intra_op_parallelism_threads(1)
    return tf


class CaseError(Exception):
    """A check failed; the message says which."""


# --------------------------------------------------------------------------- input specs


@dataclass(frozen=True)
class Spec:
    dtype: str
    shape: tuple[int, ...]
    lo: float
    hi: float
    text: str

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    def bounds(self) -> tuple[float, float]:
        """lo and hi as the dtype stores them (fp16 rounds)."""
        if self.dtype in ("float16",):
            return float(np.float16(self.lo)), float(np.float16(self.hi))
        if self.dtype == "bfloat16":
            t = import_torch()
            b = t.tensor([self.lo, self.hi], dtype=t.bfloat16).double().tolist()
            return b[0], b[1]
        if self.dtype == "float32":
            return float(np.float32(self.lo)), float(np.float32(self.hi))
        return self.lo, self.hi


def parse_spec(text: str) -> Spec:
    m = SPEC_RE.match(text)
    if not m:
        raise CaseError(f"input spec {text!r} does not match '<dtype>[<dims>] in [<lo>, <hi>]'")
    dtype = m["dtype"]
    if dtype not in DTYPES:
        raise CaseError(f"input spec {text!r}: unknown dtype {dtype!r}")
    dims = m["dims"].strip()
    try:
        shape = tuple(int(d) for d in dims.split(",")) if dims else ()
        lo, hi = float(m["lo"]), float(m["hi"])
    except ValueError as exc:
        raise CaseError(f"input spec {text!r}: {exc}") from None
    if any(d <= 0 for d in shape):
        raise CaseError(f"input spec {text!r}: dims must be positive")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise CaseError(f"input spec {text!r}: need finite lo <= hi")
    if dtype in ("int64", "bool") and (lo != int(lo) or hi != int(hi)):
        raise CaseError(f"input spec {text!r}: integer bounds expected")
    if dtype == "bool" and not (0 <= lo <= hi <= 1):
        raise CaseError(f"input spec {text!r}: bool bounds must lie in [0, 1]")
    return Spec(dtype, shape, lo, hi, text)


def in_box(value: np.ndarray, spec: Spec) -> str | None:
    """None when ``value`` (numpy, already in the spec's dtype) lies in the box, else why not."""
    if tuple(value.shape) != spec.shape:
        return f"shape {tuple(value.shape)} != {spec.shape}"
    v = value.astype(np.float64)
    if not np.all(np.isfinite(v)):
        return "holds NaN/Inf"
    lo, hi = spec.bounds()
    if v.size and (v.min() < lo or v.max() > hi):
        return f"values in [{v.min()}, {v.max()}] leave [{lo}, {hi}]"
    if spec.dtype == "int64" and not np.all(v == np.round(v)):
        return "non-integer values"
    return None


# --------------------------------------------------------------------------- sampling

SPECIAL_MAGNITUDES = (0.0, 1e-45, 1e-40, 1e-30, 1e-20, 1e-12, 1e-8, 1e-4, 0.5, 1.0)


def special_values(spec: Spec) -> np.ndarray:
    lo, hi = spec.lo, spec.hi
    vals = {lo, hi, (lo + hi) / 2.0}
    for m in SPECIAL_MAGNITUDES:
        vals.update({m, -m, lo + m, hi - m})
    if lo < hi:
        vals.update(
            {
                float(np.nextafter(np.float32(lo), np.float32(hi))),
                float(np.nextafter(np.float32(hi), np.float32(lo))),
            }
        )
    arr = np.array(sorted(v for v in vals if lo <= v <= hi), dtype=np.float64)
    return arr


def cast_np(values: np.ndarray, spec: Spec) -> np.ndarray:
    """Round to the spec's dtype (kept as float64 for bfloat16) and clip into the box."""
    lo, hi = spec.bounds()
    if spec.dtype == "bool":
        return np.clip(np.round(values), lo, hi).astype(bool)
    if spec.dtype == "int64":
        return np.clip(np.round(values), lo, hi).astype(np.int64)
    if spec.dtype == "float16":
        return np.clip(values.astype(np.float16), lo, hi).astype(np.float16)
    if spec.dtype == "float32":
        return np.clip(values.astype(np.float32), lo, hi).astype(np.float32)
    if spec.dtype == "bfloat16":
        t = import_torch()
        r = t.tensor(values, dtype=t.float64).to(t.bfloat16).double().numpy()
        return np.clip(r, lo, hi)
    return np.clip(values.astype(np.float64), lo, hi)


def uniform(rng: np.random.Generator, spec: Spec) -> np.ndarray:
    if spec.dtype in ("int64", "bool"):
        raw = rng.integers(int(spec.lo), int(spec.hi) + 1, size=spec.shape).astype(np.float64)
    else:
        raw = rng.uniform(spec.lo, spec.hi, size=spec.shape)
    return cast_np(np.asarray(raw, dtype=np.float64), spec)


def structured(
    rng: np.random.Generator, specs: list[Spec], base: list[np.ndarray]
) -> list[np.ndarray]:
    """A uniform sample bent towards the places where unguarded code fails."""
    out = [b.astype(np.float64) for b in base]
    mode = rng.choice(["corner", "constant", "special", "zero_slice", "dup_slice", "tie", "mix"])
    for i, spec in enumerate(specs):
        v = out[i]
        if v.ndim == 0 and mode in ("zero_slice", "dup_slice"):
            continue
        if mode == "corner":
            choices = [spec.lo, spec.hi] + ([0.0] if spec.lo < 0 < spec.hi else [])
            v = (
                rng.choice(choices, size=spec.shape)
                if rng.random() < 0.5
                else np.full(spec.shape, rng.choice(choices))
            )
        elif mode == "constant":
            pool = special_values(spec) if spec.is_float else np.array([spec.lo, spec.hi])
            c = rng.choice(pool) if rng.random() < 0.5 else rng.uniform(spec.lo, spec.hi)
            v = np.full(spec.shape, c)
        elif mode == "special" and spec.is_float:
            pool = special_values(spec)
            mask = rng.random(spec.shape) < rng.choice([0.3, 0.7, 1.0])
            v = np.where(mask, rng.choice(pool, size=spec.shape), v)
        elif mode == "zero_slice" and spec.lo <= 0 <= spec.hi:
            dim = int(rng.integers(v.ndim))
            idx = rng.random(spec.shape[dim]) < 0.5
            sl: list[Any] = [slice(None)] * v.ndim
            sl[dim] = idx
            v = v.copy()
            v[tuple(sl)] = 0.0
        elif mode == "dup_slice":
            dim = int(rng.integers(v.ndim))
            first = np.take(v, [0], axis=dim)
            v = np.repeat(first, spec.shape[dim], axis=dim)
        elif mode == "mix" and spec.is_float:
            scale = 10.0 ** rng.uniform(-40, 0)
            v = v * scale
        out[i] = v
    if mode == "tie":
        for i, si in enumerate(specs):
            for j in range(i + 1, len(specs)):
                sj = specs[j]
                if si.shape == sj.shape and si.is_float and sj.is_float and rng.random() < 0.7:
                    c = 1.0 if rng.random() < 0.6 else rng.uniform(-2.0, 2.0)
                    out[j] = out[i] * c
    return [cast_np(v, s) for v, s in zip(out, specs, strict=True)]


def corners(specs: list[Spec]) -> Iterator[list[np.ndarray]]:
    picks: list[Callable[[Spec], float]] = [
        lambda s: s.lo,
        lambda s: s.hi,
        lambda s: 0.0 if s.lo <= 0 <= s.hi else s.lo,
        lambda s: (s.lo + s.hi) / 2.0,
    ]
    for pick in picks:
        yield [cast_np(np.full(s.shape, pick(s)), s) for s in specs]


# --------------------------------------------------------------------------- frameworks


DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", "int64", "bool")


def torch_dtype(name: str) -> Any:
    if name not in DTYPE_NAMES:
        raise KeyError(name)
    return getattr(import_torch(), name)


def tf_dtype(name: str) -> Any:
    if name not in DTYPE_NAMES:
        raise KeyError(name)
    return getattr(import_tf(), name)


def to_framework(framework: str, value: np.ndarray, spec: Spec) -> Any:
    if framework == "torch":
        t = import_torch()
        return t.tensor(value, dtype=torch_dtype(spec.dtype))
    return import_tf().constant(value, dtype=tf_dtype(spec.dtype))


def to_numpy(x: Any) -> np.ndarray:
    t = torch
    if t is not None and isinstance(x, t.Tensor):
        x = x.detach()
        if x.dtype == t.bfloat16:
            x = x.double()
        return x.cpu().numpy()
    if tf is not None and isinstance(x, tf.Tensor | tf.Variable):
        if x.dtype == tf.bfloat16:
            x = tf.cast(x, tf.float64)
        return np.asarray(x.numpy())
    return np.asarray(x)


def dtype_name(x: Any) -> str:
    if torch is not None and isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.")
    if tf is not None and isinstance(x, tf.Tensor | tf.Variable):
        return str(x.dtype.name)
    return str(np.asarray(x).dtype)


def is_tensor(x: Any) -> bool:
    if torch is not None and isinstance(x, torch.Tensor):
        return True
    return tf is not None and isinstance(x, tf.Tensor | tf.Variable)


def is_float_tensor(x: Any) -> bool:
    if torch is not None and isinstance(x, torch.Tensor):
        return bool(x.is_floating_point())
    if tf is not None and isinstance(x, tf.Tensor | tf.Variable):
        return bool(x.dtype.is_floating)
    return False


def flatten(obj: Any) -> list[Any]:
    if is_tensor(obj):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in flatten(v)]
    if isinstance(obj, list | tuple):
        return [t for v in obj for t in flatten(v)]
    return []


def nonfinite(x: Any) -> tuple[bool, bool]:
    """(has NaN, has any non-finite) for a float tensor; (False, False) otherwise."""
    if not is_float_tensor(x):
        return False, False
    if torch is not None and isinstance(x, torch.Tensor):
        d = x.detach()
        return bool(torch.isnan(d).any()), bool((~torch.isfinite(d)).any())
    v = to_numpy(x).astype(np.float64)
    return bool(np.isnan(v).any()), bool((~np.isfinite(v)).any())


def all_finite(xs: list[Any]) -> bool:
    return not any(nonfinite(x)[1] for x in xs if x is not None)


# --------------------------------------------------------------------------- loading


@dataclass
class Case:
    cid: str
    path: Path
    framework: str
    pattern: int
    failure: str
    description: str
    target_module: str
    qualname: str
    specs: list[Spec]
    init: dict[str, Any]
    weights: tuple[float, float] | None
    dtype: str | None
    witness: str
    needle: bool
    bug_line: int
    bug_op: str
    bug_text: str


def parse_range(text: str) -> tuple[float, float]:
    m = re.match(r"^\s*\[\s*([^,\]]+)\s*,\s*([^\]]+)\s*\]\s*$", text)
    if not m:
        raise CaseError(f"weights {text!r} is not '[lo, hi]'")
    lo, hi = float(m[1]), float(m[2])
    if not lo <= hi:
        raise CaseError(f"weights {text!r}: lo > hi")
    return lo, hi


def check_imports(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise CaseError(f"{path.name}: relative import")
            names = [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            if top not in ALLOWED_THIRD_PARTY and top not in sys.stdlib_module_names:
                raise CaseError(
                    f"{path.name}: imports {name!r} (torch/tensorflow/numpy/math/stdlib only)"
                )


def load_case(case_dir: Path) -> Case:
    toml_path = case_dir / "case.toml"
    for f in ("buggy.py", "fixed.py", "case.toml"):
        if not (case_dir / f).is_file():
            raise CaseError(f"missing {f}")
    if not re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", case_dir.name):
        raise CaseError("case id is not snake_case")
    try:
        meta = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CaseError(f"case.toml: {exc}") from None
    unknown = set(meta) - CASE_KEYS
    if unknown:
        raise CaseError(f"case.toml: unknown keys {sorted(unknown)}")
    for key in ("framework", "pattern", "failure", "description", "entry", "witness"):
        if key not in meta:
            raise CaseError(f"case.toml: missing {key!r}")
    entry = meta["entry"]
    if set(entry) - ENTRY_KEYS:
        raise CaseError(f"case.toml [entry]: unknown keys {sorted(set(entry) - ENTRY_KEYS)}")
    if meta["framework"] not in FRAMEWORKS:
        raise CaseError(f"framework {meta['framework']!r} not in {FRAMEWORKS}")
    if not (isinstance(meta["pattern"], int) and 0 <= meta["pattern"] <= 15):
        raise CaseError("pattern must be an integer 0..15")
    if meta["failure"] not in FAILURES:
        raise CaseError(f"failure {meta['failure']!r} not in {FAILURES}")
    target = entry.get("target", "")
    if not re.fullmatch(r"buggy:[A-Za-z_][A-Za-z0-9_.]*", target):
        raise CaseError(f"entry.target {target!r} is not 'buggy:<qualname>'")
    specs = [parse_spec(s) for s in entry.get("inputs", [])]
    if not specs:
        raise CaseError("entry.inputs is empty")
    dtype = entry.get("dtype")
    if dtype is not None and dtype not in FLOAT_DTYPES:
        raise CaseError(f"entry.dtype {dtype!r} is not a float dtype")
    if dtype is not None and any(s.is_float and s.dtype != dtype for s in specs):
        raise CaseError(f"entry.dtype {dtype!r} disagrees with a float input spec")
    weights = parse_range(entry["weights"]) if "weights" in entry else None

    buggy_src = (case_dir / "buggy.py").read_text(encoding="utf-8").splitlines()
    fixed_src = (case_dir / "fixed.py").read_text(encoding="utf-8").splitlines()
    marks = [(i + 1, m[1], line) for i, line in enumerate(buggy_src) if (m := BUG_RE.search(line))]
    if len(marks) != 1:
        raise CaseError(f"buggy.py has {len(marks)} '# numcheck-bug:' lines, expected 1")
    if any("numcheck-bug" in line for line in fixed_src):
        raise CaseError("fixed.py carries a numcheck-bug marker")
    lineno, op, text = marks[0]
    if op not in OPS:
        raise CaseError(f"bug op {op!r} is not one of the listed ops")
    for name, src in (("buggy.py", buggy_src), ("fixed.py", fixed_src)):
        code_lines = [s for s in src if s.strip() and not s.strip().startswith("#")]
        if not MIN_LINES <= len(code_lines) <= MAX_LINES:
            raise CaseError(
                f"{name}: {len(code_lines)} code lines, expected {MIN_LINES}..{MAX_LINES}"
            )
    if buggy_src == fixed_src:
        raise CaseError("fixed.py is identical to buggy.py")
    check_imports(case_dir / "buggy.py")
    check_imports(case_dir / "fixed.py")
    return Case(
        cid=case_dir.name,
        path=case_dir,
        framework=meta["framework"],
        pattern=meta["pattern"],
        failure=meta["failure"],
        description=meta["description"],
        target_module="buggy",
        qualname=target.split(":", 1)[1],
        specs=specs,
        init=dict(entry.get("init", {})),
        weights=weights,
        dtype=dtype,
        witness=meta["witness"],
        needle=bool(meta.get("needle", False)),
        bug_line=lineno,
        bug_op=op,
        bug_text=text,
    )


def import_file(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise CaseError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve(module: ModuleType, qualname: str) -> Any:
    obj: Any = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise CaseError(f"{module.__name__} has no {qualname!r}")
        obj = getattr(obj, part)
    return obj


def signature_of(obj: Any) -> str:
    """Parameter names and kinds (defaults may differ: changing one can be the fix)."""

    def params(fn: Any) -> str:
        sig = inspect.signature(fn)
        return (
            "("
            + ", ".join(f"{p.kind.name.lower()} {p.name}" for p in sig.parameters.values())
            + ")"
        )

    if inspect.isclass(obj):
        call = getattr(obj, "forward", None) or getattr(obj, "call", None)
        return f"{params(obj.__init__)} / {params(call) if call else ''}"
    return params(obj)


# --------------------------------------------------------------------------- running


@dataclass
class Runner:
    """The entry of one module (buggy or fixed), ready to be called on numpy inputs."""

    case: Case
    module: ModuleType
    obj: Any
    instance: Any = None
    params: list[Any] = field(default_factory=list)
    initial: list[np.ndarray] = field(default_factory=list)

    @property
    def fn(self) -> Any:
        return self.instance if self.instance is not None else self.obj

    def build(self, first: list[np.ndarray]) -> None:
        c = self.case
        if not inspect.isclass(self.obj):
            if c.init:
                raise CaseError("entry.init given but the entry is not a class")
            return
        if c.framework == "torch":
            t = import_torch()
            t.manual_seed(0)
            inst = self.obj(**c.init)
            if not isinstance(inst, t.nn.Module):
                raise CaseError("class entry is not an nn.Module")
            if c.dtype:
                inst = inst.to(torch_dtype(c.dtype))
            self.instance = inst
            self.params = [p for p in inst.parameters() if p.is_floating_point()]
        else:
            tfm = import_tf()
            tfm.keras.utils.set_random_seed(0)
            inst = self.obj(**c.init)
            if not isinstance(inst, tfm.keras.layers.Layer):
                raise CaseError("class entry is not a Keras layer")
            self.instance = inst
            inst(*[to_framework("tensorflow", v, s) for v, s in zip(first, c.specs, strict=True)])
            self.params = list(inst.trainable_variables)
        self.initial = [to_numpy(p).copy() for p in self.params]

    def set_weights(self, rng: np.random.Generator | None) -> None:
        """Random weights in the case's range, or back to the seeded initial weights."""
        if not self.params:
            return
        for p, init in zip(self.params, self.initial, strict=True):
            if rng is None or self.case.weights is None:
                new = init
            else:
                new = rng.uniform(*self.case.weights, size=init.shape).astype(init.dtype)
            if self.case.framework == "torch":
                with torch.no_grad():
                    p.copy_(torch.as_tensor(new, dtype=p.dtype))
            else:
                p.assign(new)

    def run(
        self, values: list[np.ndarray], params_grad: bool = False, probe: LineProbe | None = None
    ) -> RunResult:
        if self.case.framework == "torch":
            return self._run_torch(values, params_grad, probe)
        return self._run_tf(values, params_grad, probe)

    def _run_torch(
        self, values: list[np.ndarray], params_grad: bool, probe: LineProbe | None
    ) -> RunResult:
        t = import_torch()
        args = [to_framework("torch", v, s) for v, s in zip(values, self.case.specs, strict=True)]
        for a in args:
            if a.is_floating_point():
                a.requires_grad_(True)
        t.manual_seed(0)
        with probe if probe is not None else contextlib.nullcontext():
            out = self.fn(*args)
        outs = [o for o in flatten(out) if is_float_tensor(o)]
        res = RunResult(
            outputs=outs, out_nan=any(nonfinite(o)[0] for o in outs), out_bad=not all_finite(outs)
        )
        diff = [o for o in outs if o.requires_grad]
        sources = [a for a in args if a.requires_grad]
        if params_grad:
            sources += [p for p in self.params if p.requires_grad]
        if diff and sources:
            grads = t.autograd.grad(
                diff,
                sources,
                grad_outputs=[t.ones_like(o) for o in diff],
                retain_graph=probe is not None,
                allow_unused=True,
            )
            res.grad_bad = not all_finite(list(grads))
        if probe is not None:
            res.attribution = probe.attribute_torch(diff)
        return res

    def _run_tf(
        self, values: list[np.ndarray], params_grad: bool, probe: LineProbe | None
    ) -> RunResult:
        tfm = import_tf()
        args = [
            to_framework("tensorflow", v, s) for v, s in zip(values, self.case.specs, strict=True)
        ]
        watched = [a for a in args if a.dtype.is_floating]
        # no tf.random.set_seed here: it clears the eager kernel cache and makes every call
        # about ten times slower (the cases draw no random numbers)
        with tfm.GradientTape(persistent=probe is not None) as tape:
            for a in watched:
                tape.watch(a)
            with probe if probe is not None else contextlib.nullcontext():
                out = self.fn(*args)
        outs = [o for o in flatten(out) if is_float_tensor(o)]
        res = RunResult(
            outputs=outs, out_nan=any(nonfinite(o)[0] for o in outs), out_bad=not all_finite(outs)
        )
        sources = watched + (list(self.params) if params_grad else [])
        if outs and sources:
            grads = tape.gradient(outs, sources, output_gradients=[tfm.ones_like(o) for o in outs])
            res.grad_bad = not all_finite(list(grads))
        if probe is not None:
            res.attribution = probe.attribute_tf(tape, outs)
            del tape
        return res


@dataclass
class RunResult:
    outputs: list[Any]
    out_nan: bool
    out_bad: bool
    grad_bad: bool = False
    attribution: str = ""

    @property
    def bad(self) -> bool:
        return self.out_bad or self.grad_bad


# --------------------------------------------------------------------------- the bug line probe


@dataclass
class Execution:
    inputs: dict[str, Any]
    outputs: list[Any]
    in_nan: bool
    in_bad: bool
    out_nan: bool
    out_bad: bool


class LineProbe:
    """Watches one line of one file with sys.settrace: what it reads, what it produces."""

    def __init__(self, path: Path, lineno: int, text: str) -> None:
        self.path = os.path.realpath(path)
        self.lineno = lineno
        try:
            stmt = ast.parse(text.strip()).body
        except SyntaxError:
            raise CaseError(
                f"bug line {lineno} is not a complete one-line statement: {text.strip()!r}"
            ) from None
        if len(stmt) != 1:
            raise CaseError(f"bug line {lineno} must hold one statement")
        node = stmt[0]
        self.is_return = isinstance(node, ast.Return)
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        elif self.is_return:
            targets = []
        else:
            raise CaseError(f"bug line {lineno} must be an assignment or a return")
        self.out_names = [n.id for tgt in targets for n in ast.walk(tgt) if isinstance(n, ast.Name)]
        if not self.is_return and not self.out_names:
            raise CaseError(f"bug line {lineno} assigns no plain name")
        value = getattr(node, "value", None)  # an assignment's or a return's
        if value is None:
            raise CaseError(f"bug line {lineno} has no value")
        self.in_names = sorted(
            {
                n.id
                for n in ast.walk(value)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
            | (
                {node.target.id}
                if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
                else set()
            )
        )
        self.in_attrs = sorted(
            {
                n.attr
                for n in ast.walk(value)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            }
        )
        self.pending: dict[int, tuple[FrameType, dict[str, Any]]] = {}
        self.executions: list[Execution] = []
        self._old: Any = None

    def __enter__(self) -> LineProbe:
        self._old = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._old)

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and os.path.realpath(frame.f_code.co_filename) == self.path:
            return self._local
        return None

    def _inputs(self, frame: FrameType) -> dict[str, Any]:
        loc = frame.f_locals
        found: dict[str, Any] = {n: loc[n] for n in self.in_names if n in loc and is_tensor(loc[n])}
        this = loc.get("self")
        if this is not None:
            for a in self.in_attrs:
                v = getattr(this, a, None)
                if is_tensor(v):
                    found[f"self.{a}"] = v
        return found

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        key = id(frame)
        if key in self.pending and event in ("line", "return"):
            _, before = self.pending.pop(key)
            if event == "return" and self.is_return:
                outs = flatten(arg)
            else:
                loc = frame.f_locals
                outs = [t for n in self.out_names if n in loc for t in flatten(loc[n])]
            ins = list(before.values())
            flags_in = [nonfinite(x) for x in ins]
            flags_out = [nonfinite(x) for x in outs]
            self.executions.append(
                Execution(
                    inputs=before,
                    outputs=outs,
                    in_nan=any(f[0] for f in flags_in),
                    in_bad=any(f[1] for f in flags_in),
                    out_nan=any(f[0] for f in flags_out),
                    out_bad=any(f[1] for f in flags_out),
                )
            )
        if event == "line" and frame.f_lineno == self.lineno:
            self.pending[key] = (frame, self._inputs(frame))
        return self._local

    def forward_origin(self) -> bool:
        """The bug line made a NaN from NaN-free inputs, or a NaN/Inf from finite inputs."""
        return any(
            (e.out_nan and not e.in_nan) or (e.out_bad and not e.in_bad) for e in self.executions
        )

    def _summary(self) -> str:
        if not self.executions:
            return "bug line never ran"
        e = self.executions[0]
        return (
            f"bug line ran {len(self.executions)}x; first: inputs nan={e.in_nan} "
            f"bad={e.in_bad}, outputs nan={e.out_nan} bad={e.out_bad}"
        )

    def attribute_torch(self, entry_outs: list[Any]) -> str:
        """'' when the bug line is shown to be the origin of the failure, else why not."""
        t = import_torch()
        if self.forward_origin():
            return "forward"
        for e in self.executions:
            outs = [o for o in e.outputs if is_float_tensor(o) and o.requires_grad]
            ins = [v for v in e.inputs.values() if is_float_tensor(v) and v.requires_grad]
            if not outs or not ins or not entry_outs:
                continue
            g_out = t.autograd.grad(
                entry_outs,
                outs,
                grad_outputs=[t.ones_like(o) for o in entry_outs],
                retain_graph=True,
                allow_unused=True,
            )
            pairs = [(o, g) for o, g in zip(outs, g_out, strict=True) if g is not None]
            if not pairs or not all_finite([g for _, g in pairs]):
                continue
            g_in = t.autograd.grad(
                [o for o, _ in pairs],
                ins,
                grad_outputs=[g for _, g in pairs],
                retain_graph=True,
                allow_unused=True,
            )
            if not all_finite(list(g_in)):
                return "backward"
        return "none (" + self._summary() + ")"

    def attribute_tf(self, tape: Any, entry_outs: list[Any]) -> str:
        tfm = import_tf()
        if self.forward_origin():
            return "forward"
        for e in self.executions:
            outs = [o for o in e.outputs if is_float_tensor(o)]
            ins = [v for v in e.inputs.values() if is_float_tensor(v)]
            if not outs or not ins or not entry_outs:
                continue
            g_out = tape.gradient(
                entry_outs, outs, output_gradients=[tfm.ones_like(o) for o in entry_outs]
            )
            pairs = [(o, g) for o, g in zip(outs, g_out, strict=True) if g is not None]
            if not pairs or not all_finite([g for _, g in pairs]):
                continue
            g_in = tape.gradient([o for o, _ in pairs], ins, output_gradients=[g for _, g in pairs])
            if not all_finite(list(g_in)):
                return "backward"
        return "none (" + self._summary() + ")"


# --------------------------------------------------------------------------- one case


@dataclass
class Outcome:
    case: Case | None
    cid: str
    ok: bool = True
    problems: list[str] = field(default_factory=list)
    witness: str = "-"
    fixed_runs: int = 0
    rate_hits: int = 0
    rate_runs: int = 0
    seconds: float = 0.0

    def fail(self, msg: str) -> None:
        self.ok = False
        self.problems.append(msg)


def eval_witness(case: Case) -> list[np.ndarray]:
    ns: dict[str, Any] = {"np": np, "math": math}
    if case.framework == "torch":
        ns["torch"] = import_torch()
    else:
        ns["tf"] = import_tf()
        ns["torch"] = None
    try:
        value = eval(case.witness, ns)  # noqa: S307 - benchmark metadata written by hand
    except Exception as exc:
        raise CaseError(f"witness does not evaluate: {type(exc).__name__}: {exc}") from None
    if not isinstance(value, list | tuple) or len(value) != len(case.specs):
        raise CaseError(f"witness must be a list of {len(case.specs)} arguments")
    arrays = []
    for i, (v, spec) in enumerate(zip(value, case.specs, strict=True)):
        if not (is_tensor(v) or isinstance(v, np.ndarray)):
            raise CaseError(f"witness argument {i} is {type(v).__name__}, not a tensor")
        if dtype_name(v) != spec.dtype:
            raise CaseError(
                f"witness argument {i} has dtype {dtype_name(v)}, spec says {spec.dtype}"
            )
        arr = to_numpy(v)
        why = in_box(arr, spec)
        if why:
            raise CaseError(f"witness argument {i} is outside the box {spec.text!r}: {why}")
        arrays.append(arr)
    return arrays


def check_case(
    case_dir: Path, n_samples: int, n_rate: int, needle_rate: float, seed: int
) -> Outcome:
    start = time.perf_counter()
    out = Outcome(case=None, cid=case_dir.name)
    try:
        case = load_case(case_dir)
        out.case = case
        if case.framework == "torch":
            import_torch()
        else:
            import_tf()
        buggy_mod = import_file(case_dir / "buggy.py", f"numcheck_case_{case.cid}_buggy")
        fixed_mod = import_file(case_dir / "fixed.py", f"numcheck_case_{case.cid}_fixed")
        b_obj, f_obj = resolve(buggy_mod, case.qualname), resolve(fixed_mod, case.qualname)
        if signature_of(b_obj) != signature_of(f_obj):
            out.fail(f"entry signatures differ: {signature_of(b_obj)} vs {signature_of(f_obj)}")
        witness = eval_witness(case)
        buggy = Runner(case, buggy_mod, b_obj)
        fixed = Runner(case, fixed_mod, f_obj)
        buggy.build(witness)
        fixed.build(witness)
        check_witness(case, buggy, witness, out)
        check_fixed(case, fixed, witness, n_samples, seed, out)
        check_rate(case, buggy, n_rate, needle_rate, seed, out)
    except CaseError as exc:
        out.fail(str(exc))
    except Exception as exc:  # a crash in a case is a failed case, not a crashed checker
        tb = traceback.format_exception(exc)
        out.fail(f"{type(exc).__name__}: {exc} [{tb[-2].strip() if len(tb) > 1 else ''}]")
    out.seconds = time.perf_counter() - start
    return out


def check_witness(case: Case, buggy: Runner, witness: list[np.ndarray], out: Outcome) -> None:
    probe = LineProbe(case.path / "buggy.py", case.bug_line, case.bug_text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = buggy.run(witness, probe=probe)
    if case.failure == "forward":
        out.witness = (
            f"out {'NaN' if res.out_nan else 'Inf'}"
            if res.out_bad
            else "grad NaN/Inf"
            if res.grad_bad
            else "finite"
        )
        if not res.bad:
            out.fail("witness: buggy output and input gradient are finite")
        if res.attribution != "forward":
            out.fail(f"witness: the bug line is not where NaN/Inf first appears: {res.attribution}")
    else:
        out.witness = f"grad {'NaN/Inf' if res.grad_bad else 'finite'}"
        if res.out_bad:
            out.fail(
                "witness: buggy output is already NaN/Inf, failure = 'backward' expects finite"
            )
        if not res.grad_bad:
            out.fail(
                "witness: input gradient of buggy is finite, failure = 'backward' expects NaN/Inf"
            )
        if res.attribution != "backward":
            out.fail(f"witness: the gradient does not go bad at the bug line: {res.attribution}")


def fixed_inputs(
    case: Case, witness: list[np.ndarray], n: int, rng: np.random.Generator
) -> Iterator[tuple[str, list[np.ndarray]]]:
    yield "witness", witness
    for factor in (1e-45, 1e-38, 1e-30, 1e-20, 1e-10, 1e-5, 1e-2, 1.0 + 1e-6):
        yield (
            "witness-scaled",
            [
                cast_np(w.astype(np.float64) * factor, s) if s.is_float else w
                for w, s in zip(witness, case.specs, strict=True)
            ],
        )
    for c in corners(case.specs):
        yield "corner", c
    n_struct = n * 2 // 5
    for i in range(n):
        base = [uniform(rng, s) for s in case.specs]
        if i < n_struct:
            yield "structured", structured(rng, case.specs, base)
        elif i < n_struct + n // 20:
            mixed = [
                np.where(rng.random(w.shape) < 0.5, w, b) if w.shape else w
                for w, b in zip(witness, base, strict=True)
            ]
            yield (
                "witness-mix",
                [
                    cast_np(np.asarray(m, dtype=np.float64), s)
                    for m, s in zip(mixed, case.specs, strict=True)
                ],
            )
        else:
            yield "uniform", base


def check_fixed(
    case: Case, fixed: Runner, witness: list[np.ndarray], n: int, seed: int, out: Outcome
) -> None:
    rng = np.random.default_rng(seed)
    bad: dict[str, int] = {}
    first: str | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (kind, values) in enumerate(fixed_inputs(case, witness, n, rng)):
            random_weights = case.weights is not None and i % 4 == 3
            fixed.set_weights(rng if random_weights else None)
            for v, s in zip(values, case.specs, strict=True):
                why = in_box(np.asarray(v), s)
                if why:
                    raise CaseError(f"sampler bug: {kind} sample outside the box: {why}")
            res = fixed.run(values, params_grad=True)
            out.fixed_runs += 1
            if res.bad:
                what = "output" if res.out_bad else "gradient"
                bad[kind] = bad.get(kind, 0) + 1
                if first is None:
                    first = f"{kind} ({what}{', random weights' if random_weights else ''})"
                    if os.environ.get("CHECK_CASES_DUMP"):
                        print(case.cid, kind, [np.asarray(v).tolist() for v in values])
        fixed.set_weights(None)
    if bad:
        out.fail(f"fixed: NaN/Inf on {sum(bad.values())} inputs {bad}; first: {first}")


def check_rate(
    case: Case, buggy: Runner, n: int, needle_rate: float, seed: int, out: Outcome
) -> None:
    if n <= 0:
        return
    rng = np.random.default_rng(seed + 1)
    hits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n):
            values = [uniform(rng, s) for s in case.specs]
            if buggy.run(values).bad:
                hits += 1
    out.rate_hits, out.rate_runs = hits, n
    rate = hits / n
    if case.needle and rate >= needle_rate:
        out.fail(f"needle = true but uniform sampling fails {hits}/{n} times")
    if not case.needle and rate < needle_rate:
        out.fail(
            f"needle = false but uniform sampling fails only {hits}/{n} times "
            f"(below {needle_rate:.1%}): mark it needle = true"
        )


# --------------------------------------------------------------------------- reporting


def case_dirs(filters: list[str]) -> list[Path]:
    dirs = sorted(p for p in CASES_DIR.iterdir() if p.is_dir() and (p / "case.toml").exists())
    if filters:
        dirs = [d for d in dirs if any(f in d.name for f in filters)]
    return dirs


def markdown_table(cases: list[Case]) -> str:
    rows = [
        "| case | pattern | op | framework | failure | needle | description |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in cases:
        fw = "torch" if c.framework == "torch" else "TF2"
        rows.append(
            f"| `{c.cid}` | {c.pattern or '0 (op)'} | {c.bug_op} | {fw}"
            f"{' ' + c.dtype if c.dtype else ''} | {c.failure} | "
            f"{'yes' if c.needle else 'no'} | {c.description.replace('|', chr(92) + '|')} |"
        )
    return "\n".join(rows)


def summary(cases: list[Case]) -> str:
    def count(key: Callable[[Case], Any]) -> str:
        counts: dict[Any, int] = {}
        for c in cases:
            counts[key(c)] = counts.get(key(c), 0) + 1
        return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))

    patterns = {c.pattern for c in cases}
    missing = sorted(set(range(1, 16)) - patterns)
    lines = [
        f"cases: {len(cases)}",
        f"by framework: {count(lambda c: c.framework)}",
        f"by failure:   {count(lambda c: c.failure)}",
        f"needle cases: {sum(c.needle for c in cases)}",
        f"by pattern:   {count(lambda c: f'{c.pattern:02d}')}",
        f"by op:        {count(lambda c: c.bug_op)}",
    ]
    if missing:
        lines.append(f"patterns without a case: {missing}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "-k",
        dest="filters",
        action="append",
        default=[],
        help="only cases whose id contains this (repeatable)",
    )
    ap.add_argument("--samples", type=int, default=2000, help="inputs tried on each fixed.py")
    ap.add_argument(
        "--rate-samples",
        type=int,
        default=1000,
        help="uniform inputs tried on each buggy.py to check the needle label",
    )
    ap.add_argument(
        "--needle-rate",
        type=float,
        default=0.005,
        help="needle cases must fail on fewer than this share of uniform inputs, "
        "the others on at least this share",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", action="store_true", help="print the coverage table and exit")
    args = ap.parse_args(argv)

    dirs = case_dirs(args.filters)
    if not dirs:
        print("no cases found", file=sys.stderr)
        return 1
    if args.markdown:
        cases = []
        for d in dirs:
            try:
                cases.append(load_case(d))
            except CaseError as exc:
                print(f"{d.name}: {exc}", file=sys.stderr)
                return 1
        print(markdown_table(cases))
        print()
        print(summary(cases))
        return 0

    header = (
        f"{'case':40} {'fw':5} {'pat':>3} {'op':20} {'failure':8} {'needle':6} "
        f"{'witness':14} {'fixed':>9} {'buggy uniform':>14} {'s':>5}  result"
    )
    print(header)
    print("-" * len(header))
    outcomes: list[Outcome] = []
    for d in dirs:
        o = check_case(d, args.samples, args.rate_samples, args.needle_rate, args.seed)
        outcomes.append(o)
        c = o.case
        rate = f"{o.rate_hits}/{o.rate_runs}" if o.rate_runs else "-"
        fixed = str(o.fixed_runs) if o.fixed_runs else "-"
        fw = ("torch" if c.framework == "torch" else "tf") if c else "?"
        print(
            f"{o.cid:40} {fw:5} {(c.pattern if c else '?'):>3} "
            f"{(c.bug_op if c else '?'):20} {(c.failure if c else '?'):8} "
            f"{('yes' if c and c.needle else 'no'):6} {o.witness:14} {fixed:>9} {rate:>14} "
            f"{o.seconds:5.1f}  {'PASS' if o.ok else 'FAIL'}",
            flush=True,
        )
        for p in o.problems:
            print(f"    - {p}", flush=True)
    cases = [o.case for o in outcomes if o.case is not None]
    print()
    print(summary(cases))
    failed = [o.cid for o in outcomes if not o.ok]
    print()
    if failed:
        print(f"FAILED {len(failed)} of {len(outcomes)} cases: {', '.join(failed)}")
        return 1
    print(f"all {len(outcomes)} cases pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
