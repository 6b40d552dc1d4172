"""The release of a package that was current on a given day, read from the package index.

An old commit's requirements are mostly unbounded above (`overrides`, `huggingface_hub>=0.1`),
and today's releases of them break the commit's code at import: allennlp's 2018 metrics
fail on overrides 7, whose `@overrides` checks signatures it did not check then; a 2022
diffusers imports `hf_cache_home`, gone from huggingface_hub since. The commit's authors
had the releases current on the commit's day, so the dependency step resolves each
requirement no later than that (`capped`). Only wheels are installed, and old releases of
pure-Python packages often shipped source archives alone (overrides had no wheel before
2020), so the bound is the newest release of then that has a wheel for this interpreter, or
failing that the first one after; where even that fails, pip chooses freely again
(runners/dependencies.py).

Upload times come from the index's JSON pages (PEP 691, with PEP 700's `upload-time`), as
PyPI serves them; an index without them (a folder of wheels, an older server) caps nothing.
Requests are bounded: canonical names only in the URL, a size cap on each page, a timeout
within the step's deadline.
"""

from __future__ import annotations

import functools
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

DEFAULT_INDEX = "https://pypi.org/simple"  # pip's own default
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
MAX_PAGE_BYTES = 64 * 2**20  # tensorflow's page is about 10 MiB
REQUEST_SECONDS = 20.0
WORKERS = 8


def capped(
    requirements: Iterable[str], index: str | None, when: datetime, deadline: float
) -> dict[str, str]:
    """{requirement: the same requirement bounded above by the release current on `when`},
    for those whose specifier allows a later release; others are left out."""
    texts = list(dict.fromkeys(requirements))
    root = (index or DEFAULT_INDEX).rstrip("/")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        found = list(pool.map(lambda text: _capped_one(text, root, when, deadline), texts))
    return {text: cap for text, cap in zip(texts, found, strict=True) if cap is not None}


def _capped_one(text: str, root: str, when: datetime, deadline: float) -> str | None:
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    if requirement.url:
        return None
    current = release_for(root, requirement.name, when, deadline)
    if current is None or not requirement.specifier.contains(current, prereleases=True):
        return None  # no dates, or a pin that already decides (older or newer than then)
    requirement.specifier = requirement.specifier & SpecifierSet(f"<={current}")
    return str(requirement)


def release_for(root: str, name: str, when: datetime, deadline: float) -> Version | None:
    """The final release of `name` with a wheel this interpreter can install that was current
    on `when` (the newest first uploaded no later than then), or else the first such release
    after it; None when the index gives no upload times or `name` has no such wheel."""
    page = _page(f"{root}/{canonicalize_name(name)}/", deadline)
    if page is None:
        return None
    files = page.get("files")
    if not isinstance(files, list):
        return None
    first: dict[Version, datetime] = {}
    for file in files:
        if not isinstance(file, dict) or file.get("yanked"):
            continue
        uploaded = _time(file.get("upload-time"))
        version = _wheel_version(str(file.get("filename", "")), name)
        if uploaded is None or version is None or version.is_prerelease:
            continue
        first[version] = min(uploaded, first.get(version, uploaded))
    before = [v for v, at in first.items() if at <= when]
    after = [v for v, at in first.items() if at > when]
    return max(before) if before else min(after) if after else None


def _page(url: str, deadline: float) -> dict[str, object] | None:
    left = min(REQUEST_SECONDS, deadline - time.monotonic())
    if left <= 1 or not url.startswith(("https://", "http://")):
        return None
    request = urllib.request.Request(url, headers={"Accept": SIMPLE_JSON})
    try:
        with urllib.request.urlopen(request, timeout=left) as response:  # noqa: S310 (checked)
            if SIMPLE_JSON not in response.headers.get("Content-Type", ""):
                return None
            data = response.read(MAX_PAGE_BYTES + 1)
    except (OSError, urllib.error.URLError, ValueError):
        return None
    if len(data) > MAX_PAGE_BYTES:
        return None
    try:
        page = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return page if isinstance(page, dict) else None


def _time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _wheel_version(filename: str, name: str) -> Version | None:
    """The version of a wheel of `name` that this interpreter can install; None for a source
    archive, another project's file or a wheel for another platform or Python."""
    if not filename.endswith(".whl"):
        return None
    try:
        project, version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    if project != canonicalize_name(name) or not tags & _supported():
        return None
    return version


@functools.cache
def _supported() -> frozenset[Tag]:
    return frozenset(sys_tags())
