"""Project settings: `[tool.numcheck]` in pyproject.toml, `.numcheck.toml`, or `--config FILE`.

The first source found wins whole (explicit > .numcheck.toml > pyproject.toml > defaults);
files are never merged, so what a run used is always one file you can open. Every mistake is
a ConfigError naming the file and key, because a silently ignored typo in `exclude` or
`disable` changes what gets reported without anyone noticing.

Keys may be written snake_case or kebab-case (`fail_on` / `fail-on`). Besides the keys
stored on Config, `extend_exclude` adds patterns to the default `exclude` instead of
replacing it.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import shlex
import tomllib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from analyzers.dtypes import DTYPE_ALIASES

__all__ = [
    "APP_KEY_SOURCE",
    "CONFIG_KEYS",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "DTYPES",
    "ENTRY_KEY_SPECS",
    "FAIL_ON",
    "HEAD_KEYS",
    "LIMIT_KEYS",
    "POLICY_KEYS",
    "REQUIRED",
    "SCOPES",
    "SCRIPT_KEY_SPECS",
    "SCRIPT_RUN_SECONDS",
    "SEVERITIES",
    "Config",
    "ConfigError",
    "KeySpec",
    "config_from_mapping",
    "glob_match",
    "load_config",
    "load_config_with",
    "script_argv",
]

DTYPES = ("float16", "bfloat16", "float32", "float64")
SCOPES = ("added", "diff_context", "file")
DEVICES = ("auto", "cpu", "cuda")
# the Keras a repository's TensorFlow code is run with (runners/keras_generation.py)
KERAS = ("auto", "2", "3")
CHECK_FAILURE = ("never", "confirmed")
COMMENT_ON = ("proven", "potential")
SEVERITIES = ("error", "warning", "note")
FAIL_ON = ("any", "none", "error")
DEFAULT_INCLUDE: tuple[str, ...] = ("**/*.py",)
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".venv/**",
    "venv/**",
    "**/site-packages/**",
    "build/**",
    "dist/**",
    ".git/**",
    ".tox/**",
    ".nox/**",
    ".eggs/**",
    "**/node_modules/**",
    "**/__pycache__/**",
)
_EXTRA_KEYS = ("extend_exclude",)
SCRIPT_RUN_SECONDS = 10.0  # `[tool.numcheck.script] run_seconds` when it is not set


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and the key."""


def _suggest(word: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ---------------------------------------------------------------- value checks


def _str_tuple(key: str, value: Any, where: str) -> tuple[str, ...]:
    if (
        isinstance(value, str)
        or not isinstance(value, list | tuple)
        or not all(isinstance(v, str) for v in value)
    ):
        raise ConfigError(f"{key!r} in {where} must be a list of strings, got {value!r}")
    return tuple(value)


def _choice(
    key: str,
    value: Any,
    choices: tuple[str, ...],
    where: str,
    hints: Mapping[str, str] | None = None,
) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key!r} in {where} must be a string, got {value!r}")
    if value not in choices:
        hint = (
            f" (did you mean {hints[value]!r}?)"
            if hints and value in hints
            else _suggest(value, choices)
        )
        raise ConfigError(
            f"{key!r} in {where} must be one of {', '.join(choices)}, got {value!r}{hint}"
        )
    return value


def _int(key: str, value: Any, minimum: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{key!r} in {where} must be an integer >= {minimum}, got {value!r}")
    return value


def _severity_map(value: Any, where: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"'severity' in {where} must be a table of op = level, got {value!r}")
    out: dict[str, str] = {}
    for op, level in value.items():
        out[str(op)] = _choice(f"severity.{op}", level, _choices("severity"), where)
    return MappingProxyType(out)


def _patterns(key: str, value: Any, where: str) -> tuple[str, ...]:
    patterns = _str_tuple(key, value, where)
    for pattern in patterns:
        if not pattern.strip():
            raise ConfigError(f"{key!r} in {where} contains an empty pattern")
    return patterns


# ---------------------------------------------------------------- globs
#
# Globs come from the repository, i.e. from a pull request, so matching must cost little
# whatever the pattern: a regex with one `(?:[^/]+/)*` per `**` backtracks exponentially
# (twelve `**` took about a minute per deep path). Here a pattern is split into components
# and run over the path's components as a set of positions (an NFA: no backtracking), and a
# component is matched by the two-pointer wildcard algorithm (at most len(text) x
# len(pattern) steps). Semantics are those of PurePath.full_match: `*`, `?` and `[...]` never
# match a `/`.


@dataclass(frozen=True)
class _Class:
    """`[...]` of a component: single characters and `a-z` ranges, maybe negated."""

    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]
    negate: bool

    def matches(self, ch: str) -> bool:
        inside = ch in self.chars or any(lo <= ch <= hi for lo, hi in self.ranges)
        return inside != self.negate


def _class_at(part: str, i: int) -> tuple[_Class, int] | None:
    """The class opening at part[i] == "[" and the index after it; None when unclosed."""
    j = i + 1
    if j < len(part) and part[j] in "!^":
        j += 1
    if j < len(part) and part[j] == "]":
        j += 1  # a "]" first is a member
    while j < len(part) and part[j] != "]":
        j += 1
    if j >= len(part):
        return None  # no closing bracket: a literal "["
    body = part[i + 1 : j]
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            ranges.append((body[k], body[k + 2]))
            k += 3
        else:
            chars.add(body[k])
            k += 1
    return _Class(frozenset(chars), tuple(ranges), negate), j + 1


