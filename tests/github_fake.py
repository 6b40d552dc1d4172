"""A threaded HTTP server that speaks the subset of GitHub's REST API the App uses.

Response shapes follow GitHub's published schemas (the App itself, pulls, pull files, check
runs, reviews, review comments, issue comments, reactions, collaborator permission,
installation tokens);
the git smart-HTTP endpoints run the real `git http-backend` over a real repository built by
the test, so the App's `git fetch` is the one it would run against github.com.

It checks what GitHub checks and the App could get wrong: the App JWT (RS256 with the App's
public key, `iss`, `iat`/`exp` within ten minutes), installation tokens on every call, review
comments only on lines of the diff (line/side, `start_line` before `line`), at most 50
annotations per check-run request, texts within 65535 characters. It records every request and
every object created, and injects faults: a 403 secondary rate limit with `Retry-After`, a 500,
a slow answer.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import secrets
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt

DOCS = "https://docs.github.com/rest"
TEXT_LIMIT = 65535
FILES_CAP = 3000  # GitHub lists at most 3000 files of a pull request
REACTIONS = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}
SECONDARY_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes "
    "before you try again. If you reach out to GitHub Support for help, "
    "please include the request ID."
)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class HTTPError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        errors: list[Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}
        self.errors = errors


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    status: int = 500
    times: int = 1
    delay: float = 0.0
    retry_after: int | None = None
    after: bool = False  # process the request, then answer with the error (a lost answer)


@dataclass
class FakePull:
    repo: str
    number: int
    base_ref: str
    head_ref: str
    user: str = "octocat"
    draft: bool = False
    state: str = "open"
    title: str = "Numerics change"
    fork: Path | None = None  # the head branch lives in this other repository (a fork PR)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int = 0


@dataclass
class FakeState:
    app_id: int
    public_key: str
    app_slug: str = "numcheck"  # GET /app; the App's own reviews and comments are by <slug>[bot]

    @property
    def bot_login(self) -> str:
        return f"{self.app_slug}[bot]"

    repos: dict[str, Path] = field(default_factory=dict)
    pulls: dict[tuple[str, int], FakePull] = field(default_factory=dict)
    tokens: dict[str, tuple[int, float]] = field(default_factory=dict)  # token -> inst, expiry
    permissions: dict[tuple[str, str], str] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)
    issue_comments: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    jwt_claims: list[dict[str, Any]] = field(default_factory=list)


class FakeGitHub:
    """Start with `with FakeGitHub(app_id, public_key_pem) as gh:`; `gh.api_url` is the
    `base_url` for PyGithub (and NUMCHECK_GITHUB_API_URL)."""

    def __init__(
        self,
        app_id: int,
        public_key: str,
        *,
        per_page_default: int = 30,
        app_slug: str = "numcheck",
    ) -> None:
        self.state = FakeState(app_id=app_id, public_key=public_key, app_slug=app_slug)
        self.lock = threading.RLock()
        self.per_page_default = per_page_default
        self._ids = itertools.count(1000)
        self._files_cache: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        # GitHub's secondary rate limit on content-creating calls: (calls, per seconds), off
        # when None. Set by bench.app --scale; `limited` counts the 403s sent, `early` the
        # mutating calls that arrived before the Retry-After announced to that installation
        self.secondary_limit: tuple[int, float] | None = None
        self.limited = 0
        self.early = 0
        self._mutations: dict[int, list[float]] = {}
        self._retry_until: dict[int, float] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # --- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        return self.url

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_id(self) -> int:
        return next(self._ids)

    # --- set-up by tests ---------------------------------------------------------------------
    def add_repo(self, full_name: str, path: Path) -> None:
        subprocess.run(
            ["git", "-C", str(path), "config", "uploadpack.allowAnySHA1InWant", "true"], check=True
        )
        self.state.repos[full_name] = path

    def add_pull(self, pull: FakePull) -> None:
        self.state.pulls[(pull.repo, pull.number)] = pull

    def add_review(
        self, repo: str, number: int, login: str, body: str, commit_id: str
    ) -> dict[str, Any]:
        """A review someone else posted (the App's own go through the API)."""
        with self.lock:
            review_id = self.next_id()
            review = {
                "id": review_id,
                "node_id": f"PRR_{review_id}",
                "user": self.user(login),
                "body": body,
                "state": "COMMENTED",
                "commit_id": commit_id,
                "submitted_at": _now(),
                "html_url": f"https://github.com/{repo}/pull/{number}"
                f"#pullrequestreview-{review_id}",
                "pull_request_url": f"{self.url}/repos/{repo}/pulls/{number}",
                "author_association": "CONTRIBUTOR",
                "_links": {},
                "repo": repo,
                "number": number,
            }
            self.state.reviews.append(review)
            return review

    def set_permission(self, repo: str, login: str, permission: str) -> None:
        self.state.permissions[(repo, login)] = permission

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int = 500,
        *,
        times: int = 1,
        delay: float = 0.0,
        retry_after: int | None = None,
        after: bool = False,
    ) -> None:
        """The next `times` matching requests get `status` (0: only the delay, then the
        real answer); with `after`, the request is carried out first and only its answer is
        lost, as when GitHub times out after doing the work."""
        with self.lock:
            self.state.faults.append(
                Fault(
                    method.upper(), re.compile(path_regex), status, times, delay, retry_after, after
                )
            )

    def secondary_limited(self, installation: int) -> int | None:
        """Seconds to wait when this mutating call passes the secondary limit, else None
        (and the call is counted). Called with the lock held."""
        if self.secondary_limit is None:
            return None
        calls, per = self.secondary_limit
        now = time.monotonic()
        if now < self._retry_until.get(installation, 0.0):
            self.early += 1
        recent = [t for t in self._mutations.get(installation, []) if now - t < per]
        if len(recent) >= calls:
            wait = max(1, int(per - (now - recent[0])) + 1)
            self._retry_until[installation] = now + wait
            self._mutations[installation] = recent
            self.limited += 1
            return wait
        self._mutations[installation] = [*recent, now]
        return None

    def calls(self, method: str, path_regex: str) -> list[Recorded]:
        with self.lock:
            return [
                r
                for r in self.state.requests
                if r.method == method and re.search(path_regex, r.path)
            ]

    # --- git helpers -------------------------------------------------------------------------
    def git(self, repo: str, *args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(self.state.repos[repo]), *args], capture_output=True, check=True
        )
        return proc.stdout.decode("utf-8", "replace").strip()

    def sha(self, repo: str, ref: str) -> str:
        return self.git(repo, "rev-parse", f"{ref}^{{commit}}")

    def pull_ref(self, pull: FakePull) -> str:
        """refs/pull/N/head in the base repository, brought up to date with the head branch
        (GitHub copies a fork's commits there)."""
        ref = f"refs/pull/{pull.number}/head"
        if pull.fork is not None:
            self.git(pull.repo, "fetch", "-q", str(pull.fork), f"+refs/heads/{pull.head_ref}:{ref}")
        else:
            self.git(pull.repo, "update-ref", ref, self.sha(pull.repo, pull.head_ref))
        return ref

    # --- shapes ------------------------------------------------------------------------------
    def user(self, login: str) -> dict[str, Any]:
        is_bot = login.endswith("[bot]")
        uid = abs(hash(login)) % 10_000_000
        return {
            "login": login,
            "id": uid,
            "node_id": f"U_{uid}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
            "gravatar_id": "",
            "url": f"{self.url}/users/{login}",
            "html_url": f"https://github.com/{login}",
            "type": "Bot" if is_bot else "User",
            "site_admin": False,
        }

    def repo_json(self, full_name: str) -> dict[str, Any]:
        owner, name = full_name.split("/")
        rid = abs(hash(full_name)) % 1_000_000_000
        return {
            "id": rid,
            "node_id": f"R_{rid}",
            "name": name,
            "full_name": full_name,
            "private": False,
            "owner": self.user(owner),
            "html_url": f"https://github.com/{full_name}",
            "description": None,
            "fork": False,
            "url": f"{self.url}/repos/{full_name}",
            "clone_url": f"{self.url}/{full_name}.git",
            "git_url": f"git://github.com/{full_name}.git",
            "ssh_url": f"git@github.com:{full_name}.git",
            "default_branch": "main",
            "visibility": "public",
        }

    def pull_json(self, pull: FakePull) -> dict[str, Any]:
        head_sha = self.sha(pull.repo, self.pull_ref(pull))
        base_sha = self.sha(pull.repo, pull.base_ref)
        url = f"{self.url}/repos/{pull.repo}/pulls/{pull.number}"
        repo = self.repo_json(pull.repo)
        owner = pull.repo.split("/")[0]
        head_owner = "forker" if pull.fork is not None else owner
        head_repo = (
            dict(self.repo_json(f"forker/{pull.repo.split('/')[1]}"), fork=True)
            if pull.fork is not None
            else repo
        )
        return {
            "url": url,
            "id": 10_000 + pull.number,
            "node_id": f"PR_{pull.number}",
            "html_url": f"https://github.com/{pull.repo}/pull/{pull.number}",
            "diff_url": f"https://github.com/{pull.repo}/pull/{pull.number}.diff",
            "patch_url": f"https://github.com/{pull.repo}/pull/{pull.number}.patch",
            "issue_url": f"{self.url}/repos/{pull.repo}/issues/{pull.number}",
            "number": pull.number,
            "state": pull.state,
            "locked": False,
            "title": pull.title,
            "user": self.user(pull.user),
            "body": "",
            "created_at": _now(),
            "updated_at": _now(),
            "closed_at": None,
            "merged_at": None,
            "merge_commit_sha": None,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "labels": [],
            "milestone": None,
            "draft": pull.draft,
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{self.url}/repos/{pull.repo}/pulls/comments{{/number}}",
            "comments_url": f"{self.url}/repos/{pull.repo}/issues/{pull.number}/comments",
            "statuses_url": f"{self.url}/repos/{pull.repo}/statuses/{head_sha}",
            "head": {
                "label": f"{head_owner}:{pull.head_ref}",
                "ref": pull.head_ref,
                "sha": head_sha,
                "user": self.user(head_owner),
                "repo": head_repo,
            },
            "base": {
                "label": f"{owner}:{pull.base_ref}",
                "ref": pull.base_ref,
                "sha": base_sha,
                "user": self.user(owner),
                "repo": repo,
            },
            "_links": {"self": {"href": url}},
            "author_association": "OWNER",
            "auto_merge": None,
            "active_lock_reason": None,
            "merged": False,
            "mergeable": True,
            "rebaseable": True,
            "mergeable_state": "clean",
            "merged_by": None,
            "comments": 0,
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": 1,
            "additions": 0,
            "deletions": 0,
            "changed_files": len(self.pull_files(pull)),
        }

    def pull_files(self, pull: FakePull) -> list[dict[str, Any]]:
        """The PR's files as GitHub lists them: merge base to head, at most 3000."""
        ref = self.pull_ref(pull)
        base = self.git(pull.repo, "merge-base", pull.base_ref, ref)
        head = self.sha(pull.repo, ref)
        key = (pull.repo, base, head)
        if key not in self._files_cache:
            self._files_cache[key] = self._compute_files(pull.repo, base, head)[:FILES_CAP]
        return self._files_cache[key]

    def _compute_files(self, repo: str, base: str, head: str) -> list[dict[str, Any]]:
        numstat = self.git(repo, "diff", "--numstat", "-z", "--no-renames", base, head)
        statuses = self.git(repo, "diff", "--name-status", "-z", "--no-renames", base, head)
        fields = statuses.split("\0")
        status_of = {fields[i + 1]: fields[i] for i in range(0, len(fields) - 1, 2)}
        blobs = {}
        for line in self.git(repo, "ls-tree", "-r", "-z", head).split("\0"):
            if line:
                meta, path = line.split("\t", 1)
                blobs[path] = meta.split()[2]
        patches: dict[str, str] = {}
        current: str | None = None
        old_path: str | None = None
        in_header = False
        for line in self.git(repo, "diff", "--no-renames", base, head).split("\n"):
            if line.startswith("diff --git "):
                current, old_path, in_header = None, None, True
            elif in_header and line.startswith("--- "):
                old_path = line[6:] if line.startswith("--- a/") else None
            elif in_header and line.startswith("+++ "):
                current = line[6:] if line.startswith("+++ b/") else old_path
                if current is not None:
                    patches[current] = ""
            elif line.startswith("@@"):
                in_header = False
                if current is not None:
                    patches[current] += line + "\n"
            elif not in_header and current is not None and line[:1] in ("+", "-", " ", "\\"):
                patches[current] += line + "\n"
        files = []
        for row in numstat.split("\0"):
            if not row:
                continue
            added, deleted, path = row.split("\t", 2)
            binary = added == "-"
            status = {"A": "added", "D": "removed", "M": "modified"}.get(
                status_of.get(path, "M")[:1], "modified"
            )
            item: dict[str, Any] = {
                "sha": blobs.get(path, "0" * 40),
                "filename": path,
                "status": status,
                "additions": 0 if binary else int(added),
                "deletions": 0 if binary else int(deleted),
                "changes": 0 if binary else int(added) + int(deleted),
                "blob_url": f"https://github.com/{repo}/blob/{head}/{path}",
                "raw_url": f"https://github.com/{repo}/raw/{head}/{path}",
                "contents_url": f"{self.url}/repos/{repo}/contents/{path}?ref={head}",
            }
            if not binary and patches.get(path):
                item["patch"] = patches[path].rstrip("\n")
            files.append(item)
        return files

    def diff_lines(self, pull: FakePull, path: str) -> set[int]:
        """RIGHT-side lines a review comment may be placed on (inside a hunk)."""
        for item in self.pull_files(pull):
            if item["filename"] == path and "patch" in item:
                return right_lines(item["patch"])
        return set()

    def page(self, handler: Handler, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        query = handler.query
        per_page = min(int(query.get("per_page", [self.per_page_default])[0]), 100)
        page = max(int(query.get("page", ["1"])[0]), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []

        def link(n: int, rel: str) -> str:
            q = {k: v[0] for k, v in query.items()}
            q.update(page=str(n), per_page=str(per_page))
            qs = "&".join(f"{k}={v}" for k, v in q.items())
            return f'<{self.url}{handler.route}?{qs}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return chunk, ({"Link": ", ".join(links)} if links else {})


def right_lines(patch: str) -> set[int]:
    lines: set[int] = set()
    new = 0
    for text in patch.splitlines():
        m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", text)
        if m:
            new = int(m.group(1))
            continue
        if text.startswith("-") or text.startswith("\\"):
            continue
        lines.add(new)
        new += 1
    return lines


Route = tuple[str, re.Pattern[str], Callable[..., Any]]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeGitHub
    routes: list[Route]
    query: dict[str, list[str]]
    route: str

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # --- plumbing ----------------------------------------------------------------------------
    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(
        self,
        status: int,
        data: Any,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
    ) -> None:
        body = raw if raw is not None else (b"" if data is None else json.dumps(data).encode())
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-GitHub-Request-Id", secrets.token_hex(8).upper())
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", "4999")
        self.send_header("X-RateLimit-Reset", str(int(time.time()) + 3600))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _serve(self, method: str) -> None:
        fake = self.fake
        split = urlsplit(self.path)
        self.route, self.query = split.path.rstrip("/") or "/", parse_qs(split.query)
        raw = self._body()
        if split.path.endswith((".git/info/refs", ".git/git-upload-pack")):
            self._git(method, split.path, split.query, raw)
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._send(400, {"message": "Problems parsing JSON", "documentation_url": DOCS})
            return
        record = Recorded(method, self.route, self.query, body)
        with fake.lock:
            fake.state.requests.append(record)
            fault = next(
                (
                    f
                    for f in fake.state.faults
                    if f.method == method and f.times > 0 and f.pattern.search(self.route)
                ),
                None,
            )
            if fault:
                fault.times -= 1
        if fault:
            time.sleep(fault.delay)
            if fault.status and fault.after:
                self._route(method, body, record, quiet=True)
            if fault.status:
                record.status = fault.status
                if fault.status == 403:
                    headers = {"Retry-After": str(fault.retry_after or 1)}
                    self._send(
                        403,
                        {
                            "message": SECONDARY_LIMIT_MESSAGE,
                            "documentation_url": f"{DOCS}/overview/rate-limits",
                        },
                        headers,
                    )
                else:
                    self._send(fault.status, {"message": "Server Error"})
                return
        self._route(method, body, record)

    def _route(self, method: str, body: Any, record: Recorded, quiet: bool = False) -> None:
        fake = self.fake
        for verb, pattern, func in self.routes:
            match = pattern.fullmatch(self.route)
            if verb == method and match:
                try:
                    installation = None
                    if func.__name__ not in ("installation_token", "get_app"):
                        installation = self._authenticate()
                    if installation is not None and method != "GET":
                        with fake.lock:
                            wait = fake.secondary_limited(installation)
                        if wait is not None:
                            raise HTTPError(
                                403, SECONDARY_LIMIT_MESSAGE, {"Retry-After": str(wait)}
                            )
                    with fake.lock:
                        status, data, headers = func(fake, self, body, **match.groupdict())
                except HTTPError as exc:
                    error: dict[str, Any] = {
                        "message": exc.message,
                        "documentation_url": DOCS,
                        "status": str(exc.status),
                    }
                    if exc.errors is not None:
                        error["errors"] = exc.errors
                    if not quiet:
                        record.status = exc.status
                        self._send(exc.status, error, exc.headers)
                    return
                if not quiet:
                    record.status = status
                    self._send(status, data, headers)
                return
        if not quiet:
            record.status = 404
            self._send(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})

    def _authenticate(self) -> int:
        auth = self.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() in ("token", "bearer"):
            entry = self.fake.state.tokens.get(value.strip())
            if entry and entry[1] > time.time():
                return entry[0]
        raise HTTPError(401, "Bad credentials")

    def _git(self, method: str, path: str, query: str, body: bytes) -> None:
        """Smart HTTP through the real `git http-backend` (CGI), with token basic auth."""
        auth = self.headers.get("Authorization", "")
        token = ""
        if auth.lower().startswith("basic "):
            user, _, token = base64.b64decode(auth[6:]).decode().partition(":")
        entry = self.fake.state.tokens.get(token)
        with self.fake.lock:
            self.fake.state.requests.append(Recorded(method, path, parse_qs(query), None))
        if not entry or entry[1] < time.time():
            self._send(401, None, {"WWW-Authenticate": 'Basic realm="GitHub"'}, raw=b"")
            return
        m = re.fullmatch(r"/([^/]+/[^/]+)\.git(/.*)", path)
        repo = self.fake.state.repos.get(m.group(1)) if m else None
        if repo is None or m is None:
            self._send(404, None, raw=b"Repository not found.")
            return
        with self.fake.lock:  # GitHub keeps refs/pull/N/head for every PR, forks included
            for (name, _number), pull in self.fake.state.pulls.items():
                if name == m.group(1):
                    self.fake.pull_ref(pull)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": str(repo),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": "/.git" + m.group(2),
            "REQUEST_METHOD": method,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(repo),
        }
        proc = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers[key.strip()] = value.strip()
        content_type = headers.pop("Content-Type", "application/octet-stream")
        self._send(status, None, headers, raw=payload, content_type=content_type)


