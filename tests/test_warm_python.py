"""The warm interpreter runs a reproducer as `python script.py` would, without importing torch
again: the same exit status and stderr as a fresh Python, nothing carried from one script to
the next, a timeout that stops what the script started, and no way for the script to write
the answer the harness reads."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runners.warm_python import AnswerLines, WarmPython, run_cold


@pytest.fixture
def warm() -> Iterator[WarmPython]:
    python = WarmPython()
    yield python
    python.close()


def checkout(tmp_path: Path, scripts: dict[str, str]) -> Path:
    """A folder with a package called `runners` of its own (numcheck has one too) and the
    scripts."""
    (tmp_path / "src" / "runners").mkdir(parents=True)
    (tmp_path / "src" / "runners" / "__init__.py").write_text('WHO = "the checkout"\n')
    for name, text in scripts.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def running(pid: int) -> bool:
    """Alive and not a zombie (one killed and left to a pid 1 that does not reap is dead)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def stays_running(pid: int, within: float = 5.0) -> bool:
    """Still running `within` seconds on: a SIGKILLed process dies when the kernel next
    schedules it, which on a loaded machine can be after kill() has returned."""
    deadline = time.monotonic() + within
    while running(pid):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
    return False


WHERE_AM_I = """\
import os, subprocess, sys
import runners
grandchild = subprocess.run(
    [sys.executable, "-c", "import os; print(os.environ['PYTHONPATH'])"],
    capture_output=True, text=True, check=True,
).stdout.strip()
print(__name__, sys.path[0], os.getcwd(), runners.WHO, grandchild, sys.argv, file=sys.stderr)
assert runners.WHO == "someone else", "the checkout's own package was imported"
"""


def test_a_script_runs_as_a_fresh_python_would(tmp_path: Path, warm: WarmPython) -> None:
    repo = checkout(
        tmp_path,
        {"where.py": WHERE_AM_I, "leaves.py": "import sys\nsys.exit(3)\n", "fine.py": "x = 1\n"},
    )
    path = str(repo / "src")
    for name, status in (("where.py", 1), ("leaves.py", 3), ("fine.py", 0)):
        cold = run_cold(repo / name, repo, path, 60)
        assert warm.run(repo / name, repo, path, 60) == cold
        assert cold[0] == status, cold
    assert warm.warm_runs == 3
    stderr = warm.run(repo / "where.py", repo, path, 60)[1]
    assert f"__main__ {repo} {repo} the checkout {path} ['{repo / 'where.py'}']" in stderr
    assert stderr.splitlines()[1:3] == [
        "Traceback (most recent call last):",
        f'  File "{repo / "where.py"}", line 8, in <module>',
    ]
    assert stderr.rstrip().endswith("AssertionError: the checkout's own package was imported")


def test_nothing_carries_over_from_one_script_to_the_next(tmp_path: Path, warm: WarmPython) -> None:
    repo = checkout(
        tmp_path,
        {
            "first.py": """\
                import sys, torch
                torch.set_default_dtype(torch.float64)
                torch.marked_by_first = True
                sys.modules["left_behind"] = sys
                """,
            "second.py": """\
                import sys, torch
                assert torch.get_default_dtype() == torch.float32
                assert not hasattr(torch, "marked_by_first")
                assert "left_behind" not in sys.modules
                """,
        },
    )
    assert warm.run(repo / "first.py", repo, "", 60) == (0, "")
    assert warm.run(repo / "second.py", repo, "", 60) == (0, "")
    assert warm.warm_runs == 2


def test_a_timeout_stops_the_script_and_what_it_started(tmp_path: Path, warm: WarmPython) -> None:
    pid_file = tmp_path / "sleeper.pid"
    repo = checkout(
        tmp_path,
        {
            "hangs.py": f"""\
                import subprocess, time
                sleeper = subprocess.Popen(["sleep", "300"])
                open({str(pid_file)!r}, "w").write(str(sleeper.pid))
                time.sleep(300)
                """
        },
    )
    assert warm.run(repo / "hangs.py", repo, "", 3) == (None, "")
    assert not stays_running(int(pid_file.read_text()))
    assert warm.run(repo / "hangs.py", repo, "", 3)[0] is None  # and the next run is served
    assert warm.warm_runs == 2


def test_a_script_cannot_write_the_answer(tmp_path: Path, warm: WarmPython) -> None:
    """A reproducer that must fail writes a forged "passed" answer on every descriptor it
    has, then fails: the harness still reads that it failed."""
    repo = checkout(
        tmp_path,
        {
            "forges.py": """\
                import os
                forged = b'{"pid": 1}\\n{"returncode": 0}\\n'
                for fd in range(3, 256):
                    try:
                        os.write(fd, forged)
                    except OSError:
                        pass
                raise AssertionError("the op gave NaN")
                """
        },
    )
    returncode, stderr = warm.run(repo / "forges.py", repo, "", 60)
    assert returncode == 1 and "AssertionError: the op gave NaN" in stderr
    assert warm.run(repo / "forges.py", repo, "", 60)[0] == 1


