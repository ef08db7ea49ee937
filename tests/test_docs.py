"""The docs cannot drift: documented routes, MCP tools and config keys are the real ones."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import re
import shlex
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from mcp import Client

from tribalmemory.cli.main import build_parser
from tribalmemory.config import SECTIONS, Config, config_from_dict
from tribalmemory.interfaces.mcp_server import build_mcp_server
from tribalmemory.interfaces.openapi import ROUTES
from tribalmemory.interfaces.portability_http import STREAMED
from tribalmemory.service.host import PluginHost

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLE = ROOT / "config" / "config.example.yaml"
# every doc that names the daemon's routes; llm.md names the LLM server's (/v1/chat/completions)
ROUTE_DOCS = sorted(path.name for path in DOCS.glob("*.md") if path.name != "llm.md")
DOCUMENTED_ROUTE = re.compile(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`\s?]*)")
TOOL_NAME = re.compile(r"`(tribal_[a-z_]+)`")  # a backticked tool name


def shape(path: str) -> str:
    """``/v1/episodes/{id}`` and ``/v1/episodes/{episode_id}`` are the same route."""
    return re.sub(r"{[^}]*}", "{}", path)


SERVED = {(op.method, shape(op.path)) for op in ROUTES} | {("GET", "/openapi.json")}
SERVED |= set(STREAMED)  # export, import and backup: streamed, outside the route table


def documented_routes(name: str) -> set[tuple[str, str]]:
    text = (DOCS / name).read_text(encoding="utf-8")
    return {(method, shape(path)) for method, path in DOCUMENTED_ROUTE.findall(text)}


@pytest.mark.parametrize("name", ROUTE_DOCS)
def test_every_documented_route_exists_with_its_method(name: str) -> None:
    unknown = documented_routes(name) - SERVED
    assert not unknown, f"{name} documents routes the daemon does not serve: {sorted(unknown)}"


def test_every_route_is_documented_in_http_md() -> None:
    missing = SERVED - documented_routes("http.md")
    assert not missing, f"docs/http.md does not document {sorted(missing)}"


def test_the_route_check_sees_a_wrong_method() -> None:
    """The check above is not vacuous: the old replay line of docs/episodes.md fails it."""
    wrong = {(m, shape(p)) for m, p in DOCUMENTED_ROUTE.findall("`GET /v1/episodes/replay?topic=`")}
    assert wrong == {("GET", "/v1/episodes/replay")} and not wrong <= SERVED


async def test_mcp_md_documents_every_tool_and_only_real_ones() -> None:
    async with Client(build_mcp_server(lambda: None)) as client:
        served = {tool.name for tool in (await client.list_tools()).tools}
    text = (DOCS / "mcp.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^### `(tribal_[a-z_]+)`", text, re.M))
    listed |= set(re.findall(r"^\| `(tribal_[a-z_]+)` \|", text, re.M))
    assert listed == served, f"undocumented: {served - listed}; not served: {listed - served}"
    for doc in [ROOT / "README.md", *DOCS.glob("*.md")]:
        named = set(TOOL_NAME.findall(doc.read_text(encoding="utf-8")))
        assert named <= served, f"{doc.name} names tools that do not exist: {named - served}"


HOST_METHOD = re.compile(r"`([a-z_]+)\(([^`)]*)\)`")  # `name(arg, arg=default)` in the host table


def test_plugins_md_lists_every_method_of_the_plugin_host_with_its_arguments() -> None:
    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    section = text.split("\n## The host", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ", 1)[0] for line in section.splitlines() if line.startswith("| `")]
    listed = {
        name: [arg.split("=")[0].strip() for arg in args.split(",") if arg.strip()]
        for row in rows
        for name, args in HOST_METHOD.findall(row)
    }
    methods = {
        name: [p for p in inspect.signature(fn).parameters if p != "self"]
        for name, fn in inspect.getmembers(PluginHost, inspect.isfunction)
        if not name.startswith("_")
    }
    assert listed == methods


def test_every_key_of_the_example_config_loads() -> None:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    config = config_from_dict(data)
    for section, values in data.items():
        if section not in SECTIONS:
            continue
        for key, value in values.items():
            assert getattr(getattr(config, section), key) == value, f"{section}.{key}"


def float_settings() -> list[tuple[str, str]]:
    found = []
    for section in SECTIONS:
        kind = type(getattr(Config(), section))
        for f in dataclasses.fields(kind):
            if typing.get_type_hints(kind)[f.name] is float:
                found.append((section, f.name))
    return found


@pytest.mark.parametrize(("section", "key"), float_settings())
def test_every_number_setting_takes_a_fraction(section: str, key: str) -> None:
    kind = type(getattr(Config(), section))
    meta = next(f.metadata for f in dataclasses.fields(kind) if f.name == key)
    value = (meta["min"] + meta["max"]) / 2 + 0.25  # a fraction inside the documented range
    config = config_from_dict({section: {key: value}})
    assert getattr(getattr(config, section), key) == value


def test_active_window_days_takes_a_fraction() -> None:
    config = config_from_dict({"episodes": {"active_window_days": 1.5}})
    assert config.episodes.active_window_days == 1.5
    assert float_settings().count(("episodes", "active_window_days")) == 1


CLI_LINE = re.compile(r"^(?:\$ )?tribalmemory\b")


def cli_md_commands(doc: Path = DOCS / "cli.md") -> list[str]:
    """The command lines of ``doc``'s code blocks (synopses and ``$`` examples), each with
    its continuation lines joined; the lines a command prints are left out."""
    text = doc.read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if CLI_LINE.match(line):
                commands.append(line.removeprefix("$ "))
            elif line.startswith(" ") and commands and line.strip().startswith("["):
                commands[-1] += " " + line.strip()  # a synopsis continued
    return commands


CLI_OPTION = re.compile(r"(?<![\w-])(--?[a-z][a-z-]*)")


def options_named(line: str) -> set[str]:
    """The options a command line names (its ``#`` comment left out)."""
    return set(CLI_OPTION.findall(line.split("#")[0]))


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (none: it runs a command)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


@functools.cache
def cli_parser() -> argparse.ArgumentParser:
    return build_parser()


def parser_of(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The (sub)parser the leading ``words`` name, and the words it took."""
    parser, taken = cli_parser(), []
    for word in words:
        if word not in subcommands(parser):
            break
        parser = subcommands(parser)[word]
        taken.append(word)
    return parser, taken


def doc_sections(name: str) -> list[tuple[str, str]]:
    """A doc's ``##`` and ``###`` sections: each heading line and the text under it."""
    parts = re.split(r"^(###? .*)$", (DOCS / name).read_text(encoding="utf-8"), flags=re.M)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def test_cli_md_names_only_commands_and_options_the_cli_has() -> None:
    """docs/cli.md, and every other doc and the README where a code block runs the CLI."""
    commands = cli_md_commands()
    assert len(commands) > 40  # the synopses and examples were found
    for doc in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        if doc.name != "cli.md":
            commands += cli_md_commands(doc)
    wrong = []
    for line in commands:
        words = shlex.split(line, comments=True)[1:]
        parser, taken = parser_of(words)
        rest = words[len(taken) :]
        if rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]) and (subcommands(parser) or not taken):
            wrong.append(f"tribalmemory {' '.join(taken + rest[:1])}: no such command")
        unknown = options_named(line) - options_of(parser)
        wrong += [f"tribalmemory {' '.join(taken)} {option}" for option in sorted(unknown)]
    assert not wrong, f"the docs name commands or options the CLI does not have: {wrong}"


