"""The warm interpreter's own program: import torch once, then fork one child per script.

Run by runners/warm_python.py as `python -c <this file's text>`, never imported: it must not
put numcheck's packages in `sys.modules`, or a checkout with its own `runners/` or
`analyzers/` package would be handed numcheck's from the cache. It uses the standard
library and torch alone.

Why fork: a reproducer is checked the way a user runs it, `python repro.py`, and each run
started a fresh Python that spent about 2 s of CPU importing torch before the first line of
the script (a confirmed finding runs three or four: on the head, then once per fix candidate).
A child forked from a parent that has imported torch, and nothing else, starts where that
fresh Python would be after `import torch`; the rest of the script runs as it would there:
`__name__ == "__main__"`, the script's folder first on `sys.path`, then `PYTHONPATH`, then the
installation's; its own working directory, stdin from /dev/null, and a process group of its
own that a timeout kills whole. The parent never runs a script's code, so no child sees what
another one did.

Protocol, one JSON object per line: a request on stdin {"script", "cwd", "pythonpath",
"stderr", "timeout"}; two answers on stdout, {"pid"} of the child once it is forked and
{"returncode"}: the exit status as subprocess gives
it (negative for a signal), or null when the timeout killed it. The child's stderr goes to the
file the request names; its stdout is discarded, as the harness discards it.
"""

import contextlib
import json
import os
import signal
import sys
import time
from typing import Any, NoReturn

BASE_PATH = [entry for entry in sys.path if entry not in ("", ".")]

with contextlib.suppress(Exception):  # without torch the scripts still run, only colder
    import torch  # noqa: F401  (the point of this process)


def _child(request: dict[str, Any], answers: int) -> NoReturn:
    """Become `python script` in the requested folder; never returns. The answers' pipe is
    closed first: nothing the script does can write an answer."""
    code = 1
    script = os.path.abspath(request["script"])
    try:
        os.close(answers)
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDWR)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # the request and answer pipes are gone from here on
        os.dup2(err, 2)
        os.close(devnull)
        os.close(err)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it at start
        os.chdir(request["cwd"])
        pythonpath = request["pythonpath"]
        os.environ["PYTHONPATH"] = pythonpath
        extra = [entry for entry in pythonpath.split(os.pathsep) if entry]
        sys.path[:] = [os.path.dirname(script), *extra, *BASE_PATH]
        sys.argv = [script]
        import runpy

        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException as exc:
        import traceback

        tb = exc.__traceback__  # from the script's first frame on, as a fresh Python prints it
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        code = 1
    _finish(code)


def _exit_code(value: object) -> int:
    """What `sys.exit(value)` makes of its argument in a fresh Python."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _finish(code: int) -> NoReturn:
    """Run the script's exit handlers and flush its files, as interpreter exit would."""
    with contextlib.suppress(BaseException):
        import atexit

        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    """The child's exit status as subprocess reports it, or None once `timeout` passed (its
    whole process group killed then)."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)  # what it left running in its group
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() >= deadline:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def serve() -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print of torch's goes to stderr, never into an answer
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, answers.fileno())
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # before any kill, whichever of the two runs first
        answers.write(json.dumps({"pid": pid}) + "\n")  # so the harness can stop it too
        answers.write(json.dumps({"returncode": _wait(pid, float(request["timeout"]))}) + "\n")


def fork_server() -> str:
    """Fork this interpreter into the helper, for a harness worker at its start: the worker
    has then imported torch once for itself and its helper, where a helper started later
    imports it again (about 2 s of CPU a job). Returns "pid,request_fd,answer_fd" for
    `WarmPython.adopt`, or "" where no helper could be forked.

    Only a worker's boot calls this, run from this file's text before anything of numcheck
    or of the checkout is imported (runners/supervisor.py WARM_BOOT), so the helper holds
    the standard library and torch alone, as one started by `python -c` does. Its stdin and
    stdout become the two pipes: the worker's own stdin (the job) and stdout (the records
    the supervisor reads) are never the helper's, and when the worker ends, its end of the
    request pipe closes and the helper's `serve` returns."""
    try:
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        pid = os.fork()
    except OSError:
        return ""
    if pid == 0:
        code = 0
        try:
            os.close(request_write)
            os.close(answer_read)
            os.dup2(request_read, 0)
            os.dup2(answer_write, 1)
            os.close(request_read)
            os.close(answer_write)
            sys.stdin = open(0, closefd=False)  # noqa: SIM115
            serve()
        except BaseException:
            code = 1
        os._exit(code)
    os.close(request_read)
    os.close(answer_write)
    return f"{pid},{request_write},{answer_read}"


if __name__ == "__main__":  # as `python -c`; importing it (a layout check) runs nothing
    serve()