@functools.lru_cache(maxsize=1024)
def _component_tokens(part: str) -> tuple[tuple[str, Any], ...]:
    """One path component of a glob as tokens: ("*",), ("?",), ("=", char), ("[", _Class)."""
    out: list[tuple[str, Any]] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            if not out or out[-1][0] != "*":  # "**" inside a component is "*"
                out.append(("*", None))
            i += 1
        elif ch == "?":
            out.append(("?", None))
            i += 1
        elif ch == "[" and (found := _class_at(part, i)) is not None:
            out.append(("[", found[0]))
            i = found[1]
        else:
            out.append(("=", ch))
            i += 1
    return tuple(out)


def _token_matches(token: tuple[str, Any], ch: str) -> bool:
    kind, value = token
    if kind == "?":
        return True
    if kind == "=":
        return bool(ch == value)
    return bool(value.matches(ch))


def _component_match(tokens: tuple[tuple[str, Any], ...], text: str) -> bool:
    """Whole-component wildcard match; on a mismatch only the last `*` takes one more
    character, so the work is bounded by len(text) x len(tokens)."""
    t = p = 0
    star, mark = -1, 0
    while t < len(text):
        if p < len(tokens) and tokens[p][0] == "*":
            star, mark = p, t
            p += 1
        elif p < len(tokens) and _token_matches(tokens[p], text[t]):
            p += 1
            t += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            t = mark
        else:
            return False
    while p < len(tokens) and tokens[p][0] == "*":
        p += 1
    return p == len(tokens)


@functools.lru_cache(maxsize=512)
def _glob_parts(pattern: str) -> tuple[str, ...]:
    """A glob's components (`**` over whole posix paths, like PurePath.full_match).

    `**` as a whole component matches zero or more directories (`**/x.py` matches `x.py`);
    as the last component it matches everything below (`build/**`). A trailing `/` means
    the same as `/**`.
    """
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    return tuple(p for p in pattern.split("/") if p)


def _parts_match(parts: tuple[str, ...], path: str) -> bool:
    """Run the glob's components over the path's as a set of positions: `current` holds the
    indices of the components that may come next, so each step is linear in the path."""
    if not parts:
        return path == ""
    comps = path.split("/")
    m = len(comps)
    current = [0]  # sorted, distinct; every index is <= m - 1
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            if last:
                return True  # the rest of the path, whatever it is
            starts, reach = set(current), list[int]()
            for j in range(current[0], m):  # zero or more non-empty directories
                if j in starts or (reach and reach[-1] == j - 1 and comps[j - 1]):
                    reach.append(j)
            current = reach
            continue
        tokens = _component_tokens(part)
        if last:
            return any(j == m - 1 and _component_match(tokens, comps[j]) for j in current)
        current = [j + 1 for j in current if j <= m - 2 and _component_match(tokens, comps[j])]
        if not current:
            return False
    return False  # not reached: the last part always answers


