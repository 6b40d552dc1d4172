"""The `numcheck` command line as users and CI run it: the installed console script, real git.

Exit status and output formats are a contract (docs/architecture.md, command line), so
they are checked on the real executable in a subprocess; the rest calls `bot.cli.main`.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import GitRepo, GitRepoFactory, RunCli, RunMain

from analyzers import __version__
from analyzers.report.jsonout import SCHEMA_PATH

FIXTURES = Path(__file__).parent / "fixtures"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

MODEL_MAIN = """\
import torch


def old_loss(x):
    return torch.log(x)
"""
# Lines 8-9 are new: a second unguarded log, in a function of its own.
MODEL_RISKY = (
    MODEL_MAIN
    + """\


def new_loss(p):
    return torch.log(p)
"""
)
MODEL_SAFE = (
    MODEL_MAIN
    + """\


def scale(x):
    return torch.log(x.clamp_min(1e-6)) * 2 + 1
"""
)


@pytest.fixture
def risky_pr(git_repo: GitRepoFactory) -> GitRepo:
    """main has an old unguarded log; feature adds a second one (line 9)."""
    return git_repo({"model.py": MODEL_MAIN}, {"model.py": MODEL_RISKY})


def review(repo: GitRepo, *extra: str) -> list[str]:
    return ["review", str(repo.root), "--base", "main", "--head", "feature", *extra]


# For the tests of what is reported and where, not of how it is proven: the dynamic pass
# costs seconds of CPU a run (test_json_matches_schema_and_contract, the demo's, test_sarif and
# test_markdown_has_fingerprint_marker run it through the console script).
STATIC = "--static-only"


def parse_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def validator(schema_path: Path) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


# ---------------------------------------------------------------- exit status, real executable


def test_review_reports_only_added_lines(risky_pr: GitRepo, run_cli: RunCli) -> None:
    proc = run_cli(*review(risky_pr, "--format", "json", STATIC))
    assert proc.returncode == 1, proc.stderr
    findings = parse_json(proc)["findings"]
    assert [(f["path"], f["line"], f["function"], f["op"]) for f in findings] == [
        ("model.py", 9, "new_loss", "log")
    ]


def test_review_text_names_file_and_line(risky_pr: GitRepo, run_cli: RunCli) -> None:
    proc = run_cli(*review(risky_pr, STATIC))
    assert proc.returncode == 1, proc.stderr
    assert "model.py:9:" in proc.stdout
    assert "model.py:5:" not in proc.stdout  # the log that was already on main
    assert "\x1b[" not in proc.stdout  # no colour when not a terminal


def test_review_clean_diff_exits_0(git_repo: GitRepoFactory, run_cli: RunCli) -> None:
    repo = git_repo({"model.py": MODEL_MAIN}, {"model.py": MODEL_SAFE})
    proc = run_cli(*review(repo, "--format", "json"))
    assert proc.returncode == 0, proc.stderr
    data = parse_json(proc)
    assert data["findings"] == []
    assert data["errors"] == []
    assert data["files_analyzed"] == 1


def test_review_defaults_to_head_and_merge_base_with_main(
    risky_pr: GitRepo, run_cli: RunCli
) -> None:
    """`numcheck review` inside a checkout on the PR branch: REPO ., base = merge base."""
    proc = run_cli("review", "--format", "json", STATIC, cwd=risky_pr.root)
    assert proc.returncode == 1, proc.stderr
    data = parse_json(proc)
    assert data["base"] == risky_pr.sha("main")
    assert data["head"] == risky_pr.sha("feature")
    assert [f["line"] for f in data["findings"]] == [9]


def test_unknown_ref_exits_2(risky_pr: GitRepo, run_cli: RunCli) -> None:
    proc = run_cli("review", risky_pr.root, "--base", "no-such-branch", "--head", "feature")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "numcheck: error:" in proc.stderr
    assert "no-such-branch" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_not_a_git_repository_exits_2(tmp_path: Path, run_cli: RunCli) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "model.py").write_text(MODEL_RISKY, encoding="utf-8")
    proc = run_cli("review", plain, "--base", "main", "--head", "HEAD")
    assert proc.returncode == 2
    assert "not a git repository" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_directory_exits_2(tmp_path: Path, run_cli: RunCli) -> None:
    proc = run_cli("review", tmp_path / "nowhere", "--base", "main")
    assert proc.returncode == 2
    assert "nowhere" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_config_with_unknown_key_exits_2(git_repo: GitRepoFactory, run_cli: RunCli) -> None:
    pyproject = '[project]\nname = "m"\n\n[tool.numcheck]\nexlude = ["vendor/**"]\n'
    repo = git_repo(
        {"model.py": MODEL_MAIN, "pyproject.toml": pyproject}, {"model.py": MODEL_RISKY}
    )
    proc = run_cli(*review(repo))
    assert proc.returncode == 2
    assert "exlude" in proc.stderr
    assert "'exclude'" in proc.stderr  # the suggestion
    assert "pyproject.toml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_usage_error_exits_2(run_cli: RunCli) -> None:
    proc = run_cli("review", "--format", "yaml")
    assert proc.returncode == 2
    assert "--format" in proc.stderr


def test_version(run_cli: RunCli) -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"numcheck {__version__}"


# ---------------------------------------------------------------- formats, real executable


def test_json_matches_schema_and_contract(risky_pr: GitRepo, run_cli: RunCli) -> None:
    proc = run_cli(*review(risky_pr, "--format", "json"))
    assert proc.returncode == 1, proc.stderr
    data = parse_json(proc)
    validator(SCHEMA_PATH).validate(data)
    assert data["base"] == risky_pr.sha("main")
    assert data["head"] == risky_pr.sha("feature")
    assert SHA_RE.match(data["base"]) and SHA_RE.match(data["head"])
    (finding,) = data["findings"]
    assert finding["path"] == "model.py"  # relative to the repository root
    assert finding["line"] == 9  # 1-based
    assert finding["op"] == "log"  # canonical name, not "torch.log"
    assert finding["framework"] == "torch"
    assert finding["call"] == "torch.log(p)"
    # The dynamic pass ran the PR's code in the sandbox and proved it.
    assert finding["status"] == "confirmed", finding["error"]
    assert finding["trigger"]["where"] in ("forward", "backward")
    assert "from model import" in finding["reproducer"]
    assert re.fullmatch(r"[0-9a-f]{8,}", finding["fingerprint"])
    assert set(data["timings"]) >= {"diff", "static", "dynamic"}


def test_json_paths_are_relative_in_subdirectories(
    git_repo: GitRepoFactory, run_cli: RunCli
) -> None:
    repo = git_repo({"README": "x\n"}, {"src/pkg/model.py": MODEL_MAIN})
    proc = run_cli(*review(repo, "--format", "json", STATIC))
    assert proc.returncode == 1, proc.stderr
    assert [(f["path"], f["line"]) for f in parse_json(proc)["findings"]] == [
        ("src/pkg/model.py", 5)
    ]


def test_sarif(risky_pr: GitRepo, run_cli: RunCli) -> None:
    proc = run_cli(*review(risky_pr, "--format", "sarif"))
    assert proc.returncode == 1, proc.stderr
    sarif = parse_json(proc)
    assert sarif["version"] == "2.1.0"
    validator(FIXTURES / "sarif-schema-2.1.0.json").validate(sarif)
    (result,) = sarif["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "model.py"
    assert location["region"]["startLine"] == 9


def test_markdown_has_fingerprint_marker(risky_pr: GitRepo, run_cli: RunCli) -> None:
    # a fingerprint is the finding's place and op, never its proof: the static run names it
    json_proc = run_cli(*review(risky_pr, "--format", "json", STATIC))
    fingerprint = parse_json(json_proc)["findings"][0]["fingerprint"]
    proc = run_cli(*review(risky_pr, "--format", "markdown"))
    assert proc.returncode == 1, proc.stderr
    assert f"<!-- numcheck:fingerprint={fingerprint} -->" in proc.stdout


def test_output_file(risky_pr: GitRepo, run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    proc = run_cli(*review(risky_pr, "--format", "json", "--output", str(out), STATIC))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [f["line"] for f in data["findings"]] == [9]


def test_unwritable_output_exits_2(risky_pr: GitRepo, run_cli: RunCli, tmp_path: Path) -> None:
    proc = run_cli(*review(risky_pr, "--output", str(tmp_path / "no" / "such" / "dir.txt"), STATIC))
    assert "Traceback" not in proc.stderr
    assert "numcheck: error:" in proc.stderr
    assert proc.returncode == 2


# ---------------------------------------------------------------- scan


def test_scan_file_and_directory(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(MODEL_MAIN, encoding="utf-8")
    (tmp_path / "pkg" / "b.py").write_text("def f(x):\n    return x + 1\n", encoding="utf-8")
    (tmp_path / "top.py").write_text(MODEL_RISKY, encoding="utf-8")

    proc = run_cli("scan", "top.py", "--format", "json", STATIC, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    data = parse_json(proc)
    validator(SCHEMA_PATH).validate(data)
    assert data["base"] is None and data["head"] is None
    # Whole files: the old log counts too.
    assert [(f["path"], f["line"]) for f in data["findings"]] == [("top.py", 5), ("top.py", 9)]

    proc = run_cli("scan", "pkg", "--format", "json", STATIC, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    data = parse_json(proc)
    assert [(f["path"], f["line"]) for f in data["findings"]] == [("pkg/a.py", 5)]
    assert data["files_analyzed"] == 2


def test_scan_of_a_file_outside_the_working_directory(tmp_path: Path, run_cli: RunCli) -> None:
    """`numcheck scan /elsewhere/model.py`: named relative to its own folder, and the dynamic
    pass imports it from there (it used to walk the whole enclosing folder, /tmp included,
    into a workspace inside it)."""
    elsewhere, work = tmp_path / "elsewhere", tmp_path / "work"
    elsewhere.mkdir()
    work.mkdir()
    (elsewhere / "model.py").write_text(
        "import torch\n\n\ndef rate(x: torch.Tensor) -> torch.Tensor:\n    return torch.log(x)\n",
        encoding="utf-8",
    )
    proc = run_cli("scan", elsewhere / "model.py", "--format", "json", cwd=work, timeout=300)
    assert proc.returncode == 1, proc.stderr
    data = parse_json(proc)
    assert [(f["path"], f["line"], f["status"]) for f in data["findings"]] == [
        ("model.py", 5, "confirmed")
    ], data["errors"]


def test_scan_clean_file_exits_0(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "ok.py").write_text("def f(x):\n    return x + 1\n", encoding="utf-8")
    proc = run_cli("scan", "ok.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_scan_missing_path_is_an_error_entry(
    tmp_path: Path, run_main: RunMain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The missing path is recorded per path; a real file next to it is still analysed, and
    the exit status says an error stopped part of the run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "top.py").write_text(MODEL_MAIN, encoding="utf-8")
    code, out, _ = run_main(["scan", "missing.py", "top.py", "--format", "json", STATIC])
    data = json.loads(out)
    assert data["errors"] == [
        {"stage": "static", "message": "no such file or directory", "path": "missing.py"}
    ]
    assert [f["line"] for f in data["findings"]] == [5]
    assert code == 2


def test_scan_only_missing_paths_exits_2(tmp_path: Path, run_cli: RunCli) -> None:
    proc = run_cli("scan", "missing.py", cwd=tmp_path)
    assert "missing.py" in proc.stdout + proc.stderr
    assert proc.returncode == 2


# ---------------------------------------------------------------- demo


def temp_env(tmp_path: Path) -> dict[str, str]:
    """Point tempfile at tmp_path, so a demo repository cannot land in the real /tmp."""
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    return {"TMPDIR": str(temp)}


def test_demo_text_holds_back_the_unproven_and_cleans_up(run_cli: RunCli, tmp_path: Path) -> None:
    env = temp_env(tmp_path)
    proc = run_cli("demo", env=env)
    assert proc.returncode == 1, proc.stderr
    assert "model/losses.py:" in proc.stdout
    # what the App would comment inline, and what it would only list (not proven)
    summary = proc.stdout[proc.stdout.index("on a pull request: ") :]
    assert 'held back from inline comments (comment_on = "proven")' in summary
    assert "    held back: model/losses.py:" in summary
    assert list(Path(env["TMPDIR"]).iterdir()) == []  # without --keep nothing is left


def test_demo_reports_the_sample_pr_and_keep_leaves_its_repository(
    tmp_path: Path, run_main: RunMain
) -> None:
    where = tmp_path / "sample"
    code, out, err = run_main(["demo", "--keep", str(where), "--format", "json"])
    assert code == 1, err
    repo = GitRepo(where, init=False)
    branches = set(repo.git("branch", "--format=%(refname:short)").split())
    assert branches == {"main", "feature"}
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD") == "feature"
    data = json.loads(out)
    assert data["base"] == repo.sha("main") and data["head"] == repo.sha("feature")
    # the report itself: valid JSON of the schema, the sample's log flagged, no stage failed
    validator(SCHEMA_PATH).validate(data)
    assert {f["op"] for f in data["findings"] if f["path"] == "model/losses.py"} >= {"log"}
    assert data["errors"] == []
    # The kept repository reviews the same way from the command line afterwards.
    code, out, err = run_main(
        ["review", str(where), "--base", "main", "--head", "feature", "--format", "json"]
    )
    assert code == 1, err

    def stable(findings: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return [(f["fingerprint"], f["line"], f["status"], f["reproducer"]) for f in findings]

    assert stable(json.loads(out)["findings"]) == stable(data["findings"])


def test_demo_keep_refuses_a_non_empty_directory(tmp_path: Path, run_main: RunMain) -> None:
    (tmp_path / "precious.txt").write_text("keep me\n", encoding="utf-8")
    code, out, err = run_main(["demo", "--keep", str(tmp_path)])
    assert code == 2
    assert "not empty" in err
    assert (tmp_path / "precious.txt").read_text(encoding="utf-8") == "keep me\n"
    assert not (tmp_path / ".git").exists()


# ---------------------------------------------------------------- terminal, help, hints

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PROGRESS_LINE = re.compile(r"^numcheck \[\s*\d+\.\ds\] ", re.M)


def run_on_terminal(
    exe: str, *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 180
) -> tuple[int, str, str]:
    """The real executable with stdout and stderr each on a terminal of its own (two ptys),
    so what it prints on each can be told apart. Returns (status, stdout, stderr)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    full_env.update({"TERM": "xterm-256color", **(env or {})})
    out_master, out_slave = pty.openpty()
    err_master, err_slave = pty.openpty()
    proc = subprocess.Popen(
        [exe, *args],
        stdin=subprocess.DEVNULL,
        stdout=out_slave,
        stderr=err_slave,
        cwd=cwd,
        env=full_env,
    )
    os.close(out_slave)
    os.close(err_slave)
    data = {out_master: b"", err_master: b""}
    open_fds = set(data)
    deadline = time.monotonic() + timeout
    try:
        while open_fds:
            left = deadline - time.monotonic()
            ready, _, _ = select.select(list(open_fds), [], [], max(left, 0))
            if not ready:
                proc.kill()
                raise AssertionError(f"numcheck {' '.join(args)} ran past {timeout} s")
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the process closed its end
                    chunk = b""
                if chunk:
                    data[fd] += chunk
                else:
                    open_fds.discard(fd)
        status = proc.wait(timeout=30)
    finally:
        os.close(out_master)
        os.close(err_master)

    def text(raw: bytes) -> str:
        return raw.decode("utf-8", "replace").replace("\r\n", "\n")

    return status, text(data[out_master]), text(data[err_master])


