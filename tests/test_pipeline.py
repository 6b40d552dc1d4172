"""`analyze()` through `numcheck review`: scoping, per-file errors, suppression, settings and
fingerprints, on real git repositories built in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo, GitRepoFactory, RunMain

from analyzers.config import Config
from analyzers.pipeline import analyze_diff as analyze

# Line 5 is an unguarded log that is already on main in every test below.
MODEL_MAIN = """\
import torch


def old_loss(x):
    return torch.log(x)
"""
FILLER = "".join(f"CONST_{i} = {i}\n" for i in range(10))


def review_json(
    run_main: RunMain, repo: GitRepo, *extra: str, expect: int | None = None
) -> dict[str, Any]:
    code, out, err = run_main(
        [
            "review",
            str(repo.root),
            "--base",
            "main",
            "--head",
            "feature",
            "--format",
            "json",
            "--static-only",  # what is reviewed, not how it is proven (that: test_harness)
            *extra,
        ]
    )
    assert code in (0, 1), err
    data: dict[str, Any] = json.loads(out)
    assert code == (1 if data["findings"] else 0)
    if expect is not None:
        assert code == expect, data
    return data


def where(data: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["op"]) for f in data["findings"]]


def errors_by_path(data: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for error in data["errors"]:
        assert error["path"] not in out, f"two errors for one path: {data['errors']}"
        out[error["path"]] = error["message"]
    return out


# ---------------------------------------------------------------- which commits count


def test_commits_on_main_after_branching_are_not_the_prs(
    git_repo: GitRepoFactory, run_main: RunMain
) -> None:
    """Three-dot diff: a risky line that landed on main later is not the PR author's."""
    repo = git_repo(
        {"model.py": "import torch\n"},
        {"feature.py": "import torch\n\n\ndef f(p):\n    return torch.sqrt(p)\n"},
    )
    repo.checkout("main")
    repo.commit({"later.py": MODEL_MAIN}, "risky change on main")
    repo.checkout("feature")
    data = review_json(run_main, repo, expect=1)
    assert where(data) == [("feature.py", 5, "sqrt")]
    # `base` is the base ref's commit, as GitHub's pull_request.base.sha is, not the merge base.
    assert data["base"] == repo.sha("main")


