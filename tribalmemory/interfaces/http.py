"""The daemon's Starlette app: the REST API of :data:`.openapi.ROUTES` plus MCP at ``/mcp``.

Each route parses the transport (path ids, query string, JSON body), calls one
:class:`~tribalmemory.api.TribalAPI` method and answers its dict as JSON. Every error body is
``{"error": message, "detail": ...}``; the status comes from the
:class:`~tribalmemory.errors.TribalError` subclass (``InvalidInput`` is 422 for a body value
and 400 for a path id or query parameter).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .. import __version__
from .. import validation as check
from ..api import TribalAPI
from ..config import Config
from ..datafolder import ensure_identity
from ..errors import BadQuery, InvalidInput, TribalError, Unavailable
from ..runtime import Runtime, start_runtime
from .auth import BearerAuth, is_loopback, token_store
from .guard import HostPolicy, RequestGuard
from .health import HealthView
from .mcp_http import McpEndpoint
from .openapi import PATH_PARAMS, ROUTES, Op, Param, openapi_document
from .page import routes as page_routes
from .portability_http import routes as portability_routes
from .transport import INTERNAL_ERROR, decode_json, error_response, read_body

log = logging.getLogger("tribalmemory.http")

INTEGER = re.compile(r"-?\d{1,12}")
BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


class ApiHolder:
    """The TribalAPI of the running app (set by the lifespan)."""

    def __init__(self) -> None:
        self.api: TribalAPI | None = None

    def get(self) -> TribalAPI:
        if self.api is None:
            raise Unavailable("the daemon is starting or stopping; retry in a moment")
        return self.api


# -- request parsing -------------------------------------------------------------------------------


def parse_path(op: Op, request: Request) -> dict[str, Any]:
    values = {}
    for name in op.path_params:
        try:
            values[name] = PATH_PARAMS[name][1](request.path_params[name])
        except InvalidInput as exc:
            raise BadQuery(exc.message) from None
    return values


def _convert(param: Param, raw: str) -> Any:
    kind = param.schema.get("type")
    if kind == "integer":
        if not INTEGER.fullmatch(raw.strip()):
            raise BadQuery(f"{param.name} must be an integer, got {raw[:40]!r}")
        return int(raw)
    if kind == "boolean":
        if raw.strip().lower() not in BOOLEANS:
            raise BadQuery(f"{param.name} must be true or false, got {raw[:40]!r}")
        return BOOLEANS[raw.strip().lower()]
    return raw


def parse_query(op: Op, request: Request) -> dict[str, Any]:
    known = {p.name: p for p in op.query}
    params = request.query_params
    try:
        check.names(params, known, noun="query parameter")
    except InvalidInput as exc:
        raise BadQuery(exc.message, exc.detail) from None
    values = {}
    for name, param in known.items():
        given = params.getlist(name)
        if len(given) > 1:
            raise BadQuery(f"query parameter {name} is given {len(given)} times")
        if given:
            values[name] = _convert(param, given[0])
    return values


def check_fields(op: Op, data: dict[str, Any]) -> dict[str, Any]:
    """The body's fields, once every one is a field of the route's request model."""
    assert op.body is not None
    check.fields(data, op.body)
    return data


# -- endpoints -------------------------------------------------------------------------------------


def static_methods(routes: list[Op]) -> dict[str, set[str]]:
    """The methods of each route without a path parameter, e.g. ``/v1/episodes/search``:
    POST."""
    methods: dict[str, set[str]] = {}
    for op in routes:
        if "{" not in op.route_path:
            methods.setdefault(op.route_path, set()).add(op.method)
    return methods


STATIC_METHODS = static_methods(ROUTES)


def endpoint(op: Op, holder: ApiHolder, max_body: int) -> Callable[[Request], Awaitable[Response]]:
    """The handler of one route: parse, call ``TribalAPI.<op.call>``, answer JSON."""

    async def handle(request: Request) -> Response:
        path = request.url.path
        allowed = STATIC_METHODS.get(path)
        if allowed and request.method not in allowed and "{" in op.route_path:
            # ``GET /v1/episodes/search`` is the POST route's path with another method, not
            # an episode called "search": 405, as for any route asked with another method
            message = f"method {request.method} is not allowed on {path[:200]}"
            return error_response(405, message, None, {"Allow": ", ".join(sorted(allowed))})
        try:
            kwargs = parse_path(op, request) | parse_query(op, request)
            if op.body is not None:
                kwargs |= check_fields(op, decode_json(await read_body(request, max_body)))
            api = holder.get()
            try:
                result = getattr(api, op.call)(**kwargs)
                if inspect.isawaitable(result):
                    result = await result
            except InvalidInput as exc:
                if op.body is None:  # every value came from the path or the query string
                    raise BadQuery(exc.message, exc.detail) from None
                raise
            return JSONResponse(result)
        except TribalError as exc:
            return error_response(
                exc.status, exc.message, exc.detail, getattr(exc, "headers", None)
            )
        except ClientDisconnect:
            return error_response(400, "the client disconnected before sending the body")
        except Exception:
            log.exception("unexpected error in %s %s", op.method, op.path)
            return error_response(500, INTERNAL_ERROR)

    handle.__name__ = op.call
    return handle


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 / 405 (and the like) as error JSON."""
    assert isinstance(exc, HTTPException)
    path = request.url.path[:200]
    messages = {404: f"no route {path}", 405: f"method {request.method} is not allowed on {path}"}
    message = messages.get(exc.status_code, str(exc.detail))
    return error_response(exc.status_code, message, None, dict(exc.headers or {}))


async def server_error(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, INTERNAL_ERROR)


# -- the app ---------------------------------------------------------------------------------------


def create_app(config: Config, runtime: Runtime | None = None) -> Starlette:
    """The daemon's ASGI app. Without ``runtime`` the lifespan starts (and stops) one."""
    holder = ApiHolder()
    mcp = McpEndpoint(config, holder.get)
    max_body = config.server.max_body_bytes

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(__version__))  # built on the first request

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        active = runtime if runtime is not None else await start_runtime(config)
        holder.api = active.api
        app.state.runtime = active
        try:
            async with mcp.running():
                log.info(
                    "ready: http://%s:%d (page /, REST /v1, MCP /mcp)",
                    config.server.host,
                    config.server.port,
                )
                yield
        finally:
            holder.api = None
            app.state.runtime = None
            if runtime is None:
                await active.stop()

    routes: list[BaseRoute] = [
        Route(op.route_path, endpoint(op, holder, max_body), methods=[op.method]) for op in ROUTES
    ]
    routes += portability_routes(holder.get)
    routes += [Route("/openapi.json", openapi, methods=["GET"]), Route("/mcp", mcp)]
    routes += page_routes()
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(
                RequestGuard, policy=HostPolicy.for_bind(config.server.host, config.server.port)
            ),
            Middleware(
                BearerAuth, tokens=token_store(config), required=not is_loopback(config.server.host)
            ),
            Middleware(
                HealthView, identity=ensure_identity(config.data_path), folder=config.data_path
            ),
        ],
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    app.router.redirect_slashes = False
    return app