def _normalise(path: str) -> str:
    """Repo-relative posix spelling of a path (Windows separators and "./" removed)."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def glob_match(pattern: str, rel_path: str) -> bool:
    """Whether repo-relative `rel_path` matches `pattern` in full."""
    return _parts_match(_glob_parts(pattern), _normalise(rel_path))


# ---------------------------------------------------------------- the config


@dataclass(frozen=True)
class Config:
    """Settings for one run; defaults are what an unconfigured project gets.

    `enable` empty means every op; `disable` wins over `enable`. `source` says where the
    settings came from, as error messages name it (e.g. "[tool.numcheck] of pyproject.toml";
    None for defaults), and is reported with the results.
    """

    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    dtype: str = "float32"
    scope: str = "added"
    context_lines: int = 3
    severity: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    max_file_bytes: int = 1_000_000
    fail_on: str = "any"
    check_failure: str = "never"  # the App's check run fails on: never | confirmed findings
    comment_on: str = "proven"  # inline comments: proven or definite findings | every finding
    dynamic: bool = True  # confirm findings by running the code (in the sandbox)
    search_seconds: float = 5.0  # search budget per finding
    dynamic_timeout: int = 300  # wall clock for the whole sandboxed run
    seed: int = 0
    harvest: bool = True  # record calls while the repository's own tests run
    harvest_seconds: float = 60.0
    device: str = "auto"  # where the dynamic pass runs the code: auto (CUDA if visible), cpu, cuda
    fix: bool = True  # validate candidate fixes for confirmed findings (in the sandbox)
    # search float32-finite findings again under bfloat16 and float16 autocast
    low_precision: bool = True
    dependencies: bool = True  # install the declared dependencies (wheels) for the sandbox
    keras: str = "auto"  # the Keras `tf.keras` is in the sandbox: auto (from the code), 2 or 3
    runner_image: str | None = None  # the Docker runner's image for this repository
    entries: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    script: Mapping[str, Any] | None = field(default=None, hash=False)  # script mode
    source: str | None = None
    # What the App changed while building this config: head policy it ignored, limits it
    # lowered (analyzers/policy.py). Shown in the review; empty for a config read as is.
    notes: tuple[str, ...] = field(default=(), hash=False)

    def __post_init__(self) -> None:
        # Checked here too so that dataclasses.replace() (CLI overrides) cannot smuggle
        # in a value the loader would have refused.
        where = self.source or "Config"
        set_ = functools.partial(object.__setattr__, self)
        set_("enable", _str_tuple("enable", self.enable, where))
        set_("disable", _str_tuple("disable", self.disable, where))
        set_("include", _patterns("include", self.include, where))
        set_("exclude", _patterns("exclude", self.exclude, where))
        if not self.include:
            raise ConfigError(f"'include' in {where} is empty, so no file would be analysed")
        _choice("dtype", self.dtype, _choices("dtype"), where, DTYPE_ALIASES)
        _choice("scope", self.scope, _choices("scope"), where)
        _choice("fail_on", self.fail_on, _choices("fail_on"), where)
        _choice("check_failure", self.check_failure, _choices("check_failure"), where)
        _choice("comment_on", self.comment_on, _choices("comment_on"), where)
        _int("context_lines", self.context_lines, 0, where)
        _int("max_file_bytes", self.max_file_bytes, 1, where)
        set_("severity", _severity_map(self.severity, where))
        if not isinstance(self.dynamic, bool):
            raise ConfigError(f"'dynamic' in {where} must be true or false")
        if (
            not isinstance(self.search_seconds, int | float)
            or isinstance(self.search_seconds, bool)
            or not 0 < self.search_seconds <= 600
        ):
            raise ConfigError(f"'search_seconds' in {where} must be a number in (0, 600]")
        _int("dynamic_timeout", self.dynamic_timeout, 1, where)
        _int("seed", self.seed, 0, where)
        if not isinstance(self.harvest, bool):
            raise ConfigError(f"'harvest' in {where} must be true or false")
        if (
            not isinstance(self.harvest_seconds, int | float)
            or isinstance(self.harvest_seconds, bool)
            or not 0 < self.harvest_seconds <= 3600
        ):
            raise ConfigError(f"'harvest_seconds' in {where} must be a number in (0, 3600]")
        _choice("device", self.device, _choices("device"), where)
        if not isinstance(self.fix, bool):
            raise ConfigError(f"'fix' in {where} must be true or false")
        if not isinstance(self.low_precision, bool):
            raise ConfigError(f"'low_precision' in {where} must be true or false")
        if not isinstance(self.dependencies, bool):
            raise ConfigError(f"'dependencies' in {where} must be true or false")
        if self.keras in (2, 3) and not isinstance(self.keras, bool):  # `keras = 2` in TOML
            set_("keras", str(self.keras))
        _choice("keras", self.keras, _choices("keras"), where)
        if self.runner_image is not None and (
            not isinstance(self.runner_image, str)
            or not self.runner_image.strip()
            or any(c.isspace() for c in self.runner_image)
        ):
            raise ConfigError(
                f"'runner_image' in {where} must be an image reference such as "
                "'ghcr.io/org/numcheck-runner:1.2' (no spaces)"
            )
        set_("entries", _entries(self.entries, where))
        set_("script", None if self.script is None else _script(self.script, where))
        if (
            isinstance(self.notes, str)
            or not isinstance(self.notes, list | tuple)
            or not all(isinstance(n, str) for n in self.notes)
        ):
            raise ConfigError(f"'notes' of {where} must be a list of strings")
        set_("notes", tuple(self.notes))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types, for the `config` field of a result."""
        return {
            "enable": list(self.enable),
            "disable": list(self.disable),
            "include": list(self.include),
            "exclude": list(self.exclude),
            "dtype": self.dtype,
            "scope": self.scope,
            "context_lines": self.context_lines,
            "severity": dict(self.severity),
            "max_file_bytes": self.max_file_bytes,
            "fail_on": self.fail_on,
            "check_failure": self.check_failure,
            "comment_on": self.comment_on,
            "dynamic": self.dynamic,
            "search_seconds": self.search_seconds,
            "dynamic_timeout": self.dynamic_timeout,
            "seed": self.seed,
            "harvest": self.harvest,
            "harvest_seconds": self.harvest_seconds,
            "device": self.device,
            "fix": self.fix,
            "low_precision": self.low_precision,
            "dependencies": self.dependencies,
            "keras": self.keras,
            "runner_image": self.runner_image,
            "entries": [dict(e) for e in self.entries],
            "script": _script_json(self.script),
            "source": self.source,
            "notes": list(self.notes),
        }

    def path_selected(self, rel_path: str) -> bool:
        """Included by some `include` glob and not excluded.

        Exclude patterns also match a file's parent directories, so `exclude = ["vendor"]`
        drops everything below vendor/ (as in .gitignore).
        """
        path = _normalise(rel_path)
        if not any(glob_match(p, path) for p in self.include):
            return False
        parts = path.split("/")
        candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        return not any(glob_match(p, c) for p in self.exclude for c in candidates)

    def op_enabled(self, op: str) -> bool:
        if op in self.disable:
            return False
        return not self.enable or op in self.enable

    def severity_for(self, op: str, default: str) -> str:
        return self.severity.get(op, default)

    def validate_ops(self, known_ops: Collection[str]) -> None:
        """Refuse op names the catalogue does not know: a typo would disable nothing."""
        known = set(known_ops)
        where = self.source or "Config"
        for key, names in (
            ("enable", self.enable),
            ("disable", self.disable),
            ("severity", tuple(self.severity)),
        ):
            for name in names:
                if name not in known:
                    raise ConfigError(
                        f"unknown op {name!r} in {key!r} of {where}{_suggest(name, known)}"
                    )


# ---------------------------------------------------------------- the keys, described once

REQUIRED: Any = object()  # KeySpec.default of a key that must be given (no default)
FROM_CONFIG: Any = object()  # KeySpec.default of a top-level key: Config's own default


