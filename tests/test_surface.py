"""One operation surface: an operation's arguments are declared once (its request model in
tribalmemory.shapes and its route), and every door takes all of them: TribalAPI, the daemon
client (and so the Python SDK), the MCP tools and the CLI's commands. The memory operations
hand the request itself to the service, so a new field needs no plumbing in between."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from mcp import Client

from tribalmemory import shapes
from tribalmemory.api import TribalAPI
from tribalmemory.arguments import takes
from tribalmemory.cli.fields import DECLARED_AS
from tribalmemory.cli.main import build_parser
from tribalmemory.client import DaemonClient
from tribalmemory.config import Config
from tribalmemory.errors import NotFound
from tribalmemory.interfaces.mcp_server import build_mcp_server
from tribalmemory.interfaces.mcp_tools import SERVER_FILLED
from tribalmemory.interfaces.openapi import OPERATIONS


def parameters(signature: inspect.Signature) -> list[tuple[str, bool]]:
    """Each parameter's name and whether a call must give it."""
    return [
        (p.name, p.default is inspect.Parameter.empty)
        for p in signature.parameters.values()
        if p.name != "self"
    ]


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_api_methods_take_their_routes_arguments(name: str) -> None:
    op = OPERATIONS[name]
    method = inspect.signature(getattr(TribalAPI, op.call))
    assert parameters(method) == parameters(op.signature())


def test_the_daemon_client_has_every_operation_with_its_arguments() -> None:
    client = DaemonClient(Config())
    for name, op in OPERATIONS.items():
        assert parameters(inspect.signature(getattr(client, name))) == parameters(op.signature()), (
            name
        )
    with pytest.raises(TypeError, match="recall.*limt"):
        client.recall("q", limt=3).send(None)  # refused before any request is sent
    with pytest.raises(AttributeError):
        client.reacll  # noqa: B018


class Recorder:
    """An API that records each call's method and arguments, then answers with an error (the
    tool's result does not matter here)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        def record(**arguments: Any) -> None:
            self.calls.append((method, arguments))
            raise NotFound("recorded")

        return record


def value_for(name: str, schema: dict[str, Any]) -> Any:
    """A value of the argument's type that names the argument (no JSON text)."""
    kind = schema.get("type")
    return {
        "integer": 3,
        "number": 0.5,
        "boolean": True,
        "array": [f"v-{name}"],
        "object": {"k": name},
    }.get(str(kind), f"v-{name}")


async def test_mcp_tools_take_and_pass_on_every_argument_of_their_operation() -> None:
    """Every field of a tool's operation is a tool argument (but the ones the server fills
    on a write: on a read, source_instance is a filter), and reaches the API unchanged."""
    api = Recorder()
    async with Client(build_mcp_server(lambda: api)) as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            offered = tool.input_schema.get("properties", {})
            sent = {name: value_for(name, schema) for name, schema in offered.items()}
            api.calls.clear()
            await client.call_tool(tool.name, sent)
            assert len(api.calls) == 1, tool.name
            method, received = api.calls[0]
            op = OPERATIONS[method]
            filled = (
                set() if tool.annotations and tool.annotations.read_only_hint else SERVER_FILLED
            )
            assert set(offered) == set(op.arguments) - filled, tool.name
            assert set(received) == set(op.arguments), tool.name
            assert {k: received[k] for k in sent} == sent, tool.name


CLI_COMMANDS: list[tuple[list[str], type[shapes.Request]]] = [
    (["remember", "text"], shapes.RememberRequest),
    (["recall", "query"], shapes.RecallRequest),
    (["correct", "id", "text"], shapes.CorrectRequest),
    (["episodes", "list"], shapes.EpisodesListQuery),
    (["episodes", "search", "query"], shapes.EpisodesSearchRequest),
    (["episodes", "replay", "topic"], shapes.EpisodesReplayRequest),
    (["episodes", "create", "title", "memory-id"], shapes.EpisodeCreateRequest),
    (["sessions"], shapes.SessionsQuery),
    (["export"], shapes.ExportQuery),
]


