"""Which lines of which files a review covers, computed with plain `git` on a local checkout.

A review looks at the pull request's own changes, so the diff is taken from the merge base of
base and head (GitHub's three-dot diff): commits that landed on the base branch after the PR
branched off are not the author's work and must not produce findings.

Plumbing commands (`diff-tree`, `cat-file`) are used on purpose: they ignore the user's porcelain
settings (diff.noprefix, diff.external, colour, textconv) that would otherwise change the output
we parse. Paths are taken from `-z` output, never from the ambiguous `diff --git` header line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MODES",
    "ChangedFile",
    "DiffError",
    "changed_lines",
    "default_branch_base",
    "merge_base",
    "read_file_at",
    "read_regular_file_at",
    "resolve_ref",
]

MODES = ("added", "diff_context", "file")

_STATUS = {
    "A": "added",
    "M": "modified",
    "R": "renamed",
    "C": "copied",
    "D": "deleted",
    "T": "type-changed",
}

# Symlinks and submodules have no Python source to review, whatever their name.
_NON_TEXT_MODES = frozenset({"120000", "160000"})
_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

# Environment variables that would point git at some other repository than repo_dir.
_GIT_LOCATION_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)


class DiffError(Exception):
    """git could not answer; the message says what to do about it."""


@dataclass(frozen=True)
class ChangedFile:
    """One file of the diff and the HEAD line numbers the review covers.

    `lines` are 1-based line numbers in the head version. With mode "file", `whole_file` is
    True and `lines` holds every line of the head version, so `line in cf.lines` and
    `cf.covers(line)` agree in every mode. Deleted files, binary files, symlinks and submodules
    never have lines: there is nothing in head to analyse.
    """

    path: str
    status: str
    old_path: str | None = None
    lines: frozenset[int] = frozenset()
    binary: bool = False
    whole_file: bool = False

    def covers(self, line: int) -> bool:
        """Whether a finding on `line` of the head version is inside the review."""
        return line in self.lines


@dataclass
class _Entry:
    """A raw diff-tree record, before line numbers are attached."""

    status: str
    path: str
    old_path: str | None
    new_mode: str
    new_sha: str
    hunks: list[tuple[int, int]] = field(default_factory=list)  # (start, count) on the new side


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def _git(
    repo_dir: Path,
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    ok_codes: Iterable[int] = (0,),
) -> subprocess.CompletedProcess[bytes]:
    """Run git in repo_dir; any failure becomes a DiffError carrying git's own words."""
    if shutil.which("git") is None:
        raise DiffError("git is not installed or not on PATH; install git to compute the diff")
    if not Path(repo_dir).is_dir():
        raise DiffError(f"{repo_dir} is not a directory; pass the path of a git checkout")
    cmd = ["git", "-C", str(repo_dir), "-c", "core.quotepath=off", *args]
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, env=_git_env(), check=False)
    except OSError as exc:
        raise DiffError(f"could not run git: {exc}") from exc
    if proc.returncode not in tuple(ok_codes):
        message = proc.stderr.decode("utf-8", "replace").strip()
        if "not a git repository" in message:
            raise DiffError(
                f"{repo_dir} is not a git repository; run numcheck inside a checkout "
                "or give the checkout's path as REPO"
            )
        if "dubious ownership" in message:
            raise DiffError(
                f"git refuses {repo_dir} (dubious ownership); run "
                f"`git config --global --add safe.directory {repo_dir}`"
            )
        detail = message or f"exit status {proc.returncode}"
        raise DiffError(f"`git {' '.join(args)}` failed: {detail}")
    return proc


def _is_shallow(repo_dir: Path) -> bool:
    out = _git(repo_dir, ["rev-parse", "--is-shallow-repository"]).stdout
    return out.strip() == b"true"


def resolve_ref(repo_dir: Path, ref: str) -> str:
    """The commit id `ref` names; unknown refs get a hint about fetching."""
    if not ref or ref.startswith("-"):
        raise DiffError(f"invalid git ref {ref!r}")
    proc = _git(
        repo_dir,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        ok_codes=(0, 1),
    )
    sha = proc.stdout.decode().strip()
    if proc.returncode != 0 or not sha:
        hint = (
            " (this is a shallow clone: fetch it or deepen history)"
            if _is_shallow(repo_dir)
            else ""
        )
        raise DiffError(
            f"unknown git ref {ref!r} in {repo_dir}; check the name or fetch it "
            f"first, e.g. `git fetch origin {ref}`{hint}"
        )
    return sha


def merge_base(repo_dir: Path, a: str, b: str) -> str:
    """The best common ancestor of a and b: the point a pull request branched off."""
    sha_a, sha_b = resolve_ref(repo_dir, a), resolve_ref(repo_dir, b)
    proc = _git(repo_dir, ["merge-base", sha_a, sha_b], ok_codes=(0, 1))
    base = proc.stdout.decode().strip()
    if proc.returncode != 0 or not base:
        hint = (
            (
                "; this is a shallow clone, so fetch more history (`git fetch --unshallow`, "
                "or fetch-depth: 0 in actions/checkout)"
            )
            if _is_shallow(repo_dir)
            else "; the two histories are unrelated"
        )
        raise DiffError(f"no merge base between {a!r} and {b!r}{hint}")
    return base


