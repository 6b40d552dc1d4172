"""A real Docker engine and runner image for the Docker runner's live tests.

The engine is started when none answers (scripts/docker-engine: Debian's dockerd, no bridge,
no iptables, its own state directory), and the runner image is built offline from this
checkout (docker/build-runner-image) under a tag named by a hash of what goes into it, so a
change to numcheck's code or pins builds a new image and an unchanged checkout reuses the last
one. Like the Redis and PostgreSQL helpers, these raise when they cannot: the live tests fail,
never skip. NUMCHECK_TEST_RUNNER_IMAGE names an image to use instead of building one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMAGE_REPOSITORY = "numcheck/runner-cpu"
BUILD_SECONDS = 1800


def ensure_engine() -> str:
    """The DOCKER_HOST of an engine that answers, started if need be; also set in os.environ
    so the SDK's from_env() and the docker command find it."""
    proc = subprocess.run(
        [str(ROOT / "scripts" / "docker-engine")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"no Docker engine could be started: {proc.stderr.strip()}")
    host = proc.stdout.strip().splitlines()[-1]
    os.environ["DOCKER_HOST"] = host
    return host


def client() -> Any:
    import docker

    ensure_engine()
    engine = docker.from_env(timeout=300)  # type: ignore[attr-defined]
    engine.ping()
    return engine


def image_inputs_digest() -> str:
    """What the image holds: the Dockerfile, the pins and numcheck's packaged files."""
    digest = hashlib.sha256()
    files = [
        ROOT / "docker" / "runner-cpu.Dockerfile",
        ROOT / "docker" / "runner-cpu.txt",
        ROOT / "requirements-no-deps.txt",
        ROOT / "docker" / "build-runner-image",
        ROOT / "pyproject.toml",
    ]
    for package in ("analyzers", "runners", "bot"):
        files += sorted(
            p for p in (ROOT / package).rglob("*") if p.is_file() and "__pycache__" not in p.parts
        )
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def runner_image(engine: Any) -> str:
    """The runner image built from this checkout (built now when missing); older test images
    are removed so a developer's disk does not fill with one per change (the build stage's
    dependency layer stays cached, so a rebuild after a code change reinstalls only
    numcheck)."""
    named = os.environ.get("NUMCHECK_TEST_RUNNER_IMAGE")
    if named:
        engine.images.get(named)  # raises when it is not there
        return named
    tag = f"{IMAGE_REPOSITORY}:test-{image_inputs_digest()}"
    try:
        engine.images.get(tag)
        return tag
    except Exception:  # docker.errors.ImageNotFound
        pass
    proc = subprocess.run(
        [str(ROOT / "docker" / "build-runner-image"), "--tag", tag],
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building the runner image failed:\n{proc.stderr[-4000:]}")
    for image in engine.images.list(name=IMAGE_REPOSITORY):
        for other in image.tags:
            if other.startswith(f"{IMAGE_REPOSITORY}:test-") and other != tag:
                engine.images.remove(other, noprune=False)
    return tag
