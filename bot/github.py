"""GitHub access for the worker: the App's JWT, installation tokens, and the calls it makes.

The worker mints its own tokens: an RS256 JWT signed with the App's private key (`iat` 60 s in
the past against clock drift, `exp` 9 minutes ahead, under GitHub's 10-minute cap), exchanged for
an installation token that is cached until five minutes before its hour runs out. Neither the key
nor a token ever reaches the sandbox (the runner scrubs its environment) or the git workspace
(the token travels to git in an environment variable, never in a URL or a config file).

PyGithub does the HTTP; `base_url` points it at GitHub, a GitHub Enterprise server or the test
server. Idempotent calls are retried inside PyGithub (5xx, secondary rate limits with
`Retry-After`); POSTs are not, so that a failure is retried by the task, which first looks at
what already went out.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import jwt
from github import Auth, Github, GithubException, GithubRetry
from github.PullRequest import PullRequest
from github.Repository import Repository

from bot import pauses
from bot.settings import Settings

JWT_BACKDATE = 60
JWT_LIFETIME = 540
TOKEN_MARGIN = 300
USER_AGENT = "numcheck-app"
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"})


def app_jwt(app_id: int, private_key: str, now: float | None = None) -> str:
    now = int(time.time() if now is None else now)
    payload = {"iat": now - JWT_BACKDATE, "exp": now + JWT_LIFETIME, "iss": str(app_id)}
    return jwt.encode(payload, private_key, algorithm="RS256")


@dataclass
class Token:
    value: str
    expires_at: float  # epoch seconds


class TokenCache:
    """Installation tokens by installation id, reused until TOKEN_MARGIN before expiry."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._tokens: dict[int, Token] = {}
        self._lock = threading.Lock()
        self.minted = 0
        self._bot_login: str | None = None

    def bot_login(self) -> str:
        """The App's bot user, `<slug>[bot]`, the author of everything the App posts.

        Asked of GitHub once (`GET /app` with the App JWT) and kept: the slug never changes
        while the App exists, and a setting could be unset or wrong, letting anyone's review
        that carries the App's marker pass for the App's own."""
        with self._lock:
            if self._bot_login is None:
                gh = self._app_client()
                try:
                    _headers, data = gh.requester.requestJsonAndCheck(
                        "GET", "/app", headers={"Authorization": f"Bearer {self._jwt()}"}
                    )
                finally:
                    gh.close()
                slug = str((data or {}).get("slug") or "").strip()
                if not slug:
                    raise RuntimeError("GET /app answered without the App's slug")
                self._bot_login = f"{slug}[bot]"
            return self._bot_login

    def token(self, installation_id: int) -> str:
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached and cached.expires_at - TOKEN_MARGIN > time.time():
                return cached.value
            token = self._mint(installation_id)
            self._tokens[installation_id] = token
            self.minted += 1
            return token.value

    def forget(self, installation_id: int) -> None:
        with self._lock:
            self._tokens.pop(installation_id, None)

    def _app_client(self) -> Github:
        return Github(
            base_url=self.settings.github_api_url,
            user_agent=USER_AGENT,
            timeout=self.settings.http_timeout,
            retry=_retry(self.settings),
        )

    def _jwt(self) -> str:
        return app_jwt(self.settings.app_id, self.settings.private_key)

    def _mint(self, installation_id: int) -> Token:
        gh = self._app_client()
        try:
            # GitHub wants the JWT as "Authorization: Bearer", not Auth.Token's "token".
            _headers, data = gh.requester.requestJsonAndCheck(
                "POST",
                f"/app/installations/{installation_id}/access_tokens",
                headers={"Authorization": f"Bearer {self._jwt()}"},
            )
        finally:
            gh.close()
        expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00"))
        return Token(str(data["token"]), expires.astimezone(UTC).timestamp())


