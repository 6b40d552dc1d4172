# syntax=docker/dockerfile:1
#
# runner-cuda: the runner image for GPU workers. CUDA PyTorch (its wheels bring the CUDA
# runtime libraries, so the base is a plain Debian Python: only the host's NVIDIA driver is
# needed, through the NVIDIA container toolkit and the Docker runner's GPU device request),
# pytest and numcheck's harness. TensorFlow findings go to runner-cpu (tensorflow-cpu).
#
#   docker build -f docker/runner-cuda.Dockerfile -t ghcr.io/numcheck/runner-cuda:0.1.0 .
#
# The same restrictions as runner-cpu apply at `docker create` (runners/docker.py).

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_INDEX
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /build
COPY pyproject.toml README* ./
COPY analyzers ./analyzers
COPY bot ./bot
COPY runners ./runners
RUN pip wheel --wheel-dir /wheels --no-deps . \
    && pip wheel --wheel-dir /wheels --extra-index-url ${TORCH_INDEX} \
        "libcst==1.9.0" "numpy>=1.24" "torch==2.13.0" "pytest==9.2.0"

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    HOME=/tmp \
    TMPDIR=/tmp \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels numcheck torch pytest \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /tmp \
        --shell /usr/sbin/nologin numcheck \
    && mkdir -p /work /repo /job && chown 10001:10001 /work
USER 10001:10001
WORKDIR /work
CMD ["python", "-m", "runners.harness"]
