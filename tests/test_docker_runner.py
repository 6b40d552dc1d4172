"""The Docker runner: the container specification it builds (every limit present), the sweep
rule, image choice, and, where a Docker engine answers, real containers running hostile code.

On machines without an engine (the project's own) the live tests are skipped with the
reason; the specification tests always run.
"""

from __future__ import annotations

import json
import os
import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest

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

LIMITS = Limits(memory_bytes=2 * 1024**3, processes=128, file_bytes=64 * 1024**2,
                open_files=512, cpus=1.5, tmpfs_bytes=128 * 1024**2, output_bytes=8 * 1024**2)


def spec(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "image": "numcheck/runner-cpu:test", "checkout": "/srv/checkout",
        "scratch": "/srv/scratch", "job_dir": "/srv/job", "run_id": "r1", "worker_id": "w1",
        "limits": LIMITS, "timeout": 100.0, "gpu": False, "now": 1000.0}
    arguments.update(overrides)
    return container_spec(**arguments)


def test_no_network() -> None:
    built = spec()
    assert built["network_disabled"] is True and built["network_mode"] == "none"


def test_read_only_root_with_a_small_tmpfs() -> None:
    built = spec()
    assert built["read_only"] is True
    assert built["tmpfs"] == {"/tmp": f"rw,nosuid,nodev,size={128 * 1024**2}"}
    assert built["environment"]["HOME"] == built["environment"]["TMPDIR"] == "/tmp"


def test_checkout_read_only_and_a_writable_scratch_copy() -> None:
    volumes = spec()["volumes"]
    assert volumes["/srv/checkout"] == {"bind": "/repo", "mode": "ro"}
    assert volumes["/srv/scratch"] == {"bind": "/work", "mode": "rw"}
    assert volumes["/srv/job"] == {"bind": "/job", "mode": "ro"}
    assert spec()["working_dir"] == "/work"


def test_declared_dependencies_are_mounted_read_only_only_when_there_are_some() -> None:
    assert "/srv/deps" not in spec()["volumes"]
    assert spec(dependencies="/srv/deps")["volumes"]["/srv/deps"] == {"bind": "/deps",
                                                                      "mode": "ro"}


def test_unprivileged() -> None:
    built = spec()
    assert built["user"] == "10001:10001" and not built["user"].startswith("0")
    assert built["cap_drop"] == ["ALL"] and "cap_add" not in built
    assert "no-new-privileges:true" in built["security_opt"]
    assert built["privileged"] is False


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


def test_output_cap_on_the_logs() -> None:
    assert spec()["log_config"] == {"type": "json-file",
                                    "config": {"max-size": str(8 * 1024**2), "max-file": "1"}}


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
    built = spec(limits=Limits(memory_bytes=None, processes=None, file_bytes=None,
                               open_files=None, cpus=None))
    assert "mem_limit" not in built and "nano_cpus" not in built
    assert built["pids_limit"] == -1
    assert {u["name"] for u in built["ulimits"]} == {"core", "cpu"}


def test_sdk_accepts_the_specification() -> None:
    """The SDK turns the spec into an Engine API host config without complaint."""
    docker = pytest.importorskip("docker")
    built = spec(gpu=True)
    host = docker.types.HostConfig(
        version="1.44", binds=[f"{k}:{v['bind']}:{v['mode']}" for k, v in built["volumes"].items()],
        tmpfs=built["tmpfs"], read_only=True, cap_drop=built["cap_drop"],
        security_opt=built["security_opt"], pids_limit=built["pids_limit"],
        ulimits=built["ulimits"], mem_limit=built["mem_limit"],
        memswap_limit=built["memswap_limit"], nano_cpus=built["nano_cpus"],
        network_mode="none", log_config=built["log_config"],
        device_requests=built["device_requests"])
    assert host["ReadonlyRootfs"] is True and host["NetworkMode"] == "none"
    assert {u["Name"] for u in host["Ulimits"]} == {"core", "fsize", "nofile", "cpu"}
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
    assert runner.image_for({"runner_image": "own:1", "repository": "acme/models"}) == "own:1"


def test_no_engine_is_isolation_unavailable(tmp_path: Path) -> None:
    docker = pytest.importorskip("docker")
    client = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.44")
    result = DockerRunner(client=client).run({"repo": str(tmp_path), "findings": []}, 10)
    assert result.outcome == "isolation-unavailable"
    assert "no Docker engine answers" in result.reason


# ---------------------------------------------------------------- with a real engine


def engine() -> Any:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        pytest.skip(f"no Docker engine answers here ({type(exc).__name__}); the DockerRunner "
                    "live tests need one")
    image = os.environ.get("NUMCHECK_TEST_RUNNER_IMAGE", "numcheck/runner-cpu:dev")
    try:
        client.images.get(image)
    except Exception:
        pytest.skip(f"the runner image {image} is not built here "
                    "(docker build -f docker/runner-cpu.Dockerfile -t numcheck/runner-cpu:dev .)")
    return client, image


