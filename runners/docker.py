"""The Docker runner (production): one container per job, on the Docker SDK for Python.

The container (`container_spec`, a pure function so every limit is unit-tested):
- no network (`network_mode: none`), read-only root filesystem, a small tmpfs on /tmp
  (HOME, TMPDIR), the checkout mounted read-only at /repo and a scratch copy of it read-write
  at /work (the harness writes its reproducer checks and the fix stage its patched copies
  there; the container copies it onto a tmpfs of the checkout's size plus the workspace's
  cap, so what the job writes never reaches the worker's disk), the job file read-only at
  /job;
- a non-root user, every capability dropped, `no-new-privileges`;
- memory (no swap on top) for the container, and the same as each process's data limit, CPU
  quota, pids limit, rlimits for file size, open files, CPU time and core dumps, json-file
  logs capped at the output cap;
- the scrubbed environment only (the same variables as the local runner's);
- a GPU device request when the job asks for CUDA (`device: cuda`, or `auto` on a runner
  configured with GPUs);
- labels (`numcheck.runner`, the run id, this worker's id, a deadline), so containers a dead
  worker left behind are swept when a runner starts (and before each run).

The runner streams stdout (the records) as it arrives, kills the container at the wall-clock
limit or when the records pass the output cap, and always removes it. Outcomes are those of
`runners.base`: the container's OOM-killed flag gives `out-of-memory`, a missing engine
`isolation-unavailable`.

The image is the operator's choice first (`image_choice`): `images[job["repository"]]`, the
operator's per-repository map, wins; a repository's own `runner_image` (from its configuration)
is used only when it matches one of the operator's `allowed_images` patterns, and is otherwise
ignored with a warning in `isolation`; else the default (the CUDA default when the job wants a
GPU). A configuration is data a repository's committers control, and an image is code that runs
beside the job's mounts, so it never picks one the operator has not allowed.

The job's tree on the host (`_hand_to_container`) is private: its top directory is the
worker's, 0700, and the copies the container mounts belong to the container's user, 0700 and
0600 (a root worker; a worker that cannot chown opens them to everyone instead and says so).
The checkout's `.git` is never copied (a workflow token sits in `.git/config` after
`actions/checkout`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import json
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.base import Limits, OnRecord, Outcome, RecordStream, RunResult, add_sandbox_report
from runners.local import scrubbed_env

LABEL = "numcheck.runner"
DEFAULT_IMAGE = "ghcr.io/numcheck/runner-cpu:0.1.0"
DEFAULT_CUDA_IMAGE = "ghcr.io/numcheck/runner-cuda:0.1.0"
CONTAINER_USER = "10001:10001"  # the `numcheck` user of the runner images
CONTAINER_UID = CONTAINER_GID = 10001
# The runner images' interpreter (docker/runner-cpu.Dockerfile's virtual environment) first;
# an image built FROM a plain Python image has its own at /usr/local/bin.
IMAGE_PATH = "/opt/numcheck/bin:/usr/local/bin:/usr/bin:/bin"
REPO_MOUNT, WORK_MOUNT, JOB_MOUNT = "/repo", "/work", "/job"
DEPENDENCIES_MOUNT = "/deps"  # the declared dependencies' folder (runners/dependencies.py)
SWEEP_GRACE = 60  # seconds past a container's deadline before any worker may remove it
SCRATCH_FILES = 65536  # files and folders the job may add to its scratch copy
PAGE = 4096


def wants_gpu(job: Mapping[str, Any], gpus: bool) -> bool:
    device = str(job.get("device", "auto"))
    return device.startswith("cuda") or (device == "auto" and gpus)


def container_env() -> dict[str, str]:
    """The local runner's scrubbed environment, with the container's own paths."""
    env = scrubbed_env(Path("/tmp"))
    env.pop("CUDA_VISIBLE_DEVICES", None)  # the device request decides what the job sees
    env["PATH"] = IMAGE_PATH
    return env


def container_spec(
    *,
    image: str,
    checkout: str,
    job_dir: str,
    run_id: str,
    worker_id: str,
    limits: Limits,
    timeout: float,
    gpu: bool,
    gpu_ids: list[str] | None = None,
    user: str = CONTAINER_USER,
    now: float | None = None,
    dependencies: str | None = None,
    checkout_size: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """The keyword arguments of `client.containers.create()` for one job. `checkout_size`:
    the checkout's (bytes as a tmpfs holds them, files and folders), what the scratch copy's
    tmpfs holds on top of the workspace's cap."""
    now = time.time() if now is None else now
    cpu = limits.cpu_limit(timeout)
    ulimits = [{"name": "core", "soft": 0, "hard": 0}]
    if limits.file_bytes is not None:
        ulimits.append({"name": "fsize", "soft": limits.file_bytes, "hard": limits.file_bytes})
    if limits.open_files is not None:
        ulimits.append({"name": "nofile", "soft": limits.open_files, "hard": limits.open_files})
    if cpu is not None:
        ulimits.append({"name": "cpu", "soft": cpu, "hard": cpu + 5})
    if limits.memory_bytes is not None:
        # per process, as the local runner's: an allocation past it fails inside the PR's
        # code (MemoryError, that finding's error) before the container's memory cgroup,
        # which counts every process together, kills the whole job
        ulimits.append({"name": "data", "soft": limits.memory_bytes, "hard": limits.memory_bytes})
    spec: dict[str, Any] = {
        "image": image,
        # -I: not the working directory (the PR's scratch copy) first on sys.path, so a PR's
        # own runners/harness.py cannot stand in for the installed harness
        # the scratch copy is made in the container, on its own capped tmpfs: what the job
        # writes in its checkout never reaches the worker's disk
        "command": [
            "/bin/sh",
            "-c",
            f"cp -R {REPO_MOUNT}/. {WORK_MOUNT}/ && chmod 0700 "
            f"{WORK_MOUNT} && exec python -I -m runners.harness < {JOB_MOUNT}/job.json",
        ],
        "user": user,
        "working_dir": WORK_MOUNT,
        "environment": container_env(),
        "network_disabled": True,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {
            "/tmp": f"rw,nosuid,nodev,size={limits.tmpfs_bytes}",
            WORK_MOUNT: f"rw,exec,nosuid,nodev,{_owned_by(user)},"
            f"size={checkout_size[0] + limits.tmpfs_bytes},"
            f"nr_inodes={checkout_size[1] + SCRATCH_FILES}",
        },
        "volumes": {
            checkout: {"bind": REPO_MOUNT, "mode": "ro"},
            job_dir: {"bind": JOB_MOUNT, "mode": "ro"},
        },
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "privileged": False,
        "ipc_mode": "private",
        # the engine's init as pid 1: it reaps what the PR's code orphans (zombies would count
        # against the pids limit of the worker the supervisor starts next)
        "init": True,
        "pids_limit": limits.processes if limits.processes is not None else -1,
        "ulimits": ulimits,
        "log_config": {
            "type": "json-file",
            "config": {"max-size": str(limits.output_bytes), "max-file": "1"},
        },
        "labels": {
            LABEL: "1",
            "numcheck.run-id": run_id,
            "numcheck.worker": worker_id,
            "numcheck.deadline": str(int(now + timeout + SWEEP_GRACE)),
        },
        "stdin_open": False,
        "tty": False,
        "detach": True,
        "auto_remove": False,  # removed by the runner once the logs are read
    }
    if dependencies:  # built with the worker's interpreter: the image must have its Python
        spec["volumes"][dependencies] = {"bind": DEPENDENCIES_MOUNT, "mode": "ro"}
    if limits.memory_bytes is not None:
        spec["mem_limit"] = limits.memory_bytes
        spec["memswap_limit"] = limits.memory_bytes  # no swap on top of it
    if limits.cpus is not None:
        spec["nano_cpus"] = int(limits.cpus * 1e9)
    if gpu:
        request: dict[str, Any] = {"driver": "nvidia", "capabilities": [["gpu"]]}
        if gpu_ids:
            request["device_ids"] = list(gpu_ids)
        else:
            request["count"] = -1
        spec["device_requests"] = [request]
    return spec


