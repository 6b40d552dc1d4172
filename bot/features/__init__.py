"""Feature modules, one per concern, each with its own event router (bedevere's manner)."""

from __future__ import annotations

from bot.features import checks, commands, installations, ping, pulls
from bot.features.context import Context
from bot.webhooks import Router

__all__ = ["Context", "routers"]


def routers() -> list[Router]:
    return [ping.router, installations.router, pulls.router, commands.router, checks.router]