HOSTILE = textwrap.dedent('''\
    import json, os, socket
    from pathlib import Path
    import torch

    def attack(x: torch.Tensor) -> torch.Tensor:
        seen = {"uid": os.getuid(), "env": sorted(os.environ)}
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=1)
            seen["net"] = "connected"
        except OSError as exc:
            seen["net"] = str(exc)
        try:
            Path("/repo/pwned").write_text("x")
            seen["repo"] = "written"
        except OSError as exc:
            seen["repo"] = str(exc)
        try:
            Path("/usr/pwned").write_text("x")
            seen["root"] = "written"
        except OSError as exc:
            seen["root"] = str(exc)
        raise RuntimeError(json.dumps(seen))
''')


def test_hostile_code_in_a_real_container(tmp_path: Path) -> None:
    client, image = engine()
    from analyzers.static import scan_source

    repo = tmp_path / "repo"
    (repo / "h").mkdir(parents=True)
    (repo / "h" / "__init__.py").write_text("")
    (repo / "h" / "a.py").write_text(HOSTILE + "\n\ndef f(x: torch.Tensor):\n"
                                      "    return torch.log(attack(x))\n")
    findings = [f.to_json() for f in scan_source((repo / "h" / "a.py").read_text(), "h/a.py")
                .findings]
    runner = DockerRunner(client=client, default_image=image,
                          limits=Limits(memory_bytes=2 * 1024**3, processes=128))
    result = runner.run({"repo": str(repo), "findings": findings, "harvest": False,
                         "fix": False, "search_seconds": 1.0}, timeout=120)
    assert result.outcome == "ok", (result.reason, result.stderr)
    text = json.dumps(result.records)
    assert "connected" not in text.replace("not connected", "")
    assert "Read-only file system" in text
    assert not (repo / "pwned").exists()
    left = client.containers.list(all=True, filters={"label": f"{LABEL}=1"})
    assert [c for c in left if c.labels.get("numcheck.worker") == runner.worker_id] == []
    assert socket.gethostname()  # the worker is still here


# ---------------------------------------------------------------- images and compose

DOCKER_DIR = Path(__file__).resolve().parent.parent / "docker"


@pytest.mark.parametrize("name", ["runner-cpu.Dockerfile", "runner-cuda.Dockerfile",
                                  "bot.Dockerfile"])
def test_images_are_multi_stage_pinned_and_unprivileged(name: str) -> None:
    text = (DOCKER_DIR / name).read_text(encoding="utf-8")
    stages = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert len(stages) >= 2, "multi-stage"
    assert "ARG PYTHON_IMAGE=python:3.11" in text and ":latest" not in text
    assert "USER numcheck" in text or "USER 10001:10001" in text
    if name.startswith("runner-"):
        assert '"torch==2.13.0"' in text  # the version pyproject's torch extra pins
        assert '"pytest==' in text and '"libcst==1.9.0"' in text
    if name == "runner-cpu.Dockerfile":
        assert '"tensorflow-cpu==2.21.0"' in text


def test_compose_runs_the_whole_app_with_health_checks() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DOCKER_DIR / "compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert set(services) == {"web", "worker-static", "worker-dynamic", "worker-gpu", "redis",
                             "postgres"}
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


def test_runner_from_the_worker_settings() -> None:
    from runners.docker import runner_from_env
    from runners.local import LocalRunner

    assert isinstance(runner_from_env({}), LocalRunner)
    assert runner_from_env({"NUMCHECK_REQUIRE_ISOLATION": "true"}).require_network_isolation
    gpu = runner_from_env({"NUMCHECK_RUNNER": "docker", "NUMCHECK_RUNNER_GPUS": "0,1",
                           "NUMCHECK_RUNNER_IMAGE": "acme/runner:1",
                           "NUMCHECK_WORKSPACE_ROOT": "/var/lib/numcheck/work"})
    assert isinstance(gpu, DockerRunner) and gpu.gpus and gpu.gpu_ids == ["0", "1"]
    assert gpu.default_image == "acme/runner:1" and gpu.work_root == "/var/lib/numcheck/work"
    cpu = runner_from_env({"NUMCHECK_RUNNER": "docker"})
    assert not cpu.gpus and cpu.default_image == DEFAULT_IMAGE and cpu.work_root is None
    with pytest.raises(ValueError, match="NUMCHECK_RUNNER"):
        runner_from_env({"NUMCHECK_RUNNER": "podman"})


def test_a_repositorys_configured_image_reaches_the_docker_runner(tmp_path: Path) -> None:
    """`runner_image` in the repository's config travels in the job (never as a setting the
    PR's code sees) and wins over the worker's per-repository map and defaults."""
    from analyzers.config import config_from_mapping
    from runners.docker import DockerRunner
    from runners.pipeline import _job

    config = config_from_mapping({"runner_image": "ghcr.io/octo/runner:7"}, "x")
    job = _job(tmp_path, [], config, "octo/numlib")
    runner = DockerRunner(images={"octo/numlib": "mapped:1"}, default_image="default:1")
    assert runner.image_for(job) == "ghcr.io/octo/runner:7"
    plain = _job(tmp_path, [], config_from_mapping({}, "x"), "octo/numlib")
    assert runner.image_for(plain) == "mapped:1"
    assert runner.image_for(_job(tmp_path, [], config_from_mapping({}, "x"), "a/b")) == \
        "default:1"
