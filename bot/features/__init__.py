"""Feature modules, one per concern, each with its own event router (bedevere's manner)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.settings import Settings
from bot.webhooks import Router


@dataclass
class Context:
    """What a handler may use: the settings (database, broker). Handlers never call GitHub:
    anything that needs it is enqueued for the worker."""

    settings: Settings


def routers() -> list[Router]:
    from bot.features import checks, commands, installations, ping, pulls

    return [ping.router, installations.router, pulls.router, commands.router, checks.router]