@dataclass(frozen=True)
class KeySpec:
    """One settings key, described once.

    The loader accepts exactly the keys listed here (`CONFIG_KEYS` at the top level,
    `ENTRY_KEY_SPECS` in each `[[tool.numcheck.entries]]` table, `SCRIPT_KEY_SPECS` in
    `[tool.numcheck.script]`), takes defaults and choices from them, and
    `python -m analyzers.docs` writes docs/configuration.md from them, so the parser and the
    reference cannot drift. `example` is TOML as it is written inside the key's table, and
    must load (the tests load every example).
    """

    name: str
    type: str
    description: str
    example: str
    choices: tuple[str, ...] = ()
    default: Any = FROM_CONFIG
    table: str = ""  # "" top level, "entries" or "script"

    def default_value(self) -> Any:
        """The default as plain JSON types (REQUIRED when the key must be given)."""
        if self.default is not FROM_CONFIG:
            return self.default
        defaults = Config().to_json()
        return defaults.get(self.name, REQUIRED)


_OPS_NOTE = "op names from the catalogue (docs/ops.md)"
CONFIG_KEYS: tuple[KeySpec, ...] = (
    KeySpec(
        "dtype",
        "string",
        "The floating-point dtype the analysis assumes: constants "
        "are folded and intervals computed in it (so `1e-8 == 0` in float16 and "
        "`1 + 1e-10 == 1` in float32). Spellings such as `fp16` or `half` are refused "
        "with the canonical name.",
        'dtype = "float16"',
        choices=DTYPES,
    ),
    KeySpec(
        "scope",
        "string",
        "Which lines of a diff are reviewed: the lines it adds, "
        "those plus `context_lines` around them, or every line of a changed file.",
        'scope = "diff_context"',
        choices=SCOPES,
    ),
    KeySpec(
        "context_lines",
        "integer >= 0",
        'Lines of context around each added line when `scope = "diff_context"`.',
        "context_lines = 5",
    ),
    KeySpec(
        "enable",
        "list of strings",
        f"Only these ops are reported ({_OPS_NOTE}); "
        "empty means every op. An unknown name is an error.",
        'enable = ["log", "div"]',
    ),
    KeySpec(
        "disable",
        "list of strings",
        f"Ops never reported ({_OPS_NOTE}); wins over `enable`. An unknown name is an error.",
        'disable = ["exp"]',
    ),
    KeySpec(
        "include",
        "list of globs",
        "Files analysed, as globs over repository-relative "
        "paths (`**` crosses directories, `*` does not). Must not be empty.",
        'include = ["src/**/*.py"]',
    ),
    KeySpec(
        "exclude",
        "list of globs",
        "Files never analysed; a pattern also matches a "
        "file's parent directories (`vendor` drops everything below vendor/). Setting it "
        "replaces the default list; use `extend_exclude` to add to it.",
        'exclude = ["build/**", "third_party/**"]',
    ),
    KeySpec(
        "extend_exclude",
        "list of globs",
        "Patterns added to `exclude` (to the default list when `exclude` is not set).",
        'extend_exclude = ["third_party/**"]',
        default=[],
    ),
    KeySpec(
        "severity",
        "table of op = level",
        f"Severity per op ({_OPS_NOTE}), one of "
        "the choices; the rule's own severity otherwise. It sets the level of SARIF "
        'results and annotations, and `fail_on = "error"` reads it.',
        'severity = { log = "error", exp = "note" }',
        choices=SEVERITIES,
    ),
    KeySpec(
        "max_file_bytes",
        "integer >= 1",
        "Larger files are skipped with a per-file error instead of being parsed.",
        "max_file_bytes = 2000000",
    ),
    KeySpec(
        "fail_on",
        "string",
        "When `numcheck review` and `scan` exit with status 1: "
        "on any finding, only on findings of severity `error`, or never.",
        'fail_on = "error"',
        choices=FAIL_ON,
    ),
    KeySpec(
        "check_failure",
        "string",
        "When the App's check run concludes `failure`: "
        "never (findings give `neutral`), or when a finding is confirmed (not by a "
        "proof that cancels an epsilon guard, which is held back from inline comments).",
        'check_failure = "confirmed"',
        choices=CHECK_FAILURE,
    ),
    KeySpec(
        "comment_on",
        "string",
        "Which findings become inline review comments on a "
        "pull request: `proven` (confirmed by running the code, or definite: a fact of the "
        "code whatever the inputs, such as an absorbed epsilon or log(softmax(x))), or "
        "every finding (`potential`). The others are notice annotations on the check run "
        "and a collapsed list in its summary; the review says how many were held back.",
        'comment_on = "potential"',
        choices=COMMENT_ON,
    ),
    KeySpec(
        "dynamic",
        "boolean",
        "Confirm findings by running the code in the sandbox "
        "(needs PyTorch or TensorFlow). `--static-only` switches it off for one run.",
        "dynamic = false",
    ),
    KeySpec(
        "search_seconds",
        "number in (0, 600]",
        "Search budget per finding, in seconds.",
        "search_seconds = 10.0",
    ),
    KeySpec(
        "dynamic_timeout",
        "integer >= 1",
        "Wall-clock limit for the whole sandboxed "
        "run, in seconds; findings finished before it keep their results. Findings are tried "
        "in this order: those a proof would make inline comments first, then candidates, then "
        "test files, one finding of each file in turn.",
        "dynamic_timeout = 600",
    ),
    KeySpec(
        "seed",
        "integer >= 0",
        "Seed of the search (and of a configured script): the same seed finds the same trigger.",
        "seed = 42",
    ),
    KeySpec(
        "harvest",
        "boolean",
        "Run the repository's own tests once and record the first "
        "calls of each function with a finding, as entries for the search.",
        "harvest = false",
    ),
    KeySpec(
        "harvest_seconds",
        "number in (0, 3600]",
        "Limit for that test run, in seconds.",
        "harvest_seconds = 120.0",
    ),
    KeySpec(
        "device",
        "string",
        "Where the dynamic pass runs the code: CUDA when the runner "
        "shows a GPU (`auto`), or always the CPU, or CUDA (an error per finding when no "
        "GPU is visible).",
        'device = "cpu"',
        choices=DEVICES,
    ),
    KeySpec(
        "fix",
        "boolean",
        "Validate candidate fixes for confirmed findings (`--no-fix` skips it for one run).",
        "fix = false",
    ),
    KeySpec(
        "low_precision",
        "boolean",
        "When a finding's search finds nothing in float32, "
        "search it again under `torch.autocast` in bfloat16 and float16 (Keras layers and "
        "TensorFlow scripts: under the `mixed_bfloat16` and `mixed_float16` policies; the "
        "precision the repository's code mentions first). A trigger there whose inputs are finite "
        "in float32 is a precision finding: fine in float32, NaN/Inf in mixed precision.",
        "low_precision = false",
    ),
    KeySpec(
        "dependencies",
        "boolean",
        "Install the dependencies the repository declares "
        "(`pyproject.toml`, `setup.cfg`, `setup.py` read without running it, "
        "`requirements*.txt`) from wheels into a cached environment the sandboxed code "
        "can import; the worker's own packages (torch, tensorflow, jax) are never "
        "replaced.",
        "dependencies = false",
    ),
    KeySpec(
        "keras",
        "string",
        "The Keras that `tf.keras` is when the sandbox runs the repository's TensorFlow "
        "code. TensorFlow 2.16 made it Keras 3, whose API differs from Keras 2's where code "
        "meets it (`Metric.add_weight`, the optimizers); Keras 2 (`tf_keras`) is installed "
        "beside it. `auto` chooses 2 for code that declares `tf-keras`, a `keras` below 3 or "
        "a `tensorflow` below 2.16, and, where nothing says, for a commit from before "
        "TensorFlow 2.16 (2024-03-08); 3 otherwise. A reproducer made in Keras 2 sets "
        "`TF_USE_LEGACY_KERAS=1` itself. `2` or `3` decides it for the repository.",
        'keras = "2"',
        choices=KERAS,
    ),
    KeySpec(
        "runner_image",
        "string",
        "The Docker runner's image for this repository (an "
        "image reference without spaces); not set: the worker's default image.",
        'runner_image = "ghcr.io/org/numcheck-runner:1"',
    ),
    KeySpec(
        "entries",
        "array of tables",
        "How the dynamic pass calls your code: each "
        "`[[tool.numcheck.entries]]` table names a function or an `nn.Module` and its "
        "inputs (keys below). Without entries it uses calls recorded from the tests, "
        "then calls synthesised from signatures.",
        '[[tool.numcheck.entries]]\ntarget = "model.losses:classification_loss"\n'
        'inputs = ["float32[8,10] in [-100, 100]", "int64[8] in [0, 9]"]',
    ),
    KeySpec(
        "script",
        "table",
        "Script mode: a script of the repository that the dynamic "
        "pass runs with its external values (data batches, random draws) under its "
        "control, for ops no entry reaches (keys below).",
        '[tool.numcheck.script]\ncommand = "train.py --epochs 1"',
    ),
)

