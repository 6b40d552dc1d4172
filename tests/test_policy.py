"""Which settings judge a pull request: policy keys from the base commit, `entries`/`script`
from the head, limits capped by the operator (analyzers/policy.py), and how the review and
`numcheck review --config-from` show it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import GitRepoFactory, RunMain

from analyzers.catalogue import KNOWN_OPS
from analyzers.config import (
    APP_KEY_SOURCE,
    HEAD_KEYS,
    LIMIT_KEYS,
    POLICY_KEYS,
    Config,
    ConfigError,
    load_config,
)
from analyzers.model import AnalysisResult
from analyzers.policy import app_config, cap_limits, config_at, merge_policy
from analyzers.report.markdown import review_body
from bot.settings import SettingsError, from_env

ENTRY = '[[entries]]\ntarget = "model:loss"\ninputs = ["float32[4] in [-1, 1]"]\n'
BASE_TOML = 'check_failure = "confirmed"\ndynamic = true\n'
# Everything a PR could try in order to pass: every such key differs from the base.
HEAD_TOML = (
    'check_failure = "never"\nfail_on = "none"\ndynamic = false\ndisable = ["log"]\n'
    'include = ["nothing/**"]\nrunner_image = "evil/image:1"\n'
    'dynamic_timeout = 1000000000\ncomment_on = "potential"\n' + ENTRY
)
MODEL = "import torch\n\n\ndef loss(x):\n    return x.sum()\n"
MODEL_RISKY = "import torch\n\n\ndef loss(x):\n    return torch.log(x).sum()\n"


def test_every_key_is_placed_and_only_how_to_run_comes_from_the_head() -> None:
    assert HEAD_KEYS == ("entries", "script", "keras")
    for key in (
        "check_failure",
        "fail_on",
        "dynamic",
        "disable",
        "enable",
        "include",
        "exclude",
        "runner_image",
        "comment_on",
        "severity",
        *LIMIT_KEYS[:-1],
    ):
        assert APP_KEY_SOURCE[key] == "base" and key in POLICY_KEYS, key
    assert not set(HEAD_KEYS) & set(POLICY_KEYS)


def test_merge_keeps_the_base_policy_and_the_head_entries_and_says_what_was_ignored() -> None:
    base = Config(check_failure="confirmed", source=".numcheck.toml at aaaa")
    head = Config(
        check_failure="never",
        dynamic=False,
        disable=("log",),
        runner_image="evil/image:1",
        entries=({"target": "model:loss", "inputs": ["float32[4]"]},),
        script={"command": "train.py"},
        keras="2",
        source=".numcheck.toml at bbbb",
    )
    merged = merge_policy(base, head)
    assert merged.check_failure == "confirmed" and merged.dynamic is True
    assert merged.disable == () and merged.runner_image is None
    assert merged.entries == head.entries and merged.script == head.script
    assert merged.keras == "2"  # which Keras the head's code is written for, like its entries
    assert merged.source == (
        ".numcheck.toml at aaaa; entries, script, keras from .numcheck.toml at bbbb"
    )
    (note,) = merged.notes
    for text in (
        '`check_failure` = `"never"` (base: `"confirmed"`)',
        "`dynamic` = `false` (base: `true`)",
        '`disable` = `["log"]` (base: `[]`)',
        '`runner_image` = `"evil/image:1"` (base: `null`)',
        ".numcheck.toml at aaaa",
        ".numcheck.toml at bbbb",
    ):
        assert text in note, (text, note)
    assert "entries" not in note.split("Ignored")[1]  # the head's entries were used


def test_a_head_that_agrees_with_the_base_gets_no_note() -> None:
    base = Config(check_failure="confirmed", source="pyproject.toml at aaaa")
    head = Config(
        check_failure="confirmed", entries=({"target": "m:f"},), source="pyproject.toml at bbbb"
    )
    merged = merge_policy(base, head)
    assert merged.notes == () and merged.entries == head.entries
    assert merge_policy(Config(), Config()) == Config()  # no files anywhere: the defaults


def test_limits_above_the_caps_are_lowered_with_a_note() -> None:
    config = Config(
        dynamic_timeout=1_000_000_000,
        search_seconds=500.0,
        max_file_bytes=10,
        script={"command": "train.py", "run_seconds": 600},
    )
    caps = {
        "dynamic_timeout": 600,
        "search_seconds": 30.0,
        "max_file_bytes": 5_000_000,
        "harvest_seconds": 300.0,
        "script.run_seconds": 60.0,
    }
    capped = cap_limits(config, caps)
    assert capped.dynamic_timeout == 600 and isinstance(capped.dynamic_timeout, int)
    assert capped.search_seconds == 30.0 and capped.script is not None
    assert capped.script["run_seconds"] == 60.0 and capped.script["command"] == ["train.py"]
    assert capped.max_file_bytes == 10 and capped.harvest_seconds == 60.0  # under: untouched
    assert capped.notes == (
        "`search_seconds` = `500` is above this App's limit; `30` was used.",
        "`dynamic_timeout` = `1000000000` is above this App's limit; `600` was used.",
        "`script.run_seconds` = `600` is above this App's limit; `60` was used.",
    )
    assert cap_limits(Config(), caps) == Config()  # the defaults are under every cap
    with pytest.raises(ValueError, match="no limit named dynamic_timeut"):
        cap_limits(config, {"dynamic_timeut": 5})


def test_app_config_reads_both_commits_not_the_working_tree(git_repo: GitRepoFactory) -> None:
    repo = git_repo(
        {".numcheck.toml": BASE_TOML, "model.py": MODEL},
        {".numcheck.toml": HEAD_TOML, "model.py": MODEL_RISKY},
    )
    base, head = repo.sha("main"), repo.sha("feature")
    (repo.root / ".numcheck.toml").write_text('check_failure = "confirmed"\nseed = 7\n')
    config = app_config(repo.root, base, head, {"dynamic_timeout": 600}, KNOWN_OPS)
    assert config.check_failure == "confirmed" and config.dynamic is True
    assert config.fail_on == "any" and config.include == ("**/*.py",)
    assert config.disable == () and config.runner_image is None and config.seed == 0
    assert config.comment_on == "proven" and config.dynamic_timeout == 300
    assert [e["target"] for e in config.entries] == ["model:loss"]
    assert len(config.notes) == 1 and f"at {base[:12]}" in config.notes[0]
    for key in (
        "check_failure",
        "fail_on",
        "dynamic",
        "disable",
        "include",
        "runner_image",
        "dynamic_timeout",
        "comment_on",
    ):
        assert f"`{key}` =" in config.notes[0], key
    # the working tree's edit was read by neither commit, but is what the CLI reads
    assert load_config(repo.root).seed == 7


def test_a_base_without_settings_judges_by_the_defaults(git_repo: GitRepoFactory) -> None:
    repo = git_repo(
        {"model.py": MODEL},
        {".numcheck.toml": 'check_failure = "confirmed"\nfail_on = "none"\n' + ENTRY},
    )
    config = app_config(repo.root, repo.sha("main"), repo.sha("feature"), {})
    assert config.fail_on == "any" and config.check_failure == "never"
    assert config.entries and "defaults" in config.notes[0]
    # a pyproject.toml table at the base is the policy when there is no .numcheck.toml
    repo2 = git_repo(
        {"pyproject.toml": '[project]\nname = "m"\n\n[tool.numcheck]\nfail_on = "error"\n'},
        {"model.py": MODEL_RISKY},
        name="pyproject",
    )
    config = app_config(repo2.root, repo2.sha("main"), repo2.sha("feature"), {})
    assert config.fail_on == "error" and config.notes == ()
    assert config.source == f"[tool.numcheck] of pyproject.toml at {repo2.sha('main')[:12]}"


def test_errors_name_the_commit_and_a_symlinked_settings_file_is_refused(
    git_repo: GitRepoFactory,
) -> None:
    repo = git_repo({".numcheck.toml": "dynamc = false\n"}, {"model.py": MODEL})
    base = repo.sha("main")
    with pytest.raises(
        ConfigError,
        match=rf"unknown key 'dynamc' in \.numcheck\.toml at "
        rf"{base[:12]}.*did you mean 'dynamic'",
    ):
        app_config(repo.root, base, repo.sha("feature"), {})
    linked = git_repo({"model.py": MODEL}, None, name="linked")
    os.symlink("/etc/hostname", linked.root / ".numcheck.toml")
    head = linked.commit({}, "a symlink")
    with pytest.raises(ConfigError, match="not a regular file"):
        config_at(linked.root, head)
    broken = git_repo({".numcheck.toml": "x = [\n"}, None, name="badtoml")
    with pytest.raises(
        ConfigError, match=f"invalid TOML in .numcheck.toml at {broken.sha('main')[:12]}"
    ):
        config_at(broken.root, "main")


def test_the_review_and_its_notes_quote_the_head_inertly() -> None:
    base = Config(source=".numcheck.toml at aaaa")
    head = Config(include=("<img src=x>/**", "@octocat/`x`/**"), source="<b>@octocat</b>")
    result = AnalysisResult(
        repo="r",
        base="a",
        head="b",
        config=cap_limits(merge_policy(base, head), {"dynamic_timeout": 1}).to_json(),
    )
    body = review_body(result)
    assert "**Settings.**" in body
    # the PR's values stay inside one code span each (a backtick cannot end it early) ...
    assert '`include` = `["<img src=x>/**", "@octocat/\\u0060x\\u0060/**"]`' in body
    # ... and text outside code spans is escaped: no HTML, no mention
    assert "(&lt;b&gt;@&#8203;octocat&lt;/b&gt;)" in body and "<b>" not in body
    assert "`dynamic_timeout` = `300` is above this App's limit; `1` was used." in body
    assert "**Settings.**" not in review_body(AnalysisResult("r", "a", "b", Config().to_json()))


def test_operator_caps_come_from_the_environment(tmp_path: Path) -> None:
    from app_support import make_key

    key_path, _ = make_key(tmp_path)
    env = {
        "NUMCHECK_APP_ID": "1",
        "NUMCHECK_PRIVATE_KEY": str(key_path),
        "NUMCHECK_WEBHOOK_SECRET": "s",
        "NUMCHECK_BROKER_URL": "memory://",
    }
    assert from_env(env).limit_caps == {
        "max_file_bytes": 5_000_000,
        "search_seconds": 30.0,
        "dynamic_timeout": 600,
        "harvest_seconds": 300.0,
        "script.run_seconds": 60.0,
    }
    caps = from_env(
        {**env, "NUMCHECK_MAX_DYNAMIC_TIMEOUT": "120", "NUMCHECK_MAX_SCRIPT_RUN_SECONDS": "5"}
    ).limit_caps
    assert caps["dynamic_timeout"] == 120 and caps["script.run_seconds"] == 5.0
    assert set(caps) == set(LIMIT_KEYS)
    with pytest.raises(SettingsError, match="NUMCHECK_MAX_SEARCH_SECONDS"):
        from_env({**env, "NUMCHECK_MAX_SEARCH_SECONDS": "forever"})


def test_cli_config_from_base_judges_as_the_app_does(
    git_repo: GitRepoFactory, run_main: RunMain
) -> None:
    repo = git_repo(
        {".numcheck.toml": 'fail_on = "any"\n', "model.py": MODEL},
        {".numcheck.toml": 'fail_on = "none"\n', "model.py": MODEL_RISKY},
    )
    common = ["review", repo.root, "--base", "main", "--static-only", "--format", "json"]
    code, _, _ = run_main(common)  # the working tree: the head's fail_on
    assert code == 0
    code, _, _ = run_main([*common, "--config-from", "head"])
    assert code == 0
    code, out, err = run_main([*common, "--config-from", "base"])
    assert code == 1, err
    assert "numcheck: note:" in err and '`fail_on` = `"none"` (base: `"any"`)' in err
    assert '"notes": [' in out
    code, _, err = run_main(
        [*common, "--config-from", "base", "--config", repo.root / ".numcheck.toml"]
    )
    assert code == 2 and "exclusive" in err