def sweepable(labels: Mapping[str, str], worker_id: str, now: float) -> bool:
    """A labelled container to remove: this worker's own (a previous life of it left it), or
    anyone's past its deadline (its worker died: no live run can still want it)."""
    if labels.get(LABEL) != "1":
        return False
    if labels.get("numcheck.worker") == worker_id:
        return True
    try:
        return float(labels.get("numcheck.deadline", "0")) < now
    except ValueError:
        return True


@dataclass
class DockerRunner:
    images: Mapping[str, str] = field(default_factory=dict)  # "owner/name" -> image
    # fnmatch patterns of the images a repository's own `runner_image` may name
    allowed_images: tuple[str, ...] = ()
    default_image: str = DEFAULT_IMAGE
    cuda_image: str = DEFAULT_CUDA_IMAGE
    limits: Limits = field(default_factory=Limits)
    gpus: bool = False  # this worker has GPUs: `device: auto` gets one
    gpu_ids: list[str] | None = None
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    # Where the per-job copies go: a path the engine can mount (from a containerised worker,
    # a host directory mounted at the same path in the worker).
    work_root: str | None = None
    client: Any = None  # a docker.DockerClient; from the environment when None

    def __post_init__(self) -> None:
        self._swept = False

    def _client(self) -> Any:
        if self.client is None:
            sdk = importlib.import_module("docker")  # the SDK (the `docker` extra)
            self.client = sdk.from_env()
        return self.client

    def image_choice(self, job: Mapping[str, Any]) -> tuple[str, str | None]:
        """The image for this job, and a warning when the repository asked for another."""
        asked = str(job.get("runner_image") or "")
        mapped = self.images.get(str(job.get("repository") or ""))
        default = self.cuda_image if wants_gpu(job, self.gpus) else self.default_image
        if mapped:
            chosen = mapped
        elif asked and any(fnmatch.fnmatchcase(asked, p) for p in self.allowed_images):
            return asked, None
        else:
            chosen = default
        if asked and asked != chosen:
            return chosen, (
                f"the repository's runner_image {asked!r} was not used: "
                + (
                    "the operator maps this repository to its own image"
                    if mapped
                    else "it is not among the operator's allowed "
                    "images (NUMCHECK_RUNNER_ALLOWED_IMAGES)"
                )
            )
        return chosen, None

    def image_for(self, job: Mapping[str, Any]) -> str:
        return self.image_choice(job)[0]

    def sweep(self) -> int:
        """Remove the labelled containers left behind (see `sweepable`)."""
        client = self._client()
        removed = 0
        for container in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}):
            if sweepable(container.labels, self.worker_id, time.time()):
                with contextlib.suppress(Exception):
                    container.remove(force=True)
                    removed += 1
        return removed

    def run(
        self, job: dict[str, Any], timeout: float, on_record: OnRecord | None = None
    ) -> RunResult:
        warnings: list[str] = []
        isolation: dict[str, Any] = {
            "network": True,
            "pid_namespace": True,
            "mount_namespace": True,
            "read_only_fs": True,
            "user": CONTAINER_USER,
            "warnings": warnings,
        }
        try:
            client = self._client()
            client.ping()
            if not self._swept:
                self.sweep()
                self._swept = True
        except Exception as exc:  # no SDK, no engine, no permission on the socket
            return RunResult(
                "isolation-unavailable",
                [],
                f"no Docker engine answers: {type(exc).__name__}: {exc}",
                "",
                isolation,
            )
        nonce = secrets.token_hex(16)
        run_id = secrets.token_hex(8)
        gpu = wants_gpu(job, self.gpus)
        checkout = str(Path(job["repo"]).resolve())
        root = Path(tempfile.mkdtemp(prefix="numcheck-docker-", dir=self.work_root))
        try:
            # Both copies live under work_root, a path the engine can mount: the worker may
            # itself be a container whose /tmp the engine cannot see.
            pristine, job_dir = root / "repo", root / "job"
            root.chmod(0o700)
            shutil.copytree(checkout, pristine, symlinks=True, ignore=_ignore_git(checkout))
            job_dir.mkdir()
            site = job.get("dependencies")
            inner = {
                **job,
                "repo": WORK_MOUNT,
                "checkout": REPO_MOUNT,
                "nonce": nonce,
                "device": job.get("device", "auto"),
                "dependencies": DEPENDENCIES_MOUNT if site else None,
            }
            (job_dir / "job.json").write_text(json.dumps(inner), encoding="utf-8")
            if not _hand_to_container(root):
                warnings.append(
                    "the job's copies could not be given to the container's user (the worker "
                    "is not root): they are readable by every local user while the job runs"
                )
            image, refused = self.image_choice(job)
            if refused:
                warnings.append(refused)
            spec = container_spec(
                image=image,
                checkout=str(pristine),
                checkout_size=tree_size(pristine),
                job_dir=str(job_dir),
                run_id=run_id,
                worker_id=self.worker_id,
                limits=self.limits,
                timeout=timeout,
                gpu=gpu,
                gpu_ids=self.gpu_ids,
                dependencies=site,
            )
            isolation["image"] = spec["image"]
            isolation["gpu"] = gpu
            return self._execute(client, spec, nonce, timeout, on_record, isolation)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _execute(
        self,
        client: Any,
        spec: dict[str, Any],
        nonce: str,
        timeout: float,
        on_record: OnRecord | None,
        isolation: dict[str, Any],
    ) -> RunResult:
        stream = RecordStream(nonce, self.limits.output_bytes, on_record)
        container = client.containers.create(**spec)
        timed_out = False
        try:
            container.start()
            reader = threading.Thread(target=_read_stdout, args=(container, stream), daemon=True)
            reader.start()
            deadline = time.monotonic() + timeout
            while True:
                container.reload()
                if container.status in ("exited", "dead"):
                    break
                if stream.overflow:
                    _kill(container)
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    _kill(container)
                    break
                time.sleep(0.2)
            state = _wait(container)
            reader.join(timeout=5)
            stream.close()
            stderr = container.logs(stdout=False, stderr=True, tail=200)
            stderr_text = stderr.decode("utf-8", "replace")[-self.limits.stderr_bytes :]
        finally:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        add_sandbox_report(isolation, stream)
        outcome, reason = _classify(state, stream, timed_out, timeout, self.limits)
        return RunResult(outcome, stream.records, reason, stderr_text[-4000:], isolation)