def default_branch_base(repo_dir: Path) -> str:
    """Merge base of HEAD with the default branch, for `numcheck review` without --base."""
    candidates = ("origin/HEAD", "main", "master", "origin/main", "origin/master")
    for candidate in candidates:
        proc = _git(
            repo_dir,
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{candidate}^{{commit}}"],
            ok_codes=(0, 1),
        )
        if proc.returncode == 0 and proc.stdout.strip():
            return merge_base(repo_dir, candidate, "HEAD")
    raise DiffError(
        f"no default branch found in {repo_dir} (tried {', '.join(candidates)}); "
        "pass --base REF explicitly"
    )


def read_file_at(repo_dir: Path, ref: str, path: str) -> bytes:
    """The exact bytes of `path` at `ref`, without touching the working tree."""
    sha = resolve_ref(repo_dir, ref)
    proc = _git(repo_dir, ["cat-file", "blob", f"{sha}:{path}"], ok_codes=(0, 128))
    if proc.returncode != 0:
        raise DiffError(f"{path!r} does not exist as a file at {ref!r}")
    return proc.stdout


def read_regular_file_at(repo_dir: Path, ref: str, path: str) -> bytes | None:
    """The bytes of regular file `path` at `ref`; None when the commit has no such entry.

    A symlink or a directory there is a DiffError: a settings file read from a commit must be
    the file itself, not a pointer to something outside the commit."""
    sha = resolve_ref(repo_dir, ref)
    listing = _git(repo_dir, ["ls-tree", "-z", "--full-tree", sha, "--", path]).stdout
    entry = next((e for e in listing.split(b"\0") if e.endswith(b"\t" + path.encode())), None)
    if entry is None:
        return None
    mode, kind, _ = entry.split(b"\t", 1)[0].split(b" ")
    if kind != b"blob" or mode not in (b"100644", b"100755"):
        raise DiffError(
            f"{path!r} at {ref!r} is not a regular file (git mode {mode.decode()}, {kind.decode()})"
        )
    return _git(repo_dir, ["cat-file", "blob", f"{sha}:{path}"]).stdout


def _split_z(data: bytes) -> list[str]:
    parts = data.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return [os.fsdecode(p) for p in parts]


def _parse_raw(data: bytes) -> list[_Entry]:
    """Parse `diff-tree --raw -z`: `:oldmode newmode oldsha newsha STATUS\\0path[\\0path]\\0`."""
    fields = _split_z(data)
    entries: list[_Entry] = []
    i = 0
    while i < len(fields):
        meta = fields[i]
        if not meta.startswith(":"):
            raise DiffError(f"unexpected git diff-tree output near {meta!r}")
        _old_mode, new_mode, _old_sha, new_sha, status = meta[1:].split(" ")
        letter = status[:1]
        if letter not in _STATUS:
            raise DiffError(f"unexpected diff status {status!r} from git diff-tree")
        if letter in "RC":
            old_path, path = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old_path, path = None, fields[i + 1]
            i += 2
        entries.append(_Entry(_STATUS[letter], path, old_path, new_mode, new_sha))
    return entries


def _parse_numstat_binary(data: bytes) -> set[str]:
    """New paths that git's numstat reports as binary (`-\\t-\\t`)."""
    fields = _split_z(data)
    binary: set[str] = set()
    i = 0
    while i < len(fields):
        added, _deleted, path = fields[i].split("\t", 2)
        if path == "":  # rename/copy: old and new path follow as separate fields
            path = fields[i + 2]
            i += 3
        else:
            i += 1
        if added == "-":
            binary.add(path)
    return binary


def _unquote_c(text: bytes) -> bytes:
    """Undo git's C-style quoting of a path ("a\\tb", octal escapes for raw bytes)."""
    body = text[1:-1]
    out = bytearray()
    escapes = {
        ord("n"): 10,
        ord("t"): 9,
        ord("r"): 13,
        ord("a"): 7,
        ord("b"): 8,
        ord("f"): 12,
        ord("v"): 11,
        ord("\\"): 92,
        ord('"'): 34,
    }
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != 92 or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if 48 <= nxt <= 55:
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(escapes.get(nxt, nxt))
            i += 2
    return bytes(out)


def _new_side_path(line: bytes) -> str | None:
    """Path from a `+++ b/path` line; None for /dev/null."""
    name = line[4:].rstrip(b"\n")
    quoted = name.startswith(b'"') and name.endswith(b'"')
    # Unquoted names never hold a tab: git appends one when the name contains a space.
    name = _unquote_c(name) if quoted else name.rstrip(b"\t")
    if name == b"/dev/null":
        return None
    if not name.startswith(b"b/"):
        raise DiffError(f"unexpected diff header {line!r}")
    return os.fsdecode(name[2:])