# --- endpoint implementations ---------------------------------------------------------------
Answer = tuple[int, Any, dict[str, str]]


def _app_jwt(fake: FakeGitHub, h: Handler) -> dict[str, Any]:
    """The claims of the App JWT in the Authorization header, checked as GitHub checks them."""
    auth = h.headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        raise HTTPError(401, "A JSON web token could not be decoded")
    try:
        claims = jwt.decode(
            auth[7:],
            fake.state.public_key,
            algorithms=["RS256"],
            options={"require": ["iat", "exp", "iss"]},
            leeway=0,
        )
    except jwt.PyJWTError as exc:
        raise HTTPError(401, f"A JSON web token could not be decoded: {exc}") from None
    if str(claims["iss"]) != str(fake.state.app_id):
        raise HTTPError(401, "'Issuer' claim ('iss') must be an Integer of the App's ID")
    if claims["exp"] - claims["iat"] > 660 or claims["exp"] > time.time() + 600:
        raise HTTPError(401, "'Expiration time' claim ('exp') is too far in the future")
    if claims["iat"] > time.time():
        raise HTTPError(
            401,
            "'Issued at' claim ('iat') must be an Integer representing the "
            "time that the assertion was issued",
        )
    fake.state.jwt_claims.append(claims)
    return claims


