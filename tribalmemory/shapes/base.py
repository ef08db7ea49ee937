"""The base models: :class:`Request` (what clients send) and :class:`Response` (what the API
answers), with the shapes every resource shares (:class:`Error`, :class:`Success`)."""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Request(BaseModel):
    """What a client sends; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def field_names(cls) -> list[str]:
        return list(cls.model_fields)

    @classmethod
    def required_names(cls) -> list[str]:
        return [name for name, f in cls.model_fields.items() if f.is_required()]

    @classmethod
    def argument_schema(cls, name: str) -> dict[str, Any]:
        """The JSON schema of one field as a single schema (a query or MCP argument).

        An optional field is one the client leaves out, so ``X | None`` is advertised as ``X``.
        Nested models are inlined (the schema stands alone, without ``$defs``). A new copy
        each call: callers may change it.
        """
        return copy.deepcopy(_argument_schema(cls, name))


@functools.cache
def _json_schema(model: type[Request]) -> dict[str, Any]:
    """``model``'s JSON schema, made once: pydantic builds it anew on every call, and the
    doors ask for it per field (each MCP tool argument, each CLI option)."""
    return model.model_json_schema()


@functools.cache
def _argument_schema(model: type[Request], name: str) -> dict[str, Any]:
    full = _json_schema(model)
    schema: dict[str, Any] = _inline(dict(full["properties"][name]), full.get("$defs", {}))
    schema.pop("title", None)
    kept = [s for s in schema.pop("anyOf", []) if s != {"type": "null"}]
    if len(kept) == 1:
        schema = kept[0] | schema
    elif kept:
        schema["anyOf"] = kept
    schema.pop("title", None)  # an inlined model's own title
    if schema.get("default", 0) is None:
        del schema["default"]
    return schema


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` to ``defs`` replaced by the definition itself."""
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return _inline(dict(defs[ref.removeprefix("#/$defs/")]), defs) | rest
    return {key: _inline(value, defs) for key, value in schema.items()}


def _all_required(schema: dict[str, Any]) -> None:
    """Every declared key of a response is always present, so each is required."""
    schema["required"] = list(schema.get("properties", {}))


class Response(BaseModel):
    """What the API answers: every declared key (all required in its schema), no other."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_all_required)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class OpenResponse(Response):
    """A response that plugins extend: their keys pass through after the declared ones."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_all_required)


class Error(Response):
    error: str = Field(description="What is wrong and, when it helps, what to do.")
    detail: Any = Field(description="null, a hint, or structured data such as allowed names.")


class Success(Response):
    success: bool
