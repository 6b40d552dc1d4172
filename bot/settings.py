"""The App's settings, read once from the environment (docs/architecture.md, settings).

A missing or malformed setting stops start-up with a message naming the variable and what was
expected, rather than surfacing later as a 401 from GitHub or a broker timeout in a worker.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

from bot.report import signing

DEFAULT_API_URL = "https://api.github.com"
BROKER_SCHEMES = ("redis", "rediss", "filesystem", "memory", "amqp", "pyamqp")
DATABASE_SCHEMES = ("sqlite", "postgresql", "postgresql+psycopg")


class SettingsError(Exception):
    """A setting is missing or wrong; the message says which and how to fix it."""


@dataclass(frozen=True)
class Settings:
    app_id: int
    private_key: str = field(repr=False)
    webhook_secret: bytes = field(repr=False)
    broker_url: str
    database_url: str
    github_api_url: str = DEFAULT_API_URL
    # Optional knobs (mostly for tests and small deployments).
    broker_prefix: str = ""  # kombu global_keyprefix on Redis: isolates deployments
    broker_folder: str = ""  # filesystem broker: where messages are kept
    workspace_root: str = ""  # where PR heads are fetched (default: a temp dir)
    analyze_drafts: bool = False
    retry_base_seconds: float = 2.0  # first backoff of a transient GitHub error
    max_retries: int = 6
    soft_time_limit: int = 900  # seconds per analysis; hard limit and visibility above
    max_inline_comments: int = 30
    check_name: str = "numcheck"
    write_interval: float = 1.0  # seconds between mutating GitHub calls (GitHub asks 1)
    report_secret: bytes = field(default=b"", repr=False)  # signs report page links
    public_url: str = ""  # where GitHub users reach this App (for report links)
    report_link_days: float = signing.DEFAULT_DAYS  # how long a report link opens its page
    http_timeout: int = 30
    # Ceilings for the time and size limits a repository's settings may ask for
    # (analyzers/policy.py lowers a higher value and the review says so); NUMCHECK_MAX_*.
    max_file_bytes: int = 5_000_000
    max_search_seconds: float = 30.0
    max_dynamic_timeout: int = 600
    max_harvest_seconds: float = 300.0
    max_script_run_seconds: float = 60.0
    # One reply per user and PR in this many minutes to people without write access
    # (bot/throttle.py); 0 answers every command.
    command_reply_minutes: float = 10.0
    # The outbox (bot/outbox.py): an analysis row left queued/running/analysed this long is
    # enqueued again (0: the hard time limit plus 4 minutes), checked every `reap_interval`;
    # deliveries and finished analyses older than `retention_days` are deleted.
    reap_after: float = 0.0
    reap_interval: float = 60.0
    retention_days: float = 90.0
    # Fairness between installations (bot/scheduling.py `defer_for_fairness`): an analysis whose
    # installation already has this many running waits while other installations' analyses
    # are queued; 0 turns it off
    installation_concurrency: int = 1

    def report_expiry(self, issued: datetime | None = None) -> int:
        """When a link issued for something created at `issued` (default: now) expires."""
        return signing.expiry(issued or datetime.now(UTC), self.report_link_days)

    @property
    def redis_broker(self) -> bool:
        """The broker is Redis: locks, pauses and reply slots live there, shared by every host
        (bot/locks.py, bot/pauses.py, bot/throttle.py); otherwise in files on this host."""
        return self.broker_url.startswith(("redis://", "rediss://"))

    def coordination_folder(self) -> Path:
        """Where those files go without Redis: beside the embedded broker's messages."""
        folder = Path(self.broker_folder or tempfile.gettempdir())
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def report_url(self, analysis_id: int, issued: datetime | None = None) -> str | None:
        """A signed, expiring link to an analysis's report page (valid `report_link_days`
        from `issued`, the analysis's creation), when the App has a public URL."""
        if not self.public_url or not self.report_secret:
            return None
        expires = self.report_expiry(issued)
        return (
            f"{self.public_url}/report/{analysis_id}?"
            f"{signing.query(self.report_secret, 'analysis', str(analysis_id), expires)}"
        )

    def repository_report_path(self, repo: str, expires: int) -> str:
        """The signed path (no host) of a repository's report page, expiring at `expires`."""
        return (
            f"/report/repo/{quote(repo, safe='/')}?"
            f"{signing.query(self.report_secret, 'repository', repo, expires)}"
        )

    @property
    def limit_caps(self) -> dict[str, float]:
        """The ceilings by the settings key they cap (analyzers.config.LIMIT_KEYS)."""
        return {
            "max_file_bytes": self.max_file_bytes,
            "search_seconds": self.max_search_seconds,
            "dynamic_timeout": self.max_dynamic_timeout,
            "harvest_seconds": self.max_harvest_seconds,
            "script.run_seconds": self.max_script_run_seconds,
        }

    @property
    def hard_time_limit(self) -> int:
        return self.soft_time_limit + 60

    @property
    def reap_deadline(self) -> float:
        """Seconds without progress after which an unfinished analysis is enqueued again:
        past the hard time limit by default, so a live analysis is never run twice."""
        return self.reap_after or float(self.hard_time_limit + 240)

    @property
    def visibility_timeout(self) -> int:
        # Above the longest job plus its retries' delays, so Redis never redelivers a running
        # task to a second worker.
        return self.hard_time_limit * 2 + 600

    def public_env(self) -> dict[str, str]:
        """The settings as environment variables (to start a worker with the same ones)."""
        env = {
            "NUMCHECK_APP_ID": str(self.app_id),
            "NUMCHECK_BROKER_URL": self.broker_url,
            "NUMCHECK_DATABASE_URL": self.database_url,
            "NUMCHECK_GITHUB_API_URL": self.github_api_url,
        }
        if self.broker_prefix:
            env["NUMCHECK_BROKER_PREFIX"] = self.broker_prefix
        if self.broker_folder:
            env["NUMCHECK_BROKER_FOLDER"] = self.broker_folder
        return env


