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
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

__all__ = [
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "DTYPES",
    "FAIL_ON",
    "SCOPES",
    "SEVERITIES",
    "Config",
    "ConfigError",
    "config_from_mapping",
    "glob_match",
    "load_config",
    "script_argv",
]

DTYPES = ("float16", "bfloat16", "float32", "float64")
SCOPES = ("added", "diff_context", "file")
DEVICES = ("auto", "cpu", "cuda")
CHECK_FAILURE = ("never", "confirmed")
SEVERITIES = ("error", "warning", "note")
FAIL_ON = ("any", "none", "error")
DEFAULT_INCLUDE: tuple[str, ...] = ("**/*.py",)
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".venv/**", "venv/**", "**/site-packages/**", "build/**", "dist/**", ".git/**",
    ".tox/**", ".nox/**", ".eggs/**", "**/node_modules/**", "**/__pycache__/**",
)
_DTYPE_HINTS = {"fp16": "float16", "half": "float16", "f16": "float16", "bf16": "bfloat16",
                "fp32": "float32", "float": "float32", "f32": "float32", "single": "float32",
                "fp64": "float64", "double": "float64", "f64": "float64"}
_EXTRA_KEYS = ("extend_exclude",)


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and the key."""


def _suggest(word: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ---------------------------------------------------------------- value checks


def _str_tuple(key: str, value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple) \
            or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key!r} in {where} must be a list of strings, got {value!r}")
    return tuple(value)


def _choice(key: str, value: Any, choices: tuple[str, ...], where: str,
            hints: Mapping[str, str] | None = None) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key!r} in {where} must be a string, got {value!r}")
    if value not in choices:
        hint = f" (did you mean {hints[value]!r}?)" if hints and value in hints \
            else _suggest(value, choices)
        raise ConfigError(f"{key!r} in {where} must be one of {', '.join(choices)}, "
                          f"got {value!r}{hint}")
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
        out[str(op)] = _choice(f"severity.{op}", level, SEVERITIES, where)
    return MappingProxyType(out)


def _patterns(key: str, value: Any, where: str) -> tuple[str, ...]:
    patterns = _str_tuple(key, value, where)
    for pattern in patterns:
        if not pattern.strip():
            raise ConfigError(f"{key!r} in {where} contains an empty pattern")
    return patterns


# ---------------------------------------------------------------- globs


def _translate_component(part: str) -> str:
    """One path component of a glob as a regex: `*` and `?` never cross a `/`."""
    out: list[str] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = i + 1
            if j < len(part) and part[j] in "!^":
                j += 1
            if j < len(part) and part[j] == "]":
                j += 1
            while j < len(part) and part[j] != "]":
                j += 1
            if j >= len(part):
                out.append(re.escape(ch))  # no closing bracket: a literal "["
            else:
                body = part[i + 1:j]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                # Escape each member so "]", "\\" or "^" stay literal; keep "-" for ranges.
                body = "".join(c if c == "-" else re.escape(c) for c in body)
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = j
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob with `**` semantics over whole posix paths (like PurePath.full_match).

    `**` as a whole component matches zero or more directories (`**/x.py` matches `x.py`);
    as the last component it matches everything below (`build/**`). A trailing `/` means
    the same as `/**`.
    """
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    parts = [p for p in pattern.split("/") if p]
    regex: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex.append(".*" if last else "(?:[^/]+/)*")
        else:
            regex.append(_translate_component(part) + ("" if last else "/"))
    return re.compile("".join(regex), re.DOTALL)