def test_help_has_examples(run_cli: RunCli) -> None:
    top = run_cli("--help")
    assert top.returncode == 0
    assert "examples:" in top.stdout and "numcheck review --fix" in top.stdout
    assert "exit status: 0 no findings, 1 findings, 2 an error stopped the run" in top.stdout
    for command, example in (
        ("review", "numcheck review --base origin/main"),
        ("scan", "numcheck scan --static-only src/"),
        ("action", "numcheck action --stages confirm"),
        ("demo", "numcheck demo --keep"),
    ):
        sub = run_cli(command, "--help")
        assert sub.returncode == 0, sub.stderr
        assert "examples:" in sub.stdout and example in sub.stdout, command
    assert "GITHUB_EVENT_PATH" in run_cli("action", "--help").stdout


def test_progress_and_colour_on_a_terminal(tmp_path: Path, numcheck_exe: str) -> None:
    (tmp_path / "top.py").write_text(MODEL_RISKY, encoding="utf-8")
    status, out, err = run_on_terminal(
        numcheck_exe, "scan", "top.py", "--static-only", cwd=tmp_path
    )
    assert status == 1, err
    assert "\x1b[" in out and "\x1b[" in err  # colour on both terminals
    plain_out, plain_err = ANSI.sub("", out), ANSI.sub("", err)
    assert "top.py:5:12: warning log [potential]" in plain_out
    progress = PROGRESS_LINE.findall(plain_err)
    assert len(progress) == 2, plain_err
    assert re.search(r"^numcheck \[\s*\d+\.\ds\] scanning: top\.py$", plain_err, re.M)
    assert re.search(
        r"^numcheck \[\s*\d+\.\ds\] done: 2 findings \(2 potential\) in "
        r"\d+\.\d s \(static \d+\.\d\d s\)$",
        plain_err,
        re.M,
    )  # per stage
    assert "numcheck [" not in plain_out  # progress never mixes with the report