ENTRY_KEY_SPECS: tuple[KeySpec, ...] = (
    KeySpec(
        "target",
        "string",
        "`package.module:name`: a function, or an `nn.Module` "
        "class that is constructed (with `init`) and then called.",
        'target = "model.attention:Attention"',
        default=REQUIRED,
        table="entries",
    ),
    KeySpec(
        "inputs",
        "list of strings",
        "One spec per positional argument: "
        "`dtype[shape] in [lo, hi]` (the box the search stays in), or `dtype[shape]` "
        "for the default box.",
        'inputs = ["float32[2,5,16] in [-10, 10]", "bool[2,5,5]"]',
        default=[],
        table="entries",
    ),
    KeySpec(
        "init",
        "table",
        "Constructor arguments when `target` is a class.",
        "init = { dim = 16 }",
        default={},
        table="entries",
    ),
    KeySpec(
        "dtype",
        "string",
        "Cast the module and its float inputs to this dtype.",
        'dtype = "float16"',
        choices=DTYPES,
        default=None,
        table="entries",
    ),
    KeySpec(
        "autocast",
        "string",
        "Run the call under `torch.autocast` with this dtype (the model stays in float32).",
        'autocast = "bfloat16"',
        choices=("float16", "bfloat16"),
        default=None,
        table="entries",
    ),
    KeySpec(
        "weights",
        "string or table of name = string",
        "Weight ranges, when `target` is "
        "an `nn.Module` class: its parameters are searched too, as extra inputs starting "
        'from their initialised values. `"in [lo, hi]"` boxes every float parameter; a '
        'table boxes parameters by their `named_parameters()` name (`"*"`: every '
        "other one). Each keeps its own dtype and shape; the reproducer sets the weights "
        "that matter. PyTorch modules only.",
        'weights = { temperature = "in [0, 10]", "proj.weight" = "in [-0.5, 0.5]" }',
        default=None,
        table="entries",
    ),
)

SCRIPT_KEY_SPECS: tuple[KeySpec, ...] = (
    KeySpec(
        "command",
        "string or list of strings",
        "A `.py` file relative to the "
        "repository root and its arguments, or `-m package.module ...`; a leading "
        "`python` is dropped.",
        'command = "train.py --epochs 1"',
        default=REQUIRED,
        table="script",
    ),
    KeySpec(
        "run_seconds",
        "number in (0, 600]",
        "Limit for one run of the script up to "
        "the op; the first run gets three times as much (it pays for the imports).",
        "run_seconds = 20",
        default=SCRIPT_RUN_SECONDS,
        table="script",
    ),
    KeySpec(
        "max_values",
        "integer >= 1",
        "How many of the external values seen before the op (the last ones) the search may change.",
        "max_values = 4",
        default=8,
        table="script",
    ),
    KeySpec(
        "bounds",
        "table of name = [lo, hi]",
        "Boxes for the external values, by call "
        'site (`"train.py:41"`) or by kind (`data`, `random`); others stay within the '
        "range the recording run observed, widened tenfold.",
        'bounds = { data = [0, 1], random = [-3, 3], "train.py:41" = [0, 255] }',
        default={},
        table="script",
    ),
)