def installation_token(fake: FakeGitHub, h: Handler, body: Any, inst: str) -> Answer:
    _app_jwt(fake, h)
    token = "ghs_" + secrets.token_urlsafe(27)
    expires = datetime.now(UTC) + timedelta(hours=1)
    fake.state.tokens[token] = (int(inst), expires.timestamp())
    return (
        201,
        {
            "token": token,
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "permissions": {
                "checks": "write",
                "pull_requests": "write",
                "contents": "read",
                "metadata": "read",
                "issues": "write",
            },
            "repository_selection": "all",
        },
        {},
    )


def get_app(fake: FakeGitHub, h: Handler, body: Any) -> Answer:
    """GET /app, "Get the authenticated app": only with the App JWT, never a token."""
    _app_jwt(fake, h)
    slug = fake.state.app_slug
    owner = fake.user("octo-org")
    return (
        200,
        {
            "id": fake.state.app_id,
            "slug": slug,
            "node_id": f"A_{fake.state.app_id}",
            "client_id": f"Iv1.{fake.state.app_id:016x}",
            "owner": owner,
            "name": slug,
            "description": "Finds NaN/Inf bugs",
            "external_url": "https://numcheck.example.com",
            "html_url": f"https://github.com/apps/{slug}",
            "created_at": _now(),
            "updated_at": _now(),
            "permissions": {
                "checks": "write",
                "pull_requests": "write",
                "contents": "read",
                "metadata": "read",
                "issues": "write",
            },
            "events": ["pull_request", "issue_comment", "check_run", "check_suite"],
            "installations_count": 1,
        },
        {},
    )


