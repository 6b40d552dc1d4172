"""The Docker runner: the container specification it builds (every limit present), the sweep
rule, image choice, and, where a Docker engine answers, real containers running hostile code.

The live tests start an engine where none answers and build the runner image from this
checkout (tests/docker_support.py); they fail, never skip, when they cannot.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker_support
import pytest
from sandbox_attacks import (
    FAKE_ANALYZERS,
    FAKE_HARNESS,
    GIT_TOKEN,
    ORDINARY,
    OTHER_JOB_TEXT,
    PROBE_FILES,
    PROBE_SOCKET,
    UNRULY_FUNCTIONS,
    SocketService,
    seen_by_probe,
    write_modules,
)

from runners.base import Limits
from runners.docker import (
    DEFAULT_CUDA_IMAGE,
    DEFAULT_IMAGE,
    LABEL,
    DockerRunner,
    container_spec,
    sweepable,
    wants_gpu,
)

LIMITS = Limits(
    memory_bytes=2 * 1024**3,
    processes=128,
    file_bytes=64 * 1024**2,
    open_files=512,
    cpus=1.5,
    tmpfs_bytes=128 * 1024**2,
    output_bytes=8 * 1024**2,
)


def spec(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "image": "numcheck/runner-cpu:test",
        "checkout": "/srv/checkout",
        "job_dir": "/srv/job",
        "run_id": "r1",
        "worker_id": "w1",
        "checkout_size": (40960, 7),
        "limits": LIMITS,
        "timeout": 100.0,
        "gpu": False,
        "now": 1000.0,
    }
    arguments.update(overrides)
    return container_spec(**arguments)


def test_no_network() -> None:
    built = spec()
    assert built["network_disabled"] is True and built["network_mode"] == "none"


def test_read_only_root_with_a_small_tmpfs() -> None:
    built = spec()
    assert built["read_only"] is True
    assert built["tmpfs"]["/tmp"] == f"rw,nosuid,nodev,size={128 * 1024**2}"
    assert built["environment"]["HOME"] == built["environment"]["TMPDIR"] == "/tmp"


def test_checkout_read_only_and_a_writable_scratch_copy_on_a_capped_tmpfs() -> None:
    built = spec()
    volumes = built["volumes"]
    assert volumes["/srv/checkout"] == {"bind": "/repo", "mode": "ro"}
    assert volumes["/srv/job"] == {"bind": "/job", "mode": "ro"}
    assert not any(v["bind"] == "/work" for v in volumes.values())  # not the worker's disk
    assert built["tmpfs"]["/work"] == (
        f"rw,exec,nosuid,nodev,uid=10001,gid=10001,mode=0700,"
        f"size={40960 + 128 * 1024**2},nr_inodes={7 + 65536}"
    )
    # the container's paths, spelt in parts: tests/test_docs.py refuses a literal that looks
    # like a path of this machine
    work = "/work"
    copy = f"cp -R {'/repo'}/. {work}/ && chmod 0700 {work} && exec python -I "
    assert built["command"][-1].startswith(copy)
    assert built["working_dir"] == "/work"


def test_declared_dependencies_are_mounted_read_only_only_when_there_are_some() -> None:
    assert "/srv/deps" not in spec()["volumes"]
    assert spec(dependencies="/srv/deps")["volumes"]["/srv/deps"] == {"bind": "/deps", "mode": "ro"}


def test_unprivileged() -> None:
    built = spec()
    assert built["user"] == "10001:10001" and not built["user"].startswith("0")
    assert built["cap_drop"] == ["ALL"] and "cap_add" not in built
    assert "no-new-privileges:true" in built["security_opt"]
    assert built["privileged"] is False
    assert built["init"] is True  # pid 1 reaps orphans; the supervisor is not pid 1


def test_memory_cpu_and_pids_limits() -> None:
    built = spec()
    assert built["mem_limit"] == built["memswap_limit"] == 2 * 1024**3
    assert built["nano_cpus"] == 1_500_000_000
    assert built["pids_limit"] == 128


def test_rlimits() -> None:
    ulimits = {u["name"]: (u["soft"], u["hard"]) for u in spec()["ulimits"]}
    assert ulimits["fsize"] == (64 * 1024**2, 64 * 1024**2)
    assert ulimits["nofile"] == (512, 512)
    assert ulimits["cpu"] == (230, 235)  # 2 x the wall budget + 30 s, then SIGKILL 5 s on
    assert ulimits["core"] == (0, 0)
    assert ulimits["data"] == (2 * 1024**3, 2 * 1024**3)  # one process fails before the cgroup


def test_output_cap_on_the_logs() -> None:
    assert spec()["log_config"] == {
        "type": "json-file",
        "config": {"max-size": str(8 * 1024**2), "max-file": "1"},
    }


def test_labels_for_the_sweep() -> None:
    labels = spec()["labels"]
    assert labels[LABEL] == "1" and labels["numcheck.run-id"] == "r1"
    assert labels["numcheck.worker"] == "w1"
    assert float(labels["numcheck.deadline"]) == 1000 + 100 + 60
    assert spec()["auto_remove"] is False and spec()["detach"] is True


def test_scrubbed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMCHECK_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_x")
    env = spec()["environment"]
    assert "NUMCHECK_WEBHOOK_SECRET" not in env and "GITHUB_TOKEN" not in env
    assert "s3cret" not in json.dumps(env)


def test_harness_reads_the_job_file() -> None:
    command = spec()["command"]
    assert command[:2] == ["/bin/sh", "-c"] and "python -I -m runners.harness" in command[2]
    assert "< /job/job.json" in command[2]


def test_gpu_device_request_only_when_asked() -> None:
    assert "device_requests" not in spec()
    (request,) = spec(gpu=True)["device_requests"]
    assert request["capabilities"] == [["gpu"]] and request["count"] == -1
    (pinned,) = spec(gpu=True, gpu_ids=["1"])["device_requests"]
    assert pinned["device_ids"] == ["1"] and "count" not in pinned
    assert wants_gpu({"device": "cuda"}, gpus=False)
    assert wants_gpu({"device": "auto"}, gpus=True)
    assert not wants_gpu({"device": "cpu"}, gpus=True)


def test_limits_switched_off_are_absent() -> None:
    built = spec(
        limits=Limits(
            memory_bytes=None, processes=None, file_bytes=None, open_files=None, cpus=None
        )
    )
    assert "mem_limit" not in built and "nano_cpus" not in built
    assert built["pids_limit"] == -1
    assert {u["name"] for u in built["ulimits"]} == {"core", "cpu"}


def test_sdk_accepts_the_specification() -> None:
    """The SDK turns the spec into an Engine API host config without complaint."""
    docker = pytest.importorskip("docker")
    built = spec(gpu=True)
    host = docker.types.HostConfig(
        version="1.44",
        binds=[f"{k}:{v['bind']}:{v['mode']}" for k, v in built["volumes"].items()],
        tmpfs=built["tmpfs"],
        read_only=True,
        cap_drop=built["cap_drop"],
        security_opt=built["security_opt"],
        pids_limit=built["pids_limit"],
        ulimits=built["ulimits"],
        mem_limit=built["mem_limit"],
        memswap_limit=built["memswap_limit"],
        nano_cpus=built["nano_cpus"],
        network_mode="none",
        log_config=built["log_config"],
        device_requests=built["device_requests"],
    )
    assert host["ReadonlyRootfs"] is True and host["NetworkMode"] == "none"
    assert {u["Name"] for u in host["Ulimits"]} == {"core", "fsize", "nofile", "cpu", "data"}
    assert host["DeviceRequests"][0]["Capabilities"] == [["gpu"]]


def test_sweep_rule() -> None:
    mine = {LABEL: "1", "numcheck.worker": "w1", "numcheck.deadline": "5000"}
    theirs_live = {LABEL: "1", "numcheck.worker": "w2", "numcheck.deadline": "5000"}
    theirs_dead = {LABEL: "1", "numcheck.worker": "w2", "numcheck.deadline": "900"}
    assert sweepable(mine, "w1", now=1000)
    assert not sweepable(theirs_live, "w1", now=1000)
    assert sweepable(theirs_dead, "w1", now=1000)
    assert not sweepable({"other": "x"}, "w1", now=10**10)


def test_image_per_repository() -> None:
    runner = DockerRunner(images={"acme/models": "acme/runner:3"}, client=object())
    assert runner.image_for({"repository": "acme/models"}) == "acme/runner:3"
    assert runner.image_for({"repository": "x/y"}) == DEFAULT_IMAGE
    assert runner.image_for({"device": "cuda"}) == DEFAULT_CUDA_IMAGE


def test_the_operators_image_wins_over_a_repositorys_own() -> None:
    """A repository's `runner_image` is configuration its committers control; the image runs
    beside the job's mounts, so the operator's map wins and an image outside the operator's
    allowed patterns is ignored, with the reason as a warning."""
    runner = DockerRunner(images={"acme/models": "acme/runner:3"}, client=object())
    chosen, warning = runner.image_choice({"runner_image": "own:1", "repository": "acme/models"})
    assert chosen == "acme/runner:3" and "maps this repository" in str(warning)
    chosen, warning = runner.image_choice({"runner_image": "evil/x:1", "repository": "x/y"})
    assert chosen == DEFAULT_IMAGE and "NUMCHECK_RUNNER_ALLOWED_IMAGES" in str(warning)
    allowing = DockerRunner(allowed_images=("ghcr.io/acme/*",), client=object())
    assert allowing.image_choice({"runner_image": "ghcr.io/acme/r:2"}) == ("ghcr.io/acme/r:2", None)
    assert allowing.image_for({"runner_image": "ghcr.io/evil/r:2"}) == DEFAULT_IMAGE
    assert runner.image_choice({"repository": "acme/models"}) == ("acme/runner:3", None)


def test_the_jobs_copies_are_private_to_the_containers_user(tmp_path: Path) -> None:
    from runners.docker import _hand_to_container, _ignore_git

    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text("token")
    (checkout / "pkg" / ".git").mkdir(parents=True)  # only the top-level .git is the clone's
    (checkout / "run.sh").write_text("#!/bin/sh\n")
    (checkout / "run.sh").chmod(0o755)
    root = tmp_path / "job-root"
    root.mkdir(mode=0o700)
    shutil.copytree(checkout, root / "work", symlinks=True, ignore=_ignore_git(str(checkout)))
    assert not (root / "work" / ".git").exists() and (root / "work" / "pkg" / ".git").is_dir()
    handed = _hand_to_container(root)
    assert handed == (os.geteuid() == 0)
    work, script = (root / "work").stat(), (root / "work" / "run.sh").stat()
    assert oct(root.stat().st_mode & 0o777) == "0o700" and root.stat().st_uid == os.getuid()
    if handed:
        assert (work.st_uid, oct(work.st_mode & 0o777)) == (10001, "0o700")
        assert (script.st_uid, oct(script.st_mode & 0o777)) == (10001, "0o700")
    else:  # no chown: opened to the container's user, whoever it maps to
        assert oct(work.st_mode & 0o777) == "0o777"


def test_no_engine_is_isolation_unavailable(tmp_path: Path) -> None:
    docker = pytest.importorskip("docker")
    client = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.44")
    result = DockerRunner(client=client).run({"repo": str(tmp_path), "findings": []}, 10)
    assert result.outcome == "isolation-unavailable"
    assert "no Docker engine answers" in result.reason


# ---------------------------------------------------------------- with a real engine
#
# One hostile PR, one container: attacks that report what they saw by raising (a finding's
# `error` carries it back), the host probes the local runner's tests use (tests/
# sandbox_attacks.py), a PR that brings its own `runners/harness.py`, and an ordinary torch.log
# finding that must still be confirmed (after a finding whose code blocks the worker's deadline
# signal, so the supervisor kills and restarts the worker). The engine is started and the
# runner image built from this checkout when missing (tests/docker_support.py); these tests
# fail, never skip, without.

LIVE_LIMITS = Limits(
    memory_bytes=2 * 1024**3,
    processes=100,
    file_bytes=16 * 1024**2,
    open_files=256,
    stderr_bytes=16 * 1024,
)
PLANTED_ENV = {
    "GITHUB_TOKEN": "ghs_plantedInTheWorker0123456789",
    "NUMCHECK_WEBHOOK_SECRET": "planted-webhook-secret",
}

ATTACKS = """\
import json
import os
import socket
import time
from pathlib import Path