def _read_stdout(container: Any, stream: RecordStream) -> None:
    with contextlib.suppress(Exception):
        for chunk in container.logs(stdout=True, stderr=False, stream=True, follow=True):
            stream.feed(chunk)
            if stream.overflow:
                return


def _kill(container: Any) -> None:
    with contextlib.suppress(Exception):
        container.kill()


def _wait(container: Any) -> dict[str, Any]:
    with contextlib.suppress(Exception):
        container.wait(timeout=30)
    container.reload()
    state: dict[str, Any] = container.attrs.get("State", {})
    return state


def _classify(
    state: Mapping[str, Any], stream: RecordStream, timed_out: bool, timeout: float, limits: Limits
) -> tuple[Outcome, str]:
    status = int(state.get("ExitCode", -1))
    if timed_out:
        return "timeout", f"the container passed its {timeout:g} s limit and was killed"
    if stream.overflow:
        return "crashed", (
            f"the harness wrote more than {limits.output_bytes} bytes of records and was stopped"
        )
    if state.get("OOMKilled"):
        memory = limits.memory_bytes or 0
        return "out-of-memory", f"the container hit its memory limit ({memory // 2**20} MiB)"
    if status == 0 and stream.done:
        return "ok", ""
    if status == 128 + 24:  # SIGXCPU
        return "timeout", f"the run used up its CPU time limit ({limits.cpu_limit(timeout)} s)"
    return "crashed", f"the harness exited with status {status}"