@pytest.mark.parametrize(("argv", "request_model"), CLI_COMMANDS, ids=lambda v: str(v))
def test_cli_commands_take_every_field_of_their_request(
    argv: list[str], request_model: type[shapes.Request]
) -> None:
    parsed = set(vars(build_parser().parse_args(argv)))
    for name in request_model.model_fields:
        assert name in parsed or DECLARED_AS.get(name) in parsed, f"{argv[0]}: {name}"


class Asked(shapes.Request):
    query: str
    extra: int | None = None  # a field added to the shape, named nowhere else


class AskingApi:
    @takes(Asked)
    async def ask(self, request: Asked) -> Asked:
        return request


async def test_a_field_added_to_the_request_shape_reaches_the_operation() -> None:
    assert parameters(inspect.signature(AskingApi.ask)) == [("query", True), ("extra", False)]
    request = await AskingApi().ask("q", extra=3)
    assert isinstance(request, Asked) and (request.query, request.extra) == ("q", 3)
    assert (await AskingApi().ask(query="q")).extra is None  # left out: the shape's default
    with pytest.raises(TypeError, match="extar"):
        await AskingApi().ask("q", extar=3)


class ServiceRecorder:
    """A memory service that records the request each operation receives, then refuses."""

    def __init__(self) -> None:
        self.received: list[tuple[str, Any]] = []

    def __getattr__(self, operation: str) -> Any:
        async def record(request: Any, *rest: Any, **options: Any) -> None:
            self.received.append((operation, request))
            raise NotFound("recorded")

        return record


class AnyEpisode:
    """An episode engine whose every episode has one member, which names every entity."""

    def member_ids(self, episode_id: str) -> list[str]:
        return ["4f0c0b2e-0000-4000-8000-000000000000"]

    async def entity_memory_ids(self, project: str | None, name: str) -> list[str]:
        return ["4f0c0b2e-0000-4000-8000-000000000000"]


SHAPED = [
    ("remember", "remember", shapes.RememberRequest),
    ("recall", "recall_dated", shapes.RecallRequest),
    ("memories_list", "list_memories", shapes.MemoriesListQuery),
    ("correct", "correct", shapes.CorrectRequest),
]


@pytest.mark.parametrize(("call", "operation", "model"), SHAPED, ids=[s[0] for s in SHAPED])
async def test_the_api_hands_the_service_operation_its_whole_request(
    call: str, operation: str, model: type[shapes.Request]
) -> None:
    """Every field reaches the service operation unchanged, as an object of the shape."""
    service = ServiceRecorder()
    api = TribalAPI(service, AnyEpisode())  # type: ignore[arg-type]
    sent = {name: value_for(name, model.argument_schema(name)) for name in model.model_fields}
    sent |= {"episode_id": "ep-1a2b3c4d5e6f"} if "episode_id" in sent else {}
    with pytest.raises(NotFound, match="recorded"):
        await getattr(api, call)(**sent)
    [(name, request)] = service.received
    assert name == operation and isinstance(request, model)
    assert {field: getattr(request, field) for field in sent} == sent


def test_the_doors_an_error_names_are_the_routes_tools_and_commands() -> None:
    """The engine's errors name an action's tool, route and command (episodes/doors.py): each
    is the route table's, the MCP tool's and a command the CLI's parser takes."""
    from tribalmemory.episodes.doors import DOORS, doors
    from tribalmemory.interfaces.mcp_tools.table import TOOLS

    parser = build_parser()
    for action, door in DOORS.items():
        op = OPERATIONS[door.operation]
        assert door.route == f"{op.method} {op.route_path}", action
        assert door.tool == TOOLS[door.operation].name, action
        if door.command:
            words = door.command.format(episode_id="ep-1").split()
            assert words[0] == "tribalmemory"
            parser.parse_args(words[1:] + (["memory:x"] if action.endswith("links") else []))
    assert doors("update", "delete", episode_id="ep-1") == (
        "update: tribal_episode_update (structured), PATCH /v1/episodes/ep-1 (structured); "
        "delete: tribal_episode_delete, DELETE /v1/episodes/ep-1, tribalmemory episodes delete ep-1"
    )