def test_a_helper_that_died_leaves_runs_to_a_fresh_python(tmp_path: Path, warm: WarmPython) -> None:
    repo = checkout(tmp_path, {"fails.py": "raise AssertionError('NaN')\n"})
    assert warm.run(repo / "fails.py", repo, "", 60)[0] == 1
    assert warm._proc is not None
    warm._proc.kill()
    warm._proc.wait()
    returncode, stderr = warm.run(repo / "fails.py", repo, "", 60)
    assert returncode == 1 and stderr.rstrip().endswith("AssertionError: NaN")
    assert warm.warm_runs == 1  # the second came from a fresh Python


def test_two_answers_in_the_pipe_at_once_are_both_read_at_once() -> None:
    """A fast script's pid and exit status can both arrive before the first read: the
    second answer is taken from what was read already, not waited for on the pipe."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b'{"pid": 41}\n{"returncode": 3}\n{"pid"')
        answers = AnswerLines(read_end)
        began = time.monotonic()
        assert answers.next(30) == {"pid": 41}
        assert answers.next(30) == {"returncode": 3}
        assert time.monotonic() - began < 5
        os.write(write_end, b": 42}\n")
        assert answers.next(30) == {"pid": 42}  # a line split across two reads
        os.close(write_end)
        write_end = -1
        with pytest.raises(ValueError, match="did not answer"):
            answers.next(30)  # the helper closed its end
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


# A worker's start as the supervisor makes it (WARM_BOOT), then, where the harness would be
# imported, numcheck's own `runners` and a WarmPython that adopts the forked helper.
ADOPTING_WORKER = """\
import json
sys.path.insert(0, sys.argv[1])
import runners
from runners.warm_python import WARM_HELPER, WarmPython
forked = os.environ.pop(WARM_HELPER)
warm = WarmPython()
adopted = warm.adopt(forked)
script, cwd, path = sys.argv[2:5]
runs = [warm.run(Path(script), Path(cwd), path, 60) for _ in range(2)]
helper = warm._proc.pid
print(json.dumps({"adopted": adopted, "forked": forked, "runs": runs, "helper": helper,
                  "warm_runs": warm.warm_runs, "worker": os.getpid(),
                  "worker_has_torch": "torch" in sys.modules}))
"""

WARM_AT_ITS_FIRST_LINE = """\
import os, sys
warm = "torch" in sys.modules  # before this script imports anything
numcheck = sorted(n for n in sys.modules if n.split(".")[0] in ("runners", "analyzers"))
import runners
print(warm, numcheck, runners.WHO, os.getppid(), file=sys.stderr)
"""


def test_a_helper_forked_at_a_workers_start_is_warm_and_holds_nothing_of_numcheck(
    tmp_path: Path,
) -> None:
    """The sandboxed worker forks its helper before importing numcheck (runners/supervisor.py
    WARM_BOOT): the scripts find torch imported, numcheck's packages neither imported nor on
    the path (the checkout's `runners` is the one they get), and the helper goes when the
    worker does."""
    import json
    import subprocess
    import sys

    from runners.supervisor import OWN_ROOT, WARM_BOOT

    repo = checkout(tmp_path, {"first_line.py": WARM_AT_ITS_FIRST_LINE})
    boot = WARM_BOOT + "from pathlib import Path\n" + ADOPTING_WORKER
    done = subprocess.run(
        [sys.executable, "-I", "-c", boot, OWN_ROOT, str(repo / "first_line.py"), str(repo)]
        + [str(repo / "src")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["adopted"] and report["warm_runs"] == 2, report
    assert report["worker_has_torch"]
    pid, _, _ = report["forked"].split(",")
    assert int(pid) == report["helper"]
    for returncode, stderr in report["runs"]:
        assert returncode == 0, stderr
        # warm at the first line, no numcheck module, the checkout's package, and the
        # helper (the script's parent) is the one the worker forked
        assert stderr.strip() == f"True [] the checkout {report['helper']}"
    assert not stays_running(report["helper"])  # the worker's end closed its requests


def test_adopting_refuses_what_is_not_a_forked_helper(warm: WarmPython) -> None:
    assert not warm.adopt("")
    assert not warm.adopt("12,x,4")
    assert warm._proc is None  # a helper is started on first use, as before