def _parse_hunks(patch: bytes) -> dict[str, list[tuple[int, int]]]:
    """New-side (start, count) of every hunk, keyed by new path, from a -U0 patch.

    Hunk bodies are skipped by count, so an added line that reads `++ x` (shown as `+++ x`)
    is never mistaken for a file header.
    """
    hunks: dict[str, list[tuple[int, int]]] = {}
    current: str | None = None
    old_left = new_left = 0
    for line in patch.splitlines():
        if old_left or new_left:
            if line.startswith(b"-"):
                old_left -= 1
            elif line.startswith(b"+"):
                new_left -= 1
            elif line.startswith(b" "):
                old_left, new_left = old_left - 1, new_left - 1
            continue  # "\ No newline at end of file" belongs to the body too
        if line.startswith(b"diff --git "):
            current = None
        elif line.startswith(b"+++ "):
            current = _new_side_path(line)
        elif line.startswith(b"@@ "):
            match = _HUNK_RE.match(line)
            if match is None:
                raise DiffError(f"unexpected hunk header {line!r}")
            old_left = int(match.group(2) or 1)
            start, count = int(match.group(3)), int(match.group(4) or 1)
            new_left = count
            if current is not None:
                hunks.setdefault(current, []).append((start, count))
    return hunks


def _line_counts(repo_dir: Path, shas: set[str]) -> dict[str, int]:
    """Number of lines in each blob, read in one `git cat-file --batch` call."""
    if not shas:
        return {}
    order = sorted(shas)
    out = _git(repo_dir, ["cat-file", "--batch"], stdin="".join(s + "\n" for s in order).encode())
    data = out.stdout
    counts: dict[str, int] = {}
    pos = 0
    for sha in order:
        header_end = data.index(b"\n", pos)
        header = data[pos:header_end].split(b" ")
        if len(header) != 3:
            raise DiffError(f"git cat-file could not read blob {sha}")
        size = int(header[2])
        blob = data[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
        counts[sha] = blob.count(b"\n") + (1 if blob and not blob.endswith(b"\n") else 0)
    return counts


def _lines_for(entry: _Entry, mode: str, context: int, length: int) -> frozenset[int]:
    if mode == "file":
        return frozenset(range(1, length + 1))
    lines: set[int] = set()
    for start, count in entry.hunks:
        if mode == "added":
            lines.update(range(start, start + count))
            continue
        # A pure deletion (count 0) sits between line `start` and `start + 1` of head.
        first = start - context if count else start + 1 - context
        last = start + count - 1 + context if count else start + context
        lines.update(range(max(first, 1), min(last, length) + 1))
    return frozenset(line for line in lines if 1 <= line <= length)


def changed_lines(
    repo_dir: Path, base: str, head: str, mode: str = "added", context: int = 3
) -> dict[str, ChangedFile]:
    """Changed files between merge-base(base, head) and head, keyed by head path.

    mode "added": lines the diff adds or changes; "diff_context": those plus `context` lines
    around each hunk (clipped to the head file); "file": every line of every changed file.
    """
    if mode not in MODES:
        raise ValueError(f"unknown diff mode {mode!r}; expected one of {', '.join(MODES)}")
    if context < 0:
        raise ValueError(f"context must be >= 0, got {context}")
    repo_dir = Path(repo_dir)
    head_sha = resolve_ref(repo_dir, head)
    base_sha = merge_base(repo_dir, base, head)
    common = ["diff-tree", "-r", "--find-renames", "--no-textconv", "--no-ext-diff"]
    raw = _git(repo_dir, [*common, "--raw", "-z", base_sha, head_sha]).stdout
    entries = _parse_raw(raw)
    if not entries:
        return {}
    binary = _parse_numstat_binary(
        _git(repo_dir, [*common, "--numstat", "-z", base_sha, head_sha]).stdout
    )
    if mode != "file":
        patch = _git(
            repo_dir,
            [
                *common,
                "-p",
                "-U0",
                "--no-color",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                base_sha,
                head_sha,
            ],
        ).stdout
        hunks = _parse_hunks(patch)
        for entry in entries:
            entry.hunks = hunks.get(entry.path, []) if entry.status != "deleted" else []

    def reviewable(entry: _Entry) -> bool:
        return (
            entry.status != "deleted"
            and entry.path not in binary
            and entry.new_mode not in _NON_TEXT_MODES
        )

    needs_length = mode != "added"
    counts = (
        _line_counts(repo_dir, {e.new_sha for e in entries if reviewable(e)})
        if needs_length
        else {}
    )
    result: dict[str, ChangedFile] = {}
    for entry in entries:
        if reviewable(entry):
            length = counts.get(entry.new_sha, 0) if needs_length else 1 << 62
            lines = _lines_for(entry, mode, context, length)
        else:
            lines = frozenset()
        changed = ChangedFile(
            path=entry.path,
            status=entry.status,
            old_path=entry.old_path,
            lines=lines,
            binary=entry.path in binary,
            whole_file=mode == "file" and reviewable(entry),
        )
        if entry.path in result and changed.status == "deleted":
            continue  # a live file at the same path matters more than the deletion record
        result[entry.path] = changed
    return result
