"""An operation's arguments, declared once: the fields of its request shape.

:func:`takes` gives a :class:`~tribalmemory.api.TribalAPI` method the fields of its request
model (:mod:`tribalmemory.shapes`) as its parameters, in the model's order (the required ones
without a default, the others defaulting to None): the signature every door reads. The method
receives one object of the model, built with ``model_construct``: the values as the client
sent them, not coerced (None for an optional field: its default). The operation checks each
field with :mod:`tribalmemory.validation` where it uses it, so an optional argument is
declared in the shape and read where it is used, with no plumbing in between.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .shapes import Request

R = TypeVar("R", bound=Request)
T = TypeVar("T")

Operation = Callable[[Any, R], Awaitable[T]]


def signature_of(model: type[Request], query: bool = False) -> inspect.Signature:
    """A method's signature (``self`` first) taking the fields of ``model``; with ``query`` (a
    query string's fields) every one defaults to None, as the route table declares them: a
    query parameter may be left out, and its check refuses a missing required one (a 400)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    required = set() if query else set(model.required_names())
    params = [inspect.Parameter("self", kind)]
    params += [
        inspect.Parameter(
            name,
            kind,
            annotation=Any,
            default=inspect.Parameter.empty if name in required else None,
        )
        for name in model.field_names()
    ]
    return inspect.Signature(params)


def request_of(model: type[R], values: dict[str, Any]) -> R:
    """``values`` (as sent) as an object of ``model``. None for an optional field is the field
    left out (its default); a required one keeps it, for its check to refuse."""
    required = model.required_names()
    kept = {k: v for k, v in values.items() if v is not None or k in required}
    kept |= {name: None for name in required if name not in kept}  # a query may leave it out
    return model.model_construct(**kept)


def takes(
    model: type[R], query: bool = False
) -> Callable[[Operation[R, T]], Callable[..., Awaitable[T]]]:
    """Make ``operation(self, request)`` a method taking the fields of ``model`` (``query``:
    of a query string, see :func:`signature_of`)."""
    signature = signature_of(model, query)

    def decorate(operation: Operation[R, T]) -> Callable[..., Awaitable[T]]:
        @functools.wraps(operation)
        async def call(self: Any, *args: Any, **kwargs: Any) -> T:
            given = signature.bind(self, *args, **kwargs).arguments  # TypeError: a wrong name
            given.pop("self")
            return await operation(self, request_of(model, given))

        call.__signature__ = signature  # type: ignore[attr-defined]
        return call

    return decorate