def _require(env: Mapping[str, str], name: str, hint: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise SettingsError(f"{name} is not set: {hint}")
    return value


def _url(
    env: Mapping[str, str], name: str, default: str | None, schemes: tuple[str, ...], hint: str
) -> str:
    value = env.get(name, "").strip() or default
    if not value:
        raise SettingsError(f"{name} is not set: {hint}")
    scheme = urlsplit(value).scheme
    if scheme not in schemes:
        raise SettingsError(
            f"{name}={value!r} is not a supported URL: expected one of "
            f"{', '.join(s + '://' for s in schemes)}"
        )
    return value


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number") from None
    if value < minimum:
        raise SettingsError(f"{name}={raw!r} must be at least {minimum:g}")
    return value


def _bool(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(f"{name}={raw!r} is not a boolean (true/false)")


def _public_url(env: Mapping[str, str]) -> str:
    value = env.get("NUMCHECK_PUBLIC_URL", "").strip()
    if not value:
        return ""
    if urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).netloc:
        raise SettingsError(f"NUMCHECK_PUBLIC_URL={value!r} is not an http(s) URL")
    if not env.get("NUMCHECK_REPORT_SECRET", "").strip():
        raise SettingsError(
            "NUMCHECK_PUBLIC_URL is set but NUMCHECK_REPORT_SECRET is not: "
            "report links are signed with it"
        )
    return value.rstrip("/")


def load_private_key(path_text: str) -> str:
    path = Path(path_text).expanduser()
    try:
        key = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise SettingsError(f"NUMCHECK_PRIVATE_KEY: no such file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"NUMCHECK_PRIVATE_KEY: cannot read {path}: {exc}") from None
    if "PRIVATE KEY-----" not in key:
        raise SettingsError(
            f"NUMCHECK_PRIVATE_KEY: {path} is not a PEM private key (GitHub "
            "gives one when the App is registered: 'Generate a private key')"
        )
    try:
        from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        loaded = load_pem_private_key(key.encode("ascii"), password=None)
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"NUMCHECK_PRIVATE_KEY: {path} does not parse: {exc}") from None
    if not isinstance(loaded, RSAPrivateKey):
        raise SettingsError(
            f"NUMCHECK_PRIVATE_KEY: {path} is not an RSA key (GitHub Apps sign with RS256)"
        )
    return key


def from_env(
    env: Mapping[str, str] | None = None, *, defaults: Mapping[str, str] | None = None
) -> Settings:
    """Settings from `env` (default: os.environ); `defaults` fill unset variables
    (`numcheck serve` uses them for its embedded broker and SQLite file)."""
    env = {
        **(defaults or {}),
        **{k: v for k, v in (os.environ if env is None else env).items() if v.strip()},
    }
    raw_id = _require(env, "NUMCHECK_APP_ID", "the App ID from the App's settings page")
    if not raw_id.isdigit() or int(raw_id) <= 0:
        raise SettingsError(f"NUMCHECK_APP_ID={raw_id!r} must be a positive integer")
    key = load_private_key(
        _require(env, "NUMCHECK_PRIVATE_KEY", "the path of the App's private key (.pem)")
    )
    secret = _require(env, "NUMCHECK_WEBHOOK_SECRET", "the webhook secret set on the App")
    broker = _url(env, "NUMCHECK_BROKER_URL", None, BROKER_SCHEMES, "e.g. redis://127.0.0.1:6379/0")
    folder = env.get("NUMCHECK_BROKER_FOLDER", "").strip()
    if broker.startswith("filesystem://") and not folder:
        raise SettingsError(
            "NUMCHECK_BROKER_URL=filesystem:// needs NUMCHECK_BROKER_FOLDER "
            "(a directory shared by the web and the worker)"
        )
    database = _url(
        env,
        "NUMCHECK_DATABASE_URL",
        "sqlite:///numcheck.db",
        DATABASE_SCHEMES,
        "e.g. postgresql+psycopg://user@host/db",
    )
    if database.startswith("postgresql://"):
        database = "postgresql+psycopg://" + database[len("postgresql://") :]
    api = _url(
        env,
        "NUMCHECK_GITHUB_API_URL",
        DEFAULT_API_URL,
        ("http", "https"),
        "https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise",
    )
    return Settings(
        app_id=int(raw_id),
        private_key=key,
        webhook_secret=secret.encode("utf-8"),
        broker_url=broker,
        database_url=database,
        github_api_url=api.rstrip("/"),
        broker_prefix=env.get("NUMCHECK_BROKER_PREFIX", "").strip(),
        broker_folder=folder,
        workspace_root=env.get("NUMCHECK_WORKSPACE_ROOT", "").strip(),
        analyze_drafts=_bool(env, "NUMCHECK_ANALYZE_DRAFTS"),
        retry_base_seconds=_number(env, "NUMCHECK_RETRY_BASE_SECONDS", 2.0, minimum=0.0),
        max_retries=int(_number(env, "NUMCHECK_MAX_RETRIES", 6, minimum=0)),
        soft_time_limit=int(_number(env, "NUMCHECK_TIME_LIMIT", 900, minimum=10)),
        max_inline_comments=int(_number(env, "NUMCHECK_MAX_INLINE_COMMENTS", 30, minimum=0)),
        write_interval=_number(env, "NUMCHECK_WRITE_INTERVAL", 1.0, minimum=0.0),
        report_secret=env.get("NUMCHECK_REPORT_SECRET", "").strip().encode("utf-8"),
        public_url=_public_url(env),
        report_link_days=_number(
            env, "NUMCHECK_REPORT_LINK_DAYS", signing.DEFAULT_DAYS, minimum=0.01
        ),
        http_timeout=int(_number(env, "NUMCHECK_HTTP_TIMEOUT", 30, minimum=1)),
        max_file_bytes=int(_number(env, "NUMCHECK_MAX_FILE_BYTES", 5_000_000, minimum=1)),
        max_search_seconds=_number(env, "NUMCHECK_MAX_SEARCH_SECONDS", 30.0, minimum=0.1),
        max_dynamic_timeout=int(_number(env, "NUMCHECK_MAX_DYNAMIC_TIMEOUT", 600, minimum=1)),
        max_harvest_seconds=_number(env, "NUMCHECK_MAX_HARVEST_SECONDS", 300.0, minimum=0.1),
        max_script_run_seconds=_number(env, "NUMCHECK_MAX_SCRIPT_RUN_SECONDS", 60.0, minimum=0.1),
        command_reply_minutes=_number(env, "NUMCHECK_COMMAND_REPLY_MINUTES", 10.0, minimum=0.0),
        reap_after=_number(env, "NUMCHECK_REAP_AFTER", 0.0, minimum=0.0),
        reap_interval=_number(env, "NUMCHECK_REAP_INTERVAL", 60.0, minimum=0.1),
        retention_days=_number(env, "NUMCHECK_RETENTION_DAYS", 90.0, minimum=0.01),
        installation_concurrency=int(
            _number(env, "NUMCHECK_INSTALLATION_CONCURRENCY", 1, minimum=0)
        ),
    )