def test_no_colour_with_no_color_and_no_progress_with_quiet(
    tmp_path: Path, numcheck_exe: str
) -> None:
    (tmp_path / "top.py").write_text(MODEL_RISKY, encoding="utf-8")
    status, out, err = run_on_terminal(
        numcheck_exe, "scan", "top.py", "--static-only", cwd=tmp_path, env={"NO_COLOR": "1"}
    )
    assert status == 1
    assert "\x1b[" not in out + err
    assert PROGRESS_LINE.search(err)  # still progress, only without colour
    status, out, err = run_on_terminal(
        numcheck_exe, "scan", "top.py", "--static-only", "--quiet", cwd=tmp_path
    )
    assert status == 1
    assert err == ""
    assert "top.py:5:12:" in ANSI.sub("", out)


def test_no_progress_off_a_terminal(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "top.py").write_text(MODEL_RISKY, encoding="utf-8")
    proc = run_cli("scan", "top.py", "--static-only", cwd=tmp_path, env={"NO_COLOR": ""})
    assert proc.returncode == 1
    assert proc.stderr == ""
    assert "\x1b[" not in proc.stdout  # NO_COLOR empty does not switch colour on in a pipe


def test_scan_fix_shows_each_finding_and_writes_the_fix(
    tmp_path: Path, numcheck_exe: str, run_cli: RunCli
) -> None:
    """What the numcheck-fix pre-commit hook runs, on a terminal: progress per finding with
    elapsed time, then the validated fix written into the file."""
    model = tmp_path / "model.py"
    model.write_text(MODEL_RISKY, encoding="utf-8")
    status, out, err = run_on_terminal(numcheck_exe, "scan", "model.py", "--fix", cwd=tmp_path)
    plain_err = ANSI.sub("", err)
    assert status == 1, plain_err
    assert re.search(
        r"^numcheck \[\s*\d+\.\ds\] dynamic pass: running the code in the "
        r"sandbox",
        plain_err,
        re.M,
    )
    confirmed = re.findall(
        r"^numcheck \[\s*\d+\.\ds\] (\d)/2 model\.py:(\d+) log: confirmed "
        r"\(\d+\.\d s\)$",
        plain_err,
        re.M,
    )
    assert confirmed == [("1", "5"), ("2", "9")], plain_err
    assert len(re.findall(r"fix for model\.py:\d+ log: validated", plain_err)) == 2
    assert "numcheck: fixed 2 findings in model.py" in plain_err
    done = re.search(
        r"^numcheck \[\s*\d+\.\ds\] done: 2 findings \(2 confirmed\) in "
        r"\d+\.\d s \((.*)\)$",
        plain_err,
        re.M,
    )
    assert done, plain_err
    assert re.search(r"\bdynamic \d+\.\d\d s", done.group(1))
    assert re.search(r"\bfix \d+\.\d\d s", done.group(1))
    fixed = model.read_text(encoding="utf-8")
    assert fixed != MODEL_RISKY
    assert "torch.log(p)" not in fixed and "torch.log(x)" not in fixed
    compile(fixed, "model.py", "exec")
    again = run_cli("scan", "model.py", "--static-only", cwd=tmp_path)
    assert again.returncode == 0, again.stdout  # the static pass no longer flags it


