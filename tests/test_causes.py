"""Causal links (docs/causes.md): the rules without an LLM as pure functions, links from the
LLM's structured answer (real litellm client, fake provider), user links over HTTP kept across
a regeneration and through an export and an import, the causal path on three linked episodes,
forget and delete taking links away, and project isolation on every route and tool."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Recorded, Reply, default_reply
from helpers_http import EPISODES, write_config
from starlette.testclient import TestClient
from test_cli import run, run_json
from test_http import error, remember, settle
from test_mcp import connect, error_of, ok
from test_structured_episodes import closed_episode

from tribalmemory import validation as check
from tribalmemory.config import config_from_dict, load_config
from tribalmemory.entities import mentions_of
from tribalmemory.episodes import causes
from tribalmemory.episodes.causes import Step
from tribalmemory.errors import InvalidInput
from tribalmemory.interfaces.http import create_app
from tribalmemory.portability import exporter, importer
from tribalmemory.runtime import Runtime, start_runtime

# -- the rules as pure functions ---------------------------------------------------------------

A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"
C = "cccccccc-0000-4000-8000-000000000003"


def test_a_causal_phrase_naming_what_an_earlier_episode_named_links_that_episode() -> None:
    text = "Fixed the outage caused by the payments-gateway pool: raised max_client_conn."
    earlier = {"payments-gateway": "ep-a"}
    (link,) = causes.reference_links(B, text, earlier)
    assert (link.cause, link.effect, link.source) == ("episode:ep-a", f"memory:{B}", "reference")
    assert link.confidence == causes.REFERENCE_CONFIDENCE
    assert "caused by" in link.note and "payments-gateway" in link.note
    # no explicit causal phrase: the same names link nothing
    plain = "Raised max_client_conn on the payments-gateway pool."
    assert causes.reference_links(B, plain, earlier) == []
    # a phrase, but nothing named first in an earlier episode
    assert causes.reference_links(B, text, {}) == []
    for phrase in ("due to", "led to", "as a result of", "fixes #4411", "reverts", "because of"):
        assert causes.has_causal_phrase(f"x {phrase} y") is not None, phrase
    assert causes.has_causal_phrase("after the rollout of payments-gateway v2") is not None
    assert causes.has_causal_phrase("We fixed it and moved on.") is None


def test_a_fix_after_an_error_sharing_a_name_is_linked_with_a_low_confidence() -> None:
    events = [
        {"type": "error", "memory_ids": [A]},
        {"type": "discovery", "memory_ids": [C]},
        {"type": "fix", "memory_ids": [B]},
    ]
    named = {A: {"payments-gateway"}, B: {"payments-gateway", "pool"}, C: {"other"}}
    (link,) = causes.order_links(events, named)
    assert (link.cause, link.effect, link.source) == (f"memory:{A}", f"memory:{B}", "order")
    assert link.confidence == causes.ORDER_CONFIDENCE < causes.REFERENCE_CONFIDENCE
    # no shared name, or the fix before the error: no link
    assert causes.order_links(events, {A: {"x"}, B: {"y"}}) == []
    assert causes.order_links(list(reversed(events)), named) == []


def test_the_names_a_text_gives_are_its_entities_each_time_and_the_callers_own() -> None:
    """:func:`causes.names` keeps each text's entities (a summary job reads every member again):
    a caller changing the list it got does not change the next answer."""
    text = "The payouts-api rollback to v2.4.1 was due to BIL-11433, said Alice."
    first = causes.names(text)
    assert first == list(mentions_of(text)) and "payouts-api" in first
    first.append("changed")
    assert causes.names(text) == list(mentions_of(text))


def test_nodes_are_told_apart_by_prefix_or_by_the_uuid_form() -> None:
    assert check.node(f"memory:{A}") == f"memory:{A}"
    assert check.node(" Episode:EP-1 ") == "episode:ep-1"  # canonical: trimmed, lower-case
    assert check.node(A.upper()) == f"memory:{A}"
    assert check.node("ep-1a2b") == "episode:ep-1a2b"
    assert check.node("ep-1a2b:x") == "episode:ep-1a2b:x"  # an episode id may hold ':'
    # one check, in one place, for every door: malformed or too long is invalid input (400)
    for bad, says in (
        (None, "node must be a node"),
        ("  ", "node must be a node"),
        ("memory:" + "a" * 80, "at most 80 characters"),
        ("memory:not-a-uuid", "is not a memory id"),
        ("bad id!", "is not an episode id"),
    ):
        with pytest.raises(InvalidInput, match=says):
            check.node(bad)


def test_the_shortest_path_prefers_fewer_links_then_the_more_confident() -> None:
    edges = {
        "a": [Step("a", "b", "causes", 0.9, "user"), Step("a", "c", "causes", 0.3, "order")],
        "b": [Step("b", "d", "causes", 0.9, "user")],
        "c": [Step("c", "d", "causes", 0.9, "user")],
        "d": [Step("d", "e", "part_of", 1.0, "membership")],
    }
    steps_from: Callable[[str], list[Step]] = lambda n: edges.get(n, [])  # noqa: E731
    chain = causes.shortest_path("a", "e", steps_from, 8)
    assert chain is not None and [s.effect for s in chain] == ["b", "d", "e"]
    assert causes.path_confidence(chain) == pytest.approx(0.81)  # float product
    assert causes.shortest_path("e", "a", steps_from, 8) is None
    assert causes.shortest_path("a", "e", steps_from, 1) is None  # two links needed
    # membership steps alone are no causal chain
    assert causes.shortest_path("d", "e", steps_from, 8) is None
    # a chain never comes back through a node: a -> b inside one episode E gives no b -> a
    loop = {
        "b": [Step("b", "E", "part_of", 1.0, "membership")],
        "E": [Step("E", "a", "contains", 1.0, "membership")],
        "a": [Step("a", "b", "causes", 1.0, "user"), Step("a", "E", "part_of", 1.0, "membership")],
    }
    assert causes.shortest_path("b", "a", lambda n: loop.get(n, []), 8) is None
    assert causes.shortest_path("a", "b", lambda n: loop.get(n, []), 8) is not None


# -- three linked episodes over HTTP ------------------------------------------------------------

STORY = {
    "A": ("Deploy of payments-gateway failed: connection pool exhausted error.", "2026-03-02"),
    "B": (
        "Fixed the outage caused by the payments-gateway pool: raised max_client_conn to 400.",
        "2026-03-05",
    ),
    "C": ("We decided to add pool alerts because of the max_client_conn change.", "2026-03-09"),
}


def entity_work_done(client: TestClient, runtime: Runtime) -> None:
    assert client.portal is not None
    assert client.portal.call(runtime.episodes.engine.entity_work.settle, 30)


def three_episodes(client: TestClient, runtime: Runtime) -> tuple[dict[str, str], dict[str, str]]:
    """A's error -> B's fix -> C's decision: the memory ids and the episode ids by letter."""
    memories = {
        key: remember(client, text, created_at=f"{day}T09:00:00Z")
        for key, (text, day) in STORY.items()
    }
    entity_work_done(client, runtime)
    episodes = {}
    for key, memory_id in memories.items():
        created = client.post(
            "/v1/episodes", json={"title": f"ep {key}", "memory_ids": [memory_id]}
        )
        assert created.status_code == 200, created.text
        episodes[key] = created.json()["episode_id"]
    settle(client, runtime)
    return memories, episodes


