"""Errors a client can cause. Interfaces map each class to one HTTP status / MCP tool error."""

from __future__ import annotations


class TribalError(Exception):
    """Base class: ``message`` says what is wrong and what to do."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, detail: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class InvalidInput(TribalError):
    """A value has the wrong type, is empty or out of range (body → 422, query → 400)."""

    status = 422
    code = "invalid_input"


class BadQuery(TribalError):
    """A query-string value is wrong."""

    status = 400
    code = "bad_query"


class BadName(TribalError):
    """A name (such as a project) has characters or a length that is not allowed: 400 in a
    body too, like a malformed id."""

    status = 400
    code = "bad_name"


class NotFound(TribalError):
    status = 404
    code = "not_found"


class Conflict(TribalError):
    """The request contradicts the current state (e.g. a memory is not in that episode)."""

    status = 409
    code = "conflict"


class PayloadTooLarge(TribalError):
    status = 413
    code = "payload_too_large"


class Busy(TribalError):
    """Too many requests of one kind are running; the client retries after ``retry_after`` s."""

    status = 429
    code = "busy"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message, {"retry_after_seconds": retry_after})
        self.retry_after = retry_after
        self.headers = {"Retry-After": str(retry_after)}


class InsufficientStorage(TribalError):
    """The disk holding the data is (nearly) full; nothing was written."""

    status = 507
    code = "insufficient_storage"


class FeatureDisabled(TribalError):
    status = 501
    code = "feature_disabled"


class Unavailable(TribalError):
    """The store is held by another process or a dependency is down."""

    status = 503
    code = "unavailable"
