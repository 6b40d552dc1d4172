"""Which Keras a checkout's TensorFlow code runs on (runners/keras_generation.py): the
configuration first, then what the checkout declares, then the reviewed commit's date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from analyzers.config import ConfigError, config_from_mapping
from runners.keras_generation import KERAS_3_DEFAULT_SINCE, from_requirements, keras_for
from runners.pipeline import _job

BEFORE = datetime(2021, 6, 1, tzinfo=UTC)
AFTER = datetime(2025, 6, 1, tzinfo=UTC)


def checkout(
    tmp_path: Path, requirements: str = "", code: str = "import tensorflow as tf\n"
) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "model.py").write_text(code, encoding="utf-8")
    if requirements:
        (tmp_path / "requirements.txt").write_text(requirements, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("requirements", "version"),
    [
        ("tensorflow==2.11.0", "2"),
        ("tensorflow-gpu>=2.4,<2.16", "2"),
        ("tensorflow>=2.16", "3"),
        ("tensorflow-cpu~=2.17.0", "3"),
        ("keras<3", "2"),
        ("keras==2.2.4", "2"),
        ("keras>=3.0", "3"),
        ("tf-keras~=2.16", "2"),
        ("tf_keras", "2"),
    ],
)
def test_a_declared_requirement_decides_over_the_date(
    tmp_path: Path, requirements: str, version: str
) -> None:
    repo = checkout(tmp_path, f"numpy\n{requirements}\n")
    for when in (BEFORE, AFTER, None):
        choice = keras_for(repo, "auto", when)
        assert choice.version == version, (when, choice)
        assert choice.why.startswith("the repository declares")


@pytest.mark.parametrize("requirements", ["", "tensorflow\n", "tensorflow>=2.0\n", "keras>=2\n"])
def test_without_a_telling_requirement_the_commit_date_decides(
    tmp_path: Path, requirements: str
) -> None:
    """No requirement, or one that admits both generations: the code is as old as its commit."""
    repo = checkout(tmp_path, requirements)
    assert keras_for(repo, "auto", BEFORE).version == "2"
    assert keras_for(repo, "auto", AFTER).version == "3"
    assert keras_for(repo, "auto", None).version == "3"
    # the boundary, in another time zone: 2024-03-08 00:30 at +02:00 is still 03-07 in UTC
    eve = (KERAS_3_DEFAULT_SINCE + timedelta(minutes=-90)).astimezone(timezone(timedelta(hours=2)))
    assert keras_for(repo, "auto", eve).version == "2"
    assert keras_for(repo, "auto", KERAS_3_DEFAULT_SINCE).version == "3"


def test_the_configuration_wins_and_code_importing_tf_keras_is_keras_2(tmp_path: Path) -> None:
    repo = checkout(tmp_path, "tensorflow>=2.16\n")
    assert keras_for(repo, "2", AFTER).version == "2"
    assert keras_for(checkout(tmp_path / "old", "tensorflow==2.4"), "3", BEFORE).version == "3"
    importing = checkout(tmp_path / "imports", "", "import tf_keras\n")
    assert keras_for(importing, "auto", AFTER).why == "the code imports tf_keras"


def test_requirements_that_say_nothing_of_keras_leave_it_undecided() -> None:
    assert from_requirements(["numpy<2", "torch==2.1", "not a requirement ==="]) is None
    assert from_requirements(["tensorflow>=2.10,!=2.12.*"]) is None  # 2.10 and 2.21 both


def test_the_key_accepts_a_toml_integer_and_refuses_other_generations(tmp_path: Path) -> None:
    assert config_from_mapping({"keras": 2}, "x").keras == "2"
    assert config_from_mapping({"keras": "3"}, "x").keras == "3"
    assert config_from_mapping({}, "x").keras == "auto"
    for wrong in (4, "keras2", True):
        with pytest.raises(ConfigError, match="keras"):
            config_from_mapping({"keras": wrong}, "x")
    # the job the sandbox gets says the generation, never "auto"
    assert _job(tmp_path, [], config_from_mapping({"keras": 2}, "x"))["keras"] == "2"
    assert _job(tmp_path, [], config_from_mapping({}, "x"))["keras"] == "3"
