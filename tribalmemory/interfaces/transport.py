"""The transport helpers every route module shares: error bodies, reading and decoding a
request's JSON body."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import InvalidInput, PayloadTooLarge, TribalError

INTERNAL_ERROR = "internal server error; the daemon log has the details"


def error_response(
    status: int, message: str, detail: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    try:
        json.dumps(detail)
    except (TypeError, ValueError):
        detail = str(detail)
    return JSONResponse({"error": message, "detail": detail}, status_code=status, headers=headers)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing more than ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    too_large = PayloadTooLarge(
        f"request body is larger than {limit} bytes (server.max_body_bytes)"
    )
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_json(raw: bytes) -> dict[str, Any]:
    """A JSON object from the raw body: malformed → 400, not an object → 422."""
    if not raw.strip():
        raise TribalError("request body is empty; send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TribalError(f"request body is not valid UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_no_constants)
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # rejects lone surrogates
    except RecursionError:
        raise TribalError("request body is nested too deeply") from None
    except UnicodeEncodeError:
        raise TribalError(
            "request body contains an invalid \\u escape (a lone surrogate)"
        ) from None
    except ValueError as exc:
        raise TribalError(f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"request body must be a JSON object, not {json_kind(data)}")
    return data


def json_kind(value: object) -> str:
    """What a decoded JSON value is, in JSON's words: an array, a string, null..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    kinds = {list: "an array", str: "a string", int: "a number", float: "a number"}
    return kinds.get(type(value), "an object")
