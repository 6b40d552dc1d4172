# runner-cpu: the image the Docker runner starts once per job to run a PR's code (the dynamic
# pass: `python -I -m runners.harness`). Debian's Python 3.11, CPU PyTorch, tensorflow-cpu,
# pytest (the harness records calls while the repository's own tests run) and numcheck's
# harness, in a virtual environment at /opt/numcheck. Nothing else: no git, no compilers.
#
# Built with no registry and no network by docker/build-runner-image, whose build context
# holds only the wheels (wheels/deps: docker/runner-cpu.txt, pinned; wheels/no-deps:
# requirements-no-deps.txt, installed without their declared dependencies; wheels/numcheck:
# numcheck's own wheel) and those two requirements files:
#
#   docker/build-runner-image --tag numcheck/runner-cpu:0.1.0
#
# The runner supplies the rest at `docker create` (runners/docker.py): no network, read-only
# root filesystem, tmpfs /tmp, the checkout read-only at /repo and a scratch copy at /work,
# user 10001, every capability dropped, no-new-privileges, memory/CPU/pids limits.
#
# A repository whose code needs more builds FROM this image; the App's operator maps the
# repository to that image (NUMCHECK_RUNNER_IMAGES).

ARG BASE=numcheck/debian-python:bookworm

# ---- install: the dependencies first (a layer that survives changes to numcheck), then
# numcheck; the wheels stay in this stage
FROM ${BASE} AS install
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
COPY requirements.txt no-deps.txt /wheels/
COPY wheels/deps /wheels/deps
COPY wheels/no-deps /wheels/no-deps
RUN python3 -m venv /opt/numcheck \
    && /opt/numcheck/bin/pip install -q --no-index --find-links /wheels/deps \
        -r /wheels/requirements.txt \
    && /opt/numcheck/bin/pip install -q --no-index --no-deps --find-links /wheels/no-deps \
        -r /wheels/no-deps.txt
COPY wheels/numcheck /wheels/numcheck
RUN /opt/numcheck/bin/pip install -q --no-index --no-deps /wheels/numcheck/*.whl

# ---- runtime: the environment alone
FROM ${BASE}
COPY --from=install /opt/numcheck /opt/numcheck
RUN useradd --uid 10001 --user-group --no-create-home --home-dir /tmp \
        --shell /usr/sbin/nologin numcheck \
    && mkdir -p /work /repo /job /deps
ENV PATH=/opt/numcheck/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp
USER 10001:10001
WORKDIR /work
CMD ["python", "-I", "-m", "runners.harness"]
