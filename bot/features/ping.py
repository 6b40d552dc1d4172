"""`ping`: GitHub's hello when the App or its webhook is created."""

from __future__ import annotations

from bot.features.context import Context
from bot.webhooks import Event, Router

router = Router("ping")


@router.register("ping")
def pong(event: Event, context: Context) -> str:
    return "pong"
