"""A per-repository environment of declared dependencies, for the dynamic pass.

Real repositories import packages numcheck's environment lacks, and their findings then end in
"no entry reaches the op". Before the sandboxed run, the dependencies the checkout declares
(`runners/declared.py`) are installed into a folder of their own, which the job sees read-only
at the end of its `sys.path`. This is a prepare step on the worker, never inside the sandbox:

- **Wheels only** (`--only-binary :all:`): no `setup.py`, build backend or other code of the
  PR's or of a package runs at install time. Requirements come as plain names and versions
  only: no URLs, paths, includes or pip options (`runners/declared.py`).
- **numcheck's environment wins.** A declared package that the interpreter running the
  harness already has (torch, tensorflow, jax, numpy) is not installed again, and the resolver
  is held to the installed versions (`--constraint`). The folder comes after the interpreter's
  own site-packages on `sys.path`, so it can add modules but never replace one. One exception:
  a module environments once provided and this one lacks (`pkg_resources`, gone from setuptools
  81) comes from an older release of its package (`declared.PROVIDED_ONCE`), which adds that
  module and leaves the interpreter's own package in place (`VENDORED`).
- **Cached** by a hash of the requirements, the interpreter and its installed packages: a
  second PR of the same repository pays nothing. Entries are built in a temporary folder and
  renamed into place, so concurrent workers never see half an environment; the least recently
  used go past `keep`.
- **Loadable beside NumPy 2.** A release whose compiled extensions were built against NumPy 1
  (an old pin's pandas) is removed after the install and recorded as failed, so an optional
  `import pandas` raises ImportError instead of `numpy.dtype size changed`
  (`runners/numpy_abi.py`, which reads the files and runs none of them).
- **Bounded**: a wall-clock limit for all pip calls and a size limit for the folder.
- A requirement that cannot be installed that way (no wheel for this platform, a conflict
  with numcheck's environment) is set aside, with pip's reason, and the rest resolved
  together again (`culprits`): an old repository's pins lose only what pip names. A finding
  whose import fails on one can name it (`runners.pipeline`), and function extraction is
  tried next as before.

Operator settings (environment): `NUMCHECK_DEPENDENCIES` (`install`, the default, or `off`),
`NUMCHECK_DEPENDENCY_CACHE` (default `~/.cache/numcheck/dependencies`),
`NUMCHECK_PACKAGE_INDEX` (an index URL, or a folder of wheels for machines without one),
`NUMCHECK_DEPENDENCY_SECONDS` and `NUMCHECK_DEPENDENCY_BYTES`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from runners.declared import Declared, declared_requirements
from runners.numpy_abi import REASON as OLD_BUILD_REASON
from runners.numpy_abi import numpy_1_builds
from runners.numpy_abi import remove as remove_distribution
from runners.release_dates import capped

SITE = "site"
MANIFEST = "manifest.json"
FORMAT = 5  # bump when the folder layout, the manifest or the resolution changes
RETRY_FAILED_AFTER = 3600.0  # seconds: an environment with failures is rebuilt after this
ALONE_LIMIT = 40  # requirements resolved one by one when they cannot be resolved together
SET_ASIDE_LIMIT = 16  # requirements set aside one pip error at a time before that
# The frameworks of numcheck's own environment. A declared package that depends on one of them
# is built against its release, so its release of the commit's day (release_dates.capped)
# expects that day's framework, not the one installed: optax's 2021 `chex<=0.1.3` fails at
# import on today's jax (`jax.interpreters.batching` has no `BatchTracer`). Such a package is
# freed of its date cap and resolved to the newest release its requirement allows.
FRAMEWORKS = frozenset(
    {"torch", "jax", "jaxlib", "tensorflow", "tensorflow-cpu", "keras", "tf-keras"}
)
# A package the interpreter already has, whose vendored folder another package of the same
# wheel reads from its own path: pkg_resources (declared.PROVIDED_ONCE) puts
# `setuptools/_vendor` on sys.path itself. The folder stays; the package around it goes, so
# `import setuptools` still finds the interpreter's own (a regular package wins over a
# namespace folder wherever they are on the path).
VENDORED = {"setuptools": "_vendor"}
# What pip may read of the worker's environment: its own settings, proxies and certificates;
# never numcheck's or GitHub's secrets.
PIP_ENVIRONMENT = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
)


class DependencyError(Exception):
    """The environment could not be prepared at all (as opposed to one requirement)."""


@dataclass(frozen=True)
class DependencySettings:
    enabled: bool = True
    cache: Path = field(
        default_factory=lambda: Path.home() / ".cache" / "numcheck" / "dependencies"
    )
    index: str | None = None  # None: pip's own configuration
    seconds: float = 300.0
    max_bytes: int = 2 * 1024**3
    keep: int = 16

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DependencySettings:
        env = os.environ if env is None else env
        mode = env.get("NUMCHECK_DEPENDENCIES", "install").strip().lower()
        if mode not in ("install", "off"):
            raise DependencyError(f"NUMCHECK_DEPENDENCIES must be install or off, not {mode!r}")
        defaults = cls()
        try:
            seconds = float(env.get("NUMCHECK_DEPENDENCY_SECONDS", defaults.seconds))
            max_bytes = int(env.get("NUMCHECK_DEPENDENCY_BYTES", defaults.max_bytes))
        except ValueError as exc:
            raise DependencyError(f"NUMCHECK_DEPENDENCY_SECONDS/BYTES: {exc}") from None
        cache = env.get("NUMCHECK_DEPENDENCY_CACHE")
        return cls(
            enabled=mode == "install",
            cache=Path(cache).expanduser() if cache else defaults.cache,
            index=env.get("NUMCHECK_PACKAGE_INDEX") or None,
            seconds=seconds,
            max_bytes=max_bytes,
        )

    def index_dated(self) -> bool:
        """Whether the index can say when a release was uploaded: an index URL (pip's
        default, PyPI, when none is set), not a folder of wheels."""
        return self.index is None or "://" in self.index

    def index_args(self) -> list[str]:
        if self.index is None:
            return []
        if "://" in self.index:
            return ["--index-url", self.index]
        return ["--no-index", "--find-links", str(Path(self.index).expanduser().resolve())]


@dataclass(frozen=True)
class Environment:
    """What was prepared: `site` (the folder the job appends to sys.path; None when nothing
    was installed), the pins installed, the declared names numcheck's own environment
    provides, and (requirement, why) for each that could not be installed."""

    site: Path | None = None
    installed: tuple[str, ...] = ()
    provided: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    cached: bool = False
    seconds: float = 0.0

    def failed_sentence(self) -> str:
        shown = "; ".join(f"{req} ({why})" for req, why in self.failed[:6])
        more = f"; and {len(self.failed) - 6} more" if len(self.failed) > 6 else ""
        return f"declared dependencies that could not be installed from wheels: {shown}{more}"


def prepare(
    checkout: Path,
    python: str | None = None,
    settings: DependencySettings | None = None,
    as_of: datetime | None = None,
    declared: Declared | None = None,
) -> Environment:
    """The environment for `checkout`'s declared dependencies, built or taken from the cache.
    `as_of` (the reviewed commit's time, timezone-aware) bounds each requirement by the
    release current then, where one can be installed (runners/release_dates.py); `declared`,
    what the checkout declares when the caller has read it already.
    Raises DependencyError when pip cannot run at all; a requirement that fails is recorded."""
    settings = settings or DependencySettings.from_env()
    python = python or sys.executable
    started = time.monotonic()
    declared = declared if declared is not None else declared_requirements(checkout)
    if not settings.enabled or not declared.requirements:
        return Environment()
    base = installed_distributions(python)
    # a package taken from an import (nothing declared) that the interpreter already
    # imports, whatever its distribution is called (tensorflow-cpu's `tensorflow`)
    importable = importable_names(python) if declared.imported or declared.provides else set()
    wanted, provided = [], []
    for text, _ in declared.requirements:
        name = canonicalize_name(Requirement(text).name)
        if text in declared.provides:  # wanted for one module, whatever release is here
            if declared.provides[text] in importable:
                provided.append(name)
            elif text not in wanted:
                wanted.append(text)
        elif name in base or declared.imported.get(text) in importable:
            provided.append(name)
        elif text not in wanted:
            wanted.append(text)
    provided = sorted(set(provided))
    if not wanted:
        return Environment(provided=tuple(provided))
    key = _key(wanted, python, base, settings, as_of)
    entry = settings.cache / key
    cached = _load(entry)
    if cached is not None:
        return Environment(
            entry / SITE if cached["installed"] else None,
            tuple(cached["installed"]),
            tuple(provided),
            tuple((str(r), str(w)) for r, w in cached["failed"]),
            True,
            round(time.monotonic() - started, 3),
        )
    settings.cache.mkdir(parents=True, exist_ok=True)
    _check_cache_owner(settings.cache)
    deadline = started + settings.seconds
    building = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=settings.cache))
    building.chmod(0o755)  # read by the sandbox user; written by this worker only
    try:
        # a module's provider is resolved apart from the interpreter's own release of it
        free = {canonicalize_name(Requirement(t).name) for t in wanted if t in declared.provides}
        caps = (
            capped(wanted, settings.index, as_of, deadline)
            if as_of is not None and settings.index_dated()
            else {}
        )
        pins, failed = _resolve(
            python,
            wanted,
            {k: v for k, v in base.items() if k not in free},
            settings,
            building,
            deadline,
            declared.imported_names(),
            caps,
        )
        own = {canonicalize_name(name) for name in declared.project_names}
        pins = [pin for pin in pins if pin.split("==")[0] not in own]  # a test extra's
        installed: list[str] = []  # copy of the project
        if pins:
            why = _install(python, pins, building / SITE, settings, deadline)
            size = 0 if why else _size(building / SITE)
            if size > settings.max_bytes:
                why = (
                    f"the environment would take {size / 2**20:.0f} MiB, over the "
                    f"{settings.max_bytes / 2**20:.0f} MiB limit"
                )
            if why:  # nothing is installed: every requirement not failed yet fails with it
                named = {text for text, _ in failed}
                failed += [(text, why) for text in wanted if text not in named]
            else:
                _drop_shadowing(building / SITE, checkout, importable_names(python))
                old_builds = numpy_1_builds(building / SITE, base.get("numpy"))
                for files in old_builds.values():
                    remove_distribution(building / SITE, files)
                installed = [pin for pin in pins if pin.split("==")[0] not in old_builds]
                reason = OLD_BUILD_REASON.format(numpy=base.get("numpy"))
                failed += [(pin, reason) for pin in pins if pin not in installed]
        if not installed:
            shutil.rmtree(building / SITE, ignore_errors=True)
        manifest = {
            "format": FORMAT,
            "installed": installed,
            "failed": failed,
            "created": time.time(),
        }
        (building / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        _publish(building, entry)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    _evict(settings.cache, settings.keep)
    return Environment(
        entry / SITE if installed else None,
        tuple(installed),
        tuple(provided),
        tuple((r, w) for r, w in failed),
        False,
        round(time.monotonic() - started, 3),
    )


def installed_distributions(python: str) -> dict[str, str]:
    """{canonical name: version} of what `python` can import from its own environment."""
    code = (
        "import importlib.metadata as m, json; print(json.dumps("
        "[[d.metadata['Name'], d.version] for d in m.distributions()]))"
    )
    try:
        proc = subprocess.run(
            [python, "-I", "-c", code], capture_output=True, text=True, timeout=60, env=_pip_env()
        )
        pairs = json.loads(proc.stdout)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
        raise DependencyError(f"could not list the packages of {python}: {exc}") from None
    return {canonicalize_name(name): version for name, version in pairs if name}


def _key(
    wanted: list[str],
    python: str,
    base: dict[str, str],
    settings: DependencySettings,
    as_of: datetime | None = None,
) -> str:
    parts: list[Any] = [
        FORMAT,
        sorted(wanted),
        os.path.realpath(python),
        sorted(base.items()),
        settings.index,
        settings.max_bytes,
    ]
    if as_of is not None and settings.index_dated():
        parts.append(as_of.astimezone(UTC).date().isoformat())
    text = json.dumps(parts)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _load(entry: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None
    if manifest["failed"] and time.time() - float(manifest["created"]) > RETRY_FAILED_AFTER:
        return None  # a failure may have been the network's: try again
    if manifest["installed"] and not (entry / SITE).is_dir():
        return None
    with contextlib.suppress(OSError):
        os.utime(entry / MANIFEST)  # recently used: kept by `_evict`
    return manifest


def _check_cache_owner(cache: Path) -> None:
    """The cache is code the jobs import: it must be this worker's alone to write."""
    info = cache.stat()
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise DependencyError(
            f"the dependency cache {cache} must belong to this user and be writable by no one else"
        )


def _resolve(
    python: str,
    wanted: list[str],
    base: dict[str, str],
    settings: DependencySettings,
    work: Path,
    deadline: float,
    imported: Collection[str] = (),
    caps: Mapping[str, str] | None = None,
) -> tuple[list[str], list[tuple[str, str]]]:
    """Pins (name==version) of what pip would install for `wanted` next to the interpreter's
    own packages. When they cannot be resolved together, the requirement pip's error names
    is set aside and the rest tried together again (an old repository's one pin without a
    wheel no longer costs every other package: allennlp's `jsonnet==0.10.0` left its
    `overrides` out); when pip names none, one by one, those the code imports (`imported`,
    canonical names) first, since the step's time may not cover them all. `caps` bounds
    requirements by a date (release_dates.capped); a capped one pip names is first freed of
    its cap (the release current then has no wheel for this Python), and set aside only if
    it fails again.

    The step's time is shared out: setting aside gets the first 40 % (each round resolves the
    whole set again, and diffusers' 23 imports took over two minutes a round, so its
    library's huggingface_hub was never tried), one by one runs until 75 %, and the install
    gets the rest."""
    now = time.monotonic()
    span = max(0.0, deadline - now)
    rounds_by, alone_by = now + 0.40 * span, now + 0.75 * span
    constraints = work / "constraints.txt"
    constraints.write_text(
        "".join(
            f"{name}=={version}\n"
            for name, version in base.items()
            if not version.endswith(".dev0")
        ),
        encoding="utf-8",
    )
    caps = dict(caps or {})
    remaining = [caps.get(text, text) for text in wanted]
    uncapped = {cap: text for text, cap in caps.items()}
    failed: list[tuple[str, str]] = []
    for _ in range(SET_ASIDE_LIMIT):
        pins, why = _dry_run(python, remaining, constraints, settings, work, rounds_by)
        if pins is not None:
            tied = _built_on_frameworks(work / "report.json")
            untied = [
                uncapped[text]
                if text in uncapped and canonicalize_name(Requirement(text).name) in tied
                else text
                for text in remaining
            ]
            if untied != remaining and time.monotonic() <= rounds_by:
                again, _ = _dry_run(python, untied, constraints, settings, work, rounds_by)
                if again is not None:
                    return again, failed
            return pins, failed
        named = culprits(why, remaining)
        freed = [text for text in named if text in uncapped]
        if freed and time.monotonic() <= rounds_by:  # in the same round as any set aside
            named = [text for text in named if text not in freed]
            remaining = [
                uncapped.pop(text) if text in freed else text
                for text in remaining
                if text not in named
            ]
            failed += [(text, why) for text in named]
            continue
        if len(remaining) == 1:
            return [], failed + [(remaining[0], why)]
        if not named or time.monotonic() > rounds_by:
            break
        failed += [(text, why) for text in named]
        remaining = [text for text in remaining if text not in named]
    remaining.sort(key=lambda text: canonicalize_name(Requirement(text).name) not in imported)
    chosen: dict[str, str] = {}
    for index, text in enumerate(remaining):
        if index >= ALONE_LIMIT or time.monotonic() > alone_by:
            failed.append(
                (
                    uncapped.get(text, text),
                    "not tried: the dependency step ran out of time or turns",
                )
            )
            continue
        alone, why = _dry_run(python, [text], constraints, settings, work, alone_by)
        if alone is None and text in uncapped:  # the release current then has no wheel here
            text = uncapped.pop(text)
            alone, why = _dry_run(python, [text], constraints, settings, work, alone_by)
        if alone is None:
            failed.append((text, why))
            continue
        for pin in alone:
            chosen.setdefault(pin.split("==")[0], pin)
    return sorted(chosen.values()), failed


# What pip's shortened reason (`_pip_reason`) says is at fault: the requirement it found no
# version of (or the one that pulled that in: `jsondiff==1.1.1 (from moto)`), or the package
# whose dependencies conflict (`awscli 1.15.85 depends on PyYAML<=3.13`).
_NO_VERSION = re.compile(
    r"satisfies the requirement (?P<name>[A-Za-z0-9._-]+)[^(]*"
    r"(?:\(from (?!versions:)(?P<parent>[A-Za-z0-9._-]+))?"
)
_NO_DISTRIBUTION = re.compile(r"No matching distribution found for (?P<name>[A-Za-z0-9._-]+)")
_CONFLICT = re.compile(
    r"(?:^|; |: )(?P<name>[A-Za-z0-9._-]+) \S+ depends on"
    r"|The user requested (?P<requested>[A-Za-z0-9._-]+)"
)


def culprits(why: str, wanted: list[str]) -> list[str]:
    """The requirements of `wanted` that pip's reason `why` names as the failure."""
    names: list[str] = []
    for match in _NO_VERSION.finditer(why):  # a parent that is not wanted ("the
        names += [match["name"], match["parent"] or ""]  # requirements") matches nothing
    names += [match["name"] for match in _NO_DISTRIBUTION.finditer(why)]
    if why.startswith("conflicts with numcheck's environment"):
        names += [match["name"] or match["requested"] for match in _CONFLICT.finditer(why)]
    canonical = {canonicalize_name(name) for name in names}
    return [text for text in wanted if canonicalize_name(Requirement(text).name) in canonical]


def _dry_run(
    python: str,
    wanted: list[str],
    constraints: Path,
    settings: DependencySettings,
    work: Path,
    deadline: float,
) -> tuple[list[str] | None, str]:
    requirements = work / "requirements.txt"
    requirements.write_text("".join(f"{text}\n" for text in wanted), encoding="utf-8")
    report = work / "report.json"
    report.unlink(missing_ok=True)
    ok, why = _pip(
        python,
        [
            "install",
            "--dry-run",
            "--report",
            str(report),
            "--only-binary",
            ":all:",
            "--constraint",
            str(constraints),
            *settings.index_args(),
            "--requirement",
            str(requirements),
        ],
        deadline,
    )
    if not ok:
        return None, why.replace(f"-r {requirements}", "the requirements")
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        pins = [
            f"{canonicalize_name(item['metadata']['name'])}=={item['metadata']['version']}"
            for item in data.get("install", [])
        ]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        return None, f"pip's report could not be read: {exc}"
    return sorted(pins), ""


def _built_on_frameworks(report: Path) -> set[str]:
    """The packages of a dry run's report that depend on one of FRAMEWORKS (not through an
    extra), by canonical name."""
    try:
        items = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    except (OSError, json.JSONDecodeError, AttributeError):
        return set()
    tied: set[str] = set()
    for item in items if isinstance(items, list) else []:
        try:
            metadata = item["metadata"]
            requires = metadata.get("requires_dist") or []
            name = canonicalize_name(metadata["name"])
        except (KeyError, TypeError, AttributeError):
            continue
        for text in requires:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if requirement.marker is not None and "extra" in str(requirement.marker):
                continue
            if canonicalize_name(requirement.name) in FRAMEWORKS:
                tied.add(name)
    return tied


def _install(
    python: str, pins: list[str], site: Path, settings: DependencySettings, deadline: float
) -> str:
    pinned = site.parent / "pins.txt"
    pinned.write_text("".join(f"{pin}\n" for pin in pins), encoding="utf-8")
    ok, why = _pip(
        python,
        [
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--no-warn-script-location",
            "--target",
            str(site),
            *settings.index_args(),
            "--requirement",
            str(pinned),
        ],
        deadline,
    )
    return "" if ok else why


def _drop_shadowing(site: Path, checkout: Path, importable: set[str]) -> None:
    """Remove what would stand in for other code: a top-level module or package that the
    checkout provides (a release of the project itself, pulled in by a dependency under
    another distribution name), a stray `tests` package, or one that numcheck's interpreter
    already imports from the standard library or its own environment (PyPI's `typing`
    backport would replace the standard library's in a reproducer's child Python, where the
    folder comes first on PYTHONPATH)."""
    if not site.is_dir():
        return
    for entry in site.iterdir():
        name = entry.name.removesuffix(".py")
        if entry.name.endswith((".dist-info", ".data")) or name in ("bin", "__pycache__"):
            continue
        if (
            (checkout / name / "__init__.py").is_file()
            or (checkout / f"{name}.py").is_file()
            or name == "tests"
            or name in importable
        ):
            kept = VENDORED.get(name)
            if kept and entry.is_dir() and (entry / kept).is_dir():
                for inside in entry.iterdir():  # a namespace folder: never imported instead
                    if inside.name != kept:
                        _remove(inside)
                continue
            _remove(entry)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def importable_names(python: str) -> set[str]:
    """The top-level modules `python` imports without the folder: its standard library and
    its own site-packages."""
    code = (
        "import json, pkgutil, sys; print(json.dumps(sorted(set(sys.stdlib_module_names)"
        " | {m.name for m in pkgutil.iter_modules()})))"
    )
    try:
        proc = subprocess.run(
            [python, "-I", "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            env=_pip_env(),
            cwd="/",
        )
        return set(json.loads(proc.stdout))
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
        raise DependencyError(f"could not list the modules of {python}: {exc}") from None


def _pip(python: str, args: list[str], deadline: float) -> tuple[bool, str]:
    left = deadline - time.monotonic()
    if left <= 1:
        return False, "the dependency step ran out of time"
    try:
        proc = subprocess.run(
            [python, "-I", "-m", "pip", *args, "--no-input", "--disable-pip-version-check"],
            capture_output=True,
            text=True,
            timeout=left,
            env=_pip_env(),
            cwd="/",
        )
    except subprocess.TimeoutExpired:
        return False, "pip did not finish within the dependency step's time limit"
    except OSError as exc:
        raise DependencyError(f"pip could not run: {exc}") from None
    if proc.returncode == 0:
        return True, ""
    return False, _pip_reason(proc.stdout + "\n" + proc.stderr)  # the conflict's lines:
    # stdout


def _pip_reason(stderr: str) -> str:
    """pip's own words, shortened: for a conflict, the lines that say what conflicts (with
    "(constraint)" meaning numcheck's environment); for a missing wheel, the line that names
    it; else the first ERROR line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if "The conflict is caused by:" in lines:
        start = lines.index("The conflict is caused by:") + 1
        cause = [
            line.replace("The user requested (constraint)", "numcheck's environment has")
            for line in itertools.takewhile(
                lambda t: not t.startswith("To fix"), lines[start : start + 8]
            )
        ]
        mine = [line for line in cause if line.startswith("numcheck's")]  # the pinned side
        theirs = [line for line in cause if not line.startswith("numcheck's")][:2]
        return f"conflicts with numcheck's environment: {'; '.join(theirs + mine)}"[:300]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    missing = [
        line
        for line in errors
        if line.startswith(("No matching distribution", "Could not find a version"))
    ]
    text = (missing or errors or lines[-1:] or ["pip failed"])[0]
    return text[:240]


def _pip_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k in PIP_ENVIRONMENT or (k.startswith("PIP_") and "PASSWORD" not in k)
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _size(path: Path) -> int:
    total = 0
    for top, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(top, name)).st_size
    return total


def _publish(building: Path, entry: Path) -> None:
    """Rename the finished folder into place; a concurrent worker that got there first wins
    (both built the same thing), and a stale entry (expired failures) is replaced."""
    if entry.exists() and _load(entry) is None:
        stale = entry.with_name(f".{entry.name}-stale-{os.getpid()}")
        with contextlib.suppress(OSError):
            entry.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
    with contextlib.suppress(OSError):  # another worker published it first
        building.rename(entry)


def _evict(cache: Path, keep: int) -> None:
    entries = []
    for child in cache.iterdir():
        if child.name.startswith(".") or not child.is_dir():
            continue
        try:
            entries.append(((child / MANIFEST).stat().st_mtime, child))
        except OSError:
            continue
    for _, child in sorted(entries, reverse=True)[keep:]:
        shutil.rmtree(child, ignore_errors=True)