def test_a_causal_path_runs_through_three_linked_episodes(
    client: TestClient, runtime: Runtime
) -> None:
    mem, ep = three_episodes(client, runtime)
    found = client.get(
        "/v1/causal-path", params={"from_node": f"memory:{mem['A']}", "to_node": mem["C"]}
    )
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["reason"] is None
    steps = [(s["cause"], s["effect"], s["relation"], s["source"]) for s in body["path"]]
    assert steps == [
        (f"memory:{mem['A']}", f"episode:{ep['A']}", "part_of", "membership"),
        (f"episode:{ep['A']}", f"memory:{mem['B']}", "causes", "reference"),
        (f"memory:{mem['B']}", f"episode:{ep['B']}", "part_of", "membership"),
        (f"episode:{ep['B']}", f"memory:{mem['C']}", "causes", "reference"),
    ]
    assert body["confidence"] == pytest.approx(causes.REFERENCE_CONFIDENCE**2)  # float product
    assert all(s["link_id"] for s in body["path"] if s["relation"] == "causes")

    whole = client.get(
        "/v1/causal-path", params={"from_node": f"episode:{ep['A']}", "to_node": ep["C"]}
    ).json()
    assert [s["effect"] for s in whole["path"]][-1] == f"episode:{ep['C']}"

    # the item of B's record shows its links
    events = client.get(f"/v1/episodes/{ep['B']}").json()["episode"]["structured"]["events"]
    assert [link["cause"] for link in events[0]["links"]] == [f"episode:{ep['A']}"]

    # none known the other way round: 200 with a reason
    back = client.get(
        "/v1/causal-path", params={"from_node": mem["C"], "to_node": f"memory:{mem['A']}"}
    )
    assert back.status_code == 200
    assert back.json()["path"] is None and back.json()["confidence"] is None
    assert "no chain of at most 8 causal links" in back.json()["reason"]

    # a node that does not exist, a malformed one
    missing = {"from_node": mem["A"], "to_node": "episode:ep-000000000000"}
    error(client.get("/v1/causal-path", params=missing), 404, "no episode ep-000000000000")
    error(client.get("/v1/causal-path", params={"from_node": "bad id!", "to_node": mem["A"]}), 400)
    error(client.get("/v1/causal-path", params={"from_node": mem["A"]}), 400, "to_node")
    error(client.get("/v1/causes"), 400, "node")  # a required field left out: 400, not 500


