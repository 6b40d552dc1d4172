"""`installation` and `installation_repositories`: which accounts and repositories use the App."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete

from bot.db import session_scope
from bot.features.context import Context
from bot.models import Installation, InstallationRepository
from bot.webhooks import Event, Router

router = Router("installations")

_STATUS = {
    "created": "active",
    "new_permissions_accepted": "active",
    "unsuspend": "active",
    "suspend": "suspended",
    "deleted": "deleted",
}


def _upsert(session: Any, data: dict[str, Any], selection: str | None = None) -> Installation:
    inst = session.get(Installation, int(data["id"]))
    if inst is None:
        inst = Installation(id=int(data["id"]))
        session.add(inst)
    account = data.get("account") or {}
    inst.account_login = str(account.get("login", inst.account_login or ""))
    inst.account_type = str(account.get("type", inst.account_type or ""))
    inst.repository_selection = str(
        selection or data.get("repository_selection") or inst.repository_selection or ""
    )
    return inst


def _add_repos(session: Any, inst: Installation, repos: list[dict[str, Any]]) -> None:
    known = {r.full_name for r in inst.repositories}
    for repo in repos:
        name = str(repo.get("full_name", ""))
        if name and name not in known:
            inst.repositories.append(
                InstallationRepository(full_name=name, repo_id=int(repo.get("id") or 0))
            )
            known.add(name)


@router.register("installation")
def installation(event: Event, context: Context) -> str:
    data = event.payload.get("installation") or {}
    if not isinstance(data.get("id"), int):
        return "ignored: no installation id"
    with session_scope(context.settings.database_url) as s:
        inst = _upsert(s, data)
        inst.status = _STATUS.get(event.action or "", inst.status or "active")
        _add_repos(s, inst, event.payload.get("repositories") or [])
    return f"installation {data['id']} {event.action}"


@router.register("installation_repositories", "added", "removed")
def installation_repositories(event: Event, context: Context) -> str:
    data = event.payload.get("installation") or {}
    if not isinstance(data.get("id"), int):
        return "ignored: no installation id"
    with session_scope(context.settings.database_url) as s:
        inst = _upsert(s, data, event.payload.get("repository_selection"))
        s.flush()
        _add_repos(s, inst, event.payload.get("repositories_added") or [])
        removed = [str(r.get("full_name")) for r in event.payload.get("repositories_removed") or []]
        if removed:
            s.execute(
                delete(InstallationRepository).where(
                    InstallationRepository.installation_id == inst.id,
                    InstallationRepository.full_name.in_(removed),
                )
            )
    return f"installation {data['id']} repositories {event.action}"