_SPEC: dict[str, KeySpec] = {spec.name: spec for spec in CONFIG_KEYS}
_SCRIPT_SPEC: dict[str, KeySpec] = {spec.name: spec for spec in SCRIPT_KEY_SPECS}


def _choices(key: str) -> tuple[str, ...]:
    return _SPEC[key].choices


_NOT_KEYS = ("source", "notes")  # fields of Config that no file sets
_KEYS: tuple[str, ...] = (
    tuple(f.name for f in fields(Config) if f.name not in _NOT_KEYS) + _EXTRA_KEYS
)
if set(_KEYS) != set(_SPEC):  # a key the parser accepts but the reference does not describe
    raise RuntimeError(
        "CONFIG_KEYS must describe exactly the keys the loader accepts; "
        f"differs on {sorted(set(_KEYS) ^ set(_SPEC))}"
    )

# ---------------------------------------------------------------- who decides each key in the App

# Where the GitHub App reads each key from. "head": keys that only say how to call the code,
# so that a PR can add the entry point its own new code needs. "base": policy, read from the
# PR's base commit (analyzers/policy.py), because the PR under review must not decide how it
# is judged: turn its failing check neutral (`check_failure`, `fail_on`, `severity`), stop
# its code being run (`dynamic`, `fix`, `harvest`), drop ops or files (`enable`, `disable`,
# `include`, `exclude`, `scope`, `dtype`), pick the image its code runs in (`runner_image`)
# or raise its own limits. A new key must be placed here (checked below).
APP_KEY_SOURCE: Mapping[str, str] = MappingProxyType(
    {
        "dtype": "base",
        "scope": "base",
        "context_lines": "base",
        "enable": "base",
        "disable": "base",
        "include": "base",
        "exclude": "base",
        "extend_exclude": "base",
        "severity": "base",
        "max_file_bytes": "base",
        "fail_on": "base",
        "check_failure": "base",
        "comment_on": "base",
        "dynamic": "base",
        "search_seconds": "base",
        "dynamic_timeout": "base",
        "seed": "base",
        "harvest": "base",
        "harvest_seconds": "base",
        "device": "base",
        "fix": "base",
        "low_precision": "base",
        "dependencies": "base",
        "runner_image": "base",
        "entries": "head",
        "script": "head",
        "keras": "head",
    }
)
HEAD_KEYS: tuple[str, ...] = tuple(k for k, v in APP_KEY_SOURCE.items() if v == "head")
POLICY_KEYS: tuple[str, ...] = tuple(
    k for k in _KEYS if k not in HEAD_KEYS and k not in _EXTRA_KEYS
)  # Config's policy fields
# Every time and size limit a repository sets; the App caps each by its operator's setting
# (NUMCHECK_MAX_*, bot/settings.py), a head key's (`script.run_seconds`) included.
LIMIT_KEYS: tuple[str, ...] = (
    "max_file_bytes",
    "search_seconds",
    "dynamic_timeout",
    "harvest_seconds",
    "script.run_seconds",
)
if set(APP_KEY_SOURCE) != set(_KEYS) or not set(APP_KEY_SOURCE.values()) <= {"base", "head"}:
    raise RuntimeError(
        "APP_KEY_SOURCE must place every key on the base or the head; "
        f"differs on {sorted(set(APP_KEY_SOURCE) ^ set(_KEYS))}"
    )


def config_from_mapping(
    data: Mapping[str, Any], where: str = "configuration", known_ops: Collection[str] | None = None
) -> Config:
    """Validate a raw table (already parsed TOML) into a Config; `where` goes in messages."""
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for raw_key, value in data.items():
        key = raw_key.replace("-", "_")
        if key not in _KEYS:
            hint = _suggest(key, _KEYS) or f" (known keys: {', '.join(_KEYS)})"
            raise ConfigError(f"unknown key {raw_key!r} in {where}{hint}")
        if key in spelled:
            raise ConfigError(f"{where} sets both {spelled[key]!r} and {raw_key!r}; keep one")
        spelled[key] = raw_key
        values[key] = value
    if "extend_exclude" in values:
        extra = _patterns("extend_exclude", values.pop("extend_exclude"), where)
        base = _patterns("exclude", values.get("exclude", list(DEFAULT_EXCLUDE)), where)
        values["exclude"] = [*base, *extra]
    for key in ("enable", "disable"):
        if key in values:
            values[key] = _str_tuple(key, values[key], where)
    for key in ("include", "exclude"):
        if key in values:
            values[key] = _patterns(key, values[key], where)
    config = Config(**values, source=where)
    if known_ops is not None:
        config.validate_ops(known_ops)
    return config


ENTRY_KEYS: tuple[str, ...] = tuple(spec.name for spec in ENTRY_KEY_SPECS)
AUTOCAST_DTYPES: tuple[str, ...] = ENTRY_KEY_SPECS[ENTRY_KEYS.index("autocast")].choices