def test_user_links_are_kept_across_a_regeneration_and_removed_by_hand(
    client: TestClient, runtime: Runtime
) -> None:
    mem, ep = three_episodes(client, runtime)
    added = client.post(
        "/v1/causes",
        json={"cause": f"memory:{mem['A']}", "effect": f"memory:{mem['C']}", "note": "pager"},
    )
    assert added.status_code == 200, added.text
    link = added.json()["link"]
    assert (link["source"], link["confidence"], link["note"]) == ("user", 1.0, "pager")
    assert link["created_at"].endswith("Z")

    assert client.post(f"/v1/episodes/{ep['C']}/regenerate").status_code == 200
    settle(client, runtime)
    listed = client.get("/v1/causes", params={"node": f"memory:{mem['C']}"}).json()
    assert {(x["source"], x["cause"]) for x in listed["links"]} == {
        ("user", f"memory:{mem['A']}"),
        ("reference", f"episode:{ep['B']}"),
    }

    # a shortcut now: A's memory -> C's memory in one link
    path = client.get("/v1/causal-path", params={"from_node": mem["A"], "to_node": mem["C"]})
    assert [s["source"] for s in path.json()["path"]] == ["user"]

    assert client.delete(f"/v1/causes/{link['id']}").status_code == 200
    error(client.delete(f"/v1/causes/{link['id']}"), 404, "no causal link")
    error(client.delete("/v1/causes/not-a-link"), 400, "causal link id")
    listed = client.get("/v1/causes", params={"node": f"memory:{mem['C']}"}).json()
    assert [x["source"] for x in listed["links"]] == ["reference"]

    same = {"cause": mem["A"], "effect": f"memory:{mem['A']}"}
    error(client.post("/v1/causes", json=same), 422, "the same node")
    error(client.post("/v1/causes", json={"cause": mem["A"]}), 422, "effect")


def test_forget_and_delete_take_the_links_that_rest_on_them(
    client: TestClient, runtime: Runtime
) -> None:
    mem, ep = three_episodes(client, runtime)
    user = client.post("/v1/causes", json={"cause": ep["C"], "effect": mem["B"]}).json()["link"]
    kept = client.post("/v1/causes", json={"cause": ep["A"], "effect": mem["C"]}).json()["link"]
    assert client.delete(f"/v1/forget/{mem['B']}").status_code == 200
    settle(client, runtime)
    # the reference link A -> B's memory and the user's link to B's memory are gone
    links = client.get("/v1/causes", params={"node": f"episode:{ep['A']}"}).json()["links"]
    assert [x["id"] for x in links] == [kept["id"]]
    error(client.delete(f"/v1/causes/{user['id']}"), 404)

    assert client.delete(f"/v1/episodes/{ep['A']}").status_code == 200
    assert kept["id"] not in [
        x["id"] for x in client.get("/v1/causes", params={"node": mem["C"]}).json()["links"]
    ]
    error(client.get("/v1/causes", params={"node": f"episode:{ep['A']}"}), 404, "no episode")


