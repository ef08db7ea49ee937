"""Routes that stream: ``GET /v1/export`` (NDJSON out), ``POST /v1/import`` (NDJSON in), and
``POST /v1/backup``. Thin: parse, call :mod:`tribalmemory.portability`, answer.

The import body is read chunk by chunk into a temporary file in the data folder (never whole
into memory; refused with 507 when the disk's reserve would be used), then validated
completely before anything is stored.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import shapes
from .. import validation as check
from ..errors import BadQuery, InvalidInput, TribalError, Unavailable
from ..portability import backup, exporter, importer
from .transport import INTERNAL_ERROR, decode_json, error_response, read_body

log = logging.getLogger("tribalmemory.http")

STREAMED = (("GET", "/v1/export"), ("POST", "/v1/import"), ("POST", "/v1/backup"))
TRUE = {"true", "1", "yes"}
FALSE = {"false", "0", "no", ""}


def _flag(request: Request, name: str) -> bool:
    raw = request.query_params.get(name, "").strip().lower()
    if raw not in TRUE | FALSE:
        raise BadQuery(f"{name} must be true or false, got {raw[:40]!r}")
    return raw in TRUE


def _only(request: Request, allowed: set[str]) -> None:
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        raise BadQuery(f"unknown query parameter {unknown[0]!r}; allowed: {sorted(allowed)}")


def _guarded(
    handler: Callable[[Request, Any], Awaitable[Response]], get_api: Callable[[], Any]
) -> Callable[[Request], Awaitable[Response]]:
    async def run(request: Request) -> Response:
        try:
            return await handler(request, get_api())
        except TribalError as exc:
            return error_response(exc.status, exc.message, exc.detail)
        except ClientDisconnect:
            return error_response(400, "the client disconnected before sending the body")
        except Exception:
            log.exception("unexpected error in %s %s", request.method, request.url.path)
            return error_response(500, INTERNAL_ERROR)

    return run


async def export(request: Request, api: Any) -> Response:
    _only(request, set(shapes.ExportQuery.model_fields))
    query = request.query_params
    try:
        since = check.timestamp("since", query.get("since"))
        project = check.project_filter(query.get("project"))
        given: dict[str, Any] = dict(query)
        scopes = check.scopes(shapes.ExportQuery.model_construct(**given))
    except InvalidInput as exc:
        raise BadQuery(exc.message) from None
    flag = _flag(request, "vectors")
    lines = exporter.export_lines(api, since, flag, project=project, scopes=scopes)
    return StreamingResponse(lines, media_type="application/x-ndjson")


def _stopping(request: Request) -> Callable[[], bool]:
    """Whether the daemon is shutting down (SIGTERM): its runtime's ``stop_requested``."""
    runtime = getattr(request.app.state, "runtime", None)
    return getattr(runtime, "stop_requested", None) or importer.never


async def import_(request: Request, api: Any) -> Response:
    _only(request, {"dry_run"})
    dry_run = _flag(request, "dry_run")
    stopping = _stopping(request)
    folder = api.service.config.data_path
    spool = folder / f".import-{uuid.uuid4().hex}.jsonl"
    try:
        fd = os.open(spool, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        space = api.service.space  # the spool must leave the disk reserve like any write
        with os.fdopen(fd, "wb") as handle:
            async for chunk in request.stream():
                if space is not None:
                    space.check(len(chunk))
                if stopping():
                    raise importer.stopped("nothing was imported")
                handle.write(chunk)
        if dry_run:
            report = await importer.plan(api, spool, stopping)
        else:
            report = await importer.apply(api, spool, stopping=stopping)
        return JSONResponse(report.to_json())
    except Unavailable as exc:
        if stopping():
            log.warning("import ended by the shutdown: %s", exc.message)
        raise
    finally:
        Path(spool).unlink(missing_ok=True)


async def take_backup(request: Request, api: Any) -> Response:
    _only(request, set())
    body = decode_json(await read_body(request, 64 * 1024))
    check.names(body, ["path"], ["path"])
    path = check.text("path", body.get("path"), 4096)
    assert path is not None
    if not Path(path).is_absolute():
        raise InvalidInput("path must be an absolute folder path on the daemon's machine")
    service = api.service
    return JSONResponse(await backup.backup(service.config, service, Path(path)))


def routes(get_api: Callable[[], Any]) -> list[Route]:
    return [
        Route("/v1/export", _guarded(export, get_api), methods=["GET"]),
        Route("/v1/import", _guarded(import_, get_api), methods=["POST"]),
        Route("/v1/backup", _guarded(take_backup, get_api), methods=["POST"]),
    ]
