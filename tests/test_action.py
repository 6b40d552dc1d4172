"""The GitHub Action, run locally exactly as Actions runs it.

The `Run numcheck` step of action.yml is executed the way the runner executes a composite
step: its `${{ }}` expressions evaluated against the inputs, its `env` set, its script run by
`bash --noprofile --norc -eo pipefail`, in GITHUB_WORKSPACE, with GITHUB_EVENT_PATH pointing
at GitHub's own pull_request payload (tests/fixtures/webhooks) adjusted to a repository built
here, and GITHUB_OUTPUT / GITHUB_STEP_SUMMARY / RUNNER_TEMP as files and folders the test
reads back. The workspace is a shallow clone of the PR's merge commit, as actions/checkout
leaves it by default, so the action must fetch the base and head itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from app_support import WEBHOOKS
from conftest import GitRepo, GitRepoFactory

from bot.action import (
    escape_data,
    escape_property,
    event_target,
    path_filter,
    workflow_command,
    write_outputs,
)

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
PAYLOADS = WEBHOOKS  # tests/fixtures/webhooks
SARIF_SCHEMA = Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0.json"
BIN = Path(sys.executable).parent

MAIN = """\
import torch


def old_loss(x):
    return torch.log(x)
"""
FEATURE = (
    MAIN
    + """\


def new_loss(p):
    return torch.log(p)
"""
)
COMMAND = re.compile(r"^::(?P<cmd>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<msg>.*)$")


def _unescape(text: str) -> str:
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


@dataclass
class Command:
    name: str
    properties: dict[str, str]
    message: str


def parse_commands(stdout: str) -> list[Command]:
    out: list[Command] = []
    for line in stdout.splitlines():
        match = COMMAND.match(line)
        if not match:
            continue
        props = {}
        for item in filter(None, (match.group("props") or "").split(",")):
            key, _, value = item.partition("=")
            props[key] = _unescape(value)
        out.append(Command(match.group("cmd"), props, _unescape(match.group("msg"))))
    return out


def parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner reads it (name=value and name<<DELIMITER blocks)."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
            i += 1
        else:
            i += 1
    return outputs


@dataclass
class Pull:
    origin: GitRepo
    workspace: Path
    base: str
    head: str
    number: int


@pytest.fixture
def pull(git_repo: GitRepoFactory, tmp_path: Path) -> Pull:
    """main, a PR branch `feature` adding an unguarded log (line 9), main moving on, and
    GitHub's merge commit; the workspace is `actions/checkout` of that merge at depth 1."""
    origin = git_repo({"model.py": MAIN}, {"model.py": FEATURE}, name="origin")
    head = origin.sha("feature")
    origin.checkout("main")
    base = origin.commit({"README.md": "later work on main\n"}, "main moves on")
    origin.checkout("pull-merge", create=True)
    origin.git("merge", "-q", "--no-ff", "feature", "-m", "Merge feature into main")
    workspace = tmp_path / "workspace"
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--depth=1",
            "--branch",
            "pull-merge",
            f"file://{origin.root}",
            str(workspace),
        ],
        check=True,
        capture_output=True,
    )
    return Pull(origin, workspace, base, head, 2)


def pr_payload(pull: Pull, tmp_path: Path, name: str = "opened") -> Path:
    data = json.loads((PAYLOADS / "pull_request" / f"{name}.payload.json").read_text())
    data["pull_request"]["base"].update(sha=pull.base, ref="main")
    data["pull_request"]["head"].update(sha=pull.head, ref="feature")
    assert data["pull_request"]["number"] == pull.number
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@dataclass
class StepRun:
    returncode: int
    stdout: str
    stderr: str
    commands: list[Command]
    outputs: dict[str, str]
    summary: str
    runner_temp: Path


