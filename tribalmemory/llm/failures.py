"""What went wrong with a request: a short kind for each failure, and the error callers get."""

from __future__ import annotations

from typing import Any

TRANSPORT_ERRORS = frozenset({"rate_limit", "server", "timeout", "connection"})
#: Failed requests that may have been billed: settled at their reservation (worst case).
BILLED_ERRORS = frozenset({"timeout", "invalid_response"})
RETRYABLE = TRANSPORT_ERRORS | {"invalid_json", "truncated", "invalid_answer", "invalid_response"}
TIMEOUT_NAMES = frozenset(
    {
        "APITimeoutError",
        "ReadTimeout",
        "ConnectTimeout",
        "PoolTimeout",
        "WriteTimeout",
        "ServerTimeoutError",
    }
)
CONNECT_NAMES = frozenset(
    {
        "APIConnectionError",
        "ConnectError",
        "ClientConnectorError",
        "ServerDisconnectedError",
        "RemoteProtocolError",
    }
)


class LLMUnavailable(Exception):
    """No usable LLM answer; ``kind`` says why (ceiling, call_cap, unreachable, ...)."""

    def __init__(self, reason: str, kind: str = "error") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


def classify_error(lit: Any, exc: BaseException) -> str:
    """A short kind for a failed request: timeout, rate_limit, server, connection, auth, ..."""

    def isa(*names: str) -> bool:
        kinds = tuple(k for k in (getattr(lit, n, None) for n in names) if isinstance(k, type))
        return bool(kinds) and isinstance(exc, kinds)

    chain = _chain(exc)
    if isa("Timeout") or any(
        isinstance(e, TimeoutError) or type(e).__name__ in TIMEOUT_NAMES for e in chain
    ):
        return "timeout"
    if isa("RateLimitError"):
        return "rate_limit"
    if isa("AuthenticationError", "PermissionDeniedError"):
        return "auth"
    if isa("NotFoundError"):
        return "not_found"
    # litellm reports a refused connection to an OpenAI endpoint as InternalServerError.
    if any(isinstance(e, ConnectionError) or type(e).__name__ in CONNECT_NAMES for e in chain):
        return "connection"
    # A 200 whose body litellm could not read (broken JSON, wrong types): no HTTP error in the
    # chain, a parse error (ValueError; pydantic's ValidationError is one) instead.
    unreadable = any(isinstance(e, ValueError) for e in chain[1:])
    if (
        unreadable
        and not isa("BadRequestError")
        and not any(type(e).__name__ == "HTTPStatusError" for e in chain)
    ):
        return "invalid_response"
    if isa("InternalServerError", "ServiceUnavailableError", "BadGatewayError"):
        return "server"
    if isa("APIConnectionError"):
        return "connection"
    if isa("BadRequestError"):
        return "bad_request"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return "rate_limit" if status == 429 else "server" if status >= 500 else "other"
    return "other"


def _chain(exc: BaseException, depth: int = 8) -> list[BaseException]:
    """The exception and its causes, outermost first."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(found) < depth and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def short(exc: BaseException) -> str:
    """An exception as one line of at most 300 characters."""
    text = str(exc).replace("\n", " ").strip() or type(exc).__name__
    return text[:300]


def retry_after(exc: BaseException) -> float | None:
    """The seconds a provider asked to wait (``retry-after``), if it said."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    try:
        return float(headers.get("retry-after")) if headers else None
    except (TypeError, ValueError):
        return None