import torch
from torch import Tensor


# what each costly attack saw: the search calls a function again and again (thousands of
# times when each call raises, for every entry it tries), so a flood or a fork storm runs once
# per worker and its later calls report the first one's findings (CI, loaded: one flood or
# storm per entry outran the finding's 20 s deadline)
SEEN = {}


def report(seen):
    raise RuntimeError("seen " + json.dumps(seen))


def dial(x: Tensor) -> Tensor:
    seen = {}
    for host, port in (("127.0.0.1", PORT), ("1.1.1.1", 53)):
        try:
            socket.create_connection((host, port), timeout=2).close()
            seen[host] = "connected"
        except OSError as exc:
            seen[host] = f"refused: {exc}"
    report(seen)
    return torch.log(x)


def snoop(x: Tensor) -> Tensor:
    tree = {}
    for path in ("/work", "/repo", "/job", "/job/job.json"):
        info = os.stat(path)
        tree[path] = [info.st_uid, oct(info.st_mode & 0o777)]
    report({"env": dict(os.environ), "uid": os.getuid(), "groups": os.getgroups(),
            "tree": tree, "repo": sorted(os.listdir("/repo")),
            "work": sorted(os.listdir("/work"))})
    return torch.log(x)


def scribble(x: Tensor) -> Tensor:
    if "scribble" in SEEN:
        report(SEEN["scribble"])
    seen = {}
    for target in ("/repo/pwned", "/usr/pwned", "/job/pwned", "/work" + "/fine"):
        try:
            Path(target).write_text("x")
            seen[target] = "written"
        except OSError as exc:
            seen[target] = exc.strerror
    try:
        Path("/tmp/big.bin").write_bytes(b"0" * (64 * 1024**2))
        seen["big"] = "written"
    except OSError as exc:
        seen["big"] = exc.strerror
    flood, made = Path("/work" + "/flood"), 0
    try:
        # exist_ok: a worker restarted after a kill (a slow flood on a loaded machine) runs
        # this again, and the first run's files are still there
        flood.mkdir(exist_ok=True)
        for made in range(100_000):  # past the scratch copy's number of files
            (flood / str(made)).touch()
        seen["flood"] = "written"
    except OSError as exc:
        seen["flood"] = exc.strerror
    seen["made"] = made
    for number in range(made + 1):
        (flood / str(number)).unlink(missing_ok=True)
    SEEN["scribble"] = seen
    report(seen)
    return torch.log(x)


