"""Which settings a pull request is judged by: policy from its base, how to run from its head.

The App must not let the change under review decide how it is judged: a PR that adds an
unguarded `log` and rewrites `check_failure = "confirmed"` to `"never"` would otherwise turn
its own failing check neutral. So the App reads the policy keys (`APP_KEY_SOURCE` in
analyzers/config.py says which) from the PR's base commit and only the keys that say how to
call the code (`entries`, `script`) from its head, so that a PR can still add the entry point
its new code needs. Then every time and size limit (`LIMIT_KEYS`) is lowered to the
operator's ceiling. What was ignored or lowered is written in `Config.notes`, which the review
and the check run show, so nobody wonders why their edit to the settings did nothing.

Both commits are read through git (never the working tree), so the same function serves the
App's workspace and `numcheck review --config-from base|head`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from analyzers.config import (
    HEAD_KEYS,
    LIMIT_KEYS,
    POLICY_KEYS,
    Config,
    ConfigError,
    load_config_with,
)
from analyzers.diffscope import DiffError, read_regular_file_at, resolve_ref

__all__ = ["LIMIT_KEYS", "app_config", "cap_limits", "config_at", "merge_policy"]

_SHOWN_VALUE = 80  # characters of a value quoted in a note (the PR writes these values)
_INTEGER_LIMITS = ("max_file_bytes", "dynamic_timeout")


def config_at(repo_dir: Path, ref: str, known_ops: Collection[str] | None = None) -> Config:
    """The settings committed at `ref` (.numcheck.toml, else pyproject.toml, else defaults),
    read from git objects only; messages and `source` name the commit."""
    sha = resolve_ref(Path(repo_dir), ref)

    def read(name: str) -> bytes | None:
        try:
            return read_regular_file_at(Path(repo_dir), sha, name)
        except DiffError as exc:
            raise ConfigError(str(exc)) from exc

    return load_config_with(read, known_ops, at=f" at {sha[:12]}")


def _shown(value: Any) -> str:
    """A value as a short code span's content: JSON, cut, with no backtick to end the span."""
    text = json.dumps(value, ensure_ascii=False).replace("`", "\\u0060")
    if len(text) > _SHOWN_VALUE:
        text = text[: _SHOWN_VALUE - 1] + "…"
    return f"`{text}`"


def merge_policy(base: Config, head: Config) -> Config:
    """The base's policy keys with the head's `entries`, `script` and `keras` (HEAD_KEYS).

    A policy key the head sets to another value is ignored, and a note names it with both
    values: the change takes effect once the PR is merged and becomes the base."""
    base_json, head_json = base.to_json(), head.to_json()
    ignored = [key for key in POLICY_KEYS if base_json[key] != head_json[key]]
    notes = list(base.notes)
    if ignored:
        listed = "; ".join(
            f"`{key}` = {_shown(head_json[key])} (base: {_shown(base_json[key])})"
            for key in ignored
        )
        notes.append(
            f"This pull request changes settings that decide how it is judged; they "
            f"are read from its base ({base.source or 'no settings file: defaults'}) "
            f"and take effect once merged. Ignored from the head "
            f"({head.source or 'no settings file'}): {listed}."
        )
    source = base.source
    if head.source != base.source and (
        head.entries or head.script is not None or head.keras != Config.keras
    ):
        source = (
            f"{base.source or 'defaults'}; {', '.join(HEAD_KEYS)} from "
            f"{head.source or 'the head (none set)'}"
        )
    taken = {key: getattr(head, key) for key in HEAD_KEYS}
    return replace(base, **taken, source=source, notes=tuple(notes))


def _limit_value(config: Config, key: str) -> float | None:
    if key == "script.run_seconds":
        return None if config.script is None else float(config.script["run_seconds"])
    return float(getattr(config, key))


def cap_limits(config: Config, caps: Mapping[str, float]) -> Config:
    """Every limit of `config` lowered to its ceiling in `caps` (keys from LIMIT_KEYS; a key
    left out has no ceiling), with a note per value lowered."""
    unknown = sorted(set(caps) - set(LIMIT_KEYS))
    if unknown:
        raise ValueError(f"no limit named {', '.join(unknown)}; limits: {', '.join(LIMIT_KEYS)}")
    changes: dict[str, Any] = {}
    notes = list(config.notes)
    for key in LIMIT_KEYS:
        cap = caps.get(key)
        value = _limit_value(config, key)
        if cap is None or value is None or value <= cap:
            continue
        if not cap > 0:
            raise ValueError(f"the ceiling for {key} must be positive, got {cap!r}")
        used: int | float = max(int(cap), 1) if key in _INTEGER_LIMITS else float(cap)
        if key == "script.run_seconds":
            assert config.script is not None
            changes["script"] = MappingProxyType({**config.script, "run_seconds": used})
        else:
            changes[key] = used
        notes.append(
            f"`{key}` = {_shown(_number(value))} is above this App's limit; "
            f"{_shown(_number(float(used)))} was used."
        )
    if not changes:
        return config
    return replace(config, **changes, notes=tuple(notes))


def _number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def app_config(
    repo_dir: Path,
    base: str,
    head: str,
    caps: Mapping[str, float],
    known_ops: Collection[str] | None = None,
) -> Config:
    """What the App analyses a PR with: policy from `base`, entries, script and keras from `head`,
    limits capped. A ConfigError names the commit whose file is wrong."""
    merged = merge_policy(
        config_at(repo_dir, base, known_ops), config_at(repo_dir, head, known_ops)
    )
    return cap_limits(merged, caps)