def test_a_merge_moves_links_and_a_users_caused_by_is_a_user_link(
    client: TestClient, runtime: Runtime
) -> None:
    mem, ep = three_episodes(client, runtime)
    merged = client.post(f"/v1/episodes/{ep['B']}/merge", json={"other_id": ep["A"]})
    assert merged.status_code == 200, merged.text
    survivor = merged.json()["episode_id"]
    absorbed = ep["A"] if survivor == ep["B"] else ep["B"]
    settle(client, runtime)
    listed = client.get("/v1/causes", params={"node": mem["C"]}).json()["links"]
    assert [x["cause"] for x in listed] == [f"episode:{survivor}"]
    assert f"episode:{absorbed}" not in json.dumps(
        client.get("/v1/causes", params={"node": f"episode:{survivor}"}).json()
    )

    members = [mem["A"], mem["B"]]
    events = [
        {"type": "error", "text": "pool exhausted", "memory_ids": [members[0]]},
        {"type": "fix", "text": "raised the limit", "memory_ids": [members[1]]},
    ]
    events[1]["caused_by"] = [members[0]]
    patched = client.patch(f"/v1/episodes/{survivor}", json={"structured": {"events": events}})
    assert patched.status_code == 200, patched.text
    record = patched.json()["episode"]["structured"]
    assert record["events"][1]["caused_by"] == [members[0]]
    (link,) = [x for x in record["events"][1]["links"] if x["source"] == "user"]
    assert (link["cause"], link["confidence"]) == (f"memory:{members[0]}", 1.0)

    events[1]["caused_by"] = [mem["C"]]  # not a member of the episode
    refused = client.patch(f"/v1/episodes/{survivor}", json={"structured": {"events": events}})
    error(refused, 422, "structured.events[1].caused_by names memories not in the episode")


def test_another_projects_nodes_are_not_found(client: TestClient, runtime: Runtime) -> None:
    mine = remember(client, "The billing-service crashed because of the nightly job.")
    theirs = remember(client, "Alerting moved to a new pager rota.", project="beta")
    both = {"cause": mine, "effect": theirs}
    error(client.post("/v1/causes", json=both), 404, f"no memory {theirs} in project default")
    error(client.post("/v1/causes", json=both | {"project": "beta"}), 404, "in project beta")
    error(client.get("/v1/causes", params={"node": mine, "project": "beta"}), 404)
    crossing = {"from_node": mine, "to_node": theirs}
    error(client.get("/v1/causal-path", params=crossing), 404, "in project default")

    other = remember(client, "Nightly job rescheduled to 02:00.")
    link = client.post("/v1/causes", json={"cause": mine, "effect": other}).json()["link"]
    error(client.delete(f"/v1/causes/{link['id']}", params={"project": "beta"}), 404)
    listed = client.get("/v1/causes", params={"node": other}).json()
    assert [x["id"] for x in listed["links"]] == [link["id"]]


async def test_mcp_tools_answer_and_keep_projects_apart(engine_runtime: Any) -> None:
    rt = await engine_runtime()
    first = (await rt.api.remember("The cache-service stalled.", project="alpha"))["memory_id"]
    then = (await rt.api.remember("Cache TTL halved.", project="alpha"))["memory_id"]
    async with connect(rt.api) as agent:
        added = ok(
            await agent.call_tool(
                "tribal_cause_add", {"cause": first, "effect": then, "project": "alpha"}
            )
        )
        link_id = added["link"]["id"]
        listed = ok(await agent.call_tool("tribal_causes", {"node": then, "project": "alpha"}))
        assert [x["id"] for x in listed["links"]] == [link_id]
        path = ok(
            await agent.call_tool(
                "tribal_causal_path", {"from_node": first, "to_node": then, "project": "alpha"}
            )
        )
        assert path["confidence"] == 1.0 and len(path["path"]) == 1
        text = error_of(await agent.call_tool("tribal_causes", {"node": then, "project": "beta"}))
        assert f"no memory {then} in project beta" in text
        text = error_of(
            await agent.call_tool("tribal_cause_remove", {"link_id": link_id, "project": "beta"})
        )
        assert "no causal link" in text
        ok(await agent.call_tool("tribal_cause_remove", {"link_id": link_id, "project": "alpha"}))
        listed = ok(await agent.call_tool("tribal_causes", {"node": then, "project": "alpha"}))
        assert listed["links"] == []


# -- export and import ----------------------------------------------------------------------------

NDJSON = {"Content-Type": "application/x-ndjson"}