def _pull(fake: FakeGitHub, owner: str, repo: str, number: str) -> FakePull:
    pull = fake.state.pulls.get((f"{owner}/{repo}", int(number)))
    if pull is None:
        raise HTTPError(404, "Not Found")
    return pull


def get_pull(fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, number: str) -> Answer:
    return 200, fake.pull_json(_pull(fake, owner, repo, number)), {}


def list_pulls(fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str) -> Answer:
    state = h.query.get("state", ["open"])[0]
    pulls = [
        fake.pull_json(p)
        for (r, _), p in sorted(fake.state.pulls.items())
        if r == f"{owner}/{repo}" and (state == "all" or p.state == state)
    ]
    items, headers = fake.page(h, pulls)
    return 200, items, headers


def pull_files(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, number: str
) -> Answer:
    items, headers = fake.page(h, fake.pull_files(_pull(fake, owner, repo, number)))
    return 200, items, headers


def _check_output(body: dict[str, Any], run_id: int, fake: FakeGitHub) -> None:
    output = body.get("output")
    if not output:
        return
    for key in ("title", "summary", "text"):
        if len(str(output.get(key) or "")) > TEXT_LIMIT:
            raise HTTPError(422, f"output.{key} is too long (maximum is {TEXT_LIMIT} characters)")
    annotations = output.get("annotations") or []
    if len(annotations) > 50:
        raise HTTPError(422, "Only 50 annotations are allowed per request")
    for a in annotations:
        missing = {"path", "start_line", "end_line", "annotation_level", "message"} - set(a)
        if missing or a["annotation_level"] not in ("notice", "warning", "failure"):
            raise HTTPError(422, "Invalid annotation", errors=[a])
    fake.state.annotations.setdefault(run_id, []).extend(annotations)


