"""Command options from an operation's request model (:mod:`tribalmemory.shapes`).

A command declares by hand the arguments it words for people (positionals, ``--tag``,
``--force``, ...); :func:`add_fields` adds ``--<field>`` for every other field of its model, and
:func:`given` hands their values to the API. A field added to a model is an option of its
command without editing the CLI.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..shapes import Request

DECLARED_AS = {
    "content": "text",
    "memory_id": "id",
    "tags": "tag",
    "skip_dedup": "force",
    "time_start": "since",
    "time_end": "until",
    "parent_episode_id": "parent",
    "include_timeline": "timeline",
}
"""Fields whose hand-declared argument has another name."""

_TYPES: dict[str, Any] = {"integer": int, "number": float}


def _help(description: str) -> str:
    """The description's first sentence, in the CLI's lower case (argparse formats ``%``)."""
    first = re.split(r"\.\s+(?=[A-Z])", description)[0].rstrip(".")
    return (first[:1].lower() + first[1:]).replace("%", "%%")


def add_fields(parser: argparse.ArgumentParser, request: type[Request]) -> None:
    """Add an option for each field of ``request`` that ``parser`` does not declare: a list as
    a repeatable singular (``--source-type X --source-type Y``), a boolean as a flag
    (``--no-<field>`` too when it is on by default)."""
    declared = {action.dest for action in parser._actions}
    added = []
    for name in request.model_fields:
        if name in declared or DECLARED_AS.get(name) in declared:
            continue
        schema = request.argument_schema(name)
        kind = schema.get("type")
        flag = "--" + name.replace("_", "-")
        text = _help(str(schema.get("description", "")))
        if kind == "boolean" and schema.get("default") is True:  # on unless turned off
            action = argparse.BooleanOptionalAction
            parser.add_argument(flag, dest=name, action=action, default=None, help=text)
        elif kind == "boolean":
            parser.add_argument(flag, dest=name, action="store_true", default=None, help=text)
        elif kind == "array":
            flag = flag.removesuffix("s")
            metavar = flag[2:].upper().replace("-", "_")
            parser.add_argument(
                flag, dest=name, action="append", metavar=metavar, help=f"{text} (repeatable)"
            )
        else:
            metavar = "TIME" if schema.get("format") == "date-time" else name.upper()
            kind_type = _TYPES.get(str(kind), str)
            parser.add_argument(flag, dest=name, type=kind_type, metavar=metavar, help=text)
        added.append(name)
    parser.set_defaults(generated_fields=tuple(added))


def given(args: argparse.Namespace) -> dict[str, Any]:
    """The values of the options :func:`add_fields` added (None when not given)."""
    return {name: getattr(args, name) for name in getattr(args, "generated_fields", ())}