def test_pure_rename_has_nothing_to_review(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo({"model.py": MODEL_MAIN}, {"model.py": None, "losses.py": MODEL_MAIN})
    data = review_json(run_main, repo, expect=0)
    assert data["errors"] == []


# ---------------------------------------------------------------- per-file errors


def test_bad_files_get_one_error_each_and_lose_nothing(
    git_repo: GitRepoFactory, run_main: RunMain
) -> None:
    repo = git_repo(
        {
            "model.py": MODEL_MAIN,
            "gone.py": "VALUE = 1\n",
            ".numcheck.toml": "max_file_bytes = 1000\n",
        },
        {
            "broken.py": "import torch\n\ndef f(x:\n    return torch.log(x)\n",
            "latin1.py": "# caf\u00e9\nimport torch\ny = torch.log(x)\n".encode("latin-1"),
            "big.py": "import torch\n" + "VALUE = 1\n" * 200 + "y = torch.log(x)\n",
            "blob.py": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "gone.py": None,
            "risky.py": MODEL_MAIN,
        },
    )
    data = review_json(run_main, repo, expect=1)
    # Nothing is lost: the good file's finding survives its neighbours' failures.
    assert where(data) == [("risky.py", 5, "log")]
    errors = errors_by_path(data)
    assert set(errors) == {"broken.py", "latin1.py", "big.py", "blob.py", "gone.py"}
    assert "does not parse" in errors["broken.py"] and ":3" in errors["broken.py"]
    assert "UTF-8" in errors["latin1.py"]
    assert "max_file_bytes" in errors["big.py"]
    assert "binary" in errors["blob.py"]
    assert "deleted" in errors["gone.py"]
    assert all(e["stage"] == "static" for e in data["errors"])
    assert data["files_analyzed"] == 1


def test_per_file_errors_in_text_output(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo({"model.py": MODEL_MAIN}, {"broken.py": "def f(:\n", "risky.py": MODEL_MAIN})
    code, out, _ = run_main(
        ["review", str(repo.root), "--base", "main", "--head", "feature", "--static-only"]
    )
    assert code == 1
    assert "risky.py:5:" in out
    assert "broken.py" in out and "does not parse" in out


# ---------------------------------------------------------------- scope


def test_scope_file_reports_old_lines_of_changed_files(
    git_repo: GitRepoFactory, run_main: RunMain
) -> None:
    repo = git_repo(
        {"model.py": MODEL_MAIN + "\n\n" + FILLER, "untouched.py": MODEL_MAIN},
        {"model.py": MODEL_MAIN + "\n\n" + FILLER + "EXTRA = 1\n"},
    )
    assert where(review_json(run_main, repo, expect=0)) == []
    data = review_json(run_main, repo, "--scope", "file", expect=1)
    # Only changed files: untouched.py has the same log and stays out.
    assert where(data) == [("model.py", 5, "log")]
    assert data["config"]["scope"] == "file"


def test_scope_diff_context_reports_lines_near_a_change(
    git_repo: GitRepoFactory, run_main: RunMain
) -> None:
    near = git_repo(
        {"model.py": MODEL_MAIN + "\n\n" + FILLER},
        {"model.py": MODEL_MAIN + "\nNEW = 1\n\n" + FILLER},
        name="near",
    )
    assert where(review_json(run_main, near, expect=0)) == []  # line 7 changed, log on 5
    data = review_json(run_main, near, "--scope", "diff_context", expect=1)
    assert where(data) == [("model.py", 5, "log")]

    far = git_repo(
        {"model.py": MODEL_MAIN + "\n\n" + FILLER},
        {"model.py": MODEL_MAIN + "\n\n" + FILLER + "EXTRA = 1\n"},
        name="far",
    )
    assert where(review_json(run_main, far, "--scope", "diff_context", expect=0)) == []


def test_scope_and_context_from_config(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo(
        {"model.py": MODEL_MAIN + "\n\n" + FILLER},
        {
            "model.py": MODEL_MAIN + "\nNEW = 1\n\n" + FILLER,
            ".numcheck.toml": 'scope = "diff_context"\ncontext_lines = 1\n',
        },
    )
    assert where(review_json(run_main, repo, expect=0)) == []  # 2 lines away, context 1
    (repo.root / ".numcheck.toml").write_text('scope = "diff_context"\n', encoding="utf-8")
    assert where(review_json(run_main, repo, expect=1)) == [("model.py", 5, "log")]


# ---------------------------------------------------------------- suppression


@pytest.mark.parametrize(
    ("comment", "reported"),
    [
        ("  # numcheck: ignore[log]", False),
        ("  # numcheck: ignore[log] -- inputs are probabilities > 0", False),
        ("  # numcheck: ignore", False),
        ("  # numcheck: ignore[sqrt]", True),
        ("", True),
    ],
)
def test_suppression_comment(
    git_repo: GitRepoFactory, run_main: RunMain, comment: str, reported: bool
) -> None:
    feature = MODEL_MAIN + f"\n\ndef new_loss(p):\n    return torch.log(p){comment}\n"
    repo = git_repo({"model.py": MODEL_MAIN}, {"model.py": feature})
    data = review_json(run_main, repo)
    assert where(data) == ([("model.py", 9, "log")] if reported else [])


# ---------------------------------------------------------------- settings


def test_disable_drops_an_op(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    new = "\n\ndef new(p):\n    return torch.log(p) + torch.sqrt(p)\n"
    repo = git_repo({"model.py": MODEL_MAIN}, {"model.py": MODEL_MAIN + new})
    assert {op for _, _, op in where(review_json(run_main, repo))} == {"log", "sqrt"}
    (repo.root / ".numcheck.toml").write_text('disable = ["log"]\n', encoding="utf-8")
    data = review_json(run_main, repo, expect=1)
    assert where(data) == [("model.py", 9, "sqrt")]
    assert data["config"]["disable"] == ["log"]
    assert data["config"]["source"] == ".numcheck.toml"


def test_disable_in_pyproject(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    feature = {
        "model.py": MODEL_MAIN + "\n\ndef new(p):\n    return torch.log(p)\n",
        "pyproject.toml": '[project]\nname = "m"\n\n[tool.numcheck]\ndisable = ["log"]\n',
    }
    repo = git_repo({"model.py": MODEL_MAIN}, feature)
    assert where(review_json(run_main, repo, expect=0)) == []


def test_unknown_op_in_config_is_an_error(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo(
        {"model.py": MODEL_MAIN},
        {"model.py": MODEL_MAIN + "\n", ".numcheck.toml": 'disable = ["lgo"]\n'},
    )
    code, out, err = run_main(["review", str(repo.root), "--base", "main", "--head", "feature"])
    assert code == 2
    assert out == ""
    assert "'lgo'" in err and ".numcheck.toml" in err


def test_exclude_drops_paths(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo(
        {".numcheck.toml": 'extend_exclude = ["vendor"]\n'},
        {"vendor/lib.py": MODEL_MAIN, "src/model.py": MODEL_MAIN},
    )
    assert where(review_json(run_main, repo, expect=1)) == [("src/model.py", 5, "log")]


EPS_DIV = "import torch\n\n\ndef ratio(x, y):\n    return x / (y.abs() + 1e-8)\n"


def test_dtype_float16_from_numcheck_toml(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    """1e-8 is below float16's smallest subnormal, so the epsilon rounds to 0 and guards
    nothing; in float32 it is a fine guard."""
    repo = git_repo({"model.py": MODEL_MAIN}, {"ratio.py": EPS_DIV})
    assert where(review_json(run_main, repo, expect=0)) == []

    (repo.root / ".numcheck.toml").write_text('dtype = "float16"\n', encoding="utf-8")
    data = review_json(run_main, repo, expect=1)
    assert where(data) == [("ratio.py", 5, "div")]
    assert data["config"]["dtype"] == "float16"

    (repo.root / ".numcheck.toml").write_text('dtype = "float32"\n', encoding="utf-8")
    assert where(review_json(run_main, repo, expect=0)) == []


def test_dtype_flag_overrides_config(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo({".numcheck.toml": 'dtype = "float32"\n'}, {"ratio.py": EPS_DIV})
    assert where(review_json(run_main, repo, "--dtype", "float16")) == [("ratio.py", 5, "div")]


def test_explicit_config_file(git_repo: GitRepoFactory, run_main: RunMain, tmp_path: Path) -> None:
    repo = git_repo({"model.py": MODEL_MAIN}, {"ratio.py": EPS_DIV})
    settings = tmp_path / "ci-numcheck.toml"
    settings.write_text('dtype = "float16"\n', encoding="utf-8")
    assert where(review_json(run_main, repo, "--config", str(settings))) == [("ratio.py", 5, "div")]


def test_fail_on_none_exits_0_with_findings(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo(
        {"model.py": MODEL_MAIN}, {"risky.py": MODEL_MAIN, ".numcheck.toml": 'fail_on = "none"\n'}
    )
    code, out, _ = run_main(
        ["review", str(repo.root), "--base", "main", "--head", "feature", "--format", "json"]
        + ["--static-only"]
    )
    assert code == 0
    assert where(json.loads(out)) == [("risky.py", 5, "log")]


# ---------------------------------------------------------------- fingerprints


def test_fingerprint_survives_moved_lines(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    risky = MODEL_MAIN + "\n\ndef new_loss(p):\n    return torch.log(p)\n"
    repo = git_repo({"model.py": MODEL_MAIN}, {"model.py": risky})
    before = review_json(run_main, repo, expect=1)["findings"]

    moved = risky.replace("import torch\n", "import torch\n\n\n\n# a comment\n", 1)
    repo.commit({"model.py": moved}, "move lines")
    after = review_json(run_main, repo, expect=1)["findings"]

    assert [(f["line"], f["function"]) for f in before] == [(9, "new_loss")]
    assert [(f["line"], f["function"]) for f in after] == [(13, "new_loss")]
    assert after[0]["fingerprint"] == before[0]["fingerprint"]


def test_fingerprint_differs_per_function_and_op(
    git_repo: GitRepoFactory, run_main: RunMain
) -> None:
    src = (
        "import torch\n\n\ndef a(p):\n    return torch.log(p)\n\n\n"
        "def b(p):\n    return torch.log(p)\n\n\ndef c(p):\n    return torch.sqrt(p)\n"
    )
    repo = git_repo({"x.py": "X = 1\n"}, {"model.py": src})
    findings = review_json(run_main, repo, expect=1)["findings"]
    assert len(findings) == 3
    assert len({f["fingerprint"] for f in findings}) == 3


def test_identical_calls_in_one_function_keep_their_own_fingerprints(
    git_repo: GitRepoFactory, run_main: RunMain
) -> None:
    """A script with the same `torch.log(p)` text on two lines: two findings, each with its
    own identity (a dynamic result for one must not land on the other), numbered from the
    top so the identity does not depend on which of them the change touched."""
    script = "import torch\n\np = torch.rand(3)\nfirst = torch.log(p)\nsecond = torch.log(p)\n"
    repo = git_repo({"train.py": "import torch\n"}, {"train.py": script})
    both = review_json(run_main, repo, expect=1)["findings"]
    assert [f["line"] for f in both] == [4, 5]
    assert len({f["fingerprint"] for f in both}) == 2
    repo.commit(
        {"train.py": script.replace("second = torch.log(p)", "second = torch.log(p)  # touched")},
        "touch the second",
    )
    touched = review_json(run_main, repo, expect=1)["findings"]
    assert touched[-1]["fingerprint"] == both[1]["fingerprint"]


# ---------------------------------------------------------------- the function itself


def test_analyze_matches_the_cli(git_repo: GitRepoFactory, run_main: RunMain) -> None:
    repo = git_repo({"model.py": MODEL_MAIN}, {"risky.py": MODEL_MAIN})
    result = analyze(repo.root, "main", "feature", Config())
    assert [(f.path, f.line, f.op) for f in result.findings] == [("risky.py", 5, "log")]
    assert result.base == repo.sha("main") and result.head == repo.sha("feature")
    assert result.repo == str(repo.root.resolve())
    cli = review_json(run_main, repo, expect=1)
    assert [f["fingerprint"] for f in cli["findings"]] == [result.findings[0].fingerprint]


def test_analyze_reads_head_from_git_not_the_working_tree(git_repo: GitRepoFactory) -> None:
    """The bot analyses a commit; uncommitted edits in the checkout must not leak in."""
    repo = git_repo({"model.py": MODEL_MAIN}, {"risky.py": MODEL_MAIN})
    (repo.root / "risky.py").write_text("VALUE = 1\n", encoding="utf-8")
    result = analyze(repo.root, "main", "feature", Config())
    assert [(f.path, f.line) for f in result.findings] == [("risky.py", 5)]


def test_the_head_is_exported_as_a_stream_leaving_out_large_data(tmp_path: Path) -> None:
    """Six 128 MiB files of zeros (300 KB packed) cost 1.6 GB of memory when the whole
    `git archive` was held at once. The export streams file by file; a large file that is not
    Python is left out and named; Python files are always kept."""
    import subprocess
    import sys

    from runners.pipeline import export

    repo = GitRepo(tmp_path / "repo")
    zeros = b"\0" * (8 * 2**20)
    repo.commit(
        {
            "pkg/model.py": "import torch\n",
            "data/a.bin": zeros,
            "data/b.bin": zeros,
            "small.txt": "x\n",
            "big_module.py": "# " + "x" * (9 * 2**20) + "\n",
        }
    )
    into = tmp_path / "head"
    into.mkdir()
    left_out = export(repo.root, "HEAD", into, file_budget=4 * 2**20, head_budget=64 * 2**20)
    assert sorted(left_out) == [("data/a.bin", "8 MiB"), ("data/b.bin", "8 MiB")]
    assert (into / "pkg/model.py").read_text() == "import torch\n"
    assert (into / "big_module.py").stat().st_size > 9 * 2**20
    assert not (into / "data" / "a.bin").exists() and (into / "small.txt").exists()
    # memory, in a fresh process: exporting 25 MiB of files peaks no higher than importing
    child = (
        "import resource, sys\nfrom pathlib import Path\n"
        "from runners.pipeline import export\n"
        "if sys.argv[1] == 'export':\n"
        "    export(Path(sys.argv[2]), 'HEAD', Path(sys.argv[3]))\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    peaks = []
    for what in ("import", "export"):
        proc = subprocess.run(
            [sys.executable, "-c", child, what, str(repo.root), str(tmp_path / f"peak-{what}")],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        peaks.append(int(proc.stdout))
    assert peaks[1] - peaks[0] < 8 * 1024, f"the export held {peaks[1] - peaks[0]} KiB"

    with pytest.raises(Exception, match="MiB"):
        export(repo.root, "HEAD", tmp_path / "tight", file_budget=4 * 2**20, head_budget=2 * 2**20)
    with pytest.raises(subprocess.CalledProcessError):
        export(repo.root, "no-such-ref", tmp_path / "none")


def test_a_blob_the_clone_lacks_costs_that_file_only(tmp_path: Path) -> None:
    """A mirror that left out large blobs made `git archive` fail, and with it the whole
    dynamic pass of the PR (jax-md's tests/data/amber_data.tar.gz)."""
    from runners.pipeline import export

    repo = GitRepo(tmp_path / "repo")
    repo.write(
        {"pkg/model.py": "import torch\n", "run.sh": "#!/bin/sh\n", "data/big.bin": b"\1" * 1000}
    )
    (repo.root / "run.sh").chmod(0o755)
    repo.commit({}, "with an executable")
    blob = repo.git("rev-parse", "HEAD:data/big.bin")
    (repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    into = tmp_path / "head"
    assert export(repo.root, "HEAD", into) == [("data/big.bin", "missing from the clone")]
    assert (into / "pkg" / "model.py").read_text() == "import torch\n"
    assert (into / "run.sh").stat().st_mode & 0o111
