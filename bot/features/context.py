"""What every feature handler receives (its own module, so the routers' package can import the
features without the features importing it back)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.settings import Settings


@dataclass
class Context:
    """What a handler may use: the settings (database, broker). Handlers never call GitHub:
    anything that needs it is enqueued for the worker."""

    settings: Settings