def create_check_run(fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str) -> Answer:
    if not isinstance(body, dict) or not body.get("name") or not body.get("head_sha"):
        raise HTTPError(422, "Invalid request. name and head_sha are required")
    run_id = fake.next_id()
    _check_output(body, run_id, fake)
    run = {
        "id": run_id,
        "node_id": f"CR_{run_id}",
        "head_sha": body["head_sha"],
        "external_id": body.get("external_id", ""),
        "url": f"{fake.url}/repos/{owner}/{repo}/check-runs/{run_id}",
        "html_url": f"https://github.com/{owner}/{repo}/runs/{run_id}",
        "details_url": body.get("details_url"),
        "status": body.get("status", "queued"),
        "conclusion": body.get("conclusion"),
        "started_at": _now(),
        "completed_at": None,
        "output": {
            **{"title": None, "summary": None, "text": None},
            **{k: v for k, v in (body.get("output") or {}).items() if k != "annotations"},
            "annotations_count": 0,
        },
        "name": body["name"],
        "check_suite": {"id": 1},
        "app": {"id": fake.state.app_id, "slug": "numcheck", "name": "numcheck"},
        "pull_requests": [],
        "repo": f"{owner}/{repo}",
    }
    run["output"]["annotations_count"] = len(fake.state.annotations.get(run_id, []))
    fake.state.check_runs.append(run)
    return 201, run, {}


