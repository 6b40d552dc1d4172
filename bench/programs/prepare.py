"""The program list, and building one program's review repository from a mirror.

The programs come from the GRIST artifact (FSE 2021), which keeps published tutorial and
example programs as its subjects. Its copies carry the artifact's own harness in blocks
between `'''inserted code'''` markers (a scheduler imported from the artifact, which stops
the loop when the loss is NaN or after a time limit). Those blocks are blanked, line for line,
so the program is as its author wrote it, its line numbers unchanged; nothing else is touched.
The artifact's `*_grist.py` twins (the programs hand-instrumented for its search) are left out.
"""

from __future__ import annotations

import csv
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
PROGRAMS = HERE / "programs.tsv"
COLUMNS = ("id", "subject", "repo", "commit", "folder", "script", "lines", "op")
INSERTED = re.compile(r"""^\s*(?:'''|\"\"\")inserted code(?:'''|\"\"\")\s*$""")


@dataclass(frozen=True)
class Program:
    id: str
    subject: str  # the name its source gives it
    repo: str
    commit: str
    folder: str
    script: str  # relative to the folder, which becomes the repository root
    first: int  # the buggy line(s), as numbered in the program
    last: int
    op: str

    @property
    def lines(self) -> range:
        return range(self.first, self.last + 1)


def load_programs(path: Path = PROGRAMS) -> list[Program]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    programs = []
    for row in rows:
        if tuple(row) != COLUMNS:
            raise ValueError(f"{path}: columns must be {COLUMNS}, got {tuple(row)}")
        first, _, last = row["lines"].partition("-")
        programs.append(
            Program(
                row["id"],
                row["subject"],
                row["repo"],
                row["commit"],
                row["folder"],
                row["script"],
                int(first),
                int(last or first),
                row["op"],
            )
        )
    return programs


def blank_inserted(source: str) -> str:
    """`source` with every block between two inserted-code markers (the markers included)
    turned into empty lines."""
    out: list[str] = []
    inside = False
    for line in source.splitlines(keepends=True):
        marker = bool(INSERTED.match(line))
        if marker or inside:
            out.append("\n" if line.endswith("\n") else "")
            if marker:
                inside = not inside
        else:
            out.append(line)
    if inside:
        raise ValueError("an inserted-code block is not closed")
    return "".join(out)


def _git(clone: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    flag = "--git-dir" if (clone / "HEAD").is_file() else "-C"
    return subprocess.run(["git", flag, str(clone), *args], capture_output=True, check=False)


def export(program: Program, clone: Path, dest: Path) -> list[str]:
    """Write the program's folder at `program.commit` into `dest`, inserted blocks blanked;
    returns the paths whose contents the mirror lacks (large data files a partial clone left
    out): the program runs without them, as a user's checkout without its data would."""
    listing = _git(
        clone, "ls-tree", "-r", "-z", "--full-tree", program.commit, "--", program.folder
    )
    if listing.returncode:
        raise ValueError(
            f"{program.repo} has no {program.folder} at {program.commit[:12]}: "
            f"{listing.stderr.decode(errors='replace').strip()}"
        )
    missing = []
    for entry in filter(None, listing.stdout.split(b"\0")):
        meta, _, name = entry.decode().partition("\t")
        mode, kind, blob = meta.split()
        relative = Path(name).relative_to(program.folder)
        if kind != "blob" or mode == "120000" or relative.name.endswith("_grist.py"):
            continue
        content = _git(clone, "cat-file", "blob", blob)
        if content.returncode:
            missing.append(str(relative))
            continue
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.stdout
        if relative.suffix == ".py":
            data = blank_inserted(data.decode("utf-8")).encode("utf-8")
        target.write_bytes(data)
    if not (dest / program.script).is_file():
        raise ValueError(f"{program.folder} has no {program.script} at {program.commit[:12]}")
    return missing


def build_repository(program: Program, clone: Path, dest: Path) -> tuple[str, str, list[str]]:
    """A git repository in `dest`: an empty base commit, then the program added, as the pull
    request a user would open. Returns (base, head, missing paths)."""
    dest.mkdir(parents=True, exist_ok=True)

    def git(*args: str) -> str:
        done = subprocess.run(
            [
                "git",
                "-C",
                str(dest),
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@numcheck.invalid",
                "-c",
                "commit.gpgsign=false",
                *args,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    git("init", "-q", "-b", "main")
    (dest / "README.md").write_text(f"{program.subject}\n", encoding="utf-8")
    git("add", "README.md")
    git("commit", "-q", "-m", "base")
    base = git("rev-parse", "HEAD")
    missing = export(program, clone, dest)
    git("add", "-A")
    git("commit", "-q", "-m", f"add {program.script}")
    return base, git("rev-parse", "HEAD"), missing
