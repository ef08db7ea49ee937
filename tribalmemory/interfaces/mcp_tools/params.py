"""Tool parameters advertised with the schema of a request model's field, passed on raw."""

import inspect
from collections.abc import Callable, Collection
from typing import Annotated, Any

from pydantic import Field, WrapValidator

from ... import shapes


def _unchecked(value: Any, _handler: Any) -> Any:
    """Pass the raw value on: TribalAPI validates it (one set of messages for every interface)."""
    return value


RAW = WrapValidator(_unchecked)


def arg(request: type[shapes.Request], name: str, description: str | None = None) -> Any:
    """A parameter advertised with the schema of field ``name`` of ``request`` (not enforced).

    ``description`` replaces the field's own when agents need tool-specific wording.
    """
    schema = request.argument_schema(name)
    if description is not None:
        schema["description"] = description

    def advertise(generated: dict[str, Any]) -> None:
        generated.clear()
        generated.update(schema)

    return Field(json_schema_extra=advertise)


SERVER_FILLED = frozenset({"source_instance"})
"""Fields no writing tool offers: the server fills them (who stores: ``--source-instance``,
else the client's name). A read offers them: there they are filters."""

_PYTHON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}


def with_fields(
    fn: Callable[..., Any],
    request: type[shapes.Request],
    filled: Collection[str] = SERVER_FILLED,
) -> inspect.Signature:
    """``fn``'s signature with its ``**passed`` replaced by the fields of ``request`` it does
    not name (but those the server ``filled``), in the model's order, all keyword-only: each
    advertised with the field's schema (:func:`arg`) and passed on raw, optional ones
    defaulting to None. A required text field is plain ``str`` (never JSON-decoded)."""
    own = inspect.signature(fn)
    named = {
        name: p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for name, p in own.parameters.items()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    }
    required = set(request.required_names())
    params = [p for name, p in named.items() if name not in request.model_fields]
    for name in request.model_fields:
        if name in named:
            params.append(named[name])
            continue
        if name in filled:
            continue
        kind = _PYTHON_TYPES.get(str(request.argument_schema(name).get("type")), object)
        annotation: Any = Annotated[kind, RAW, arg(request, name)]
        default: Any = inspect.Parameter.empty
        if name not in required:
            annotation, default = Annotated[kind | None, RAW, arg(request, name)], None
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    return own.replace(parameters=params)


# Text parameters are annotated plain ``str`` (with "" for "not given"): the SDK JSON-decodes
# string values only for parameters not annotated ``str`` (which helps clients that send
# lists as JSON text), and text such as content must stay text even when it is JSON.
MemoryId = Annotated[
    str,
    RAW,
    arg(
        shapes.ForgetRequest,
        "memory_id",
        "Id of a memory (a UUID), as returned by tribal_remember or tribal_recall.",
    ),
]
EpisodeId = Annotated[
    str,
    RAW,
    arg(
        shapes.EpisodeRef,
        "episode_id",
        "Id of an episode, like 'ep-1a2b3c4d5e6f', as returned by tribal_episodes_list or "
        "tribal_episode_create.",
    ),
]

SESSION_DOC = (
    "Leave it out: your MCP connection names the session. Give one only when your client "
    "reconnects for every call (then use the same name with tribal_episode_start and "
    "tribal_remember)."
)

PROJECT_DOC = (
    "The project this belongs to (a short name: letters, digits, '-', '_', '.'). Leave it out: "
    "the server picks the project of your working directory (stdio) or 'default'. Give one "
    "only to work on another project ('*', all projects, is only for reads)."
)
PROJECT_READ_DOC = (
    "Only this project's memories (and the shared ones) or episodes; '*': every project's "
    "(tribal_projects lists them). Leave it out: the server picks the project of your working "
    "directory (stdio) or 'default'."
)