def update_check_run(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, run_id: str
) -> Answer:
    run = next((r for r in fake.state.check_runs if r["id"] == int(run_id)), None)
    if run is None:
        raise HTTPError(404, "Not Found")
    _check_output(body, run["id"], fake)
    for key in ("status", "conclusion", "details_url", "name", "external_id"):
        if key in body:
            run[key] = body[key]
    if body.get("conclusion"):
        run["status"] = "completed"
        run["completed_at"] = _now()
    for key, value in (body.get("output") or {}).items():
        if key != "annotations":
            run["output"][key] = value
    run["output"]["annotations_count"] = len(fake.state.annotations.get(run["id"], []))
    return 200, run, {}


def list_check_runs(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, ref: str
) -> Answer:
    name = h.query.get("check_name", [None])[0]
    runs = [
        r
        for r in fake.state.check_runs
        if r["repo"] == f"{owner}/{repo}"
        and r["head_sha"] == ref
        and (name is None or r["name"] == name)
    ]
    items, headers = fake.page(h, runs[::-1])
    return 200, {"total_count": len(runs), "check_runs": items}, headers


def create_review(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, number: str
) -> Answer:
    pull = _pull(fake, owner, repo, number)
    full = f"{owner}/{repo}"
    if body.get("event") not in (None, "COMMENT", "APPROVE", "REQUEST_CHANGES"):
        raise HTTPError(422, "Unprocessable Entity: event")
    head = fake.sha(full, fake.pull_ref(pull))
    commit = body.get("commit_id") or head
    if len(str(body.get("body") or "")) > TEXT_LIMIT:
        raise HTTPError(422, "Body is too long (maximum is 65536 characters)")
    comments = body.get("comments") or []
    for c in comments:
        if "position" in c:
            raise HTTPError(422, "the App must use line/side, not position (test policy)")
        lines = fake.diff_lines(pull, c.get("path", ""))
        start = c.get("start_line")
        wanted = {c.get("line")} | ({start} if start else set())
        if (
            c.get("side", "RIGHT") != "RIGHT"
            or not wanted <= lines
            or (start is not None and start >= c["line"])
            or len(c.get("body", "")) > TEXT_LIMIT
        ):
            raise HTTPError(
                422,
                "Unprocessable Entity",
                errors=[
                    "Pull request review thread line must be part of the diff and Pull request "
                    "review thread start line must precede the end line"
                ],
            )
    review_id = fake.next_id()
    review = {
        "id": review_id,
        "node_id": f"PRR_{review_id}",
        "user": fake.user(fake.state.bot_login),
        "body": body.get("body") or "",
        "state": "COMMENTED",
        "commit_id": commit,
        "submitted_at": _now(),
        "html_url": f"https://github.com/{full}/pull/{number}#pullrequestreview-{review_id}",
        "pull_request_url": f"{fake.url}/repos/{full}/pulls/{number}",
        "author_association": "NONE",
        "_links": {},
        "repo": full,
        "number": int(number),
    }
    fake.state.reviews.append(review)
    for c in comments:
        _add_review_comment(fake, full, int(number), commit, c, review_id)
    return 200, review, {}