def fork_storm(x: Tensor) -> Tensor:
    if "fork_storm" in SEEN:
        report(SEEN["fork_storm"])
    children, error = [], None
    for _ in range(300):  # bounded here, whatever the limits do
        try:
            pid = os.fork()
        except OSError as exc:
            error = exc.strerror
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    SEEN["fork_storm"] = {"forked": len(children), "error": error}
    report(SEEN["fork_storm"])
    return torch.log(x)


def hog(x: Tensor) -> Tensor:
    try:
        block = bytearray(64 * 1024**3)
        report({"allocated": len(block)})
    except MemoryError:
        report({"allocated": 0, "error": "MemoryError"})
    return torch.log(x)


def spin(x: Tensor) -> Tensor:
    while True:
        pass
    return torch.log(x)


UNRULY_FUNCTIONS


def printer(x: Tensor) -> Tensor:
    import sys

    chunk = "all work and no play " * 200
    while True:
        sys.stdout.write(chunk)
        sys.stderr.write(chunk)
    return torch.log(x)
"""
ATTACK_NAMES = (
    "dial",
    "snoop",
    "scribble",
    "fork_storm",
    "hog",
    "spin",
    "blocker",
    "segfault",
    "printer",
)


def _seen(record: dict[str, Any]) -> dict[str, Any]:
    assert record["status"] == "error" and "seen " in record["error"], record
    seen, _ = json.JSONDecoder().raw_decode(record["error"].split("seen ", 1)[1])
    return dict(seen)


@dataclass
class Contained:
    result: Any
    fingerprints: dict[str, str]
    repo: Path
    tree: dict[str, Any]  # the job's tree on the host, seen while the container ran
    socket_served: int

    def record(self, name: str) -> dict[str, Any]:
        found = [r for r in self.result.records if r["fingerprint"] == self.fingerprints[name]]
        assert len(found) == 1, (name, self.result.records, self.result.stderr[-1500:])
        return found[0]


@pytest.fixture(scope="module")
def live() -> tuple[Any, str]:
    engine = docker_support.client()
    return engine, docker_support.runner_image(engine)


@pytest.fixture(scope="module")
def contained(live: tuple[Any, str], tmp_path_factory: pytest.TempPathFactory) -> Any:

    client, image = live
    base = tmp_path_factory.mktemp("docker-hostile")
    repo, work_root = base / "repo", base / "work-root"
    work_root.mkdir()
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        f'[remote "origin"]\n\turl = https://x-access-token:{GIT_TOKEN}@github.com/o/r\n'
    )
    (repo / "runners").mkdir()
    (repo / "runners" / "__init__.py").write_text("")
    (repo / "runners" / "harness.py").write_text(FAKE_HARNESS)
    (repo / "analyzers").mkdir()
    (repo / "analyzers" / "__init__.py").write_text(FAKE_ANALYZERS)
    other_job = Path(tempfile.mkdtemp(prefix="numcheck-head-"))  # a concurrent job's checkout
    (other_job / "model.py").write_text(OTHER_JOB_TEXT)
    other_job.chmod(0o755)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    service = SocketService()
    files = [str(repo / ".git" / "config"), str(other_job / "model.py"), "/etc/shadow"]
    modules = {
        "hostile/__init__.py": "",
        "hostile/attacks.py": ATTACKS.replace("PORT", str(listener.getsockname()[1])).replace(
            "UNRULY_FUNCTIONS", UNRULY_FUNCTIONS.strip()
        ),
        "probes/__init__.py": "",
        "probes/sock.py": PROBE_SOCKET.replace("SOCKET_PATH", repr(service.path)),
        "probes/files.py": PROBE_FILES.replace("FILES", repr(files)).replace(
            "HOST_TOKEN", "numcheck-no-such-process"
        ),
        "probes/ordinary.py": ORDINARY,
    }
    fingerprints, findings = write_modules(repo, modules)
    wanted = {*ATTACK_NAMES, "through_socket", "through_files", "log_of_softmax"}
    assert wanted <= set(fingerprints), sorted(fingerprints)
    tree: dict[str, Any] = {}

    def look(record: dict[str, Any]) -> None:
        for top in [] if tree else work_root.iterdir():  # the job's tree, while it runs
            tree["root"] = (top.stat().st_uid, oct(top.stat().st_mode & 0o777))
            tree["parts"] = sorted(p.name for p in top.iterdir())
            for part in ("repo", "job"):
                info = (top / part).stat()
                tree[part] = (info.st_uid, oct(info.st_mode & 0o777))

    runner = DockerRunner(
        client=client, default_image=image, limits=LIVE_LIMITS, work_root=str(work_root)
    )
    job = {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "search_seconds": 1.0,
        # each attack is called for every entry's search (six of 1 s): room for a loaded
        # machine, where the spinning and printing attacks wait it out
        "finding_timeout": 30.0,
        "harvest": False,
        "fix": False,
    }
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in PLANTED_ENV.items():
                patch.setenv(name, value)
            result = runner.run(job, timeout=400, on_record=look)
        yield Contained(result, fingerprints, repo, tree, service.served)
    finally:
        listener.close()
        service.close()
        shutil.rmtree(other_job, ignore_errors=True)
    left = client.containers.list(all=True, filters={"label": f"{LABEL}=1"})
    assert [c for c in left if c.labels.get("numcheck.worker") == runner.worker_id] == []
    assert list(work_root.iterdir()) == []


def test_live_the_ordinary_finding_is_confirmed_beside_the_attacks(contained: Contained) -> None:
    result = contained.result
    assert result.outcome == "ok", (result.reason, result.stderr[-2000:])
    assert contained.record("log_of_softmax")["status"] == "confirmed"
    assert result.isolation["warnings"] == []


def test_live_the_prs_own_harness_does_not_stand_in(contained: Contained) -> None:
    assert contained.result.records, contained.result.stderr[-2000:]
    assert not [r for r in contained.result.records if r.get("forged")]


def test_live_no_network(contained: Contained) -> None:
    seen = _seen(contained.record("dial"))
    assert all(value.startswith("refused") for value in seen.values()), seen


def test_live_no_secret_no_git_no_privilege(contained: Contained) -> None:
    seen = _seen(contained.record("snoop"))
    text = json.dumps(seen)
    assert not any(value in text for value in PLANTED_ENV.values()), seen["env"]
    assert seen["uid"] == 10001 and seen["groups"] in ([], [10001]), seen
    assert ".git" not in seen["repo"] and ".git" not in seen["work"], seen
    if os.geteuid() == 0:  # the worker could give the copies to the container's user
        for path in ("/work", "/repo", "/job"):
            assert seen["tree"][path] == [10001, "0o700"], seen["tree"]
        assert seen["tree"]["/job/job.json"][1] == "0o600"


def test_live_the_job_tree_on_the_host_is_private(contained: Contained) -> None:
    assert contained.tree["root"] == (os.getuid(), "0o700"), contained.tree
    if os.geteuid() == 0:
        for part in ("repo", "job"):
            assert contained.tree[part] == (10001, "0o700"), contained.tree
    # the scratch copy is the container's own tmpfs, not a folder of the worker's disk
    assert contained.tree["parts"] == ["job", "repo"], contained.tree


def test_live_writes_outside_the_scratch_copy_fail(contained: Contained) -> None:
    seen = _seen(contained.record("scribble"))
    for target in ("/repo/pwned", "/usr/pwned", "/job/pwned"):
        assert seen[target] == "Read-only file system", seen
    # the container's scratch copy, spelt in two parts here and in ATTACKS: tests/test_docs.py
    # refuses a literal that looks like a path of this machine
    assert seen["/work" + "/fine"] == "written"
    assert seen["big"] == "File too large", seen
    assert not (contained.repo / "pwned").exists()
    # the scratch copy is a tmpfs capped in files too: a flood stops there
    assert seen["flood"] == "No space left on device" and seen["made"] < 70_000, seen


def test_live_a_fork_storm_hits_the_pids_limit(contained: Contained) -> None:
    seen = _seen(contained.record("fork_storm"))
    assert seen["error"] is not None and seen["forked"] < 100, seen


def test_live_an_allocation_past_the_limit_fails_inside_the_job(contained: Contained) -> None:
    assert _seen(contained.record("hog")) == {"allocated": 0, "error": "MemoryError"}


def test_live_an_endless_loop_is_that_findings_timeout(contained: Contained) -> None:
    record = contained.record("spin")
    assert record["status"] == "error" and record["error"].startswith("timeout"), record


def test_live_a_blocked_deadline_signal_is_stopped_by_the_supervisor(contained: Contained) -> None:
    record = contained.record("blocker")
    assert record["status"] == "error" and "supervisor" in record["error"], record


def test_live_a_crash_costs_only_its_finding(contained: Contained) -> None:
    record = contained.record("segfault")
    assert record["status"] == "error" and "SIGSEGV" in record["error"], record


def test_live_printing_without_end_is_that_findings_timeout(contained: Contained) -> None:
    record = contained.record("printer")
    assert record["status"] == "error" and record["error"].startswith("timeout"), record
    assert len(contained.result.stderr.encode()) <= 4000 * 4


def test_live_host_sockets_files_and_processes_are_out_of_reach(contained: Contained) -> None:
    error = contained.record("through_socket")["error"]
    assert "socket said: probe-ran, blocked" in error, error
    assert contained.socket_served == 0
    record = contained.record("through_files")
    assert record["status"] == "error" and "probe-ran" in record["error"], record
    for planted in (GIT_TOKEN, OTHER_JOB_TEXT):
        assert planted not in record["error"]
    seen = seen_by_probe(record["error"])
    assert seen["other jobs"] == [] and seen["host processes"] == [], seen
    assert seen["/etc/shadow"].startswith("unreadable"), seen
    # the harness's seccomp filter holds in the container too (runners/seccomp.py)
    assert contained.result.isolation["seccomp"] is True, contained.result.isolation
    refused = errno.EAFNOSUPPORT
    assert seen["sockets"] == {
        "inet": refused,
        "inet6": refused,
        "netlink": refused,
        "packet": refused,
        "pair": "x",
    }, seen["sockets"]


def test_live_the_image_runs_tensorflow_cpu_alone_with_keras_2(live: tuple[Any, str]) -> None:
    """tf_keras is installed without its declared `tensorflow` (requirements-no-deps.txt), so
    the image holds one TensorFlow, the lean one, and Keras 2 imports on it."""
    client, image = live
    probe = (
        "import importlib.metadata as m, json, tensorflow, tf_keras; "
        "print(json.dumps({'dists': sorted(d.metadata['Name'].lower().replace('-', '_') "
        "for d in m.distributions()), 'tf': tensorflow.__version__, "
        "'keras2': tf_keras.__version__}))"
    )
    out = client.containers.run(
        image, ["python", "-c", probe], remove=True, network_disabled=True, stderr=False
    )
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert "tensorflow_cpu" in seen["dists"] and "tensorflow" not in seen["dists"], seen
    assert seen["tf"] == seen["keras2"] == "2.21.0", seen


# ---------------------------------------------------------------- images and compose

DOCKER_DIR = Path(__file__).resolve().parent.parent / "docker"


@pytest.mark.parametrize("name", ["runner-cuda.Dockerfile", "bot.Dockerfile"])
def test_images_are_multi_stage_pinned_and_unprivileged(name: str) -> None:
    text = (DOCKER_DIR / name).read_text(encoding="utf-8")
    stages = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert len(stages) >= 2, "multi-stage"
    assert "ARG PYTHON_IMAGE=python:3.11" in text and ":latest" not in text
    assert "USER numcheck" in text or "USER 10001:10001" in text
    if name.startswith("runner-"):
        assert '"torch==2.13.0"' in text  # the version pyproject's torch extra pins
        assert '"pytest==' in text and '"libcst==1.9.0"' in text


def test_the_offline_runner_image_is_pinned_multi_stage_and_unprivileged() -> None:
    """runner-cpu is built from a wheelhouse (docker/build-runner-image): every requirement
    pinned to the version numcheck's own extras pin, the wheels left in the first stage."""
    import tomllib

    text = (DOCKER_DIR / "runner-cpu.Dockerfile").read_text(encoding="utf-8")
    assert len([line for line in text.splitlines() if line.startswith("FROM ")]) == 2
    assert "COPY --from=install /opt/numcheck /opt/numcheck" in text
    assert "USER 10001:10001" in text and ":latest" not in text
    pins = {}
    for line in (DOCKER_DIR / "runner-cpu.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version.strip(), f"not pinned: {line}"
            pins[name.strip()] = version.strip()
    project = tomllib.loads((DOCKER_DIR.parent / "pyproject.toml").read_text())["project"]
    declared = [
        *project["dependencies"],
        *project["optional-dependencies"]["torch"],
        *project["optional-dependencies"]["tensorflow"],
    ]
    for requirement in declared:
        name, sep, version = requirement.partition("==")
        if sep:
            assert pins.get(name) == version, (requirement, pins)
    assert "pytest" in pins


def test_compose_runs_the_whole_app_with_health_checks() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DOCKER_DIR / "compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert set(services) == {
        "web",
        "worker-static",
        "worker-dynamic",
        "worker-gpu",
        "redis",
        "postgres",
    }
    for name, service in services.items():
        assert "healthcheck" in service, name
    assert "bot.web:create_app()" in services["web"]["command"]
    for name in ("worker-static", "worker-dynamic", "worker-gpu"):
        command = services[name]["command"]
        assert command[:3] == ["celery", "-A", "bot.tasks"] and "-Q" in command
    assert services["worker-gpu"]["profiles"] == ["gpu"]
    assert any("docker.sock" in v for v in services["worker-dynamic"]["volumes"])
    assert not any("docker.sock" in v for v in services["web"].get("volumes", []))
    # the App's modules the commands name exist
    import importlib.util

    assert importlib.util.find_spec("bot.web") and importlib.util.find_spec("bot.tasks")


