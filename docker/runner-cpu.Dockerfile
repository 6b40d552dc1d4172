# syntax=docker/dockerfile:1
#
# runner-cpu: the image the Docker runner starts once per job to run a PR's code (the dynamic
# pass: `python -m runners.harness`). Python 3.11, CPU PyTorch, tensorflow-cpu, pytest (the
# harness records calls while the repository's own tests run) and numcheck's harness.
# Nothing else: no git, no compilers, no shell tools beyond Debian's base.
#
# The runner supplies the rest at `docker create` (runners/docker.py): no network, read-only
# root filesystem, tmpfs /tmp, the checkout read-only at /repo and a scratch copy at /work,
# user 10001, every capability dropped, no-new-privileges, memory/CPU/pids limits.
#
#   docker build -f docker/runner-cpu.Dockerfile -t ghcr.io/numcheck/runner-cpu:0.1.0 .
#
# A repository whose code needs more (its own dependencies) builds FROM this image and names
# it in its configuration; the App's operator lists it in the runner's per-repository images.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

# ---- build: numcheck's wheel and every dependency's, pinned; pip caches stay in this stage
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /build
COPY pyproject.toml README* ./
COPY analyzers ./analyzers
COPY bot ./bot
COPY runners ./runners
RUN pip wheel --wheel-dir /wheels --no-deps . \
    && pip wheel --wheel-dir /wheels \
        --extra-index-url https://download.pytorch.org/whl/cpu \
        "libcst==1.9.0" "numpy>=1.24" "torch==2.13.0" \
        "tensorflow-cpu==2.21.0" "tf_keras==2.21.0" "pytest==9.2.0"

# ---- runtime
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    HOME=/tmp \
    TMPDIR=/tmp
# Bind-mount the wheels instead of COPYing them, so they are not kept in a layer.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels numcheck torch tensorflow-cpu tf_keras pytest \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /tmp \
        --shell /usr/sbin/nologin numcheck \
    && mkdir -p /work /repo /job && chown 10001:10001 /work
USER 10001:10001
WORKDIR /work
CMD ["python", "-m", "runners.harness"]