def _add_review_comment(
    fake: FakeGitHub,
    full: str,
    number: int,
    commit: str,
    c: dict[str, Any],
    review_id: int,
    in_reply_to: int | None = None,
) -> dict[str, Any]:
    cid = fake.next_id()
    comment = {
        "id": cid,
        "node_id": f"PRRC_{cid}",
        "pull_request_review_id": review_id,
        "diff_hunk": "@@",
        "path": c.get("path"),
        "position": None,
        "original_position": None,
        "commit_id": commit,
        "original_commit_id": commit,
        "user": fake.user(c.get("user") or fake.state.bot_login),
        "body": c.get("body", ""),
        "created_at": _now(),
        "updated_at": _now(),
        "html_url": f"https://github.com/{full}/pull/{number}#discussion_r{cid}",
        "pull_request_url": f"{fake.url}/repos/{full}/pulls/{number}",
        "author_association": "NONE",
        "_links": {},
        "line": c.get("line"),
        "original_line": c.get("line"),
        "side": c.get("side", "RIGHT"),
        "start_line": c.get("start_line"),
        "original_start_line": c.get("start_line"),
        "start_side": c.get("start_side") if c.get("start_line") else None,
        "subject_type": "line",
        "repo": full,
        "number": number,
    }
    if in_reply_to is not None:
        comment["in_reply_to_id"] = in_reply_to
    fake.state.review_comments.append(comment)
    return comment


def list_reviews(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, number: str
) -> Answer:
    items = [
        r
        for r in fake.state.reviews
        if r["repo"] == f"{owner}/{repo}" and r["number"] == int(number)
    ]
    page, headers = fake.page(h, items)
    return 200, page, headers


def list_review_comments(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, number: str
) -> Answer:
    items = [
        c
        for c in fake.state.review_comments
        if c["repo"] == f"{owner}/{repo}" and c["number"] == int(number)
    ]
    page, headers = fake.page(h, items)
    return 200, page, headers


def edit_review_comment(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, cid: str
) -> Answer:
    comment = next((c for c in fake.state.review_comments if c["id"] == int(cid)), None)
    if comment is None:
        raise HTTPError(404, "Not Found")
    comment["body"] = body["body"]
    comment["updated_at"] = _now()
    return 200, comment, {}


