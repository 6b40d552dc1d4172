"""The sandboxed harness through the local runner, and the dynamic stage of `analyze()`.

Each run starts a real child Python that imports torch and the fixture repository's code, so
runs are shared by module-scoped fixtures and kept few. Findings come from the real static
pass (`scan_source`) on the fixture files, serialised exactly as the pipeline sends them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepoFactory
from harness_support import with_reproducers

from analyzers.config import Config
from analyzers.static import scan_source
from runners.harness import SUPPORTED_FRAMEWORKS
from runners.local import LocalRunner, RunResult
from runners.pipeline import analyze

FIXTURE_REPO = Path(__file__).parent / "fixtures" / "dynamic" / "harness_repo"
SECRETS = {
    "NUMCHECK_WEBHOOK_SECRET": "s3cret",
    "NUMCHECK_PRIVATE_KEY": "/keys/numcheck-app-private-key.pem",
    "GITHUB_TOKEN": "ghs_numchecktesttoken0123456789",
}


def copy_repo(dest: Path) -> Path:
    """The harness writes reproducers (and the fixture code writes files) next to the code,
    so every run gets its own copy."""
    shutil.copytree(
        FIXTURE_REPO, dest, ignore=shutil.ignore_patterns("__pycache__", "env_seen.json")
    )
    return dest


def finding(repo: Path, path: str, function: str) -> dict[str, Any]:
    """The static pass's one finding in `function`, as the pipeline serialises it."""
    scan = scan_source((repo / path).read_text(encoding="utf-8"), path)
    assert scan.error is None, scan.error
    found = [f.to_json() for f in scan.findings if f.function == function]
    assert len(found) == 1, [(f.function, f.op, f.line) for f in scan.findings]
    return found[0]


def make_job(repo: Path, findings: list[dict[str, Any]], **settings: Any) -> dict[str, Any]:
    return {
        "repo": str(repo),
        "findings": findings,
        "entries": [],
        "seed": 0,
        "search_seconds": 2.0,
        "finding_timeout": 60.0,
        **settings,
    }


@dataclass
class Run:
    repo: Path
    result: RunResult
    fingerprints: dict[str, str]  # a short name -> the finding's fingerprint

    def record(self, name: str) -> dict[str, Any]:
        """The finding's confirmation record (a confirmed one is followed by the fix stage's
        record, tests/test_fix_stage.py)."""
        records = [
            r
            for r in self.result.records
            if r["fingerprint"] == self.fingerprints[name] and r.get("stage") is None
        ]
        assert len(records) == 1, (name, self.result.records, self.result.stderr[-2000:])
        return records[0]

    def has(self, name: str) -> bool:
        return any(r["fingerprint"] == self.fingerprints[name] for r in self.result.records)


def run_findings(
    repo: Path, named: dict[str, tuple[str, str]], timeout: float, **settings: Any
) -> Run:
    """Run the harness on findings given as name -> (path, function), in that order."""
    findings = {name: finding(repo, path, fn) for name, (path, fn) in named.items()}
    job = make_job(repo, list(findings.values()), **settings)
    # some probes leave what they saw in the checkout: the host's, bound writable
    result = with_reproducers(
        LocalRunner(checkout_copy=False).run(job, timeout=timeout), list(findings.values())
    )
    return Run(repo, result, {name: f["fingerprint"] for name, f in findings.items()})


# ---------------------------------------------------------------- one ordinary run


@pytest.fixture(scope="module")
def standard_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One job over the ordinary outcomes, with secrets in numcheck's own environment."""
    repo = copy_repo(tmp_path_factory.mktemp("standard") / "repo")
    with pytest.MonkeyPatch.context() as patch:
        for key, value in SECRETS.items():
            patch.setenv(key, value)
        return run_findings(
            repo,
            {
                "confirmed": ("hpkg/models.py", "log_of_softmax"),
                "env": ("hpkg/models.py", "env_probe"),
                "broken": ("hpkg/broken.py", "log_of_softmax"),
                "scipy": ("hpkg/sp_model.py", "logit_of"),
                "chatty": ("hpkg/models.py", "chatty"),
            },
            timeout=300,
        )


def test_standard_run_finishes(standard_run: Run) -> None:
    assert standard_run.result.outcome == "ok", standard_run.result.stderr[-2000:]
    assert standard_run.result.reason == ""