def _normalise(path: str) -> str:
    """Repo-relative posix spelling of a path (Windows separators and "./" removed)."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def glob_match(pattern: str, rel_path: str) -> bool:
    """Whether repo-relative `rel_path` matches `pattern` in full."""
    return _glob_regex(pattern).fullmatch(_normalise(rel_path)) is not None


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
    severity: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}),
                                        hash=False)
    max_file_bytes: int = 1_000_000
    fail_on: str = "any"
    check_failure: str = "never"  # the App's check run fails on: never | confirmed findings
    dynamic: bool = True  # confirm findings by running the code (in the sandbox)
    search_seconds: float = 5.0  # search budget per finding
    dynamic_timeout: int = 300  # wall clock for the whole sandboxed run
    seed: int = 0
    harvest: bool = True  # record calls while the repository's own tests run
    harvest_seconds: float = 60.0
    device: str = "auto"  # where the dynamic pass runs the code: auto (CUDA if visible), cpu, cuda
    fix: bool = True  # validate candidate fixes for confirmed findings (in the sandbox)
    runner_image: str | None = None  # the Docker runner's image for this repository
    entries: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    script: Mapping[str, Any] | None = field(default=None, hash=False)  # script mode
    source: str | None = None

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
        _choice("dtype", self.dtype, DTYPES, where, _DTYPE_HINTS)
        _choice("scope", self.scope, SCOPES, where)
        _choice("fail_on", self.fail_on, FAIL_ON, where)
        _choice("check_failure", self.check_failure, CHECK_FAILURE, where)
        _int("context_lines", self.context_lines, 0, where)
        _int("max_file_bytes", self.max_file_bytes, 1, where)
        set_("severity", _severity_map(self.severity, where))
        if not isinstance(self.dynamic, bool):
            raise ConfigError(f"'dynamic' in {where} must be true or false")
        if not isinstance(self.search_seconds, int | float) or isinstance(
                self.search_seconds, bool) or not 0 < self.search_seconds <= 600:
            raise ConfigError(f"'search_seconds' in {where} must be a number in (0, 600]")
        _int("dynamic_timeout", self.dynamic_timeout, 1, where)
        _int("seed", self.seed, 0, where)
        if not isinstance(self.harvest, bool):
            raise ConfigError(f"'harvest' in {where} must be true or false")
        if not isinstance(self.harvest_seconds, int | float) or isinstance(
                self.harvest_seconds, bool) or not 0 < self.harvest_seconds <= 3600:
            raise ConfigError(f"'harvest_seconds' in {where} must be a number in (0, 3600]")
        _choice("device", self.device, DEVICES, where)
        if not isinstance(self.fix, bool):
            raise ConfigError(f"'fix' in {where} must be true or false")
        if self.runner_image is not None and (
                not isinstance(self.runner_image, str) or not self.runner_image.strip()
                or any(c.isspace() for c in self.runner_image)):
            raise ConfigError(f"'runner_image' in {where} must be an image reference such as "
                              "'ghcr.io/org/numcheck-runner:1.2' (no spaces)")
        set_("entries", _entries(self.entries, where))
        set_("script", None if self.script is None else _script(self.script, where))

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
            "dynamic": self.dynamic,
            "search_seconds": self.search_seconds,
            "dynamic_timeout": self.dynamic_timeout,
            "seed": self.seed,
            "harvest": self.harvest,
            "harvest_seconds": self.harvest_seconds,
            "device": self.device,
            "fix": self.fix,
            "runner_image": self.runner_image,
            "entries": [dict(e) for e in self.entries],
            "script": _script_json(self.script),
            "source": self.source,
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
        for key, names in (("enable", self.enable), ("disable", self.disable),
                           ("severity", tuple(self.severity))):
            for name in names:
                if name not in known:
                    raise ConfigError(f"unknown op {name!r} in {key!r} of {where}"
                                      f"{_suggest(name, known)}")


_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Config) if f.name != "source") + _EXTRA_KEYS


def config_from_mapping(data: Mapping[str, Any], where: str = "configuration",
                        known_ops: Collection[str] | None = None) -> Config:
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


ENTRY_KEYS = ("target", "inputs", "init", "dtype", "autocast")
AUTOCAST_DTYPES = ("float16", "bfloat16")


def _entries(value: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    """`[[tool.numcheck.entries]]`: how the dynamic pass calls the code (DESIGN.md)."""
    from analyzers.dynamic.specs import SpecError, parse_spec  # no torch: specs only

    if not isinstance(value, list | tuple):
        raise ConfigError(f"'entries' in {where} must be an array of tables "
                          "([[tool.numcheck.entries]])")
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
            raise ConfigError(f"{at} needs target = \"package.module:name\"")
        inputs = table.get("inputs", [])
        if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
            raise ConfigError(f"{at}: inputs must be a list of specs like "
                              "\"float32[8,16] in [-100, 100]\"")
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
            raise ConfigError(f"{at}: autocast must be one of {', '.join(AUTOCAST_DTYPES)} "
                              "(the model runs in float32 under torch.autocast)")
        out.append(MappingProxyType({"target": target, "inputs": list(inputs),
                                     "init": dict(init), "dtype": dtype,
                                     "autocast": autocast}))
    return tuple(out)


SCRIPT_KEYS = ("command", "run_seconds", "max_values", "bounds")
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
        raise ValueError("it is empty; write the script and its arguments, as in "
                         "\"train.py --steps 2\" or \"-m pkg.train\"")
    if argv[0] == "-m":
        if len(argv) < 2 or not re.fullmatch(r"[A-Za-z_][\w.]*", argv[1]):
            raise ValueError(f"{shlex.join(argv)!r}: -m needs a module name, as in "
                             "\"-m pkg.train --steps 2\"")
        return tuple(argv)
    script = PurePosixPath(argv[0])
    if script.is_absolute() or ".." in script.parts or script.suffix != ".py":
        raise ValueError(f"{argv[0]!r} must be a .py file given relative to the repository "
                         "root (or use -m package.module)")
    return tuple(argv)


def _script(value: Any, where: str) -> Mapping[str, Any]:
    """`[tool.numcheck.script]`: a script of the repository that the dynamic pass runs with
    its external values (data batches, random draws) substituted (DESIGN.md, script mode)."""
    at = f"[script] in {where}"
    if not isinstance(value, Mapping):
        raise ConfigError(f"'script' in {where} must be a table ([tool.numcheck.script]) "
                          "with command = \"train.py --steps 2\"")
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
        raise ConfigError(f"{at} needs command = \"train.py --steps 2\" (a Python script of "
                          "the repository and its arguments, or \"-m package.module ...\")")
    command = table["command"]
    if not isinstance(command, str) and not (
            isinstance(command, list | tuple) and all(isinstance(c, str) for c in command)):
        raise ConfigError(f"'command' in {at} must be a string or a list of strings, "
                          f"got {command!r}")
    try:
        argv = script_argv(command)
    except ValueError as exc:
        raise ConfigError(f"'command' in {at}: {exc}") from None
    run_seconds = table.get("run_seconds", 10.0)
    if not isinstance(run_seconds, int | float) or isinstance(run_seconds, bool) \
            or not 0 < run_seconds <= 600:
        raise ConfigError(f"'run_seconds' in {at} must be a number in (0, 600] (the limit "
                          f"for one run of the script), got {run_seconds!r}")
    max_values = _int("max_values", table.get("max_values", 8), 1, at)
    bounds = table.get("bounds", {})
    if not isinstance(bounds, Mapping):
        raise ConfigError(f"'bounds' in {at} must be a table such as "
                          "{ data = [-1, 1], random = [-3, 3], \"train.py:41\" = [0, 1] }")
    checked: dict[str, tuple[float, float]] = {}
    for name, box in bounds.items():
        if name not in SCRIPT_KINDS and not _SITE.match(str(name)):
            raise ConfigError(f"unknown value {name!r} in 'bounds' of {at}: use a kind "
                              f"({', '.join(SCRIPT_KINDS)}) or a call site \"path.py:LINE\""
                              f"{_suggest(str(name), SCRIPT_KINDS)}")
        if not isinstance(box, list | tuple) or len(box) != 2 or not all(
                isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b)
                for b in box):
            raise ConfigError(f"bounds.{name} in {at} must be [lo, hi], two finite numbers, "
                              f"got {box!r}")
        if box[0] > box[1]:
            raise ConfigError(f"bounds.{name} in {at} is empty: {box[0]:g} > {box[1]:g}")
        checked[str(name)] = (float(box[0]), float(box[1]))
    return MappingProxyType({"command": list(argv), "run_seconds": float(run_seconds),
                             "max_values": max_values,
                             "bounds": MappingProxyType(checked)})


def _script_json(script: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if script is None:
        return None
    return {"command": list(script["command"]), "run_seconds": script["run_seconds"],
            "max_values": script["max_values"],
            "bounds": {k: list(v) for k, v in script["bounds"].items()}}


def _display(path: Path, repo_dir: Path) -> str:
    try:
        return path.resolve().relative_to(repo_dir.resolve()).as_posix()
    except ValueError:
        return str(path)


def _read_toml(path: Path, shown: str) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {shown}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown} is not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {shown}: {exc.strerror or exc}") from exc


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


def _from_pyproject(path: Path, shown: str,
                    known_ops: Collection[str] | None) -> Config | None:
    """None when the file has no [tool.numcheck] table (most pyproject files)."""
    table = _tool_table(_read_toml(path, shown), shown)
    if table is None:
        return None
    return config_from_mapping(table, f"[tool.numcheck] of {shown}", known_ops)


def _from_numcheck_toml(path: Path, shown: str,
                        known_ops: Collection[str] | None) -> Config:
    doc = _read_toml(path, shown)
    table = _tool_table(doc, shown)
    if table is None:
        return config_from_mapping(doc, shown, known_ops)
    others = [key for key in doc if key != "tool"]
    if others or set(doc["tool"]) != {"numcheck"}:
        raise ConfigError(f"{shown} mixes a [tool.numcheck] table with other settings; "
                          "use either top-level keys or the table")
    return config_from_mapping(table, f"[tool.numcheck] of {shown}", known_ops)


def load_config(repo_dir: Path, explicit: Path | None = None,
                known_ops: Collection[str] | None = None) -> Config:
    """The settings for repo_dir: explicit file, else .numcheck.toml, else pyproject.toml.

    With `known_ops`, op names in enable/disable/severity are checked too.
    """
    repo_dir = Path(repo_dir)
    if explicit is not None:
        explicit = Path(explicit)
        shown = _display(explicit, repo_dir)
        if not explicit.is_file():
            raise ConfigError(f"config file {shown} not found")
        if explicit.name != "pyproject.toml":
            return _from_numcheck_toml(explicit, shown, known_ops)
        config = _from_pyproject(explicit, shown, known_ops)
        if config is None:
            raise ConfigError(f"{shown} has no [tool.numcheck] table")
        return config
    dedicated = repo_dir / ".numcheck.toml"
    if dedicated.is_file():
        return _from_numcheck_toml(dedicated, ".numcheck.toml", known_ops)
    pyproject = repo_dir / "pyproject.toml"
    if pyproject.is_file():
        config = _from_pyproject(pyproject, "pyproject.toml", known_ops)
        if config is not None:
            return config
    return Config()
