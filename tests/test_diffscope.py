"""diffscope against real git repositories built in tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from analyzers.diffscope import (
    ChangedFile,
    DiffError,
    changed_lines,
    default_branch_base,
    merge_base,
    read_file_at,
    resolve_ref,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


class Repo:
    """A throwaway git repository with just enough helpers to script a PR."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Test")
        self.git("config", "user.email", "test@example.com")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        proc = subprocess.run(
            ["git", "-C", str(self.root), *args], capture_output=True, check=True, env=env
        )
        return proc.stdout.decode().strip()

    def write(self, rel: str, content: str | bytes) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


def lines_of(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, n + 1))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo")
    r.write("model.py", lines_of(20))
    r.write("old.py", lines_of(5, "old"))
    r.write("gone.py", lines_of(4, "gone"))
    r.commit("base")
    r.git("checkout", "-q", "-b", "feature")
    return r


def test_modified_file_added_lines(repo: Repo) -> None:
    text = lines_of(20).replace("line5\n", "CHANGED5\n").replace("line12\n", "line12\nNEW\n")
    repo.write("model.py", text)
    repo.commit("edit")
    result = changed_lines(repo.root, "main", "feature")
    assert set(result) == {"model.py"}
    cf = result["model.py"]
    assert cf.status == "modified"
    assert cf.old_path is None
    assert cf.lines == frozenset({5, 13})
    assert not cf.binary and not cf.whole_file
    assert cf.covers(13) and not cf.covers(12)


def test_pure_deletion_adds_no_lines(repo: Repo) -> None:
    repo.write("model.py", lines_of(20).replace("line7\n", ""))
    repo.commit("delete a line")
    assert changed_lines(repo.root, "main", "feature")["model.py"].lines == frozenset()


def test_new_file(repo: Repo) -> None:
    repo.write("pkg/new.py", "import torch\n\nx = torch.log(y)\n")
    repo.commit("add")
    cf = changed_lines(repo.root, "main", "feature")["pkg/new.py"]
    assert cf == ChangedFile(path="pkg/new.py", status="added", lines=frozenset({1, 2, 3}))


def test_new_file_without_trailing_newline(repo: Repo) -> None:
    repo.write("tail.py", "a = 1\nb = 2")
    repo.commit("add")
    for mode in ("added", "diff_context", "file"):
        assert changed_lines(repo.root, "main", "feature", mode)["tail.py"].lines == {1, 2}


def test_added_line_that_looks_like_a_header(repo: Repo) -> None:
    repo.write("model.py", lines_of(20).replace("line3\n", "++ b/evil.py\n--- a/x\n@@ -1 +1 @@\n"))
    repo.commit("tricky content")
    result = changed_lines(repo.root, "main", "feature")
    assert set(result) == {"model.py"}
    assert result["model.py"].lines == {3, 4, 5}


def test_deleted_file(repo: Repo) -> None:
    (repo.root / "gone.py").unlink()
    repo.commit("rm")
    for mode in ("added", "diff_context", "file"):
        cf = changed_lines(repo.root, "main", "feature", mode)["gone.py"]
        assert cf.status == "deleted"
        assert cf.lines == frozenset()
        assert not cf.whole_file


def test_pure_rename(repo: Repo) -> None:
    repo.git("mv", "old.py", "renamed.py")
    repo.commit("mv")
    result = changed_lines(repo.root, "main", "feature")
    assert set(result) == {"renamed.py"}
    cf = result["renamed.py"]
    assert (cf.status, cf.old_path, cf.lines) == ("renamed", "old.py", frozenset())
    whole = changed_lines(repo.root, "main", "feature", "file")["renamed.py"]
    assert whole.whole_file and whole.lines == frozenset(range(1, 6))


