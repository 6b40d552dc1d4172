"""Loading, validating and applying numcheck settings."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from analyzers.config import (
    DEFAULT_EXCLUDE,
    Config,
    ConfigError,
    config_from_mapping,
    glob_match,
    load_config,
)

KNOWN = {"log", "sqrt", "div", "exp", "softmax"}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- loading


def test_defaults_without_any_file(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == Config()
    assert config.source is None
    assert config.include == ("**/*.py",)
    assert ".venv/**" in config.exclude and "**/site-packages/**" in config.exclude
    assert (config.dtype, config.scope, config.context_lines) == ("float32", "added", 3)
    assert (config.max_file_bytes, config.fail_on) == (1_000_000, "any")


def test_pyproject_without_table_gives_defaults(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 90\n')
    assert load_config(tmp_path) == Config()


def test_pyproject_table(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        """
[tool.numcheck]
enable = ["log", "div"]
disable = ["div"]
dtype = "bfloat16"
scope = "diff_context"
context_lines = 5
max_file_bytes = 2048
fail_on = "error"
include = ["src/**/*.py"]
exclude = ["src/vendor/**"]

[tool.numcheck.severity]
log = "error"
""",
    )
    config = load_config(tmp_path, known_ops=KNOWN)
    assert config.enable == ("log", "div") and config.disable == ("div",)
    assert (config.dtype, config.scope, config.context_lines) == ("bfloat16", "diff_context", 5)
    assert (config.max_file_bytes, config.fail_on) == (2048, "error")
    assert config.include == ("src/**/*.py",) and config.exclude == ("src/vendor/**",)
    assert dict(config.severity) == {"log": "error"}
    assert config.source == "[tool.numcheck] of pyproject.toml"


def test_numcheck_toml_top_level_keys(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", 'dtype = "float16"\n[severity]\nexp = "note"\n')
    config = load_config(tmp_path)
    assert config.dtype == "float16"
    assert config.severity_for("exp", "warning") == "note"
    assert config.source == ".numcheck.toml"


def test_numcheck_toml_tool_table(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", '[tool.numcheck]\nscope = "file"\n')
    config = load_config(tmp_path)
    assert config.scope == "file"
    assert config.source == "[tool.numcheck] of .numcheck.toml"


def test_numcheck_toml_mixing_forms_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", 'dtype = "float16"\n[tool.numcheck]\nscope = "file"\n')
    with pytest.raises(ConfigError, match="either top-level keys or the table"):
        load_config(tmp_path)


def test_precedence(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.numcheck]\ndtype = "float64"\n')
    assert load_config(tmp_path).dtype == "float64"
    write(tmp_path / ".numcheck.toml", 'scope = "file"\n')
    from_dedicated = load_config(tmp_path)
    # The first file found wins whole: nothing is merged in from pyproject.toml.
    assert (from_dedicated.scope, from_dedicated.dtype) == ("file", "float32")
    explicit = write(tmp_path / "strict.toml", 'fail_on = "none"\n')
    from_explicit = load_config(tmp_path, explicit)
    assert (from_explicit.fail_on, from_explicit.scope) == ("none", "added")
    assert from_explicit.source == "strict.toml"


def test_explicit_pyproject_outside_repo(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    path = write(elsewhere / "pyproject.toml", '[tool.numcheck]\ndtype = "float16"\n')
    config = load_config(repo, path)
    assert config.dtype == "float16"
    assert config.source == f"[tool.numcheck] of {path}"
    write(path, '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"has no \[tool.numcheck\] table"):
        load_config(repo, path)


def test_explicit_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file nope.toml not found"):
        load_config(tmp_path, tmp_path / "nope.toml")


def test_kebab_case_keys(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", 'fail-on = "error"\ncontext-lines = 1\n')
    config = load_config(tmp_path)
    assert (config.fail_on, config.context_lines) == ("error", 1)
    write(tmp_path / ".numcheck.toml", 'fail-on = "error"\nfail_on = "any"\n')
    with pytest.raises(ConfigError, match="toml sets both 'fail-on' and 'fail_on'; keep one"):
        load_config(tmp_path)


def test_extend_exclude_keeps_defaults(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", 'extend_exclude = ["legacy/**"]\n')
    config = load_config(tmp_path)
    assert config.exclude == (*DEFAULT_EXCLUDE, "legacy/**")
    assert not config.path_selected("legacy/a.py")
    assert not config.path_selected(".venv/lib/x.py")
    write(tmp_path / ".numcheck.toml", 'exclude = ["a/**"]\nextend-exclude = ["b/**"]\n')
    assert load_config(tmp_path).exclude == ("a/**", "b/**")


# ---------------------------------------------------------------- errors


def test_unknown_key_suggests_closest(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.numcheck]\nexlude = ["x/**"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == (
        "unknown key 'exlude' in [tool.numcheck] of pyproject.toml (did you mean 'exclude'?)"
    )


def test_unknown_key_without_close_match_lists_keys(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", "zzz = 1\n")
    with pytest.raises(
        ConfigError,
        match=r"unknown key 'zzz' in \.numcheck\.toml \(known keys: "
        r"enable, disable",
    ):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('include = "**/*.py"', r"'include' in \.numcheck\.toml must be a list of strings"),
        ("enable = [1, 2]", "'enable' .* must be a list of strings"),
        ("context_lines = -1", "'context_lines' .* integer >= 0, got -1"),
        ("context_lines = true", "'context_lines' .* integer >= 0, got True"),
        ('context_lines = "3"', "'context_lines' .* integer >= 0, got '3'"),
        ("max_file_bytes = 0", "'max_file_bytes' .* integer >= 1"),
        ('dtype = "fp16"', r"'dtype' .* got 'fp16' \(did you mean 'float16'\?\)"),
        ('dtype = "float8"', "'dtype' .* must be one of float16, bfloat16, float32, float64"),
        ("dtype = 32", "'dtype' .* must be a string"),
        ('scope = "diff-context"', r"'scope' .* \(did you mean 'diff_context'\?\)"),
        ('fail_on = "warning"', "'fail_on' .* must be one of any, none, error"),
        ('severity = "error"', "'severity' .* must be a table"),
        ('[severity]\nlog = "fatal"', r"'severity.log' .* must be one of error, warning, note"),
        ("include = []", "'include' .* is empty"),
        ('exclude = [""]', "'exclude' .* contains an empty pattern"),
    ],
)
def test_bad_values(tmp_path: Path, text: str, message: str) -> None:
    write(tmp_path / ".numcheck.toml", text + "\n")
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)


def test_invalid_toml_reports_position(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.numcheck]\ndtype = "float16\n')
    with pytest.raises(ConfigError, match=r"invalid TOML in pyproject\.toml: .*line 2, column"):
        load_config(tmp_path)


def test_non_utf8_file(tmp_path: Path) -> None:
    (tmp_path / ".numcheck.toml").write_bytes(b'dtype = "\xff"\n')
    with pytest.raises(ConfigError, match="numcheck.toml"):
        load_config(tmp_path)


def test_tool_numcheck_not_a_table(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool]\nnumcheck = 3\n")
    with pytest.raises(ConfigError, match=r"\[tool.numcheck\] in pyproject.toml must be a table"):
        load_config(tmp_path)


def test_unknown_ops(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.numcheck]\ndisable = ["lgo"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, known_ops=KNOWN)
    assert str(info.value) == (
        "unknown op 'lgo' in 'disable' of [tool.numcheck] of pyproject.toml (did you mean 'log'?)"
    )
    config = load_config(tmp_path)  # without known_ops nothing is checked yet
    with pytest.raises(ConfigError, match="did you mean 'log'"):
        config.validate_ops(KNOWN)
    config.validate_ops(KNOWN | {"lgo"})


def test_unknown_op_in_severity(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", '[severity]\nsqrtt = "error"\n')
    with pytest.raises(ConfigError, match=r"'sqrtt' in 'severity' .* \(did you mean 'sqrt'\?\)"):
        load_config(tmp_path, known_ops=KNOWN)


def test_direct_construction_is_validated() -> None:
    with pytest.raises(ConfigError, match="'scope' in Config"):
        dataclasses.replace(Config(), scope="hunk")
    with pytest.raises(ConfigError, match="'enable' in Config must be a list of strings"):
        Config(enable="log")  # type: ignore[arg-type]
    config = Config(enable=["log"], severity={"log": "note"})  # type: ignore[arg-type]
    assert config.enable == ("log",)
    with pytest.raises(TypeError):
        config.severity["log"] = "error"  # type: ignore[index]


def test_config_from_mapping() -> None:
    config = config_from_mapping({"dtype": "float64"}, where="--set", known_ops=KNOWN)
    assert (config.dtype, config.source) == ("float64", "--set")
    with pytest.raises(ConfigError, match="unknown key 'dtpye' in --set"):
        config_from_mapping({"dtpye": "float64"}, where="--set")


# ---------------------------------------------------------------- behaviour


def test_to_json_is_plain() -> None:
    config = Config(severity={"log": "error"}, source="x")  # type: ignore[arg-type]
    data = config.to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["severity"] == {"log": "error"}
    assert data["include"] == ["**/*.py"] and data["source"] == "x"
    assert set(data) == {
        "enable",
        "disable",
        "include",
        "exclude",
        "dtype",
        "scope",
        "context_lines",
        "severity",
        "max_file_bytes",
        "fail_on",
        "check_failure",
        "comment_on",
        "dynamic",
        "search_seconds",
        "dynamic_timeout",
        "seed",
        "harvest",
        "harvest_seconds",
        "device",
        "fix",
        "low_precision",
        "dependencies",
        "keras",
        "runner_image",
        "entries",
        "script",
        "source",
        "notes",
    }


def test_config_is_hashable_and_comparable() -> None:
    assert hash(Config()) == hash(Config())
    assert Config(severity={"a": "note"}) == Config(severity={"a": "note"})  # type: ignore[arg-type]


def test_op_enabled() -> None:
    assert Config().op_enabled("log")
    only = Config(enable=("log", "div"), disable=("div",))
    assert only.op_enabled("log")
    assert not only.op_enabled("div")  # disable wins
    assert not only.op_enabled("exp")
    assert not Config(disable=("exp",)).op_enabled("exp")


def test_severity_for() -> None:
    config = Config(severity={"log": "error"})  # type: ignore[arg-type]
    assert config.severity_for("log", "warning") == "error"
    assert config.severity_for("exp", "warning") == "warning"


def test_path_selected_defaults() -> None:
    config = Config()
    assert config.path_selected("train.py")
    assert config.path_selected("pkg/sub/model.py")
    assert config.path_selected("./pkg/model.py")
    assert config.path_selected("pkg\\win\\model.py")
    assert not config.path_selected("README.md")
    assert not config.path_selected(".venv/lib/python3.11/torch/x.py")
    assert not config.path_selected("venv/x.py")
    assert not config.path_selected("lib/python3.11/site-packages/torch/nn/functional.py")
    assert not config.path_selected("build/lib/pkg/model.py")
    assert not config.path_selected("pkg/__pycache__/x.py")
    assert config.path_selected("src/venv/x.py")  # only the top-level venv is excluded
    assert config.path_selected("rebuild/x.py")


def test_exclude_matches_parent_directories() -> None:
    config = Config(exclude=("vendor", "third_party/*"))
    assert not config.path_selected("vendor/lib/a.py")
    assert not config.path_selected("third_party/x/y/z.py")
    assert config.path_selected("src/vendor.py")
    assert config.path_selected("vendored/a.py")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("**/*.py", "a/b/c.pyc", False),
        ("*.py", "a.py", True),
        ("*.py", "a/b.py", False),  # `*` never crosses a directory
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "lib/src/a.py", False),
        ("src/**", "src/x/y.txt", True),
        ("src/**", "srcx/y.py", False),
        ("src/", "src/a/b.py", True),
        ("**", "any/thing.py", True),
        ("a/**/b.py", "a/b.py", True),
        ("a/**/b.py", "a/x/y/b.py", True),
        ("a/**/b.py", "a/x/c.py", False),
        ("**/site-packages/**", "x/site-packages/t.py", True),
        ("**/site-packages/**", "site-packages/t.py", True),
        ("**/site-packages/**", "x/my-site-packages/t.py", False),
        ("test_?.py", "test_1.py", True),
        ("test_?.py", "test_12.py", False),
        ("a?b", "a/b", False),
        ("[ab]*.py", "alpha.py", True),
        ("[ab]*.py", "cat.py", False),
        ("[!ab]*.py", "cat.py", True),
        ("[!ab]*.py", "alpha.py", False),
        ("[]]x.py", "]x.py", True),
        ("[!]]x.py", "]x.py", False),
        ("[!]]x.py", "ax.py", True),
        ("[a-c]x.py", "bx.py", True),
        ("[a-c]x.py", "dx.py", False),
        ("[!a-c]x.py", "dx.py", True),
        ("[\\^]x.py", "^x.py", True),
        ("[abc.py", "[abc.py", True),  # an unclosed bracket is literal
        ("a.b", "axb", False),  # dots and other regex characters are literal
        ("a+(b).py", "a+(b).py", True),
        ("/src/*.py", "src/a.py", True),
        ("./src/*.py", "src/a.py", True),
        ("a**b.py", "axxb.py", True),
        ("a**b.py", "a/b.py", False),
        ("dir with space/*.py", "dir with space/ü.py", True),
    ],
)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_globs_from_a_pull_request_cannot_cost_minutes() -> None:
    """Regression: a regex per glob backtracked, so `include` with twelve `**` took about a
    minute of CPU per deep path (ten times more per extra `**`). The bound below is about
    behaviour (linear, not exponential), with a wide margin: it takes milliseconds."""
    import time

    deep = "/".join(["d"] * 50)
    many_stars = "/".join(["**"] * 20) + "/x.py"
    many_wildcards = "*a" * 12 + "*b"  # within one component: no backtracking either
    started = time.perf_counter()
    assert not glob_match(many_stars, f"{deep}/y.py")
    assert glob_match(many_stars, f"{deep}/x.py")
    assert not glob_match(many_wildcards, "a" * 2000)
    assert glob_match(many_wildcards, "a" * 2000 + "b")
    config = Config(include=(many_stars,), exclude=("/".join(["**"] * 20) + "/z/**",))
    assert not config.path_selected(f"{deep}/y.py") and config.path_selected(f"{deep}/x.py")
    assert time.perf_counter() - started < 1.0


def test_entries_are_validated_and_normalised() -> None:
    config = config_from_mapping(
        {
            "entries": [
                {
                    "target": "model.losses:ce",
                    "inputs": ["float32[4,10] in [-100, 100]", "int64[4]"],
                },
                {
                    "target": "model.attn:Attention",
                    "inputs": ["float32[2,5,16]"],
                    "init": {"dim": 16},
                },
            ]
        },
        "pyproject.toml",
    )
    assert config.entries[0]["target"] == "model.losses:ce"
    assert config.entries[1]["init"] == {"dim": 16}
    assert config.to_json()["entries"][0]["inputs"][1] == "int64[4]"
    hash(config)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"target": "no_colon"}, "package.module:name"),
        ({"target": "m:f", "inputs": ["float32[4 in [0, 1]"]}, "cannot read input spec"),
        ({"target": "m:f", "inputs": ["complex64[4]"]}, "unknown dtype"),
        ({"target": "m:f", "inptus": []}, "did you mean 'inputs'"),
        ({"target": "m:f", "inputs": ["float32[2] in [5, 1]"]}, "empty box"),
    ],
)
def test_bad_entries_are_clear_errors(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        config_from_mapping({"entries": [entry]}, "pyproject.toml")


def test_script_table_in_pyproject_is_validated_and_normalised(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        """
[tool.numcheck]
seed = 3

