"""What ``GET /v1/health`` shows to whom, and the daemon's proof of its data folder.

``/v1/health`` needs no token. :class:`HealthView` adds ``data_folder`` to its answer (the
folder's public id; its path for authenticated callers, see :mod:`.auth`) and, when the request
carries ``X-Tribal-Memory-Challenge``, answers ``X-Tribal-Memory-Proof`` (see
:mod:`tribalmemory.datafolder`). Unauthenticated callers get numbers, flags and states only:
no reasons (which may quote a provider's error, or a key it echoed), no paths.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..datafolder import CHALLENGE, Identity
from .auth import AUTHENTICATED

HEALTH_PATH = "/v1/health"
CHALLENGE_HEADER = "X-Tribal-Memory-Challenge"
PROOF_HEADER = "X-Tribal-Memory-Proof"
# Texts an unauthenticated caller may see (the others may quote errors, paths or settings).
PUBLIC_TEXT = frozenset(
    {"status", "version", "state", "backend", "model", "detector_strategy", "done"}
)
HIDDEN_NOTE = (
    "reasons, errors and paths are shown to authenticated callers only "
    "(send the API token; with no token configured, every local caller is authenticated)"
)


def public_view(data: Any, key: str = "") -> Any:
    """``data`` without free text: numbers, booleans, nulls and :data:`PUBLIC_TEXT` strings."""
    if isinstance(data, dict):
        kept = {k: public_view(v, k) for k, v in data.items()}
        return {k: v for k, v in kept.items() if v is not _DROP}
    if isinstance(data, list):
        items = [public_view(v, key) for v in data]
        return [v for v in items if v is not _DROP]
    if isinstance(data, str):
        return data if key in PUBLIC_TEXT else _DROP
    return data


_DROP: Any = object()


def shown_health(
    data: dict[str, Any], identity: Identity, folder: Path, authenticated: bool
) -> dict[str, Any]:
    """The health answer for this caller: ``data`` plus ``data_folder``, redacted if needed."""
    if not authenticated:
        data = public_view(data)
        data["hidden"] = HIDDEN_NOTE
    data["data_folder"] = {"id": identity.id}
    if authenticated:
        data["data_folder"]["path"] = str(folder)
    return data


class HealthView:
    """ASGI middleware shaping the answers of ``GET /v1/health`` (see the module docstring)."""

    def __init__(self, app: ASGIApp, identity: Identity, folder: Path) -> None:
        self.app = app
        self.identity = identity
        self.folder = folder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != HEALTH_PATH or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        challenge = Headers(scope=scope).get(CHALLENGE_HEADER, "").strip().lower()
        authenticated = bool(scope.get(AUTHENTICATED))
        start: Message | None = None
        chunks: list[bytes] = []

        async def reshape(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            headers = MutableHeaders(raw=list(start["headers"]))
            if start["status"] == 200 and headers.get("content-type", "").startswith(
                "application/json"
            ):
                shown = shown_health(json.loads(body), self.identity, self.folder, authenticated)
                body = json.dumps(shown, ensure_ascii=False, separators=(",", ":")).encode()
                headers["content-length"] = str(len(body))
            if CHALLENGE.fullmatch(challenge):
                headers[PROOF_HEADER] = self.identity.prove(challenge)
            await send({**start, "headers": headers.raw})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, reshape)