def test_rename_with_edit(repo: Repo) -> None:
    (repo.root / "sub").mkdir()
    repo.git("mv", "old.py", "sub/renamed.py")
    repo.write("sub/renamed.py", lines_of(5, "old").replace("old4\n", "edited4\n"))
    repo.commit("mv and edit")
    cf = changed_lines(repo.root, "main", "feature")["sub/renamed.py"]
    assert (cf.status, cf.old_path, cf.lines) == ("renamed", "old.py", frozenset({4}))


def test_spaces_and_non_ascii_paths(repo: Repo) -> None:
    names = ["dir with space/mödel ü.py", "tab\there.py", 'quote"and\\slash.py', "日本語.py"]
    for name in names:
        repo.write(name, "a = 1\nb = 2\n")
    repo.commit("odd names")
    repo.write(names[0], "a = 1\nb = 3\n")
    repo.git("mv", names[3], "dir with space/名前 2.py")
    repo.commit("edit odd names")
    result = changed_lines(repo.root, "main", "feature")
    assert result[names[0]].lines == {1, 2}
    assert result[names[1]].lines == {1, 2}
    assert result[names[2]].lines == {1, 2}
    moved = result["dir with space/名前 2.py"]
    assert moved.status == "added"  # the rename happened inside the PR: new relative to base
    assert read_file_at(repo.root, "feature", names[0]) == b"a = 1\nb = 3\n"


def test_diff_context_clips_to_file(repo: Repo) -> None:
    text = lines_of(20).replace("line1\n", "first\n").replace("line20\n", "last\n")
    text = text.replace("line10\n", "line10\nmid\n")
    repo.write("model.py", text)
    repo.commit("edges")
    cf = changed_lines(repo.root, "main", "feature", "diff_context", context=2)["model.py"]
    # Head has 21 lines: hunks at 1, 11 and 21.
    assert cf.lines == {1, 2, 3, 9, 10, 11, 12, 13, 19, 20, 21}
    zero = changed_lines(repo.root, "main", "feature", "diff_context", context=0)["model.py"]
    assert zero.lines == {1, 11, 21}


def test_diff_context_around_pure_deletion(repo: Repo) -> None:
    repo.write("model.py", lines_of(20).replace("line10\n", ""))
    repo.commit("delete line 10")
    cf = changed_lines(repo.root, "main", "feature", "diff_context", context=2)["model.py"]
    # The deletion sits between head lines 9 and 10.
    assert cf.lines == {8, 9, 10, 11}


def test_file_mode(repo: Repo) -> None:
    repo.write("model.py", lines_of(20).replace("line3\n", "x\n"))
    repo.write("fresh.py", "a\nb\n")
    repo.commit("edit")
    result = changed_lines(repo.root, "main", "feature", "file")
    assert result["model.py"].whole_file
    assert result["model.py"].lines == frozenset(range(1, 21))
    assert result["fresh.py"].lines == {1, 2}
    assert "old.py" not in result


def test_merge_base_semantics(repo: Repo) -> None:
    repo.write("model.py", lines_of(20).replace("line18\n", "pr18\n"))
    repo.commit("pr change")
    repo.git("checkout", "-q", "main")
    repo.write("model.py", lines_of(20).replace("line2\n", "main2\n"))
    repo.write("main_only.py", "z = 1\n")
    main_tip = repo.commit("main moves on")
    repo.git("checkout", "-q", "feature")
    result = changed_lines(repo.root, "main", "feature")
    assert set(result) == {"model.py"}
    assert result["model.py"].lines == {18}
    fork = merge_base(repo.root, "main", "feature")
    assert fork == repo.git("rev-parse", "main~1")
    assert fork != main_tip
    # Shas and relative refs work as well as branch names.
    assert changed_lines(repo.root, main_tip, "HEAD") == result


def test_no_changes(repo: Repo) -> None:
    assert changed_lines(repo.root, "main", "feature") == {}