[tool.numcheck.script]
command = "python train.py --epochs 2 --name 'a b'"
run-seconds = 4
max_values = 3
bounds = { data = [-1, 1], "train.py:41" = [0, 0.5] }
""",
    )
    config = load_config(tmp_path)
    assert config.script is not None
    assert config.to_json()["script"] == {
        "command": ["train.py", "--epochs", "2", "--name", "a b"],
        "run_seconds": 4.0,
        "max_values": 3,
        "bounds": {"data": [-1.0, 1.0], "train.py:41": [0.0, 0.5]},
    }
    assert json.loads(json.dumps(config.to_json())) == config.to_json()
    hash(config)
    again = dataclasses.replace(config, seed=4)  # re-validated, and still the same table
    assert again.to_json()["script"] == config.to_json()["script"]
    assert Config().script is None and Config().to_json()["script"] is None


def test_script_table_in_numcheck_toml(tmp_path: Path) -> None:
    write(tmp_path / ".numcheck.toml", '[script]\ncommand = ["-m", "pkg.train", "--fast"]\n')
    config = load_config(tmp_path)
    assert config.script is not None
    assert (
        config.script["command"],
        config.script["run_seconds"],
        config.script["max_values"],
        dict(config.script["bounds"]),
    ) == (["-m", "pkg.train", "--fast"], 10.0, 8, {})


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("train.py", "'script' in pyproject.toml must be a table ([tool.numcheck.script])"),
        ({}, 'needs command = "train.py --steps 2"'),
        (
            {"comand": "train.py"},
            "unknown key 'comand' in [script] in pyproject.toml (did you mean 'command'?)",
        ),
        ({"command": "train.py", "run_seconds": 1, "run-seconds": 2}, "sets both"),
        ({"command": 3}, "must be a string or a list of strings"),
        ({"command": ""}, "it is empty"),
        ({"command": "train.sh"}, "'train.sh' must be a .py file given relative to the repository"),
        ({"command": "/abs/train.py"}, "must be a .py file given relative"),
        ({"command": "../other/train.py"}, "must be a .py file given relative"),
        ({"command": "-m"}, "-m needs a module name"),
        ({"command": "train.py 'unclosed"}, "cannot split"),
        (
            {"command": "train.py", "run_seconds": 0},
            "'run_seconds' in [script] in pyproject.toml must be a number in (0, 600]",
        ),
        ({"command": "train.py", "run_seconds": True}, "'run_seconds'"),
        (
            {"command": "train.py", "max_values": 0},
            "'max_values' in [script] in pyproject.toml must be an integer >= 1",
        ),
        (
            {"command": "train.py", "bounds": [0, 1]},
            "'bounds' in [script] in pyproject.toml must be a table",
        ),
        (
            {"command": "train.py", "bounds": {"dta": [0, 1]}},
            "unknown value 'dta' in 'bounds' of "
            "[script] in pyproject.toml: use a kind "
            "(data, random) or a call site "
            '"path.py:LINE" (did you mean '
            "'data'?)",
        ),
        ({"command": "train.py", "bounds": {"train.py:0": [0, 1]}}, "unknown value 'train.py:0'"),
        (
            {"command": "train.py", "bounds": {"data": [0]}},
            "bounds.data in [script] in pyproject.toml must be [lo, hi]",
        ),
        ({"command": "train.py", "bounds": {"data": [0, "inf"]}}, "two finite numbers"),
        ({"command": "train.py", "bounds": {"random": [0, float("inf")]}}, "two finite numbers"),
        (
            {"command": "train.py", "bounds": {"data": [2, 1]}},
            "bounds.data in [script] in pyproject.toml is empty: 2 > 1",
        ),
    ],
)
def test_bad_script_tables_are_clear_errors(script: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        config_from_mapping({"script": script}, "pyproject.toml")


def test_misspelt_script_table_is_named() -> None:
    with pytest.raises(
        ConfigError,
        match=re.escape("unknown key 'scrpit' in pyproject.toml (did you mean 'script'?)"),
    ):
        config_from_mapping({"scrpit": {"command": "train.py"}}, "pyproject.toml")


def test_dynamic_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="search_seconds"):
        config_from_mapping({"search_seconds": 0}, "x")
    with pytest.raises(ConfigError, match="dynamic"):
        config_from_mapping({"dynamic": "yes"}, "x")
    assert config_from_mapping({"dynamic": False}, "x").dynamic is False
    with pytest.raises(ConfigError, match="'low_precision' in x must be true or false"):
        config_from_mapping({"low_precision": "fp16"}, "x")
    assert Config().low_precision is True
    assert config_from_mapping({"low_precision": False}, "x").low_precision is False


def test_the_device_setting_is_one_of_auto_cpu_cuda() -> None:
    assert Config().device == "auto"
    assert config_from_mapping({"device": "cuda"}, "x").device == "cuda"
    with pytest.raises(ConfigError, match="'device'.*gpu"):
        config_from_mapping({"device": "gpu"}, "x")


def test_a_repository_may_name_its_runner_image() -> None:
    config = config_from_mapping({"runner_image": "ghcr.io/org/runner:1.2"}, "x")
    assert config.runner_image == "ghcr.io/org/runner:1.2"
    assert Config().runner_image is None
    with pytest.raises(ConfigError, match="'runner_image'.*no spaces"):
        config_from_mapping({"runner_image": "my image"}, "x")
