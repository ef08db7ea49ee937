"""The structured-episode routes over HTTP, good and bad input: PATCH, decisions, context and
the new list filters (status codes and messages)."""

from __future__ import annotations

import httpx
from starlette.testclient import TestClient
from test_http import error, remember, settle

from tribalmemory.runtime import Runtime

MEMORIES = [
    "Staging DB setup: the first migration failed with a lock timeout error.",
    "We decided to run migrations with a 5 s statement timeout because locks pile up.",
    "Fixed: migrations pass on staging. Lesson: always set a statement timeout.",
]


def closed_episode(client: TestClient, runtime: Runtime) -> tuple[str, list[str]]:
    ids = [remember(client, text, source_instance="codex") for text in MEMORIES]
    created = client.post("/v1/episodes", json={"title": "Staging DB", "memory_ids": ids})
    eid = created.json()["episode_id"]
    settle(client, runtime)
    assert client.post(f"/v1/episodes/{eid}/close").status_code == 200
    settle(client, runtime)
    return eid, ids


def test_structured_record_patch_and_decisions(client: TestClient, runtime: Runtime) -> None:
    eid, ids = closed_episode(client, runtime)
    got = client.get(f"/v1/episodes/{eid}").json()["episode"]
    assert got["structured"]["outcome"] == "success" and got["outcome"] == "success"
    assert got["structured"]["metrics"]["participants"] == {"codex": 3}
    decisions = client.get(f"/v1/episodes/{eid}/decisions")
    assert decisions.status_code == 200
    assert decisions.json()["decisions"][0]["memory_ids"] == [ids[1]]

    patched = client.patch(
        f"/v1/episodes/{eid}",
        json={"structured": {"outcome": "partial", "outcome_reason": "prod not done yet"}},
    )
    assert patched.status_code == 200, patched.text
    record = patched.json()["episode"]["structured"]
    assert (record["outcome"], record["edited"]) == ("partial", ["outcome", "outcome_reason"])
    listed = client.get("/v1/episodes?outcome=partial&participant=codex&task=staging")
    assert [e["id"] for e in listed.json()["episodes"]] == [eid]


def test_bad_input_is_4xx_with_a_message(client: TestClient, runtime: Runtime) -> None:
    eid, ids = closed_episode(client, runtime)
    cases: list[tuple[httpx.Response, int, str]] = [
        (client.get("/v1/episodes?outcome=won"), 400, "outcome must be one of"),
        (client.get("/v1/episodes?since=yesterday"), 400, "since"),
        (client.get("/v1/episodes?since=2026-02-01&until=2026-01-01"), 400, "since must not"),
        (client.get("/v1/episodes?colour=red"), 400, "unknown query parameter"),
        (client.get("/v1/episodes/ep-0000000000000000/decisions"), 404, "no episode"),
        (client.get("/v1/episodes/bad%20id/decisions"), 400, ""),
        (client.patch(f"/v1/episodes/{eid}", json={}), 422, "nothing to change"),
        (client.patch(f"/v1/episodes/{eid}", json={"colour": "x"}), 422, "unknown field"),
        (client.patch(f"/v1/episodes/{eid}", json={"structured": []}), 422, "an object"),
        (
            client.patch(f"/v1/episodes/{eid}", json={"structured": {"outcome": "won"}}),
            422,
            "structured.outcome must be one of",
        ),
        (
            client.patch(
                f"/v1/episodes/{eid}",
                json={"structured": {"lessons": [{"text": "x", "memory_ids": ["m-x"]}]}},
            ),
            422,
            "not in the episode: m-x",
        ),
        (
            client.patch("/v1/episodes/ep-0000000000000000", json={"structured": {"task": "t"}}),
            404,
            "no episode",
        ),
        (client.get("/v1/context?budget_tokens=10"), 400, "budget_tokens"),
        (client.get("/v1/context?budget_tokens=many"), 400, "integer"),
        (client.get("/v1/patterns?kind=rule"), 400, "kind must be one of pattern, antipattern"),
        (client.get("/v1/patterns?limit=0"), 400, "limit"),
    ]
    for response, status, fragment in cases:
        error(response, status, fragment)


def test_context_route(client: TestClient, runtime: Runtime) -> None:
    eid, _ = closed_episode(client, runtime)
    found = client.get("/v1/context", params={"query": "statement timeout", "budget_tokens": 300})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["used_tokens"] <= 300 and body["lessons"][0]["episode_id"] == eid
    assert "Lessons:" in body["text"]


def test_patterns_route(client: TestClient, runtime: Runtime) -> None:
    closed_episode(client, runtime)
    found = client.get("/v1/patterns", params={"kind": "pattern", "query": "timeout"})
    assert found.status_code == 200, found.text
    # One episode teaches nothing across episodes yet.
    assert found.json() == {"kind": "pattern", "query": "timeout", "patterns": [], "count": 0}


def test_context_without_episodes_is_501(client_no_episodes: TestClient) -> None:
    error(client_no_episodes.get("/v1/context"), 501, "Episode feature not enabled")
    error(client_no_episodes.get("/v1/patterns"), 501, "Episode feature not enabled")