def test_without_torch_the_dynamic_pass_says_what_to_install(
    tmp_path: Path, run_main: RunMain, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.cli

    monkeypatch.setattr(bot.cli, "dynamic_frameworks", lambda: [])
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "top.py").write_text(MODEL_MAIN, encoding="utf-8")
    (tmp_path / "ok.py").write_text("def f(x):\n    return x + 1\n", encoding="utf-8")

    code, out, err = run_main(["scan", "top.py", "--format", "json"])
    assert code == 1
    assert "pip install 'numcheck[torch]'" in err and "--static-only" in err
    data = json.loads(out)
    assert data["findings"][0]["status"] == "potential"  # static findings kept
    assert data["errors"][0]["stage"] == "dynamic"
    assert "pip install 'numcheck[torch]'" in data["errors"][0]["message"]
    assert data["config"]["dynamic"] is False

    code, out, err = run_main(["scan", "top.py", "--static-only"])  # nothing was asked for
    assert (code, err) == (1, "")
    code, out, err = run_main(["scan", "ok.py"])  # nothing needed confirming
    assert (code, err) == (0, "")

    monkeypatch.setenv("PRE_COMMIT", "1")  # as the numcheck-fix hook runs it
    code, out, err = run_main(["scan", "top.py", "--fix"])
    assert code == 2
    assert "no fix can be validated" in err
    assert "additional_dependencies: ['torch==2.13.0']" in err
    assert (tmp_path / "top.py").read_text(encoding="utf-8") == MODEL_MAIN


def test_errors_say_what_to_do_next(
    risky_pr: GitRepo, git_repo: GitRepoFactory, tmp_path: Path, run_cli: RunCli
) -> None:
    unknown = run_cli("review", risky_pr.root, "--base", "origin/trunk", "--head", "feature")
    assert unknown.returncode == 2
    assert "git fetch origin origin/trunk" in unknown.stderr
    assert "--base REF" in unknown.stderr

    plain = tmp_path / "plain"
    plain.mkdir()
    not_git = run_cli("review", plain, "--base", "main")
    assert not_git.returncode == 2
    assert "run numcheck inside a checkout or give the checkout's path as REPO" in not_git.stderr

    repo = git_repo(
        {"model.py": MODEL_MAIN, ".numcheck.toml": 'dtype = "fp16"\n'},
        {"model.py": MODEL_RISKY},
        name="configured",
    )
    bad_config = run_cli(*review(repo))
    assert bad_config.returncode == 2
    assert "'dtype' in .numcheck.toml" in bad_config.stderr
    assert "did you mean 'float16'?" in bad_config.stderr
    assert "docs/configuration.md" in bad_config.stderr
    assert "Traceback" not in unknown.stderr + not_git.stderr + bad_config.stderr