def records_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_a_users_links_go_out_in_an_export_and_come_back_with_an_import(
    client: TestClient,
    runtime: Runtime,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mem, ep = three_episodes(client, runtime)
    summary = client.get(f"/v1/episodes/{ep['B']}").json()["episode"]["summary_memory_id"]
    beta = [remember(client, t, project="beta") for t in ("Beta pager fired.", "Beta rota.")]
    asked = [
        {"cause": mem["A"], "effect": mem["C"], "note": "the pager"},  # memory -> memory
        {"cause": ep["C"], "effect": f"episode:{ep['A']}"},  # episode -> episode
        {"cause": summary, "effect": ep["C"]},  # the engine's summary memory of B -> C
        {"cause": beta[0], "effect": beta[1], "project": "beta"},
    ]
    added = []
    for body in asked:
        answer = client.post("/v1/causes", json=body)
        assert answer.status_code == 200, answer.text
        added.append(answer.json()["link"] | {"project": body.get("project", "default")})
    derived = client.get("/v1/causes", params={"node": f"episode:{ep['A']}"}).json()["links"]
    assert "reference" in {x["source"] for x in derived}  # the records' links: not exported

    exported = records_of(client.get("/v1/export").text)
    lines = [r for r in exported if r["type"] == "cause"]
    assert lines == [{"type": "cause", **link} for link in sorted(added, key=by_project)]
    assert exported[-1]["causes"] == len(added)
    # one project: its links only; a link whose node is not in the file is not written
    beta_only = records_of(client.get("/v1/export", params={"project": "beta"}).text)
    assert [r["id"] for r in beta_only if r["type"] == "cause"] == [added[3]["id"]]
    since = records_of(client.get("/v1/export", params={"since": "2026-03-04T00:00:00Z"}).text)
    assert mem["A"] not in {r["id"] for r in since if r["type"] == "memory"}
    assert added[0]["id"] not in {r["id"] for r in since if r["type"] == "cause"}

    # Elsewhere: every link is back, same id, nodes, note and time; a second import adds none.
    other = tmp_path / "other"
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(other))
    config = load_config(write_config(other, episodes=EPISODES))
    body = "".join(json.dumps(r) + "\n" for r in exported).encode()
    with TestClient(create_app(config), base_url=str(client.base_url)) as fresh:
        planned = fresh.post("/v1/import", headers=NDJSON, params={"dry_run": "true"}, content=body)
        assert planned.json()["causes"] == len(added)
        assert planned.json()["causes_created"] == 0
        done = fresh.post("/v1/import", headers=NDJSON, content=body).json()
        assert (done["causes"], done["causes_created"], done["causes_existing"]) == (4, 4, 0)
        assert done["causes_skipped"] == {}
        for link in added:
            listed = fresh.get(
                "/v1/causes", params={"node": link["cause"], "project": link["project"]}
            ).json()["links"]
            (back,) = [x for x in listed if x["id"] == link["id"]]
            assert back | {"project": link["project"]} == link
        again = fresh.post("/v1/import", headers=NDJSON, content=body).json()
        assert (again["causes_created"], again["causes_existing"]) == (0, 4)

        # A link whose node is in neither the file nor here, or in another project, is
        # skipped and counted, never an error; the WARNING names it.
        absent = "dddddddd-0000-4000-8000-000000000004"
        first = next(line for line in lines if line["id"] == added[0]["id"])
        strays = [
            first | {"id": "cl-00000000000a", "cause": f"memory:{absent}"},
            first | {"id": "cl-00000000000b", "effect": f"memory:{beta[1]}"},
        ]
        edited = exported[:-1] + strays + [exported[-1] | {"causes": len(added) + 2}]
        with caplog.at_level(logging.WARNING, logger="tribalmemory.episodes"):
            stray = fresh.post(
                "/v1/import",
                headers=NDJSON,
                content="".join(json.dumps(r) + "\n" for r in edited).encode(),
            ).json()
        assert stray["causes_skipped"] == {"node not in the import": 2}
        assert (stray["causes_created"], stray["causes_existing"]) == (0, 4)
        warned = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
        assert "2 causal links skipped" in warned and "cl-00000000000a, cl-00000000000b" in warned

        # A derived link in the file is refused with its line, like any bad line.
        bad = exported[:-1] + [first | {"source": "reference"}] + [exported[-1]]
        bad[-1] = bad[-1] | {"causes": len(added) + 1}
        refused = fresh.post(
            "/v1/import",
            headers=NDJSON,
            content="".join(json.dumps(r) + "\n" for r in bad).encode(),
        )
        error(refused, 422, "1 problem in the file")
        assert refused.json()["detail"] == [
            f"line {len(bad) - 1}: source must be user: links an episode derived are derived "
            "again from its record on import"
        ]


def by_project(link: dict[str, Any]) -> tuple[str, str, str]:
    """The order of an export's cause lines: by project, then time."""
    return (link["project"], link["created_at"], link["id"])


