# syntax=docker/dockerfile:1
#
# The numcheck command line in a container: `numcheck review` / `scan` on a mounted checkout.
# Today this is the static pass only (no torch in the image); the web service, the worker and
# the sandbox runner images arrive with the sandbox work (see docker/README.md).
#
# Build from the repository root (only pyproject.toml, README* and the packages are copied, so
# a local .venv never ends up in the build):
#   docker build -f docker/bot.Dockerfile -t numcheck .
# Use:
#   docker run --rm -v "$PWD:/src" numcheck review /src --base origin/main --format sarif

ARG PYTHON_IMAGE=python:3.11-slim

# ---- build: wheels for numcheck and its dependencies; build tooling stays in this stage
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /build
COPY pyproject.toml README* ./
COPY analyzers ./analyzers
COPY bot ./bot
COPY runners ./runners
RUN pip wheel --wheel-dir /wheels .

# ---- runtime: python, git (reviews read the diff with git) and the installed wheels
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
# The checkout is mounted from the host and owned by another uid; without safe.directory git
# refuses it ("dubious ownership") and every review would exit 2.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'
# Bind-mount the wheels instead of COPYing them, so they are not kept in a layer.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels numcheck \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin numcheck
USER numcheck
WORKDIR /src
ENTRYPOINT ["numcheck"]
CMD ["--help"]
