"""API tokens: ``tm_`` + 64 hex characters.

The daemon keeps only the token's sha256 in ``<data_dir>/auth.json`` (mode 0600) and re-reads
it when the file changes, so ``tribalmemory token rotate`` takes effect without a restart.
Clients (CLI, ``tribalmemory mcp``) read the plaintext token from ``TRIBAL_MEMORY_TOKEN``,
which ``tribalmemory token generate`` writes to ``~/.tribal-memory/.env`` (mode 0600).
Once a token exists, every ``/v1/...`` route except ``/v1/health``, and ``/mcp``, needs
``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import socket
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..config import Config, ConfigError
from ..timeutil import to_iso, utc_now
from .openapi import PUBLIC_PATHS

log = logging.getLogger("tribalmemory.auth")

TOKEN_ENV = "TRIBAL_MEMORY_TOKEN"
TOKEN_PATTERN = re.compile(r"^tm_[0-9a-f]{64}$")
NO_MATCH = "!"  # an expected hash that no token's sha256 hex digest equals


def generate_token() -> str:
    return "tm_" + secrets.token_hex(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


SHORT = 12
"""A token of this many characters or fewer is not masked: its ends are most of it."""


def mask(token: str) -> str:
    """``tm_1a2b…9f0e``: enough to recognise a token, not to use it."""
    return f"{token[:7]}…{token[-4:]}" if len(token) > SHORT else "…"


def write_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace ``path`` with ``text`` in one step (no reader sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class TokenStore:
    """The token hash in ``auth.json``; re-read only when the file changes (one ``stat``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._hash: str | None = None

    def current_hash(self) -> str | None:
        """The stored sha256, or None when no token exists. A broken file locks everyone out."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._hash = None, None
            return None
        key = (st.st_mtime_ns, st.st_ino, st.st_size)
        if key != self._seen:
            self._hash = self._read()
            self._seen = key
        return self._hash

    def _read(self) -> str:
        try:
            value = json.loads(self.path.read_text(encoding="utf-8"))["token_sha256"]
            if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
                return value
        except (OSError, ValueError, KeyError, TypeError):
            pass
        log.error(
            "%s is unreadable or corrupt: every authenticated request is refused until "
            "`tribalmemory token rotate` rewrites it",
            self.path,
        )
        return NO_MATCH

    @property
    def active(self) -> bool:
        return self.current_hash() is not None

    def save(self, token: str) -> None:
        data = {"token_sha256": hash_token(token), "created_at": to_iso(utc_now())}
        write_atomic(self.path, json.dumps(data, indent=2) + "\n")


def token_store(config: Config) -> TokenStore:
    return TokenStore(config.data_path / "auth.json")


def set_env_value(env_file: Path, name: str, value: str) -> None:
    """Set ``NAME=value`` in a .env file (0600), keeping its other lines."""
    lines = env_file.read_text(encoding="utf-8").splitlines() if env_file.exists() else []
    pattern = re.compile(rf"^\s*(export\s+)?{re.escape(name)}\s*=")
    kept = [line for line in lines if not pattern.match(line)]
    write_atomic(env_file, "\n".join([*kept, f"{name}={value}"]) + "\n")


def read_env_value(env_file: Path, name: str) -> str | None:
    """The value of ``name`` in a .env file, or None."""
    if not env_file.exists():
        return None
    from dotenv import dotenv_values

    return dotenv_values(env_file).get(name)


def is_loopback(host: str) -> bool:
    """True when ``host`` only resolves to loopback addresses."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(
        ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos
    )


def check_bind(host: str, tokens: TokenStore) -> None:
    """Refuse to serve a non-loopback address without a token (raises ConfigError)."""
    if not is_loopback(host) and not tokens.active:
        raise ConfigError(
            f"refusing to listen on {host} without an API token: anyone who can reach it could "
            "read and change every memory. Run `tribalmemory token generate` first, or bind "
            "127.0.0.1."
        )


AUTHENTICATED = "tribalmemory.authenticated"  # scope key: the request proved it may see everything


class BearerAuth:
    """ASGI middleware: 401 + ``WWW-Authenticate: Bearer`` on protected paths without a token.

    ``required`` (a non-loopback bind) fails closed: if auth.json disappears, nobody gets in.
    Every request's scope gets ``AUTHENTICATED``: True with the valid token, or when no token
    exists on a loopback-only daemon (every caller is then a local process; web pages are kept
    out by :mod:`.guard`). Public routes (``/v1/health``) show less to the others.
    """

    def __init__(self, app: ASGIApp, tokens: TokenStore, required: bool = False) -> None:
        self.app = app
        self.tokens = tokens
        self.required = required

    @staticmethod
    def protected(path: str) -> bool:
        if path in PUBLIC_PATHS:
            return False
        return path.startswith("/v1/") or path == "/mcp" or path.startswith("/mcp/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        expected = self.tokens.current_hash() or (NO_MATCH if self.required else None)
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        token = token.strip()
        presented = scheme.lower() == "bearer" and bool(token)
        valid = expected is None or (presented and hmac.compare_digest(hash_token(token), expected))
        scope[AUTHENTICATED] = valid
        if not valid and self.protected(scope["path"]):
            challenge = 'Bearer realm="tribal-memory"'
            if presented:
                challenge += ', error="invalid_token"'
            response = JSONResponse(
                {
                    "error": "invalid bearer token" if presented else "missing bearer token",
                    "detail": "send 'Authorization: Bearer <token>'; "
                    "`tribalmemory token show --reveal` prints the token",
                },
                status_code=401,
                headers={"WWW-Authenticate": challenge},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