def test_confirmed_finding_comes_back_with_box_trigger_and_reproducer(standard_run: Run) -> None:
    record = standard_run.record("confirmed")
    assert record["status"] == "confirmed", record
    assert record["box"] == {
        "source": "synthesised",
        "target": "hpkg.models:log_of_softmax",
        "inputs": [
            {"dtype": "float32", "shape": [4, 8], "lo": -100.0, "hi": 100.0, "source": "default"}
        ],
        "tests": "no-tests",  # a made-up call, and the repository has no tests to offer one
    }
    trigger = record["trigger"]
    assert (trigger["where"], trigger["stage"], trigger["op"]) == ("forward", "restarts", "log")
    assert trigger["seed"] == 0 and trigger["reaches_output"] is True
    assert trigger["inputs"][0]["shape"] == [4, 8]
    script = record["reproducer"]
    compile(script, "reproducer.py", "exec")
    assert "from hpkg.models import log_of_softmax" in script
    assert "hpkg/models.py:" in script
    assert list(standard_run.repo.glob("*numcheck_repro*")) == [], "the check's script stays"


def test_secrets_never_reach_the_sandboxed_code(standard_run: Run) -> None:
    """env_probe raises if it sees the webhook secret, and dumps the environment it got."""
    record = standard_run.record("env")
    assert record["status"] == "confirmed", record
    seen = (standard_run.repo / "hpkg" / "env_seen.json").read_text(encoding="utf-8")
    environment = json.loads(seen)
    for key, value in SECRETS.items():
        assert key not in environment and value not in seen
    assert environment.get("HOME") != os.environ.get("HOME"), "the child gets its own HOME"


def test_module_that_fails_to_import_is_an_error_with_the_reason(standard_run: Run) -> None:
    record = standard_run.record("broken")
    assert record["status"] == "error"
    assert "ModuleNotFoundError" in record["error"]
    assert "numcheck_missing_dependency" in record["error"]
    assert "reproducer" not in record


def test_unsupported_framework_stays_potential_and_says_why(standard_run: Run) -> None:
    record = standard_run.record("scipy")
    assert record["status"] == "potential"
    assert "scipy" in record["error"] and "not supported" in record["error"]


def test_code_printing_without_a_newline_does_not_lose_its_record(standard_run: Run) -> None:
    assert standard_run.has("chatty"), standard_run.result.records
    assert standard_run.record("chatty")["status"] == "confirmed"


# ---------------------------------------------------------------- time limits


@pytest.fixture(scope="module")
def per_finding_timeout_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """spin() never returns; the finding after it must still be confirmed."""
    repo = copy_repo(tmp_path_factory.mktemp("per-finding") / "repo")
    return run_findings(
        repo,
        {
            "spin": ("hpkg/models.py", "spin"),
            "confirmed": ("hpkg/models.py", "log_of_softmax"),
        },
        timeout=300,
        finding_timeout=6.0,
        search_seconds=1.0,
    )


def test_looping_finding_times_out_and_the_next_one_still_runs(
    per_finding_timeout_run: Run,
) -> None:
    run = per_finding_timeout_run
    assert run.result.outcome == "ok", run.result.stderr[-2000:]
    spin = run.record("spin")
    assert spin["status"] == "error" and "timeout" in spin["error"].lower(), spin
    assert run.record("confirmed")["status"] == "confirmed"


def test_looping_finding_is_reported_as_a_timeout(per_finding_timeout_run: Run) -> None:
    spin = per_finding_timeout_run.record("spin")
    assert spin["error"].startswith("timeout"), spin["error"]


def test_deadline_survives_code_that_swallows_exceptions(tmp_path: Path) -> None:
    repo = copy_repo(tmp_path / "repo")
    run = run_findings(
        repo,
        {
            "stubborn": ("hpkg/models.py", "stubborn"),
            "scipy": ("hpkg/sp_model.py", "logit_of"),
        },
        # a safety net only (a swallowed deadline would spin until it): 10 s was passed once
        # under load by the worker's start and the two 2 s findings alone
        timeout=30,
        finding_timeout=2.0,
        search_seconds=1.0,
    )
    assert run.result.outcome == "ok", run.result.reason
    assert "timeout" in run.record("stubborn")["error"].lower()
    assert run.record("scipy")["status"] == "potential"