def _ignore_git(checkout: str) -> Any:
    """copytree's ignore: the checkout's own top-level `.git`, nothing else."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {".git"} & set(names) if os.path.samefile(directory, checkout) else set()

    return ignore


def _hand_to_container(root: Path) -> bool:
    """Give the job's copies to the container's user, private (0700 directories, 0600 files,
    executable bits kept); `root` itself stays the worker's, 0700: the engine mounts its
    subdirectories as root, so no one else needs to pass through it. False where the worker
    may not chown (not root): then the copies are opened to everyone instead."""
    try:
        for top, dirs, files in os.walk(root):
            if Path(top) != root:
                os.chown(top, CONTAINER_UID, CONTAINER_GID)
                os.chmod(top, 0o700)
            for name in files:
                path = os.path.join(top, name)
                os.chown(path, CONTAINER_UID, CONTAINER_GID, follow_symlinks=False)
                if not os.path.islink(path):
                    os.chmod(path, os.lstat(path).st_mode & 0o100 | 0o600)
            for name in dirs:
                if os.path.islink(os.path.join(top, name)):
                    os.chown(
                        os.path.join(top, name), CONTAINER_UID, CONTAINER_GID, follow_symlinks=False
                    )
            dirs[:] = [name for name in dirs if not os.path.islink(os.path.join(top, name))]
        return True
    except PermissionError:
        _open_to_container(root)
        return False


def _owned_by(user: str) -> str:
    """The scratch tmpfs's owner options: the container's user's alone where it is numeric
    (`uid:gid`), else open to every user of the container."""
    uid, _, gid = user.partition(":")
    if uid.isdigit() and (gid.isdigit() or not gid):
        return f"uid={uid},gid={gid or uid},mode=0700"
    return "mode=1777"


def tree_size(top: Path) -> tuple[int, int]:
    """(bytes, entries) of the tree at `top` as a tmpfs holds it: each file in whole pages,
    each folder and link a page and an inode."""
    size, entries = 0, 0
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            entries += 1
            st = os.lstat(os.path.join(folder, name))
            size += -(-max(st.st_size, 1) // PAGE) * PAGE
    return size, entries


def _open_to_container(root: Path) -> None:
    """Without chown, let the container's user read the job and the checkout, which it copies
    to its scratch tmpfs (the directory above stays private to the worker)."""
    for top, dirs, files in os.walk(root):
        if Path(top) == root:
            dirs[:] = [name for name in dirs if not os.path.islink(os.path.join(top, name))]
            continue
        os.chmod(top, 0o755)
        for name in files:
            path = os.path.join(top, name)
            if not os.path.islink(path):
                os.chmod(path, os.lstat(path).st_mode & 0o111 | 0o644)
        dirs[:] = [name for name in dirs if not os.path.islink(os.path.join(top, name))]


def runner_from_env(env: Mapping[str, str] | None = None) -> Any:
    """The runner a worker's settings ask for (the bot passes it to `analyze(runner=...)`):

    `NUMCHECK_RUNNER` `local` (default) or `docker`; for docker `NUMCHECK_RUNNER_IMAGE`,
    `NUMCHECK_RUNNER_CUDA_IMAGE`, `NUMCHECK_RUNNER_GPUS` (`all` or device ids `0,1`; empty:
    none), `NUMCHECK_RUNNER_WORK_ROOT` (else `NUMCHECK_WORKSPACE_ROOT`),
    `NUMCHECK_RUNNER_IMAGES` (the per-repository map, `owner/name=image` separated by commas)
    and `NUMCHECK_RUNNER_ALLOWED_IMAGES` (patterns such as `ghcr.io/acme/*`, separated by
    commas, of the images a repository's `runner_image` may name; `*` trusts every
    configuration, as a developer running the CLI on their own code may); for local
    `NUMCHECK_REQUIRE_ISOLATION=true` refuses to run without a network namespace and
    `NUMCHECK_SANDBOX_UIDS` (`FIRST-LAST`) is the range a root worker leases a uid per job
    from."""
    from runners.identities import uid_range
    from runners.local import LocalRunner

    env = os.environ if env is None else env
    kind = env.get("NUMCHECK_RUNNER", "local").strip().lower() or "local"
    if kind == "local":
        required = env.get("NUMCHECK_REQUIRE_ISOLATION", "").strip().lower()
        local = LocalRunner(require_network_isolation=required in ("1", "true", "yes"))
        uids = env.get("NUMCHECK_SANDBOX_UIDS", "").strip()
        if uids:
            local.uids = uid_range(uids)
        return local
    if kind != "docker":
        raise ValueError(f"NUMCHECK_RUNNER={kind!r}: expected 'local' or 'docker'")
    gpus = env.get("NUMCHECK_RUNNER_GPUS", "").strip()
    ids = None if gpus in ("", "all") else [g.strip() for g in gpus.split(",") if g.strip()]
    images = {}
    for pair in env.get("NUMCHECK_RUNNER_IMAGES", "").split(","):
        if pair.strip():
            repository, sep, image = pair.partition("=")
            if not sep or not repository.strip() or not image.strip():
                raise ValueError(
                    f"NUMCHECK_RUNNER_IMAGES: {pair.strip()!r} is not owner/name=image"
                )
            images[repository.strip()] = image.strip()
    allowed = tuple(
        p.strip() for p in env.get("NUMCHECK_RUNNER_ALLOWED_IMAGES", "").split(",") if p.strip()
    )
    return DockerRunner(
        images=images,
        allowed_images=allowed,
        default_image=env.get("NUMCHECK_RUNNER_IMAGE", "").strip() or DEFAULT_IMAGE,
        cuda_image=env.get("NUMCHECK_RUNNER_CUDA_IMAGE", "").strip() or DEFAULT_CUDA_IMAGE,
        gpus=bool(gpus),
        gpu_ids=ids,
        work_root=(
            env.get("NUMCHECK_RUNNER_WORK_ROOT", "").strip()
            or env.get("NUMCHECK_WORKSPACE_ROOT", "").strip()
            or None
        ),
    )
