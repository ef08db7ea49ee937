"""The running daemon over HTTP, with TribalAPI's method names, arguments and results.

:class:`DaemonClient` raises the :class:`~tribalmemory.errors.TribalError` subclass that matches
the daemon's status code, with the daemon's message, so the CLI and ``tribalmemory mcp`` treat
a daemon exactly like an in-process :class:`~tribalmemory.api.TribalAPI`.

Before each request that carries the token or memory text, the client makes the daemon prove
that it serves this client's data folder (:mod:`tribalmemory.datafolder`): whatever else holds
the port gets nothing but a health check, and the caller gets :class:`WrongDaemon`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from .config import Config, default_config_path, env_file
from .datafolder import Identity, make_private, new_challenge, open_private_append, read_identity
from .errors import (
    BadQuery,
    Conflict,
    FeatureDisabled,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    TribalError,
    Unavailable,
)
from .interfaces.auth import TOKEN_ENV, is_loopback
from .interfaces.health import CHALLENGE_HEADER, PROOF_HEADER
from .interfaces.openapi import OPERATIONS, PATH_PARAMS, Op, Param

log = logging.getLogger("tribalmemory.client")

TIMEOUT = 120.0
PROBE_TIMEOUT = 0.5
BUSY_PROBE_TIMEOUT = 10.0  # a second probe when the first timed out: a daemon under load
START_TIMEOUT = 60.0


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context every client of this process shares. httpx builds one for each client,
    even of an ``http://`` URL, loading certifi's CA bundle (about 40 ms of CPU): waiting for a
    daemon to start, the probes every 0.2 s took a fifth of a CPU from that start."""
    return httpx.create_ssl_context(trust_env=False)


class AuthRequired(TribalError):
    """The daemon wants a (different) bearer token."""

    status = 401
    code = "unauthorized"


class ServerError(TribalError):
    """The daemon failed (500) or answered something that is not the API."""

    status = 500
    code = "internal"


class DaemonStartError(Unavailable):
    """``ensure_daemon`` could not start a healthy daemon."""


class WrongDaemon(Unavailable):
    """What answers on the port is not the daemon of this client's data folder."""


ERRORS: dict[int, type[TribalError]] = {
    cls.status: cls
    for cls in (
        BadQuery,
        AuthRequired,
        NotFound,
        Conflict,
        PayloadTooLarge,
        InvalidInput,
        FeatureDisabled,
        Unavailable,
    )
}


def daemon_url(config: Config) -> str:
    """Where clients reach the daemon (a wildcard bind is reached on loopback)."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(
        config.server.host, config.server.host
    )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{config.server.port}"


def _query_text(param: Param, value: Any) -> str:
    kind = param.schema.get("type")
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if kind == "string" and isinstance(value, str):
        return value
    names = {"integer": "an integer", "boolean": "true or false", "string": "a string"}
    raise InvalidInput(f"{param.name} must be {names.get(str(kind), kind)}")


class Operation:
    """``TribalAPI.<name>`` over HTTP: the same parameters (:meth:`Op.signature`, from the
    route table and :mod:`tribalmemory.shapes`), sent as the operation's route."""

    def __init__(self, client: DaemonClient, op: Op) -> None:
        self._client = client
        self._op = op
        self.__name__ = self.__qualname__ = op.call
        self.__doc__ = op.summary
        self.__signature__ = op.signature()

    async def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            bound = self.__signature__.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.__name__}(): {exc}") from None
        bound.apply_defaults()
        return await self._client._call(self._op.call, **bound.arguments)


