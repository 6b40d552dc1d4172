"""`numcheck serve`: web and worker in one command, embedded broker and SQLite, no Redis; a
signed delivery goes in over HTTP and the review comes out at the GitHub test server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
from pathlib import Path

from app_support import APP_ID, SECRET, deliver, make_key, pull_payload, wait_for
from conftest import GitRepoFactory
from github_fake import FakeGitHub, FakePull


def test_serve_runs_the_app_without_redis(
    tmp_path: Path, numcheck_exe: str, git_repo: GitRepoFactory
) -> None:
    key_path, public = make_key(tmp_path)
    repo = git_repo(
        {
            ".numcheck.toml": 'dynamic = false\ncomment_on = "potential"\n',
            "m.py": "import torch\n\n\ndef f(x):\n    return x\n",
        },
        {"m.py": "import torch\n\n\ndef f(x):\n    return torch.log(x)\n"},
    )
    with FakeGitHub(APP_ID, public) as fake:
        fake.add_repo("octo/serve", repo.root)
        fake.add_pull(FakePull("octo/serve", 5, "main", "feature"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMCHECK_")}
        env.update(
            {
                "NUMCHECK_APP_ID": str(APP_ID),
                "NUMCHECK_PRIVATE_KEY": str(key_path),
                "NUMCHECK_WEBHOOK_SECRET": SECRET,
                "NUMCHECK_GITHUB_API_URL": fake.api_url,
                "NUMCHECK_WRITE_INTERVAL": "0",
            }
        )
        data = tmp_path / "data"
        proc = subprocess.Popen(
            [numcheck_exe, "serve", "--port", "0", "--data-dir", str(data)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            line = ""
            for line in proc.stdout:  # the first line names the port
                if "listening on" in line:
                    break
            match = re.search(r"http://127\.0\.0\.1:(\d+)/webhook", line)
            assert match, line
            url = f"http://127.0.0.1:{match.group(1)}"
            with urllib.request.urlopen(f"{url}/healthz", timeout=10) as response:
                assert json.loads(response.read())["status"] == "ok"
            payload = pull_payload(
                "opened",
                repo="octo/serve",
                number=5,
                head=repo.sha("feature"),
                base=repo.sha("main"),
                installation=3,
                api_url=fake.api_url,
            )
            status, body = deliver(url, "pull_request", payload)
            assert status == 202 and body["status"].startswith("queued analysis"), body
            run = wait_for(
                lambda: next(
                    (r for r in fake.state.check_runs if r["status"] == "completed"), None
                ),
                60,
                "the check run to complete",
            )
            assert run["conclusion"] == "neutral"
            wait_for(lambda: fake.state.reviews, 30, "the review")
            assert len(fake.state.review_comments) == 1
            assert (data / "numcheck.db").is_file()
        finally:
            proc.terminate()  # serve stops its worker
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
