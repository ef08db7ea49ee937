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


class NotFound(TribalError):
    status = 404
    code = "not_found"


class PayloadTooLarge(TribalError):
    status = 413
    code = "payload_too_large"


class FeatureDisabled(TribalError):
    status = 501
    code = "feature_disabled"


class Unavailable(TribalError):
    """The store is held by another process or a dependency is down."""

    status = 503
    code = "unavailable"
