"""Where untrusted PR code runs.

`harness.py` executes inside the sandbox: its worker is the only code that imports the PR's
modules, and its supervisor (`supervisor.py`) relays the worker's records and enforces its
deadlines; `base.py` is the Runner interface (outcomes, limits, the record stream);
`local.py` runs the harness in a hardened child process (`jail.py` is its last privileged
step: namespaces, read-only mounts, rlimits, the unprivileged user; `identities.py` leases a
uid and `cgroups.py` makes a cgroup per job); `docker.py` runs it in a container per job;
`pipeline.py` holds `analyze()`, the static pass followed by the dynamic pass. `analyzers/`
never imports this package and this package never imports `bot/`.
"""