def reply_review_comment(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, number: str, cid: str
) -> Answer:
    parent = next((c for c in fake.state.review_comments if c["id"] == int(cid)), None)
    if parent is None:
        raise HTTPError(404, "Not Found")
    reply = _add_review_comment(
        fake,
        f"{owner}/{repo}",
        int(number),
        parent["commit_id"],
        {"path": parent["path"], "line": parent["line"], "body": body["body"]},
        fake.next_id(),
        int(cid),
    )
    return 201, reply, {}


def create_issue_comment(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, number: str
) -> Answer:
    cid = fake.next_id()
    full = f"{owner}/{repo}"
    comment = {
        "id": cid,
        "node_id": f"IC_{cid}",
        "url": f"{fake.url}/repos/{full}/issues/comments/{cid}",
        "html_url": f"https://github.com/{full}/pull/{number}#issuecomment-{cid}",
        "issue_url": f"{fake.url}/repos/{full}/issues/{number}",
        "user": fake.user(fake.state.bot_login),
        "created_at": _now(),
        "updated_at": _now(),
        "author_association": "NONE",
        "body": body["body"],
        "repo": full,
        "number": int(number),
    }
    fake.state.issue_comments.append(comment)
    return 201, comment, {}


def create_reaction(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, cid: str
) -> Answer:
    if body.get("content") not in REACTIONS:
        raise HTTPError(422, "Validation Failed", errors=[{"field": "content"}])
    existing = next(
        (
            r
            for r in fake.state.reactions
            if r["comment_id"] == int(cid) and r["content"] == body["content"]
        ),
        None,
    )
    if existing:
        return 200, existing, {}
    rid = fake.next_id()
    reaction = {
        "id": rid,
        "node_id": f"REA_{rid}",
        "user": fake.user(fake.state.bot_login),
        "content": body["content"],
        "created_at": _now(),
        "comment_id": int(cid),
    }
    fake.state.reactions.append(reaction)
    return 201, reaction, {}


def permission(
    fake: FakeGitHub, h: Handler, body: Any, owner: str, repo: str, login: str
) -> Answer:
    level = fake.state.permissions.get((f"{owner}/{repo}", login), "read")
    return 200, {"permission": level, "role_name": level, "user": fake.user(login)}, {}


_O = r"(?P<owner>[^/]+)/(?P<repo>[^/]+)"
ROUTES: list[Route] = [
    ("POST", re.compile(r"/app/installations/(?P<inst>\d+)/access_tokens"), installation_token),
    ("GET", re.compile(r"/app"), get_app),
    ("GET", re.compile(rf"/repos/{_O}/pulls"), list_pulls),
    ("GET", re.compile(rf"/repos/{_O}/pulls/(?P<number>\d+)"), get_pull),
    ("GET", re.compile(rf"/repos/{_O}/pulls/(?P<number>\d+)/files"), pull_files),
    ("POST", re.compile(rf"/repos/{_O}/check-runs"), create_check_run),
    ("PATCH", re.compile(rf"/repos/{_O}/check-runs/(?P<run_id>\d+)"), update_check_run),
    ("GET", re.compile(rf"/repos/{_O}/commits/(?P<ref>[^/]+)/check-runs"), list_check_runs),
    ("POST", re.compile(rf"/repos/{_O}/pulls/(?P<number>\d+)/reviews"), create_review),
    ("GET", re.compile(rf"/repos/{_O}/pulls/(?P<number>\d+)/reviews"), list_reviews),
    ("GET", re.compile(rf"/repos/{_O}/pulls/(?P<number>\d+)/comments"), list_review_comments),
    ("PATCH", re.compile(rf"/repos/{_O}/pulls/comments/(?P<cid>\d+)"), edit_review_comment),
    (
        "POST",
        re.compile(rf"/repos/{_O}/pulls/(?P<number>\d+)/comments/(?P<cid>\d+)/replies"),
        reply_review_comment,
    ),
    ("POST", re.compile(rf"/repos/{_O}/issues/(?P<number>\d+)/comments"), create_issue_comment),
    ("POST", re.compile(rf"/repos/{_O}/issues/comments/(?P<cid>\d+)/reactions"), create_reaction),
    ("GET", re.compile(rf"/repos/{_O}/collaborators/(?P<login>[^/]+)/permission"), permission),
]


def _handler_for(fake: FakeGitHub) -> type[Handler]:
    return type("BoundHandler", (Handler,), {"fake": fake, "routes": ROUTES})