def test_a_stage_whose_deadline_comes_back_wrapped_is_a_timeout_and_the_rest_an_error() -> None:
    """The PR's code may catch the deadline and raise its own error from it; that is still
    the finding's time running out, not a crash of the code. Anything else is an error
    record with the reason, and the PR's `exit()` says it exited."""
    from runners.harness import FindingTimeout, _guarded

    def rewrapped() -> dict[str, Any]:
        try:
            raise FindingTimeout("the code did not finish within 2 s")
        except BaseException as exc:
            raise RuntimeError("the step failed") from exc

    def crashes() -> dict[str, Any]:
        raise ValueError("bad shape")

    def exits() -> dict[str, Any]:
        raise SystemExit(3)

    base = {"fingerprint": "f", "stage": "precision"}
    record = _guarded(base, 2.0, rewrapped)
    assert record["status"] == "error" and record["error"].startswith("timeout"), record
    assert record["stage"] == "precision" and record["elapsed"] >= 0
    assert _guarded(base, 2.0, crashes)["error"] == "crashed: ValueError: bad shape"
    assert _guarded(base, 2.0, exits, exited=" early")["error"] == (
        "the code exited with status 3 early"
    )
    assert _guarded(base, 2.0, lambda: {"status": "confirmed"})["status"] == "confirmed"


def test_a_deadline_swallowed_on_its_way_out_still_ends_the_stage_as_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fix stage once answered "no candidate fix applies" on a loaded machine: its
    deadline struck inside libcst's metadata resolution and came out as a KeyError, read as
    "the node is not there", so the stage returned a verdict it never reached. A stage whose
    deadline struck is a timeout, whatever it returned, except a proof: an input that failed
    stays a proof."""
    import contextlib
    import time

    import runners.harness as harness

    def swallows(status: str) -> dict[str, Any]:
        with contextlib.suppress(BaseException):  # what a wrapping library does
            time.sleep(0.5)
        return {"status": status, "tried": [], "reason": "no candidate fix applies"}

    base = {"fingerprint": "f"}
    record = harness._guarded(base, 0.05, lambda: swallows("not-triggered"))
    assert record["status"] == "error" and record["error"].startswith("timeout"), record
    assert harness._guarded(base, 0.05, lambda: swallows("confirmed"))["status"] == "confirmed"
    assert harness._guarded(base, 2.0, lambda: swallows("not-triggered"))["status"] == (
        "not-triggered"
    )

    monkeypatch.setattr(harness, "fix_finding", lambda *a, **k: swallows("none-validated"))
    job = {"repo": ".", "fix_timeout": 0.05}
    fix = harness._fix_stage(job, {}, {"entry": None, "inputs": None, "reproducer": ""})
    assert fix["status"] == "error" and fix["reason"].startswith("timeout: the fix stage"), fix


@pytest.mark.parametrize(
    "ending", ["exit()", "quit()", "import sys\nsys.exit(0)", "raise SystemExit"]
)
def test_code_that_exits_ends_its_finding_not_the_harness(tmp_path: Path, ending: str) -> None:
    """A script without a `__main__` guard that ends in `exit()` (status 0) used to end the
    harness, so every later finding became 'crashed: exited without finishing'."""
    repo = copy_repo(tmp_path / "repo")
    (repo / "hpkg" / "exits.py").write_text(
        "import torch\n\n\ndef log_of_softmax(logits):\n"
        "    return torch.log(torch.softmax(logits, dim=-1))\n\n\n"
        f"{ending}\n",
        encoding="utf-8",
    )
    run = run_findings(
        repo,
        {
            "exits": ("hpkg/exits.py", "log_of_softmax"),
            "confirmed": ("hpkg/models.py", "log_of_softmax"),
        },
        timeout=120,
        search_seconds=1.0,
    )
    assert run.result.outcome == "ok", run.result.reason
    assert run.record("exits")["status"] == "error"
    assert "exited with status" in run.record("exits")["error"]
    assert run.record("confirmed")["status"] == "confirmed"


def test_whole_run_timeout_keeps_the_records_already_finished(tmp_path: Path) -> None:
    """The runner kills the process group at `timeout`; what was flushed before survives."""
    repo = copy_repo(tmp_path / "repo")
    run = run_findings(
        repo,
        {
            "confirmed": ("hpkg/models.py", "log_of_softmax"),
            "spin": ("hpkg/models.py", "spin"),
        },
        timeout=20,  # the worker's start and the confirmed finding fit, even under load
        finding_timeout=600.0,
        search_seconds=1.0,
    )
    assert run.result.outcome == "timeout"
    assert "20 s" in run.result.reason
    assert run.record("confirmed")["status"] == "confirmed"
    assert not run.has("spin")


# ---------------------------------------------------------------- TensorFlow


def test_tensorflow_finding(tmp_path: Path) -> None:
    """Confirmed where the harness supports TensorFlow; otherwise potential, with the reason."""
    repo = copy_repo(tmp_path / "repo")
    run = run_findings(repo, {"tf": ("hpkg/tf_model.py", "log_of_softmax")}, timeout=300)
    assert run.result.outcome == "ok", run.result.stderr[-2000:]
    record = run.record("tf")
    if "tensorflow" in SUPPORTED_FRAMEWORKS:
        assert record["status"] == "confirmed", record
        assert "import tensorflow as tf" in record["reproducer"]
        assert "from hpkg.tf_model import log_of_softmax" in record["reproducer"]
    else:
        assert record["status"] == "potential"
        assert "tensorflow" in record["error"] and "not supported" in record["error"]


# ---------------------------------------------------------------- analyze()

MODELS_MAIN = """\
import torch


