"""app.yml is the App's registration: a wrong permission or event only shows up as a silent
403 or a missing webhook after someone installs it, so the manifest is checked here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

MANIFEST = Path(__file__).resolve().parent.parent / "app.yml"
# Keys GitHub's manifest flow accepts ("Registering a GitHub App from a manifest").
MANIFEST_KEYS = {
    "name",
    "url",
    "hook_attributes",
    "redirect_url",
    "callback_urls",
    "setup_url",
    "description",
    "public",
    "default_events",
    "default_permissions",
    "request_oauth_on_install",
    "setup_on_update",
}
ACCESS = {"read", "write", "admin"}


def load_manifest() -> dict[str, Any]:
    """app.yml is JSON in YAML flow style; full-line `#` comments are its only YAML-only part."""
    text = MANIFEST.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    data: dict[str, Any] = json.loads(body)
    return data


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return load_manifest()


def test_only_known_keys(manifest: dict[str, Any]) -> None:
    assert set(manifest) <= MANIFEST_KEYS
    assert manifest["name"] == "numcheck"
    assert manifest["public"] is False


def test_urls(manifest: dict[str, Any]) -> None:
    hook = manifest["hook_attributes"]
    assert set(hook) <= {"url", "active"}
    assert hook["url"] == "https://numcheck.example.com/webhook"
    assert hook.get("active", True) is True
    for url in (manifest["url"], hook["url"], manifest["redirect_url"]):
        parts = urlsplit(url)
        assert parts.scheme == "https" and parts.netloc, url
    # The placeholder is documented so nobody registers an App pointing at example.com.
    assert "hook_attributes.url" in MANIFEST.read_text(encoding="utf-8")


def test_permissions(manifest: dict[str, Any]) -> None:
    assert manifest["default_permissions"] == {
        "checks": "write",
        "pull_requests": "write",
        "contents": "read",
        "metadata": "read",
        "issues": "write",
    }
    assert set(manifest["default_permissions"].values()) <= ACCESS


def test_events(manifest: dict[str, Any]) -> None:
    events = manifest["default_events"]
    assert len(events) == len(set(events))
    assert set(events) == {"pull_request", "issue_comment", "check_run", "check_suite"}
    # Delivered to every App; GitHub rejects a manifest that lists them.
    assert not {"installation", "installation_repositories"} & set(events)


def test_events_have_the_permissions_they_need(manifest: dict[str, Any]) -> None:
    """GitHub only delivers an event when the App holds a permission that covers it."""
    needs = {
        "pull_request": {"pull_requests"},
        "issue_comment": {"issues", "pull_requests"},
        "check_run": {"checks"},
        "check_suite": {"checks"},
    }
    granted = set(manifest["default_permissions"])
    for event in manifest["default_events"]:
        assert needs[event] & granted, event


def test_yaml_readers_see_the_same_manifest(manifest: dict[str, Any]) -> None:
    """Probot and other tools read app.yml as YAML; PyYAML comes with libcst on Python < 3.13."""
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(MANIFEST.read_text(encoding="utf-8")) == manifest