def test_the_cli_md_check_sees_an_option_that_does_not_exist() -> None:
    parser, taken = parser_of(["recall", "QUERY", "--limit", "N"])
    assert taken == ["recall"] and "--limit" in options_of(parser)
    assert "--lmit" not in options_of(parser)


MCP_LEAD = re.compile(r"^\s*((?:`[a-z_]+`(?:\s*(?:,|/)\s*)?)+)")
"""The backticked names, separated by commas or slashes, that open a part of a tool's row."""


def mcp_md_parameters() -> dict[str, tuple[set[str], set[str]]]:
    """Per tool documented in docs/mcp.md: the parameters it names as such (a parameter table's
    first column; in a table of tools, the names that open each ``;``-part of its row), and
    every name it mentions at all (its row, or its section's text before the table)."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    for heading, body in doc_sections("mcp.md"):
        prose = body.split("\n|", 1)[0]
        if tool := re.fullmatch(r"### `(tribal_[a-z_]+)`", heading.strip()):
            cells = re.findall(r"^\| ([^|]*`[a-z_]+`[^|]*) \|", body, re.M)
            named = {p for cell in cells for p in re.findall(r"`([a-z_]+)`", cell)} - {"parameter"}
            found[tool.group(1)] = (named, named | set(re.findall(r"`([a-z_]+)`", prose)))
        for row in re.finditer(r"^\| `(tribal_[a-z_]+)` \| (.*) \| [^|]*\|$", body, re.M):
            named = set()
            for part in row.group(2).split(";"):
                if lead := MCP_LEAD.match(part):
                    named |= set(re.findall(r"`([a-z_]+)`", lead.group(1)))
            mentioned = set(re.findall(r"`([a-z_]+)`", row.group(2) + prose))
            found[row.group(1)] = (named, mentioned)
    return found


async def test_mcp_md_names_each_tools_real_parameters() -> None:
    async with Client(build_mcp_server(lambda: None)) as client:
        tools = (await client.list_tools()).tools
    schemas = {tool.name: set((tool.input_schema or {}).get("properties", {})) for tool in tools}
    documented = mcp_md_parameters()
    assert len(documented) > 30  # the tools' tables were read
    wrong = [
        f"{name}: {sorted(named - schemas[name])} are not its parameters"
        for name, (named, _) in documented.items()
        if named - schemas[name]
    ]
    wrong += [
        f"{name}: {sorted(schemas[name] - mentioned)} are not documented"
        for name, (_, mentioned) in documented.items()
        if schemas[name] - mentioned
    ]
    assert not wrong, wrong


def http_md_mentions() -> dict[tuple[str, str], set[str]]:
    """Per route named in a docs/http.md section (its heading or text): the names written in
    those sections as a parameter or a field: in backticks (alone or before ``=``), in quotes,
    or in a query string. Loose: a parameter named like a field of the answer counts."""
    mentioned: dict[tuple[str, str], set[str]] = {}
    for heading, body in doc_sections("http.md"):
        section = heading + body
        names = set(re.findall(r"`([a-z_]+)[=`]", section))
        names |= set(re.findall(r'"([a-z_]+)"', section)) | set(
            re.findall(r"[?&]([a-z_]+)=", section)
        )
        for method, path in DOCUMENTED_ROUTE.findall(section):
            mentioned.setdefault((method, shape(path)), set()).update(names)
    return mentioned


def test_http_md_documents_every_parameter_of_each_route() -> None:
    mentioned = http_md_mentions()
    missing = []
    for op in ROUTES:
        fields = set()
        for model in (op.query_model, op.body):
            fields |= set(getattr(model, "model_fields", {}))
        if gone := fields - mentioned.get((op.method, shape(op.path)), set()):
            missing.append(f"{op.method} {op.path}: {sorted(gone)}")
    assert not missing, f"docs/http.md does not mention these parameters: {missing}"


def test_cli_md_shows_every_option_of_each_command() -> None:
    """The reverse of the check above: each command's synopsis in docs/cli.md shows all its
    options (one spelling of each: ``-f`` stands for ``--follow``); ``--config`` is described
    once for every command, at the top."""
    shown: dict[tuple[str, ...], set[str]] = {}
    for line in cli_md_commands():
        _, taken = parser_of(shlex.split(line, comments=True)[1:])
        shown.setdefault(tuple(taken), set()).update(options_named(line))

    def leaves(
        parser: argparse.ArgumentParser, path: tuple[str, ...]
    ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
        if not subcommands(parser):
            yield path, parser
        for name, sub in subcommands(parser).items():
            yield from leaves(sub, (*path, name))

    missing = []
    for path, parser in leaves(cli_parser(), ()):
        for action in parser._actions:
            spellings = set(action.option_strings) - {"-h", "--help", "--config"}
            if spellings and not spellings & shown.get(path, set()):
                missing.append(f"tribalmemory {' '.join(path)} {max(spellings, key=len)}")
    assert not missing, f"docs/cli.md does not show: {missing}"


def test_configuration_md_shows_the_example_config_as_it_is() -> None:
    """configuration.md's *Every key* is config/config.example.yaml, which tests/test_config.py
    keeps equal to what the schema generates: a key added to the schema shows here too."""
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert shown == EXAMPLE.read_text(encoding="utf-8")
