"""The Celery app: its configuration from the settings, its queues, and the GitHub client each
task uses. Everything that sends a task imports this module, and nothing here imports a task, so
the web's routers, the scheduling and the tasks do not import each other through it."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from celery import Celery
from kombu import Queue

from bot.broker import TRANSPORT
from bot.github import GitHubClient, TokenCache
from bot.settings import Settings, from_env

QUEUES = ("static", "dynamic")

_bound: Settings | None = None


def bind_settings(settings: Settings) -> None:
    """Use these settings in this process (the web app and `numcheck serve` call it before
    anything touches the Celery configuration)."""
    global _bound
    previous, _bound = _bound, settings
    _tokens.cache_clear()
    if (
        previous is not None
        and celery_app.configured
        and celery_config(previous) != celery_config(settings)
    ):
        celery_app.conf.update(celery_config(settings))
        celery_app._after_fork()  # drop the connections and producers of the old broker


def get_settings() -> Settings:
    global _bound
    if _bound is None:
        _bound = from_env()
    return _bound


def celery_config(settings: Settings) -> dict[str, Any]:
    transport: dict[str, Any] = {"visibility_timeout": settings.visibility_timeout}
    if settings.broker_prefix:
        transport["global_keyprefix"] = settings.broker_prefix
    if settings.broker_url.startswith("filesystem://"):
        folder = settings.broker_folder
        transport.update(
            data_folder_in=folder,
            data_folder_out=folder,
            control_folder=folder + "/control",
            store_processed=False,
        )
    return {
        "broker_url": settings.broker_url,
        # kombu's filesystem channel without its start-up races (bot/broker.py)
        "broker_transport": TRANSPORT if settings.broker_url.startswith("filesystem://") else None,
        "broker_transport_options": transport,
        "broker_connection_retry_on_startup": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_soft_time_limit": settings.soft_time_limit,
        "task_time_limit": settings.hard_time_limit,
        "task_default_queue": "static",
        "task_queues": tuple(Queue(name) for name in QUEUES),
        "task_ignore_result": True,
        "task_serializer": "json",
        "accept_content": ["json"],
        "worker_hijack_root_logger": False,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
    }


celery_app = Celery("numcheck", set_as_current=False)
celery_app.add_defaults(lambda: celery_config(get_settings()))


@lru_cache(maxsize=1)
def _tokens() -> TokenCache:
    return TokenCache(get_settings())


def client_for(installation_id: int) -> GitHubClient:
    return GitHubClient(get_settings(), _tokens(), installation_id)


def forget_token(installation_id: int) -> None:
    """Drop the installation's cached token (GitHub answered 401 to it): the next client
    mints a new one."""
    _tokens().forget(installation_id)


def declare_queues() -> None:
    """Declare every queue and its binding on the broker, so that a message published before
    any worker is up is routed to its queue rather than dropped as unroutable."""
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=3)
        channel = conn.default_channel
        for queue in celery_app.conf.task_queues:
            queue.bind(channel).declare()