def _evaluate(text: str, context: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        assert expression in context, f"action.yml uses ${{{{ {expression} }}}}, unknown here"
        return context[expression]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def run_step(
    workspace: Path,
    tmp_path: Path,
    *,
    event_name: str,
    event_path: Path | None,
    inputs: Mapping[str, str] | None = None,
) -> StepRun:
    """The action's `Run numcheck` step, as the runner runs it."""
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    given = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    given.update(inputs or {})
    context = {f"inputs.{name}": value for name, value in given.items()}
    context.update({"github.workspace": str(workspace), "github.action_path": str(ROOT)})
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "numcheck"]
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    output, summary = tmp_path / "github_output", tmp_path / "step_summary.md"
    output.write_text("", encoding="utf-8")
    summary.write_text("", encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "NUMCHECK_", "GIT_", "RUNNER_"))
    }
    env.update(
        {
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",  # where setup-python put numcheck
            "NO_COLOR": "1",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RUNNER_TEMP": str(temp),
            "GITHUB_REPOSITORY": "Codertocat/Hello-World",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
    )
    if event_path is not None:
        env["GITHUB_EVENT_PATH"] = str(event_path)
    env.update({k: _evaluate(str(v), context) for k, v in step.get("env", {}).items()})
    script = tmp_path / "step.sh"
    script.write_text(_evaluate(step["run"], context), encoding="utf-8")
    cwd = Path(_evaluate(step.get("working-directory", "${{ github.workspace }}"), context))
    assert step["shell"] == "bash"
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return StepRun(
        proc.returncode,
        proc.stdout,
        proc.stderr,
        parse_commands(proc.stdout),
        parse_outputs(output.read_text(encoding="utf-8")),
        summary.read_text(encoding="utf-8"),
        temp,
    )


def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


# ---------------------------------------------------------------- pull_request, end to end


def test_pull_request_static(pull: Pull, tmp_path: Path) -> None:
    step = run_step(
        pull.workspace, tmp_path, event_name="pull_request", event_path=pr_payload(pull, tmp_path)
    )
    assert step.returncode == 1, step.stderr  # fail-on defaults to any
    # the shallow checkout lacked base and head: fetched, then deepened to the merge base
    assert "fetch-depth: 0" in step.stderr
    assert f"git fetch --depth=1 origin {pull.base} {pull.head}" in step.stderr

    annotations = [c for c in step.commands if c.properties.get("file")]
    # an unproven finding is held back from the review (comment_on = "proven"): a notice
    assert [(c.name, c.properties) for c in annotations] == [
        (
            "notice",
            {
                "file": "model.py",
                "line": "9",
                "endLine": "9",
                "col": "12",
                "endColumn": "24",
                "title": "numcheck: log (potential)",
            },
        )
    ]
    assert annotations[0].message.splitlines() == [
        "nothing bounds `p`, so log returns -inf at 0 and NaN below.",
        "Suggestion: clamp the operand: `p.clamp_min(1e-6)`",
    ]
    # the raw line: properties escaped (":" in the title), the message one line
    assert "title=numcheck%3A log (potential)::nothing bounds" in step.stdout
    failed = [c for c in step.commands if c.name == "error"]
    assert len(failed) == 1 and "fail-on is 'any'" in failed[0].message

    sarif_path = step.runner_temp / "numcheck.sarif"
    assert step.outputs == {
        "findings": "1",
        "confirmed": "0",
        "errors": "0",
        "sarif": str(sarif_path.resolve()),
    }
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    sarif_validator().validate(sarif)
    (result,) = sarif["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "model.py"
    assert (region["startLine"], result["properties"]["status"]) == (9, "potential")
    assert sarif["runs"][0]["properties"]["base"] == pull.base
    assert sarif["runs"][0]["properties"]["head"] == pull.head

    assert step.summary.startswith("## numcheck\n")
    assert "| `model.py:9` | `log` | potential |" in step.summary
    assert f"pull request #{pull.number}: `{pull.base[:12]}`...`{pull.head[:12]}`" in step.summary
    assert "stages: static · fail-on: any" in step.summary
    assert "model.py:5" not in step.summary  # the log already on main is not the PR's


def test_pull_request_confirm_stage_proves_and_fixes(pull: Pull, tmp_path: Path) -> None:
    step = run_step(
        pull.workspace,
        tmp_path,
        event_name="pull_request",
        event_path=pr_payload(pull, tmp_path, "synchronize"),
        inputs={"stages": "confirm", "fail-on": "confirmed", "sarif-file": "out/numcheck.sarif"},
    )
    assert step.returncode == 1, step.stderr
    assert step.outputs["findings"] == "1" and step.outputs["confirmed"] == "1"
    sarif_path = pull.workspace / "out" / "numcheck.sarif"
    assert step.outputs["sarif"] == str(sarif_path.resolve())
    (annotation,) = [c for c in step.commands if c.properties.get("file")]
    assert annotation.properties["title"] == "numcheck: log (confirmed)"
    assert "Confirmed: NaN/Inf in the forward pass" in annotation.message
    assert "Validated fix" in annotation.message
    # the workflow log shows progress per finding
    assert re.search(r"1/1 model\.py:9 log: confirmed \(\d+\.\d s\)", step.stderr)
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    sarif_validator().validate(sarif)
    (result,) = sarif["runs"][0]["results"]
    assert result["properties"]["status"] == "confirmed"
    assert result["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"] == "model.py"
    assert "```python" in step.summary and "from model import" in step.summary  # reproducer
    assert "fail-on is 'confirmed'" in step.stdout


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"fail-on": "none"}, 0),
        ({"fail-on": "confirmed"}, 0),  # static findings are never confirmed
        ({"paths": "src/ docs/**"}, 0),  # the finding is outside the paths
        ({"paths": "src/\nmodel.py"}, 1),
    ],
)
def test_fail_on_and_paths(
    pull: Pull, tmp_path: Path, inputs: dict[str, str], expected: int
) -> None:
    step = run_step(
        pull.workspace,
        tmp_path,
        event_name="pull_request",
        event_path=pr_payload(pull, tmp_path),
        inputs=inputs,
    )
    assert step.returncode == expected, step.stderr
    assert step.outputs["findings"] == ("0" if "docs/**" in inputs.get("paths", "") else "1")
    # the step fails with one error that says why, or passes without any
    assert len([c for c in step.commands if c.name == "error"]) == expected