def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2
"""
LOG_OF_SOFTMAX = """

def log_of_softmax(logits: torch.Tensor) -> torch.Tensor:
    probs = torch.softmax(logits, dim=-1)
    return torch.log(probs)
"""
ROW_NORM = """

def row_norm(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt((x**2).sum(-1))
"""
MODELS_FEATURE = MODELS_MAIN + LOG_OF_SOFTMAX + ROW_NORM


def line_of(source: str, text: str) -> int:
    return source.splitlines().index(text) + 1


# Importing this module leaves a mark: proof that code ran (or did not).
MARKED = "from pathlib import Path\n\nPath({marker!r}).touch()\n"


def _config() -> Config:
    return dataclasses.replace(Config(), search_seconds=2.0, dynamic_timeout=300)


def test_analyze_confirms_a_finding_added_on_the_feature_branch(git_repo: GitRepoFactory) -> None:
    repo = git_repo(
        {"model/__init__.py": "", "model/layers.py": MODELS_MAIN},
        {"model/layers.py": MODELS_MAIN + LOG_OF_SOFTMAX},
    )
    result = analyze(repo.root, "main", "feature", _config())
    assert result.errors == []
    assert [(f.path, f.op, f.function) for f in result.findings] == [
        ("model/layers.py", "log", "log_of_softmax")
    ]
    (found,) = result.findings
    assert found.status == "confirmed" and found.error is None
    assert found.reproducer and "from model.layers import log_of_softmax" in found.reproducer
    assert found.trigger is not None and found.trigger["where"] == "forward"
    assert found.trigger["box"]["target"] == "model.layers:log_of_softmax"
    assert "dynamic" in result.timings and "static" in result.timings


def test_analyze_without_the_dynamic_stage_runs_no_code(
    git_repo: GitRepoFactory, tmp_path: Path
) -> None:
    marker = tmp_path / "imported.marker"
    repo = git_repo(
        {"model/__init__.py": MARKED.format(marker=str(marker)), "model/layers.py": MODELS_MAIN},
        {"model/layers.py": MODELS_FEATURE},
    )
    config = dataclasses.replace(_config(), dynamic=False)
    result = analyze(repo.root, "main", "feature", config)
    assert [f.op for f in result.findings] == ["log", "sqrt"]
    assert {f.status for f in result.findings} == {"potential"}
    assert all(f.reproducer is None and f.trigger is None for f in result.findings)
    assert "dynamic" not in result.timings and result.errors == []
    assert not marker.exists()


def test_crashed_runner_marks_unfinished_findings_and_keeps_static_ones(
    git_repo: GitRepoFactory, tmp_path: Path
) -> None:
    """A 'python' that reports the first finding and exits 3 stands in for a harness that
    dies half-way (out of memory, a segfault in an extension)."""
    fake = tmp_path / "crashing-python"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "job = json.load(sys.stdin)\n"
        "first = job['findings'][0]['fingerprint']\n"
        "print(json.dumps({'fingerprint': first, 'status': 'not-triggered',\n"
        "                  'nonce': job['nonce']}))\n"
        "sys.exit(3)\n",
        encoding="utf-8",
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    repo = git_repo(
        {"model/__init__.py": "", "model/layers.py": MODELS_MAIN},
        {"model/layers.py": MODELS_FEATURE},
    )
    result = analyze(repo.root, "main", "feature", _config(), runner=LocalRunner(python=str(fake)))
    assert [(f.op, f.line) for f in result.findings] == [
        ("log", line_of(MODELS_FEATURE, "    return torch.log(probs)")),
        ("sqrt", line_of(MODELS_FEATURE, "    return torch.sqrt((x**2).sum(-1))")),
    ]
    first, second = result.findings
    assert first.status == "not-triggered" and first.error is None
    assert second.status == "error" and second.error is not None
    assert second.error.startswith("crashed") and "status 3" in second.error
    dynamic_errors = [e for e in result.errors if e.stage == "dynamic"]
    assert len(dynamic_errors) == 1 and "crashed" in dynamic_errors[0].message
    assert "dynamic" in result.timings