# -- the LLM's structured answer ----------------------------------------------------------------


async def test_the_llms_caused_by_is_stored_and_an_invalid_one_dropped_with_a_warning(
    engine_runtime: Any, fake_llm_env: FakeLLM, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    state: dict[str, list[str]] = {}

    def answer(request: Recorded) -> Reply:
        reply = default_reply(request)
        if request.purpose != "final":
            return reply
        data = json.loads(reply.content or "{}")
        events = data["structured"]["events"]
        ids = [e["memory_ids"][0] for e in events]
        state["ids"] = ids
        events[1]["caused_by"] = [ids[0]]  # the discovery came of the error
        events[3]["caused_by"] = ["not-a-member"]  # invented: dropped, the event kept
        events[2]["leads_to"] = [ids[3]]
        decision = data["structured"]["decisions"][0]
        decision |= {"type": "technical", "effects": ["no more random logouts"]}
        return Reply.json(data)

    fake_llm_env.responder = answer
    rt = await engine_runtime()
    with caplog.at_level(logging.WARNING, logger="tribalmemory.episodes"):
        episode_id, ids = await closed_episode(rt)
    record = (await rt.api.episode_get(episode_id))["episode"]["structured"]
    assert record["source"] == "llm"
    assert [e["caused_by"] for e in record["events"]] == [[], [ids[0]], [], []]
    assert record["events"][2]["leads_to"] == [ids[3]]
    assert record["decisions"][0]["type"] == "technical"
    assert record["decisions"][0]["effects"] == ["no more random logouts"]
    warnings = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "events[3].caused_by names memories not in the episode: not-a-member" in warnings
    assert "(caused_by dropped)" in warnings

    found = await rt.api.causes_list(f"memory:{ids[1]}")
    llm = [x for x in found["links"] if x["source"] == "llm"]
    assert [(x["cause"], x["confidence"]) for x in llm] == [(f"memory:{ids[0]}", 0.8)]
    assert record["events"][1]["links"][0]["source"] == "llm"
    path = await rt.api.causal_path(ids[2], ids[3])
    assert [s["source"] for s in path["path"]] == ["llm"]

    # Exported and imported elsewhere, the episode's record gives its links again.
    export = tmp_path / "export.jsonl"
    export.write_text(
        "".join([line async for line in exporter.export_lines(rt.api, vectors=True)]),
        encoding="utf-8",
    )
    config = config_from_dict(
        {"data_dir": str(tmp_path / "elsewhere"), "episodes": {"detector_strategy": "embedding"}}
    )
    fresh = await start_runtime(config, run_scheduler=False)
    try:
        assert (await importer.apply(fresh.api, export)).episodes_created == 1
        found = await fresh.api.causes_list(f"memory:{ids[1]}")
        assert [(x["cause"], x["source"]) for x in found["links"]] == [(f"memory:{ids[0]}", "llm")]
        assert [s["source"] for s in (await fresh.api.causal_path(ids[2], ids[3]))["path"]] == [
            "llm"
        ]
    finally:
        await fresh.stop()


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_adds_lists_follows_and_removes_links(
    tm_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # no daemon answers: each command opens the store itself
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = str(write_config(tm_home, server={"port": port}, episodes=EPISODES))
    scope = ("--project", "shop", "--config", config)
    ids = [
        run_json(capsys, "remember", text, *scope)["memory_id"]
        for text in ("The cache-service stalled.", "Cache TTL halved.")
    ]
    added = run_json(capsys, "causes", "add", ids[0], f"memory:{ids[1]}", "--note", "n", *scope)
    link_id = added["link"]["id"]
    code, out, _ = run(capsys, "causes", "list", ids[1], *scope)
    assert code == 0 and link_id in out and "user" in out
    code, out, _ = run(capsys, "causes", "path", ids[0], ids[1], *scope)
    assert code == 0 and f"memory:{ids[0]} -> memory:{ids[1]} (causes, user 1.0)" in out
    code, out, _ = run(capsys, "causes", "path", ids[1], ids[0], *scope)
    assert code == 0 and "No causal path: no chain of at most 8 causal links" in out
    code, _, err = run(capsys, "causes", "list", ids[1], "--project", "other", "--config", config)
    assert code == 1 and f"no memory {ids[1]} in project other" in err
    assert run(capsys, "causes", "remove", link_id, *scope)[0] == 0
    assert run_json(capsys, "causes", "list", ids[1], *scope)["links"] == []