def test_push_reviews_the_commits_pushed(pull: Pull, tmp_path: Path) -> None:
    event = tmp_path / "push.json"
    event.write_text(
        json.dumps({"ref": "refs/heads/feature", "before": pull.base, "after": pull.head}),
        encoding="utf-8",
    )
    step = run_step(pull.workspace, tmp_path, event_name="push", event_path=event)
    assert step.returncode == 1, step.stderr
    assert [c.properties.get("line") for c in step.commands if c.properties.get("file")] == ["9"]
    assert f"push: `{pull.base[:12]}`...`{pull.head[:12]}`" in step.summary


def test_push_whose_before_is_gone_scans_whole_files(pull: Pull, tmp_path: Path) -> None:
    """A force-push: `before` no longer exists anywhere, so there is no diff to review."""
    event = tmp_path / "push.json"
    event.write_text(
        json.dumps({"before": "0123456789abcdef0123456789abcdef01234567", "after": pull.head}),
        encoding="utf-8",
    )
    step = run_step(pull.workspace, tmp_path, event_name="push", event_path=event)
    assert step.returncode == 1, step.stderr
    (notice,) = [c for c in step.commands if c.name == "notice" and "file" not in c.properties]
    assert "cannot diff the push" in notice.message and "scans whole files" in notice.message
    assert step.outputs["findings"] == "2"


def test_other_events_scan_whole_files_and_say_so(pull: Pull, tmp_path: Path) -> None:
    step = run_step(
        pull.workspace,
        tmp_path,
        event_name="workflow_dispatch",
        event_path=None,
        inputs={"fail-on": "none"},
    )
    assert step.returncode == 0, step.stderr
    notices = [c for c in step.commands if c.name == "notice" and "file" not in c.properties]
    assert len(notices) == 1
    assert "workflow_dispatch event is not a pull request" in notices[0].message
    assert "scans whole files" in notices[0].message
    # whole files of the checked-out merge commit: the old log and the new one
    assert sorted(c.properties["line"] for c in step.commands if c.properties.get("file")) == [
        "5",
        "9",
    ]
    assert step.outputs["findings"] == "2"


def test_unreachable_head_is_an_error_that_says_what_to_do(pull: Pull, tmp_path: Path) -> None:
    event = pr_payload(pull, tmp_path)
    data = json.loads(event.read_text())
    data["pull_request"]["head"]["sha"] = "0123456789abcdef0123456789abcdef01234567"
    event.write_text(json.dumps(data))
    step = run_step(pull.workspace, tmp_path, event_name="pull_request", event_path=event)
    assert step.returncode == 2
    (error,) = [c for c in step.commands if c.name == "error"]
    assert "git fetch" in error.message and "fetch-depth: 0" in error.message
    assert step.outputs == {}
    assert "Traceback" not in step.stderr


def test_bad_input_is_an_error_naming_it(pull: Pull, tmp_path: Path) -> None:
    step = run_step(
        pull.workspace,
        tmp_path,
        event_name="pull_request",
        event_path=pr_payload(pull, tmp_path),
        inputs={"stages": "everything"},
    )
    assert step.returncode == 2
    (error,) = [c for c in step.commands if c.name == "error"]
    assert error.message == ("numcheck: input 'stages' is 'everything'; use one of static, confirm")


