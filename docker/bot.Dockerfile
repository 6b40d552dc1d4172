# syntax=docker/dockerfile:1
#
# The numcheck command line in a container: `numcheck review` / `scan` on a mounted checkout.
# The default target is the command line, static pass only (no torch in the image); the
# `service` target is the App's web and worker image (docker/compose.yml). The code of a PR
# runs in the runner images (runner-cpu.Dockerfile, runner-cuda.Dockerfile), never here.
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

# ---- build-app: the same plus the App's dependencies (Flask, Celery, ...), the Docker SDK
# for the dynamic worker's runner, and gunicorn for the web process (in the app extra)
FROM build AS build-app
RUN pip wheel --wheel-dir /wheels ".[app,docker]"

# ---- base: python, git (reviews read the diff with git)
FROM ${PYTHON_IMAGE} AS base
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

# ---- service: the App (web under gunicorn, Celery workers); docker/compose.yml builds it
#   docker build -f docker/bot.Dockerfile --target service -t numcheck-service .
FROM base AS service
RUN --mount=type=bind,from=build-app,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels "numcheck[app,docker]" \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin numcheck
USER numcheck
WORKDIR /home/numcheck
EXPOSE 8000
# the same web command as docker/compose.yml (threaded workers: see the note there)
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--workers", "2", "--worker-class", "gthread", \
     "--threads", "16", "--timeout", "30", "--graceful-timeout", "30", "--keep-alive", "5", \
     "bot.web:create_app()"]

# ---- runtime (the default target): the command line
FROM base
# Bind-mount the wheels instead of COPYing them, so they are not kept in a layer.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels numcheck \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin numcheck
USER numcheck
WORKDIR /src
ENTRYPOINT ["numcheck"]
CMD ["--help"]