def _entries(value: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    """`[[tool.numcheck.entries]]`: how the dynamic pass calls the code (docs/architecture.md)."""
    from analyzers.dynamic.specs import SpecError, parse_spec  # no torch: specs only
    from analyzers.dynamic.weights import WeightError, parse_weights

    if not isinstance(value, list | tuple):
        raise ConfigError(
            f"'entries' in {where} must be an array of tables ([[tool.numcheck.entries]])"
        )
    out: list[Mapping[str, Any]] = []
    for i, table in enumerate(value):
        at = f"entries[{i}] in {where}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{at} must be a table")
        for key in table:
            if key not in ENTRY_KEYS:
                raise ConfigError(f"unknown key {key!r} in {at}{_suggest(key, ENTRY_KEYS)}")
        target = table.get("target")
        if not isinstance(target, str) or ":" not in target:
            raise ConfigError(f'{at} needs target = "package.module:name"')
        inputs = table.get("inputs", [])
        if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
            raise ConfigError(
                f'{at}: inputs must be a list of specs like "float32[8,16] in [-100, 100]"'
            )
        for spec in inputs:
            try:
                parse_spec(spec)
            except SpecError as exc:
                raise ConfigError(f"{at}: {exc}") from exc
        init = table.get("init", {})
        if not isinstance(init, Mapping):
            raise ConfigError(f"{at}: init must be a table of constructor arguments")
        dtype = table.get("dtype")
        if dtype is not None and dtype not in DTYPES:
            raise ConfigError(f"{at}: dtype must be one of {', '.join(DTYPES)}")
        autocast = table.get("autocast")
        if autocast is not None and autocast not in AUTOCAST_DTYPES:
            raise ConfigError(
                f"{at}: autocast must be one of {', '.join(AUTOCAST_DTYPES)} "
                "(the model runs in float32 under torch.autocast)"
            )
        weights = table.get("weights")
        if weights is not None:
            try:
                parse_weights(weights)
            except WeightError as exc:
                raise ConfigError(f"{at}: {exc}") from exc
            weights = weights if isinstance(weights, str) else dict(weights)
        out.append(
            MappingProxyType(
                {
                    "target": target,
                    "inputs": list(inputs),
                    "init": dict(init),
                    "dtype": dtype,
                    "autocast": autocast,
                    "weights": weights,
                }
            )
        )
    return tuple(out)


SCRIPT_KEYS: tuple[str, ...] = tuple(spec.name for spec in SCRIPT_KEY_SPECS)
SCRIPT_KINDS = ("data", "random")
_SITE = re.compile(r"^[^:\s][^:]*\.py:[1-9][0-9]*$")