def test_config_input(pull: Pull, tmp_path: Path) -> None:
    """A config file from the workspace: here it disables log, so nothing is reported; a
    typo in it is an error naming the key."""
    (pull.workspace / "ci").mkdir()
    (pull.workspace / "ci" / "numcheck.toml").write_text('disable = ["log"]\n')
    step = run_step(
        pull.workspace,
        tmp_path,
        event_name="pull_request",
        event_path=pr_payload(pull, tmp_path),
        inputs={"config": "ci/numcheck.toml"},
    )
    assert step.returncode == 0, step.stderr
    assert step.outputs["findings"] == "0"
    (pull.workspace / "ci" / "numcheck.toml").write_text('disabel = ["log"]\n')
    step = run_step(
        pull.workspace,
        tmp_path,
        event_name="pull_request",
        event_path=pr_payload(pull, tmp_path),
        inputs={"config": "ci/numcheck.toml"},
    )
    assert step.returncode == 2
    (error,) = [c for c in step.commands if c.name == "error"]
    assert "'disabel'" in error.message and "'disable'" in error.message


# ---------------------------------------------------------------- the pieces


def test_workflow_command_escaping() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    line = workflow_command(
        "warning",
        "line one\n::error::injected",
        {"file": "dir,x/a:b.py", "line": 3, "title": "t: 1%"},
    )
    assert line == (
        "::warning file=dir%2Cx/a%3Ab.py,line=3,title=t%3A 1%25::line one%0A::error::injected"
    )
    assert "\n" not in line  # a message cannot start a command of its own
    (parsed,) = parse_commands(line)
    assert parsed.properties == {"file": "dir,x/a:b.py", "line": "3", "title": "t: 1%"}
    assert parsed.message == "line one\n::error::injected"


def test_outputs_are_multiline_safe(tmp_path: Path) -> None:
    path = tmp_path / "out"
    write_outputs(path, {"one": "1", "text": "a\nb=c\nd<<e"})
    write_outputs(path, {"two": ""})
    assert parse_outputs(path.read_text()) == {"one": "1", "text": "a\nb=c\nd<<e", "two": ""}


def test_event_targets() -> None:
    base, head = "a" * 40, "b" * 40
    pr = {"pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": head}}}
    assert event_target("pull_request_target", pr).mode == "review"
    assert (event_target("pull_request", pr).base, event_target("pull_request", pr).head) == (
        base,
        head,
    )
    new_branch = event_target("push", {"before": "0" * 40, "after": head})
    assert new_branch.mode == "scan" and new_branch.notice and "before" in new_branch.notice
    group = event_target("merge_group", {"merge_group": {"base_sha": base, "head_sha": head}})
    assert (group.mode, group.base, group.head) == ("review", base, head)
    assert event_target("schedule", {}).mode == "scan"


def test_path_filter() -> None:
    selected = path_filter(["src/", "tools/*.py", "setup.py"])
    assert selected("src/a/b.py") and selected("tools/x.py") and selected("setup.py")
    assert not selected("tools/sub/x.py") and not selected("srcx/a.py")
    assert path_filter([])("anything.py") and path_filter(["."])("anything.py")


def test_action_yml_is_safe_and_complete() -> None:
    action: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert set(action["inputs"]) == {
        "paths",
        "config",
        "stages",
        "fail-on",
        "python-version",
        "sarif-file",
    }
    assert set(action["outputs"]) >= {"findings", "confirmed", "sarif"}
    for name, output in action["outputs"].items():
        assert output["value"] == f"${{{{ steps.numcheck.outputs.{name} }}}}"
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    setup = [s for s in steps if str(s.get("uses", "")).startswith("actions/setup-python@")]
    assert setup and setup[0]["with"]["python-version"] == "${{ inputs.python-version }}"
    for step in steps:  # script injection: inputs reach scripts only through env
        assert "${{" not in step.get("run", ""), step.get("name")
    install = next(s for s in steps if "pip install" in s.get("run", ""))
    assert install["env"]["NUMCHECK_ACTION_PATH"] == "${{ github.action_path }}"
    assert "[torch]" in install["run"] and "download.pytorch.org/whl/cpu" in install["run"]
    assert "confirm" in install["run"]
