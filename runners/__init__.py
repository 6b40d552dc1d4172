"""Where untrusted PR code runs.

`harness.py` executes inside the child process and is the only code that imports the PR's
modules; `local.py` starts it with a scrubbed environment and a time limit; `pipeline.py`
holds `analyze()`, the static pass followed by the dynamic pass. `analyzers/` never imports
this package and this package never imports `bot/`. The hardened sandboxes (rlimits, an
unprivileged user, no network, Docker) come with the sandbox issue.
"""