def script_argv(command: str | Sequence[str]) -> tuple[str, ...]:
    """`"train.py --steps 2"` or a list; a leading `python` is dropped. Raises ValueError with
    the accepted forms."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError as exc:
        raise ValueError(f"cannot split {command!r} into arguments: {exc}") from None
    if argv and re.fullmatch(r"python[0-9.]*", PurePosixPath(argv[0]).name):
        argv = argv[1:]
    if not argv:
        raise ValueError(
            "it is empty; write the script and its arguments, as in "
            '"train.py --steps 2" or "-m pkg.train"'
        )
    if argv[0] == "-m":
        if len(argv) < 2 or not re.fullmatch(r"[A-Za-z_][\w.]*", argv[1]):
            raise ValueError(
                f'{shlex.join(argv)!r}: -m needs a module name, as in "-m pkg.train --steps 2"'
            )
        return tuple(argv)
    script = PurePosixPath(argv[0])
    if script.is_absolute() or ".." in script.parts or script.suffix != ".py":
        raise ValueError(
            f"{argv[0]!r} must be a .py file given relative to the repository "
            "root (or use -m package.module)"
        )
    return tuple(argv)


def _script(value: Any, where: str) -> Mapping[str, Any]:
    """`[tool.numcheck.script]`: a script of the repository that the dynamic pass runs with
    its external values (data batches, random draws) substituted (docs/architecture.md)."""
    at = f"[script] in {where}"
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"'script' in {where} must be a table ([tool.numcheck.script]) "
            'with command = "train.py --steps 2"'
        )
    spelled: dict[str, str] = {}
    table: dict[str, Any] = {}
    for raw_key, item in value.items():
        key = str(raw_key).replace("-", "_")
        if key not in SCRIPT_KEYS:
            hint = _suggest(key, SCRIPT_KEYS) or f" (known keys: {', '.join(SCRIPT_KEYS)})"
            raise ConfigError(f"unknown key {raw_key!r} in {at}{hint}")
        if key in spelled:
            raise ConfigError(f"{at} sets both {spelled[key]!r} and {raw_key!r}; keep one")
        spelled[key] = str(raw_key)
        table[key] = item
    if "command" not in table:
        raise ConfigError(
            f'{at} needs command = "train.py --steps 2" (a Python script of '
            'the repository and its arguments, or "-m package.module ...")'
        )
    command = table["command"]
    if not isinstance(command, str) and not (
        isinstance(command, list | tuple) and all(isinstance(c, str) for c in command)
    ):
        raise ConfigError(
            f"'command' in {at} must be a string or a list of strings, got {command!r}"
        )
    try:
        argv = script_argv(command)
    except ValueError as exc:
        raise ConfigError(f"'command' in {at}: {exc}") from None
    run_seconds = table.get("run_seconds", _SCRIPT_SPEC["run_seconds"].default)
    if (
        not isinstance(run_seconds, int | float)
        or isinstance(run_seconds, bool)
        or not 0 < run_seconds <= 600
    ):
        raise ConfigError(
            f"'run_seconds' in {at} must be a number in (0, 600] (the limit "
            f"for one run of the script), got {run_seconds!r}"
        )
    max_values = _int(
        "max_values", table.get("max_values", _SCRIPT_SPEC["max_values"].default), 1, at
    )
    bounds = table.get("bounds", _SCRIPT_SPEC["bounds"].default)
    if not isinstance(bounds, Mapping):
        raise ConfigError(
            f"'bounds' in {at} must be a table such as "
            '{ data = [-1, 1], random = [-3, 3], "train.py:41" = [0, 1] }'
        )
    checked: dict[str, tuple[float, float]] = {}
    for name, box in bounds.items():
        if name not in SCRIPT_KINDS and not _SITE.match(str(name)):
            raise ConfigError(
                f"unknown value {name!r} in 'bounds' of {at}: use a kind "
                f'({", ".join(SCRIPT_KINDS)}) or a call site "path.py:LINE"'
                f"{_suggest(str(name), SCRIPT_KINDS)}"
            )
        if (
            not isinstance(box, list | tuple)
            or len(box) != 2
            or not all(
                isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b)
                for b in box
            )
        ):
            raise ConfigError(
                f"bounds.{name} in {at} must be [lo, hi], two finite numbers, got {box!r}"
            )
        if box[0] > box[1]:
            raise ConfigError(f"bounds.{name} in {at} is empty: {box[0]:g} > {box[1]:g}")
        checked[str(name)] = (float(box[0]), float(box[1]))
    return MappingProxyType(
        {
            "command": list(argv),
            "run_seconds": float(run_seconds),
            "max_values": max_values,
            "bounds": MappingProxyType(checked),
        }
    )


def _script_json(script: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if script is None:
        return None
    return {
        "command": list(script["command"]),
        "run_seconds": script["run_seconds"],
        "max_values": script["max_values"],
        "bounds": {k: list(v) for k, v in script["bounds"].items()},
    }


def _display(path: Path, repo_dir: Path) -> str:
    try:
        return path.resolve().relative_to(repo_dir.resolve()).as_posix()
    except ValueError:
        return str(path)


def _parse_toml(data: bytes, shown: str) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {shown}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown} is not UTF-8 text: {exc}") from exc


def _read_bytes(path: Path, shown: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {shown}: {exc.strerror or exc}") from exc


def _read_toml(path: Path, shown: str) -> dict[str, Any]:
    return _parse_toml(_read_bytes(path, shown), shown)


def _tool_table(doc: Mapping[str, Any], shown: str) -> Mapping[str, Any] | None:
    tool = doc.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, Mapping):
        raise ConfigError(f"'tool' in {shown} must be a table")
    table = tool.get("numcheck")
    if table is not None and not isinstance(table, Mapping):
        raise ConfigError(f"[tool.numcheck] in {shown} must be a table, got {table!r}")
    return table


def _from_pyproject(
    doc: Mapping[str, Any], shown: str, known_ops: Collection[str] | None
) -> Config | None:
    """None when the file has no [tool.numcheck] table (most pyproject files)."""
    table = _tool_table(doc, shown)
    if table is None:
        return None
    return config_from_mapping(table, f"[tool.numcheck] of {shown}", known_ops)


def _from_numcheck_toml(
    doc: Mapping[str, Any], shown: str, known_ops: Collection[str] | None
) -> Config:
    table = _tool_table(doc, shown)
    if table is None:
        return config_from_mapping(doc, shown, known_ops)
    others = [key for key in doc if key != "tool"]
    if others or set(doc["tool"]) != {"numcheck"}:
        raise ConfigError(
            f"{shown} mixes a [tool.numcheck] table with other settings; "
            "use either top-level keys or the table"
        )
    return config_from_mapping(table, f"[tool.numcheck] of {shown}", known_ops)


Reader = Callable[[str], bytes | None]  # a root-level file name -> its bytes, None if absent


def load_config_with(
    read: Reader, known_ops: Collection[str] | None = None, at: str = ""
) -> Config:
    """.numcheck.toml, else [tool.numcheck] of pyproject.toml, else the defaults, with the
    files read through `read`: the working tree (load_config) or a commit (the App reads the
    PR's base, analyzers/policy.py). `at` follows each file's name in messages and `source`
    (" at 1a2b3c4d5e6f"), so an error says which commit's file is wrong."""
    shown = f".numcheck.toml{at}"
    data = read(".numcheck.toml")
    if data is not None:
        return _from_numcheck_toml(_parse_toml(data, shown), shown, known_ops)
    shown = f"pyproject.toml{at}"
    data = read("pyproject.toml")
    if data is not None:
        config = _from_pyproject(_parse_toml(data, shown), shown, known_ops)
        if config is not None:
            return config
    return Config()


def load_config(
    repo_dir: Path, explicit: Path | None = None, known_ops: Collection[str] | None = None
) -> Config:
    """The settings for repo_dir: explicit file, else .numcheck.toml, else pyproject.toml.

    With `known_ops`, op names in enable/disable/severity are checked too.
    """
    repo_dir = Path(repo_dir)
    if explicit is not None:
        explicit = Path(explicit)
        shown = _display(explicit, repo_dir)
        if not explicit.is_file():
            raise ConfigError(f"config file {shown} not found")
        doc = _read_toml(explicit, shown)
        if explicit.name != "pyproject.toml":
            return _from_numcheck_toml(doc, shown, known_ops)
        config = _from_pyproject(doc, shown, known_ops)
        if config is None:
            raise ConfigError(f"{shown} has no [tool.numcheck] table")
        return config

    def read(name: str) -> bytes | None:
        path = repo_dir / name
        return _read_bytes(path, name) if path.is_file() else None

    return load_config_with(read, known_ops)