class DaemonClient:
    """HTTP client of one daemon with ``TribalAPI``'s methods: every operation of the route
    table (:data:`OPERATIONS`) is an :class:`Operation` attribute, e.g. ``await
    client.recall("query", limit=3)``.

    ``config_path`` only improves the advice given when another data folder's daemon answers.
    """

    def __init__(
        self,
        config: Config,
        *,
        token: str | None = None,
        timeout: float = TIMEOUT,
        config_path: str | Path | None = None,
    ) -> None:
        self.base_url = daemon_url(config)
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self.timeout = timeout
        self.data_path = config.data_path
        self.config_path = Path(config_path) if config_path else default_config_path()
        # A daemon elsewhere cannot share our data folder's secret: there the token protects.
        self.proves_identity = is_loopback(config.server.host) or config.server.host in (
            "",
            "0.0.0.0",
            "::",
        )
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _options(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "timeout": self.timeout,
            "trust_env": False,
            "verify": tls_context(),
        }

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = httpx.AsyncClient(**self._options()), loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()

    def _result(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            message, detail = data["error"], data.get("detail")
        else:
            message = f"{self.base_url} answered HTTP {response.status_code}, not the API"
            detail = response.text[:200]
        if response.status_code == 401:
            detail = (
                f"the daemon needs its API token in {TOKEN_ENV} (environment or "
                f"{env_file()}); `tribalmemory token show --reveal` prints it"
            )
        raise ERRORS.get(response.status_code, ServerError)(message, detail)

    def _unreachable(self, exc: httpx.HTTPError) -> Unavailable:
        if isinstance(exc, httpx.TimeoutException):
            return Unavailable(
                f"the daemon at {self.base_url} did not answer within {self.timeout:g} s"
            )
        return Unavailable(f"cannot reach the daemon at {self.base_url}: {exc}")

    # -- identity -------------------------------------------------------------------------

    def _checked(self, response: httpx.Response, challenge: str) -> dict[str, Any]:
        """The health answer, once the daemon proved it serves our data folder."""
        health = self._result(response)
        if "version" not in health:
            raise ServerError(f"{self.base_url} answered /v1/health, but not as Tribal Memory")
        if not self.proves_identity:
            return health
        ours = read_identity(self.data_path)
        proof = response.headers.get(PROOF_HEADER, "")
        if ours is not None and proof and ours.verify(challenge, proof):
            return health
        raise self._wrong_daemon(health, ours)

    def _wrong_daemon(self, health: dict[str, Any], ours: Identity | None) -> WrongDaemon:
        folder = health.get("data_folder")
        if not isinstance(folder, dict):
            folder = {}
        if folder.get("id") and folder.get("path"):
            served = f"{folder['path']}, id {folder['id']}"
        elif folder.get("id"):
            served = f"id {folder['id']}; it shows its path only with its token"
        else:
            served = "it does not say which: an older version?"
        mine = f"{self.data_path}, id {ours.id}" if ours else f"{self.data_path}, no daemon yet"
        return WrongDaemon(
            f"the daemon at {self.base_url} serves another data folder ({served}), not "
            f"this one ({mine}); nothing was sent to it",
            f"stop that daemon (`tribalmemory service stop` with its configuration), or give "
            f"this data folder its own port: set server.port in {self.config_path}",
        )

    def identify(self) -> dict[str, Any]:
        """``/v1/health`` as shown without the token, after the daemon proved its identity."""
        challenge = new_challenge()
        try:
            with httpx.Client(**self._options()) as client:
                response = client.get("/v1/health", headers={CHALLENGE_HEADER: challenge})
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._checked(response, challenge)

    async def _identify_async(self) -> None:
        challenge = new_challenge()
        try:
            response = await self._async_client().get(
                "/v1/health", headers={CHALLENGE_HEADER: challenge}
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        self._checked(response, challenge)

    async def _call(self, name: str, /, **args: Any) -> dict[str, Any]:
        """Send ``TribalAPI.<name>(**args)`` as its route of the route table (``name`` is
        positional only: an operation may take an argument of that name, e.g. ``entity_get``)."""
        op = OPERATIONS[name]
        path = op.path
        for param in op.path_params:
            value = PATH_PARAMS[param][1](args[param])
            path = path.replace(f"{{{param}}}", quote(value, safe=""))
        query = {
            p.name: _query_text(p, args[p.name]) for p in op.query if args.get(p.name) is not None
        }
        body = None
        if op.body is not None:
            fields = op.body.model_fields  # its JSON schema took 1.4 ms a call to build
            body = {key: value for key, value in args.items() if key in fields}
        await self._identify_async()
        try:
            response = await self._async_client().request(
                op.method, path, params=query, json=body, headers=self._auth()
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._result(response)

    # -- portability (streamed routes, not in the route table) ------------------------------

    async def export_stream(
        self,
        since: str | None,
        vectors: bool,
        project: str | None = None,
        **scopes: str | None,
    ) -> AsyncGenerator[bytes, None]:
        """``GET /v1/export``: the export's bytes as they arrive (of one project, if given;
        ``scopes``: the source_instance, session and run filters of
        :class:`~tribalmemory.shapes.ExportQuery`)."""
        await self._identify_async()
        params = {"vectors": "true" if vectors else "false"} | ({"since": since} if since else {})
        params |= {"project": project} if project else {}
        params |= {name: value for name, value in scopes.items() if value is not None}
        try:
            async with self._async_client().stream(
                "GET", "/v1/export", params=params, headers=self._auth(), timeout=None
            ) as response:
                if not response.is_success:
                    await response.aread()
                    self._result(response)
                async for chunk in response.aiter_bytes():
                    yield chunk
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc

    async def import_file(self, chunks: AsyncIterator[bytes], dry_run: bool) -> dict[str, Any]:
        """``POST /v1/import`` with the file's bytes streamed as the body."""
        await self._identify_async()
        try:
            response = await self._async_client().post(
                "/v1/import",
                params={"dry_run": "true" if dry_run else "false"},
                content=chunks,
                headers=self._auth() | {"Content-Type": "application/x-ndjson"},
                timeout=None,
            )
        except httpx.HTTPError as exc:
            lost = self._unreachable(exc)
            lost.detail = (
                "the import stopped where the daemon went away: import the same file again "
                "(what is stored already is skipped)"
            )
            raise lost from exc
        return self._result(response)

    async def backup(self, path: str) -> dict[str, Any]:
        """``POST /v1/backup``: the daemon writes a backup into ``path``."""
        await self._identify_async()
        try:
            response = await self._async_client().post(
                "/v1/backup", json={"path": path}, headers=self._auth(), timeout=None
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._result(response)

    # -- TribalAPI ------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Operation:
        op = OPERATIONS.get(name)
        if op is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return Operation(self, op)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(OPERATIONS))

    def health(self) -> dict[str, Any]:
        """Everything the daemon shows this client (with the token: reasons and paths too)."""
        shown = self.identify()
        if not self.token:
            return shown
        try:
            with httpx.Client(**self._options()) as client:
                response = client.get("/v1/health", headers=self._auth())
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._result(response)


# -- finding and starting the daemon -----------------------------------------------------------


def find_daemon(
    config: Config,
    timeout: float = PROBE_TIMEOUT,
    config_path: str | Path | None = None,
    waiting: Callable[[str], None] | None = None,
) -> DaemonClient | None:
    """A client of this data folder's daemon, or None when nothing answers on the port.

    When something takes the connection but does not answer within ``timeout`` (a busy
    daemon), it is asked again with more patience, after ``waiting(message)`` says so.
    Raises :class:`WrongDaemon` when another data folder's daemon answers there.
    """
    for attempt, patience in enumerate((timeout, max(timeout, BUSY_PROBE_TIMEOUT))):
        if attempt and waiting is not None:
            waiting(
                f"the daemon at {daemon_url(config)} took the connection but has not answered "
                f"in {timeout:g} s (busy, or stopped); waiting up to {patience:g} s more"
            )
        try:
            DaemonClient(config, timeout=patience, config_path=config_path).identify()
        except WrongDaemon:
            raise
        except TribalError as exc:
            if isinstance(exc.__cause__, httpx.TimeoutException):
                continue  # something holds the port but is slow (a busy daemon): ask again
            return None
        return DaemonClient(config, config_path=config_path)
    return None


@contextlib.contextmanager
def _spawn_lock(path: Path, deadline: float) -> Iterator[None]:
    """One process at a time starts the daemon for a data dir (others wait, then find it)."""
    with os.fdopen(open_private_append(path), "a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise DaemonStartError(
                        f"another process is starting the daemon ({path})"
                    ) from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _last_lines(path: Path, count: int = 5) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-count:])


def ensure_daemon(
    config: Config, config_path: str | Path | None = None, timeout: float = START_TIMEOUT
) -> DaemonClient:
    """The running daemon, after starting ``tribalmemory serve`` in the background if needed.

    Waits (bounded by ``timeout``) until it answers; raises :class:`DaemonStartError`.
    """
    found = find_daemon(config, config_path=config_path)
    if found is not None:
        return found
    deadline = time.monotonic() + timeout
    logs = make_private(config.data_path) / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    with _spawn_lock(config.data_path / "daemon.lock", deadline):
        found = find_daemon(config, config_path=config_path)
        if found is not None:
            return found
        output = logs / "daemon.out"
        command = [
            sys.executable,
            "-m",
            "tribalmemory",
            "serve",
            "--background",
            "--host",
            config.server.host,
            "--port",
            str(config.server.port),
        ]
        if config_path is not None:
            command += ["--config", str(config_path)]
        log.info("starting the daemon: %s", " ".join(command))
        with os.fdopen(open_private_append(output), "ab") as sink:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=config.data_path,
            )
        while time.monotonic() < deadline:
            found = find_daemon(config, config_path=config_path)
            if found is not None:
                return found
            code = process.poll()
            if code is not None:
                raise DaemonStartError(
                    f"`tribalmemory serve` exited with code {code}; from {output}:\n"
                    + _last_lines(output)
                )
            time.sleep(0.2)
        raise DaemonStartError(
            f"the daemon did not answer on {daemon_url(config)} within "
            f"{timeout:g} s; see {output} and {logs / 'server.log'}"
        )