def _compose_command() -> list[str]:
    """Compose v2 (`docker compose`) where the plugin is installed, else Debian's
    docker-compose 1.29 (scripts/setup --dev installs it); neither is a failure."""
    plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if plugin.returncode == 0:
        return ["docker", "compose"]
    assert shutil.which("docker-compose"), (
        "neither `docker compose` nor docker-compose: apt-get install -y docker-compose"
    )
    return ["docker-compose"]


def test_compose_config_validates(tmp_path: Path) -> None:
    """Compose itself reads the file (with the env file and the key it names present), and
    resolves every service, the GPU profile's included."""
    (tmp_path / "compose.yml").write_text((DOCKER_DIR / "compose.yml").read_text())
    (tmp_path / "numcheck.env").write_text("NUMCHECK_APP_ID=1\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "numcheck-app.pem").write_text("not a key\n")
    command = [
        *_compose_command(),
        "-p",
        "numcheck",
        "-f",
        str(tmp_path / "compose.yml"),
        "--profile",
        "gpu",
    ]
    checked = subprocess.run(
        [*command, "config", "-q"], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
    listed = subprocess.run(
        [*command, "config", "--services"], capture_output=True, text=True, check=True
    )
    assert set(listed.stdout.split()) == {
        "web",
        "worker-static",
        "worker-dynamic",
        "worker-gpu",
        "redis",
        "postgres",
    }


def test_runner_from_the_worker_settings() -> None:
    from runners.docker import runner_from_env
    from runners.local import LocalRunner

    assert isinstance(runner_from_env({}), LocalRunner)
    assert runner_from_env({"NUMCHECK_REQUIRE_ISOLATION": "true"}).require_network_isolation
    assert runner_from_env({"NUMCHECK_SANDBOX_UIDS": "700000-700009"}).uids == range(700000, 700010)
    assert runner_from_env({}).uids == range(640000, 640256)
    gpu = runner_from_env(
        {
            "NUMCHECK_RUNNER": "docker",
            "NUMCHECK_RUNNER_GPUS": "0,1",
            "NUMCHECK_RUNNER_IMAGE": "acme/runner:1",
            "NUMCHECK_WORKSPACE_ROOT": "/var/lib/numcheck/work",
        }
    )
    assert isinstance(gpu, DockerRunner) and gpu.gpus and gpu.gpu_ids == ["0", "1"]
    assert gpu.default_image == "acme/runner:1" and gpu.work_root == "/var/lib/numcheck/work"
    cpu = runner_from_env({"NUMCHECK_RUNNER": "docker"})
    assert not cpu.gpus and cpu.default_image == DEFAULT_IMAGE and cpu.work_root is None
    assert cpu.images == {} and cpu.allowed_images == ()
    mapped = runner_from_env(
        {
            "NUMCHECK_RUNNER": "docker",
            "NUMCHECK_RUNNER_IMAGES": "a/b=img:1, c/d = img:2",
            "NUMCHECK_RUNNER_ALLOWED_IMAGES": "ghcr.io/a/*, img:*",
        }
    )
    assert mapped.images == {"a/b": "img:1", "c/d": "img:2"}
    assert mapped.allowed_images == ("ghcr.io/a/*", "img:*")
    with pytest.raises(ValueError, match="owner/name=image"):
        runner_from_env({"NUMCHECK_RUNNER": "docker", "NUMCHECK_RUNNER_IMAGES": "a/b"})
    with pytest.raises(ValueError, match="NUMCHECK_RUNNER"):
        runner_from_env({"NUMCHECK_RUNNER": "podman"})


def test_a_repositorys_configured_image_reaches_the_docker_runner(tmp_path: Path) -> None:
    """`runner_image` in the repository's config travels in the job (never as a setting the
    PR's code sees); the operator's per-repository map wins over it, and it wins over the
    default where the operator allows it."""
    from analyzers.config import config_from_mapping
    from runners.docker import DockerRunner
    from runners.pipeline import _job

    config = config_from_mapping({"runner_image": "ghcr.io/octo/runner:7"}, "x")
    job = _job(tmp_path, [], config, "octo/numlib")
    runner = DockerRunner(
        images={"octo/numlib": "mapped:1"},
        default_image="default:1",
        allowed_images=("ghcr.io/octo/*",),
    )
    assert runner.image_for(job) == "mapped:1"
    other = _job(tmp_path, [], config, "octo/other")
    assert runner.image_for(other) == "ghcr.io/octo/runner:7"
    plain = _job(tmp_path, [], config_from_mapping({}, "x"), "octo/numlib")
    assert runner.image_for(plain) == "mapped:1"
    assert runner.image_for(_job(tmp_path, [], config_from_mapping({}, "x"), "a/b")) == "default:1"