class _PausingRetry(GithubRetry):
    """PyGithub's retry (it sleeps out a `Retry-After` on idempotent calls), telling
    `on_retry_after` about every such answer so that the installation's other tasks wait too."""

    on_retry_after: Callable[[float], None] | None = None

    def new(self, **kw: Any) -> _PausingRetry:
        fresh: _PausingRetry = super().new(**kw)
        fresh.on_retry_after = self.on_retry_after
        return fresh

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Any:
        if response is not None and self.on_retry_after is not None:
            asked = str(response.headers.get("Retry-After", "")).strip()
            if response.status in (403, 429) and asked.isdigit():
                self.on_retry_after(float(asked))
        return super().increment(method, url, response, error, _pool, _stacktrace)


def _retry(
    settings: Settings, on_retry_after: Callable[[float], None] | None = None
) -> GithubRetry:
    retry = _PausingRetry(
        total=3,
        backoff_factor=max(settings.retry_base_seconds / 4, 0.05),
        allowed_methods=IDEMPOTENT,
        secondary_rate_wait=max(settings.retry_base_seconds, 1.0),
        max_rate_limit_wait=120,
    )
    retry.on_retry_after = on_retry_after
    return retry


def retry_after(exc: GithubException) -> float | None:
    """Seconds GitHub asked us to wait, from `Retry-After` or a rate limit reset."""
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    if headers.get("retry-after", "").strip().isdigit():
        return float(headers["retry-after"])
    reset = headers.get("x-ratelimit-reset", "")
    if headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        return max(float(reset) - time.time(), 1.0)
    return None


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: 5xx, 429, rate-limit 403s, network failures, and an installation that
    GitHub asked to wait (`pauses.Paused`)."""
    if isinstance(exc, pauses.Paused):
        return True
    if isinstance(exc, GithubException):
        if exc.status >= 500 or exc.status == 429:
            return True
        if exc.status == 403:
            message = (
                str((exc.data or {}).get("message", ""))
                if isinstance(exc.data, dict)
                else str(exc.data)
            )
            return "rate limit" in message.lower() or retry_after(exc) is not None
        return False
    import requests

    return isinstance(exc, requests.exceptions.RequestException | ConnectionError | TimeoutError)


class GitHubClient:
    """The calls the App makes, for one installation.

    Every call first waits out a pause GitHub asked of the installation (`bot/pauses.py`),
    and a `Retry-After` answer pauses the installation for every task and host."""

    def __init__(self, settings: Settings, tokens: TokenCache, installation_id: int) -> None:
        self.settings = settings
        self.installation_id = installation_id
        self._tokens = tokens
        self.gh = Github(
            auth=Auth.Token(tokens.token(installation_id)),
            base_url=settings.github_api_url,
            user_agent=USER_AGENT,
            timeout=settings.http_timeout,
            per_page=100,
            retry=_retry(settings, self._paused_for),
            seconds_between_requests=None,
            seconds_between_writes=settings.write_interval or None,
        )

    def close(self) -> None:
        self.gh.close()

    def _paused_for(self, seconds: float) -> None:
        pauses.pause(self.settings, self.installation_id, seconds)

    def _wait_if_paused(self) -> None:
        pauses.wait_if_paused(self.settings, self.installation_id)

    def _request(self, verb: str, url: str, body: dict[str, Any] | None = None) -> tuple[Any, Any]:
        """One API call, after any pause; a `Retry-After` answer pauses the installation."""
        self._wait_if_paused()
        try:
            return self.gh.requester.requestJsonAndCheck(verb, url, input=body)
        except GithubException as exc:
            asked = retry_after(exc)
            if exc.status in (403, 429) and asked is not None:
                self._paused_for(asked)
            raise

    @property
    def token(self) -> str:
        return self._tokens.token(self.installation_id)

    @property
    def bot_login(self) -> str:
        """The App's own login (`<slug>[bot]`, from `GET /app`): whose reviews are ours."""
        return self._tokens.bot_login()

    def git_auth_env(self) -> dict[str, str]:
        """Environment for `git fetch` with the installation token as HTTP basic auth."""
        basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode("ascii")
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }

    # --- reads -------------------------------------------------------------------------------
    def repo(self, full_name: str) -> Repository:
        return self.gh.withLazy(True).get_repo(full_name)

    def pull(self, full_name: str, number: int) -> PullRequest:
        """The PR, fetched now (PyGithub's lazy objects would fetch on first use)."""
        headers, data = self._request("GET", f"/repos/{full_name}/pulls/{number}")
        return PullRequest(self.gh.requester, headers, data)

    def pull_files(self, pull: PullRequest, cap: int = 3000) -> list[dict[str, Any]]:
        """The PR's files (path, status, patch or None), following Link pagination."""
        files: list[dict[str, Any]] = []
        self._wait_if_paused()
        for item in pull.get_files():
            files.append(
                {
                    "filename": item.filename,
                    "status": item.status,
                    "patch": item.patch,
                    "previous_filename": item.previous_filename,
                }
            )
            if len(files) >= cap:
                break
        return files

    def paginate(self, url: str) -> Iterator[dict[str, Any]]:
        """Raw JSON items of a paginated list endpoint (`url` relative to the API root)."""
        next_url: str | None = url + ("&" if "?" in url else "?") + "per_page=100"
        while next_url:
            headers, data = self._request("GET", next_url)
            items = data.get("check_runs", []) if isinstance(data, dict) else data
            yield from items
            next_url = _next_link(headers.get("link") or headers.get("Link") or "")

    def review_comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        return list(self.paginate(f"/repos/{full_name}/pulls/{number}/comments"))

    def reviews(self, full_name: str, number: int) -> list[dict[str, Any]]:
        return list(self.paginate(f"/repos/{full_name}/pulls/{number}/reviews"))

    def check_runs_for(self, full_name: str, sha: str, name: str) -> list[dict[str, Any]]:
        return list(
            self.paginate(
                f"/repos/{full_name}/commits/{sha}/check-runs?check_name={quote(name)}&filter=all"
            )
        )

    def open_pulls(self, full_name: str) -> Iterator[dict[str, Any]]:
        return self.paginate(f"/repos/{full_name}/pulls?state=open")

    def permission(self, full_name: str, login: str) -> str:
        _h, data = self._request(
            "GET", f"/repos/{full_name}/collaborators/{quote(login)}/permission"
        )
        return str(data.get("permission", "none"))

    # --- writes ------------------------------------------------------------------------------
    def _send(self, verb: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
        _h, data = self._request(verb, url, body)
        return data if isinstance(data, dict) else {}

    def create_check_run(self, full_name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._send("POST", f"/repos/{full_name}/check-runs", body)

    def update_check_run(
        self, full_name: str, check_run_id: int, body: dict[str, Any]
    ) -> dict[str, Any]:
        return self._send("PATCH", f"/repos/{full_name}/check-runs/{check_run_id}", body)

    def create_review(self, full_name: str, number: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._send("POST", f"/repos/{full_name}/pulls/{number}/reviews", body)

    def edit_review_comment(self, full_name: str, comment_id: int, body: str) -> None:
        self._send("PATCH", f"/repos/{full_name}/pulls/comments/{comment_id}", {"body": body})

    def reply_to_review_comment(
        self, full_name: str, number: int, comment_id: int, body: str
    ) -> dict[str, Any]:
        return self._send(
            "POST",
            f"/repos/{full_name}/pulls/{number}/comments/{comment_id}/replies",
            {"body": body},
        )

    def issue_comment(self, full_name: str, number: int, body: str) -> dict[str, Any]:
        return self._send("POST", f"/repos/{full_name}/issues/{number}/comments", {"body": body})

    def react_to_issue_comment(self, full_name: str, comment_id: int, content: str) -> None:
        self._send(
            "POST",
            f"/repos/{full_name}/issues/comments/{comment_id}/reactions",
            {"content": content},
        )


def _next_link(link: str) -> str | None:
    """The rel="next" URL of a Link header, or None."""
    for part in link.split(","):
        url, *params = part.split(";")
        if any(p.strip() == 'rel="next"' for p in params):
            return url.strip().strip("<>")
    return None
