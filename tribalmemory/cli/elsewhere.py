"""What a read that found nothing in its project says about the other projects.

A CLI started outside a repository reads the project of its folder (often one nobody stores
into), so "No episodes." alone hides the episodes of every other project. The hint names the
project read, where that project came from, and what the other projects hold.
"""

from __future__ import annotations

from typing import Any

from ..plural import counted, plural
from ..projects import ALL_PROJECTS

SHOWN = 5  # projects named in the hint; the rest are counted


def nothing_found(
    project: str, source: str | None, listed: list[dict[str, Any]], noun: str, key: str
) -> str:
    """The lines for a read of ``project`` (from ``source``) that found no ``noun``, given
    ``GET /v1/projects``' list; ``key`` is the count of the list to read (``episodes``,
    ``memories``). A project that holds some was read, and its filters matched none: the
    other projects are not the answer then."""
    if project == ALL_PROJECTS:
        return f"No {plural(noun)} in any project."
    origin = f" (from {source})" if source else ""
    own = next((p[key] for p in listed if p["name"] == project), 0)
    if own:  # the project is not empty: the query and its filters left nothing
        return (
            f"No {noun} of project '{project}'{origin} matches what was asked (it holds "
            f"{counted(own, noun)})."
        )
    head = f"No {plural(noun)} in project '{project}'{origin}."
    others = [p for p in listed if p["name"] != project and p.get(key)]
    if not others:
        return head
    others.sort(key=lambda p: (-p[key], p["name"]))
    total = sum(p[key] for p in others)
    named = ", ".join(f"{p['name']} {p[key]}" for p in others[:SHOWN])
    more = f", {counted(len(others) - SHOWN, 'other project')}" if len(others) > SHOWN else ""
    where = "another project" if len(others) == 1 else "other projects"
    return (
        f"{head}\n{counted(total, noun)} {'is' if total == 1 else 'are'} in {where} "
        f"({named}{more}): add --all-projects, or --project NAME."
    )


async def hint(api: Any, args: Any, noun: str, key: str) -> str:
    """:func:`nothing_found` for the command's project, reading the projects from ``api``."""
    source = getattr(args, "project_source", None)
    listed = [] if args.project == ALL_PROJECTS else (await api.projects())["projects"]
    return nothing_found(args.project, source, listed, noun, key)