def test_binary_file(repo: Repo) -> None:
    repo.write("weights.bin", b"\x00\x01\x02binary")
    repo.commit("add binary")
    for mode in ("added", "diff_context", "file"):
        cf = changed_lines(repo.root, "main", "feature", mode)["weights.bin"]
        assert cf.binary and cf.status == "added"
        assert cf.lines == frozenset() and not cf.whole_file
    assert read_file_at(repo.root, "feature", "weights.bin") == b"\x00\x01\x02binary"


def test_symlink_type_change_has_no_lines(repo: Repo) -> None:
    (repo.root / "old.py").unlink()
    os.symlink("model.py", repo.root / "old.py")
    repo.commit("file to symlink")
    cf = changed_lines(repo.root, "main", "feature", "file")["old.py"]
    assert cf.status == "type-changed"
    assert cf.lines == frozenset() and not cf.whole_file


def test_unknown_ref(repo: Repo) -> None:
    with pytest.raises(DiffError, match=r"unknown git ref 'nope'.*git fetch origin nope"):
        changed_lines(repo.root, "nope", "feature")
    with pytest.raises(DiffError, match="unknown git ref"):
        changed_lines(repo.root, "main", "no/such/branch")
    with pytest.raises(DiffError, match="invalid git ref"):
        resolve_ref(repo.root, "--output=/tmp/x")


def test_not_a_repo(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(DiffError, match="not a git repository"):
        changed_lines(plain, "main", "HEAD")
    with pytest.raises(DiffError, match="not a directory"):
        changed_lines(tmp_path / "missing", "main", "HEAD")


def test_git_missing(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(DiffError, match="git is not installed"):
        merge_base(repo.root, "main", "feature")


def test_bad_arguments(repo: Repo) -> None:
    with pytest.raises(ValueError, match="unknown diff mode"):
        changed_lines(repo.root, "main", "feature", mode="hunks")
    with pytest.raises(ValueError, match="context"):
        changed_lines(repo.root, "main", "feature", "diff_context", context=-1)


def test_unrelated_histories(repo: Repo) -> None:
    repo.git("checkout", "-q", "--orphan", "island")
    repo.write("island.py", "x\n")
    repo.commit("unrelated")
    with pytest.raises(DiffError, match="no merge base"):
        changed_lines(repo.root, "main", "island")


def test_read_file_at(repo: Repo) -> None:
    repo.write("model.py", "new content\n")
    repo.commit("rewrite")
    assert read_file_at(repo.root, "main", "model.py") == lines_of(20).encode()
    assert read_file_at(repo.root, "feature", "model.py") == b"new content\n"
    with pytest.raises(DiffError, match="does not exist"):
        read_file_at(repo.root, "feature", "absent.py")


def test_default_branch_base_prefers_origin_head(repo: Repo, tmp_path: Path) -> None:
    repo.git("checkout", "-q", "-b", "develop", "main")
    repo.write("dev.py", "d\n")
    develop = repo.commit("develop moves ahead of main")
    repo.git("checkout", "-q", "-b", "pr", "develop")
    repo.commit("pr")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--no-checkout", str(repo.root), str(clone)],
        check=True,
        capture_output=True,
    )
    cloned = Repo.__new__(Repo)
    cloned.root = clone
    cloned.git("remote", "set-head", "origin", "develop")
    cloned.git("checkout", "-q", "-b", "main", "origin/main")
    cloned.git("checkout", "-q", "pr")  # the clone made it from the origin's HEAD
    # origin/HEAD (develop) wins over the local main branch.
    assert default_branch_base(clone) == develop
    cloned.git("remote", "set-head", "origin", "--delete")
    assert default_branch_base(clone) == repo.git("rev-parse", "main")


def test_default_branch_base_falls_back_to_main_then_master(repo: Repo) -> None:
    base = repo.git("rev-parse", "main")
    repo.commit("pr")
    assert default_branch_base(repo.root) == base
    repo.git("branch", "-q", "-m", "main", "master")
    assert default_branch_base(repo.root) == base
    repo.git("branch", "-q", "-D", "master")
    with pytest.raises(DiffError, match="pass --base"):
        default_branch_base(repo.root)
