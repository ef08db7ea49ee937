"""The REST API: every route with good and bad input, error JSON, limits, lifespan, docs."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_http import BASE_URL, start_daemon, unique, write_config
from starlette.testclient import TestClient

from tribalmemory import __version__
from tribalmemory import validation as check
from tribalmemory.config import Config, load_config
from tribalmemory.errors import InvalidInput
from tribalmemory.interfaces.auth import TokenStore, generate_token
from tribalmemory.interfaces.http import create_app
from tribalmemory.interfaces.openapi import ROUTES, openapi_document
from tribalmemory.runtime import Runtime
from tribalmemory.timeutil import parse_iso, to_iso, utc_now

DOCS = Path(__file__).resolve().parents[1] / "docs" / "http.md"
UNKNOWN_ID = "3f2b8a61-0c4e-4d7a-9b15-6e8f2a9c7d40"  # a well-formed memory id no test stores


def error(response: httpx.Response, status: int, *fragments: str) -> dict[str, Any]:
    """Assert the status and the error JSON shape; each fragment must be in the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    for fragment in fragments:
        assert fragment in body["error"], body
    return body


def remember(client: TestClient, content: str | None = None, **fields: Any) -> str:
    response = client.post("/v1/remember", json={"content": content or unique(), **fields})
    assert response.status_code == 200, response.text
    assert response.json()["success"] is True
    return str(response.json()["memory_id"])


# -- memories ----------------------------------------------------------------------------------


def test_remember_recall_get(client: TestClient) -> None:
    content = unique("The deploy script needs AWS_PROFILE=prod")
    mid = remember(
        client,
        content,
        tags=["deploy"],
        source_instance="claude-code",
        context="ops",
        created_at="2025-01-02T03:04:05Z",
    )
    got = client.get(f"/v1/memory/{mid}")
    assert got.status_code == 200
    memory = got.json()
    assert memory["content"] == content and memory["tags"] == ["deploy"]
    assert memory["source_instance"] == "claude-code"
    assert memory["created_at"] == "2025-01-02T03:04:05Z"
    found = client.post(
        "/v1/recall", json={"query": "deploy script AWS profile", "tags": ["deploy"], "limit": 3}
    )
    assert found.status_code == 200
    body = found.json()
    assert body["query"] == "deploy script AWS profile" and body["count"] == 1  # one tagged
    assert body["results"][0]["memory_id"] == mid
    assert 0 < body["results"][0]["similarity_score"] <= 1
    other = client.post("/v1/recall", json={"query": "deploy script", "tags": ["nope"]})
    assert other.json()["count"] == 0


def test_remember_duplicate_is_reported_not_stored(client: TestClient) -> None:
    content = unique("Use pnpm, not npm")
    first = remember(client, content)
    second = client.post("/v1/remember", json={"content": content})
    assert second.status_code == 200
    assert second.json()["success"] is False and second.json()["duplicate_of"] == first
    forced = client.post("/v1/remember", json={"content": content, "skip_dedup": True})
    assert forced.json()["success"] is True


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "missing required field: content"),
        ({"content": 5}, "content must be a string"),
        ({"content": "   "}, "content must not be empty"),
        ({"content": "x", "bogus": 1, "other": 2}, "unknown fields 'bogus', 'other'; allowed: "),
        ({"content": "x", "tags": "a"}, "tags must be a list"),
        ({"content": "x", "tags": [""]}, "empty tags"),
        ({"content": "x", "tags": ["ok", "a\x00b"]}, "control character U+0000"),
        ({"content": "x", "tags": ["\x1b[31mred"]}, "control character U+001B"),
        ({"content": "x", "source_type": "NOPE"}, "source_type"),
        ({"content": "x", "source_type": "EPISODE_SUMMARY"}, "EPISODE_SUMMARY"),
        ({"content": "x", "created_at": "yesterday"}, "created_at"),
        ({"content": "x", "skip_dedup": "yes"}, "skip_dedup must be true or false"),
        ({"content": "x", "context": 3}, "context must be a string"),
    ],
)
def test_remember_rejects_bad_fields(
    module_client: TestClient, body: dict[str, Any], fragment: str
) -> None:
    error(module_client.post("/v1/remember", json=body), 422, fragment)


@pytest.mark.parametrize(
    ("raw", "status", "fragment"),
    [
        (b"", 400, "empty"),
        (b"{not json", 400, "not valid JSON"),
        (b'{"content": "x",}', 400, "not valid JSON"),
        (b"\xff\xfe{}", 400, "not valid UTF-8"),
        (b'{"content": NaN}', 400, "NaN"),
        (b'{"content": "\\ud800"}', 400, "surrogate"),
        (b"[" * 100_000, 400, "nested too deeply"),
        (b'{"content": 1' + b"0" * 5000 + b"}", 400, "JSON"),
        (b'["a list"]', 422, "must be a JSON object, not an array"),
        (b'"text"', 422, "must be a JSON object, not a string"),
        (b"null", 422, "must be a JSON object, not null"),
    ],
)
def test_malformed_bodies(
    module_client: TestClient, raw: bytes, status: int, fragment: str
) -> None:
    response = module_client.post(
        "/v1/remember", content=raw, headers={"content-type": "application/json"}
    )
    error(response, status, fragment)


def test_content_over_max_content_chars_is_413(client: TestClient, runtime: Runtime) -> None:
    limit = runtime.config.server.max_content_chars
    error(client.post("/v1/remember", json={"content": "a" * (limit + 1)}), 413, "content")


def test_body_over_max_body_bytes_is_413(client: TestClient, runtime: Runtime) -> None:
    limit = runtime.config.server.max_body_bytes
    json_body = {"content-type": "application/json"}
    declared = client.post("/v1/remember", content=b" " * (limit + 1), headers=json_body)
    error(declared, 413, "server.max_body_bytes")

    def chunks() -> Any:  # no Content-Length: the limit must hold on the streamed size
        for _ in range(limit // 65536 + 2):
            yield b" " * 65536

    error(
        client.post("/v1/remember", content=chunks(), headers=json_body),
        413,
        "server.max_body_bytes",
    )
    assert client.get("/v1/stats").json()["total_memories"] == 0


def test_remember_batch(client: TestClient) -> None:
    items = [{"content": unique("batch one")}, {"content": unique("batch two"), "tags": ["b"]}]
    response = client.post("/v1/remember/batch", json={"memories": items})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2 and body["stored"] == 2
    ids = [r["memory_id"] for r in body["results"]]
    assert client.get(f"/v1/memory/{ids[1]}").json()["tags"] == ["b"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "missing required field: memories"),
        ({"memories": "x"}, "memories must be a list"),
        ({"memories": []}, "memories must be a list of 1"),
        ({"memories": [{"content": "ok"}, {"content": "x", "nope": 1}]}, "memories[1]"),
        ({"memories": [{"content": 3}]}, "memories[0]: content must be a string"),
        ({"memories": [1]}, "memories[0] must be an object"),
        ({"memories": [{"content": "ok"}, {"tags": ["a"]}]}, "memories[1]: missing required"),
        ({"memories": [], "extra": True}, "unknown field 'extra'"),
    ],
)
def test_remember_batch_rejects(
    module_client: TestClient, body: dict[str, Any], fragment: str
) -> None:
    error(module_client.post("/v1/remember/batch", json=body), 422, fragment)
    assert module_client.get("/v1/stats").json()["total_memories"] == 0


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({}, 422, "missing required field: query"),
        ({"query": ""}, 422, "query must not be empty"),
        ({"query": "x", "limit": 0}, 422, "limit must be from 1 to 50"),
        ({"query": "x", "limit": "5"}, 422, "limit must be an integer"),
        ({"query": "x", "limit": True}, 422, "limit must be an integer"),
        ({"query": "x", "min_relevance": 2}, 422, "min_relevance"),
        ({"query": "x", "source_types": ["NOPE"]}, 422, "source_types"),
        ({"query": "x", "after": "soon"}, 422, "after"),
        (
            {"query": "x", "after": "2026-02-01T00:00:00Z", "before": "2026-01-01T00:00:00Z"},
            422,
            "after must not be after before",  # it could only answer nothing
        ),
        ({"query": "x", "page": 2}, 422, "unknown field 'page'; allowed: query, limit"),
        (
            {"query": "x", "limt": 2},
            422,
            "unknown field 'limt'; allowed: query, limit, min_relevance, tags, source_types, "
            "after, before",  # as docs/http.md shows it
        ),
    ],
)
def test_recall_rejects(
    module_client: TestClient, body: dict[str, Any], status: int, fragment: str
) -> None:
    error(module_client.post("/v1/recall", json=body), status, fragment)


def test_memories_list_refuses_an_empty_tag_and_a_range_ending_before_it_starts(
    module_client: TestClient,
) -> None:
    """Both once answered as if not given (every memory) or with nothing, silently; the
    episodes list refused them already."""
    error(module_client.get("/v1/memories?tag="), 400, "tag must not be empty")
    error(module_client.get("/v1/episodes?tag="), 400, "tag must not be empty")
    late_first = "since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z"
    error(module_client.get(f"/v1/memories?{late_first}"), 400, "since must not be after until")
    error(module_client.get(f"/v1/episodes?{late_first}"), 400, "since must not be after until")


def test_recall_filters_by_time_and_source_type(client: TestClient) -> None:
    old = remember(client, unique("postgres vacuum schedule"), created_at="2020-01-01T00:00:00Z")
    new = remember(
        client, unique("postgres vacuum schedule"), source_type="AUTO_CAPTURE", skip_dedup=True
    )
    after = client.post(
        "/v1/recall", json={"query": "postgres vacuum", "after": "2021-01-01T00:00:00Z"}
    ).json()
    assert [r["memory_id"] for r in after["results"]] == [new]
    typed = client.post(
        "/v1/recall", json={"query": "postgres vacuum", "source_types": ["USER_EXPLICIT"]}
    ).json()
    assert [r["memory_id"] for r in typed["results"]] == [old]


OUT_OF_RANGE = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]  # year 0 / 10000 in UTC


@pytest.mark.parametrize("moment", OUT_OF_RANGE)
@pytest.mark.parametrize(
    ("path", "field", "body"),
    [
        ("/v1/remember", "created_at", {"content": "x"}),
        ("/v1/remember/batch", "created_at", None),
        ("/v1/recall", "after", {"query": "x"}),
        ("/v1/recall", "before", {"query": "x"}),
        ("/v1/episodes/search", "time_start", {"query": "x"}),
        ("/v1/episodes/search", "time_end", {"query": "x"}),
    ],
)
def test_dates_outside_the_utc_range_are_422(
    module_client: TestClient, path: str, field: str, body: dict[str, Any] | None, moment: str
) -> None:
    if body is None:
        sent: dict[str, Any] = {"memories": [{"content": "x", field: moment}]}
    else:
        sent = {**body, field: moment}
    error(module_client.post(path, json=sent), 422, field, "outside the supported range")


def test_dates_at_the_ends_of_the_utc_range_work(client: TestClient) -> None:
    oldest = remember(client, created_at="0001-01-01T00:00:00Z")
    newest = remember(client)  # a memory cannot be dated in the future: now is the newest
    assert client.get(f"/v1/memory/{oldest}").json()["created_at"] == "0001-01-01T00:00:00Z"
    early = client.post("/v1/recall", json={"query": "memory", "before": "0001-01-01T00:00:01Z"})
    assert [r["memory_id"] for r in early.json()["results"]] == [oldest]
    late = client.post("/v1/recall", json={"query": "memory", "after": "9999-12-31T23:59:59Z"})
    assert late.status_code == 200 and late.json()["results"] == []
    recent = client.post("/v1/recall", json={"query": "memory", "after": "2000-01-01T00:00:00Z"})
    assert [r["memory_id"] for r in recent.json()["results"]] == [newest]


@pytest.mark.parametrize(
    ("ahead", "said"),
    [
        (timedelta(days=3, minutes=1), "is 3 days in the future"),
        (timedelta(minutes=30, seconds=30), "is 30 minutes"),  # and some seconds
        (None, "days"),  # 9999-12-31T23:59:59Z
    ],
)
@pytest.mark.parametrize("path", ["/v1/remember", "/v1/remember/batch"])
def test_a_created_at_in_the_future_is_422_and_nothing_is_stored(
    module_client: TestClient, path: str, ahead: timedelta | None, said: str
) -> None:
    moment = "9999-12-31T23:59:59Z" if ahead is None else to_iso(utc_now() + ahead)
    item = {"content": unique("deploy freeze"), "created_at": moment}
    if path.endswith("batch"):  # all items are checked before any is stored
        sent: dict[str, Any] = {"memories": [{"content": unique("ok")}, item]}
        prefix = "memories[1]: created_at"
    else:
        sent, prefix = item, "created_at"
    body = error(
        module_client.post(path, json=sent),
        422,
        prefix,
        said,
        "in the future",
        "at most 5 minutes ahead",
    )
    assert body["error"].startswith(prefix)
    assert module_client.get("/v1/stats").json()["total_memories"] == 0


def test_the_future_tolerance_is_five_minutes_to_the_second() -> None:
    now = parse_iso("2026-11-30T08:12:09Z")
    assert check.memory_time("created_at", "2026-11-30T08:17:09Z", now) == now + timedelta(
        minutes=5
    )
    with pytest.raises(InvalidInput, match="is 5 minutes 1 second in the future"):
        check.memory_time("created_at", "2026-11-30T08:17:10Z", now)
    with pytest.raises(InvalidInput, match="is 1 hour in the future"):
        check.memory_time("created_at", "2026-11-30T09:12:10Z", now)
    with pytest.raises(InvalidInput, match="is 3 days 2 hours in the future"):
        check.memory_time("created_at", "2026-12-03T11:12:09+01:00", now)
    assert check.memory_time("created_at", None, now) is None
    assert check.memory_time("created_at", "1999-01-01", now) == parse_iso("1999-01-01")


def test_a_created_at_within_the_clock_skew_tolerance_is_stored(client: TestClient) -> None:
    # 4 minutes ahead: another machine's clock may run that much ahead of the server's
    moment = to_iso(utc_now() + timedelta(minutes=4))
    mid = remember(client, created_at=moment)
    assert client.get(f"/v1/memory/{mid}").json()["created_at"] == moment


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"/v1/memory/{UNKNOWN_ID}", 404),
        ("/v1/memory/not-a-uuid", 400),
        ("/v1/memory/" + "a" * 5000, 400),
        ("/v1/memory/%00", 400),
        ("/v1/memory/..%2F..%2Fetc%2Fpasswd", 404),
        ("/v1/memory/..", 404),  # the client resolves it to /v1
        (f"/v1/memory/{UNKNOWN_ID}/", 404),
        (f"/v1/memory/{UNKNOWN_ID}?x=1", 400),
    ],
)
def test_get_memory_errors(module_client: TestClient, path: str, status: int) -> None:
    error(module_client.get(path), status)


def test_forget(client: TestClient) -> None:
    mid = remember(client)
    response = client.delete(f"/v1/forget/{mid.upper()}")
    assert response.status_code == 200
    assert response.json() == {"success": True, "memory_id": mid}
    error(client.get(f"/v1/memory/{mid}"), 404, "no memory")
    error(client.delete(f"/v1/forget/{mid}"), 404)
    error(client.delete("/v1/forget/nope"), 400, "not a memory id")


def test_correct(client: TestClient) -> None:
    old = remember(client, unique("The API port is 8080"), tags=["ports"])
    response = client.post(
        "/v1/correct", json={"memory_id": old, "content": unique("The API port is 9090")}
    )
    assert response.status_code == 200
    new = response.json()["memory_id"]
    corrected = client.get(f"/v1/memory/{new}").json()
    assert corrected["supersedes"] == old and corrected["source_type"] == "CORRECTION"
    assert corrected["tags"] == ["ports"]
    assert client.get(f"/v1/memory/{old}").status_code == 200  # kept as history
    error(client.post("/v1/correct", json={"memory_id": str(uuid.uuid4()), "content": "x"}), 404)
    error(client.post("/v1/correct", json={"memory_id": old}), 422, "content")
    error(client.post("/v1/correct", json={"memory_id": "x", "content": "y"}), 422, "memory id")


def test_health_and_stats(client: TestClient, runtime: Runtime) -> None:
    health = client.get("/v1/health")
    assert health.status_code == 200
    body = health.json()
    # the API's keys, through the route, plus the data folder's id the daemon adds
    assert set(body) == set(runtime.api.health()) | {"data_folder"}
    assert body["status"] == "ok" and body["store"]["backend"] == "edge"
    assert body["embedding"]["dim"] == 384
    assert body["episodes"]["detector_strategy"] == "embedding"
    assert body["llm"]["state"] in ("starting", "offline")  # no key in the test env
    assert set(body["data_folder"]) >= {"id"}
    remember(client, tags=["a"])
    stats = client.get("/v1/stats").json()
    assert stats["total_memories"] == 1 and stats["by_source_type"]["USER_EXPLICIT"] == 1
    assert stats["episodes"] == {"active": 0, "closed": 0, "archived": 0}


def test_without_episodes_plugin_keys_are_null(client_no_episodes: TestClient) -> None:
    health = client_no_episodes.get("/v1/health").json()
    assert health["llm"] is None and health["episodes"] is None
    assert client_no_episodes.get("/v1/stats").json()["episodes"] is None
    mid = remember(client_no_episodes)
    memory = client_no_episodes.get(f"/v1/memory/{mid}").json()
    assert memory["episode_id"] is None and memory["episode_status"] is None


# -- routing and transport errors ----------------------------------------------------------------


def test_unknown_route_and_wrong_method(client: TestClient) -> None:
    error(client.get("/v1/nothing"), 404, "no route")
    error(client.get("/nothing"), 404)  # "/" is the page (tests/test_page.py)
    error(client.post("/v1/remember/", json={"content": "x"}), 404)
    wrong = client.put("/v1/remember", json={"content": "x"})
    error(wrong, 405, "PUT")
    assert "POST" in wrong.headers["allow"]
    error(client.delete("/v1/health"), 405)
    # a route's path asked with another method, where a route with a path parameter would take
    # the word as an id: 405 too, not "no episode with id search"
    for method, path, allow in (
        ("GET", "/v1/episodes/search", "POST"),
        ("PATCH", "/v1/episodes/start", "POST"),
        ("DELETE", "/v1/episodes/current", "GET"),
    ):
        wrong = client.request(method, path)
        error(wrong, 405, f"method {method} is not allowed on {path}")
        assert wrong.headers["allow"] == allow
    error(client.get("/v1/episodes/ep-0123456789abcdef"), 404, "no episode with id")


def test_unknown_or_repeated_query_parameters_are_400(client: TestClient) -> None:
    error(client.post("/v1/remember?debug=1", json={"content": "x"}), 400, "debug")
    error(client.get("/v1/episodes?limit=1&limit=2"), 400, "2 times")


def test_unexpected_exception_is_500_without_traceback(
    client: TestClient,
    runtime: Runtime,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fail(*args: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(runtime.api.episodes, "get_episode", fail)  # a bug inside the engine
    with caplog.at_level(logging.ERROR, logger="tribalmemory.http"):
        response = client.get("/v1/episodes/ep-0123456789ab")
    body = error(response, 500, "internal server error")
    assert "secret" not in response.text and body["detail"] is None
    assert "secret internal detail" in caplog.text and "Traceback" in caplog.text


def test_requests_before_startup_are_503(tm_home: Path) -> None:
    app = create_app(load_config(write_config(tm_home)))
    test_client = TestClient(app, base_url=BASE_URL)  # not entered: no lifespan
    error(test_client.get("/v1/stats"), 503, "starting")
    error(test_client.post("/mcp", json={}), 503)


def test_openapi_document_lists_every_route(client: TestClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"] == "3.1.0"
    documented = {(m.upper(), p) for p, ops in document["paths"].items() for m in ops}
    served = {(op.method, op.path) for op in ROUTES}
    assert documented == served and len(served) == 39
    remember_op = document["paths"]["/v1/remember"]["post"]
    assert remember_op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RememberRequest"
    }
    assert {"401", "413", "422"} <= set(remember_op["responses"])
    assert document["paths"]["/v1/health"]["get"]["security"] == []
    for ops in document["paths"].values():
        for op in ops.values():
            for response_spec in op["responses"].values():
                assert "application/json" in response_spec["content"]


def test_openapi_json_is_built_once_and_served_as_built(client: TestClient) -> None:
    """Every app serves the same document, built once per process (building it took a tenth
    of a second, which every app paid at its creation)."""
    response = client.get("/openapi.json")
    assert response.headers["content-type"] == "application/json"
    assert response.json() == openapi_document(__version__)
    assert openapi_document(__version__) is openapi_document(__version__)


# -- episodes --------------------------------------------------------------------------------------


def settle(client: TestClient, runtime: Runtime) -> None:
    """Wait until the episode engine's background jobs (summaries) are done."""
    assert client.portal is not None
    assert client.portal.call(runtime.episodes.worker.drain, 30), "episode work did not settle"


def test_episode_routes(client: TestClient, runtime: Runtime) -> None:
    # two unrelated memories, so that detection alone groups nothing
    first = remember(client, unique("Flaky CI: the integration job times out on the cache step"))
    second = remember(client, unique("The office coffee machine is descaled every Friday"))
    created = client.post(
        "/v1/episodes",
        json={"title": "  Fix flaky CI  ", "memory_ids": [first, first.upper()]},
    )
    assert created.status_code == 200, created.text
    eid = created.json()["episode_id"]
    assert created.json() == {"success": True, "episode_id": eid, "memory_count": 1}
    assert client.get(f"/v1/memory/{first}").json()["episode_id"] == eid

    listed = client.get("/v1/episodes?status=active&limit=10&offset=0")
    assert listed.status_code == 200
    assert [e["id"] for e in listed.json()["episodes"]] == [eid]
    assert listed.json()["status"] == "active" and listed.json()["episodes"][0]["title"] == (
        "Fix flaky CI"
    )
    assert client.get("/v1/episodes?status=closed").json()["count"] == 0
    assert client.get("/v1/episodes?offset=1").json()["count"] == 0

    added = client.post(f"/v1/episodes/{eid}/memories", json={"memory_id": second})
    assert added.json() == {"success": True, "added": True, "moved_from": None}
    again = client.post(f"/v1/episodes/{eid}/memories", json={"memory_id": second})
    assert again.json() == {"success": True, "added": False, "moved_from": None}
    shown = client.get(f"/v1/episodes/{eid}?include_timeline=true").json()
    assert shown["memory_ids"] == [first, second]
    assert [item["memory_id"] for item in shown["timeline"]] == [first, second]
    assert shown["episode"]["memory_count"] == 2 and shown["episode"]["title_source"] == "user"
    assert client.get(f"/v1/episodes/{eid}").json()["timeline"] is None
    assert client.delete(f"/v1/episodes/{eid}/memories/{first}").json() == {"success": True}
    assert client.get(f"/v1/episodes/{eid}").json()["memory_ids"] == [second]
    chain = client.get(f"/v1/episodes/{eid}/chain").json()
    assert chain["root_id"] == eid and [e["id"] for e in chain["chain"]] == [eid]

    settle(client, runtime)  # the summary memory that search and replay look at
    searched = client.post(
        "/v1/episodes/search",
        json={"query": "office coffee machine", "time_start": "2020-01-01T00:00:00Z", "limit": 5},
    ).json()
    assert [e["id"] for e in searched["episodes"]] == [eid]
    assert searched["episodes"][0]["score"] > 0
    later = client.post(
        "/v1/episodes/search",
        json={"query": "office coffee machine", "time_start": "2999-01-01T00:00:00Z"},
    ).json()
    assert later["count"] == 0
    replayed = client.post("/v1/episodes/replay", json={"topic": "coffee machine", "limit": 2})
    assert [e["id"] for e in replayed.json()["episodes"]] == [eid]
    assert "Fix flaky CI" in replayed.json()["text"]

    assert client.post(f"/v1/episodes/{eid}/close").json() == {"success": True}
    assert client.get(f"/v1/episodes/{eid}").json()["episode"]["status"] == "closed"
    assert client.post(f"/v1/episodes/{eid}/regenerate").json() == {"success": True}
    costs = client.get("/v1/episodes/costs").json()
    assert costs["spend_usd"] == 0.0 and costs["llm"]["state"] in ("starting", "offline")
    assert client.delete(f"/v1/episodes/{eid}").json() == {"success": True}
    error(client.get(f"/v1/episodes/{eid}"), 404, "no episode")
    assert client.get(f"/v1/memory/{second}").status_code == 200  # its memories stay


def test_episode_ids_are_normalised(client: TestClient) -> None:
    memory = remember(client)
    eid = client.post("/v1/episodes", json={"title": "t", "memory_ids": [memory]}).json()[
        "episode_id"
    ]
    for spelling in (eid.upper(), f"episode:{eid}", f"EPISODE:{eid.upper()}", f" {eid}"):
        found = client.get(f"/v1/episodes/{spelling}")
        assert found.status_code == 200, (spelling, found.text)
        assert found.json()["episode"]["id"] == eid
    child = client.post(
        "/v1/episodes",
        json={"title": "u", "memory_ids": [remember(client)], "parent_episode_id": eid.upper()},
    )
    assert child.status_code == 200, child.text
    chained = client.get(f"/v1/episodes/{child.json()['episode_id']}/chain").json()
    assert chained["root_id"] == eid
    error(client.get("/v1/episodes/ep-doesnotexist"), 404, "no episode with id ep-doesnotexist")
    error(client.get("/v1/episodes/episode:ep-doesnotexist"), 404, "ep-doesnotexist")
    error(client.get("/v1/episodes/ep-" + "a" * 62), 400, "at most 64")
    error(client.get("/v1/episodes/ep-1a2b%3B"), 400, "only letters, digits")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "fragment"),
    [
        ("GET", "/v1/episodes?status=open", None, 400, "status must be one of"),
        ("GET", "/v1/episodes?limit=abc", None, 400, "limit must be an integer"),
        ("GET", "/v1/episodes?limit=1.5", None, 400, "limit must be an integer"),
        ("GET", "/v1/episodes?limit=0", None, 400, "limit must be from 1 to 100"),
        ("GET", "/v1/episodes?offset=-1", None, 400, "offset"),
        ("GET", "/v1/episodes?limit=99999999999999999999", None, 400, "limit"),
        ("GET", "/v1/episodes?tag=", None, 400, "tag must not be empty"),
        ("GET", "/v1/episodes?sort=new", None, 400, "unknown query parameter 'sort'"),
        ("GET", "/v1/episodes/ep-0123456789ab?include_timeline=maybe", None, 400, "true or false"),
        ("GET", "/v1/episodes/ep-0123456789ab", None, 404, "no episode"),
        ("GET", "/v1/episodes/../v1/stats", None, 404, ""),
        ("GET", "/v1/episodes/EP-XYZ", None, 404, "no episode with id ep-xyz"),
        ("GET", "/v1/episodes/ep-bad!id", None, 400, "only letters, digits"),
        ("GET", "/v1/episodes/ep%20x", None, 400, "episode_id"),
        ("GET", "/v1/episodes/" + "e" * 3000, None, 400, "episode_id"),
        ("POST", "/v1/episodes", {"memory_ids": []}, 422, "missing required field: title"),
        ("POST", "/v1/episodes", {"title": "t", "memory_ids": []}, 422, "memory_ids"),
        ("POST", "/v1/episodes", {"title": "t", "memory_ids": ["x"]}, 422, "memory id"),
        ("POST", "/v1/episodes", {"title": 1, "memory_ids": []}, 422, "title must be a string"),
        ("POST", "/v1/episodes", {"title": "t", "memory_ids": [], "x": 1}, 422, "unknown field"),
        ("POST", "/v1/episodes/ep-0123456789ab/memories", {}, 422, "memory_id"),
        ("POST", "/v1/episodes/ep-0123456789ab/memories", {"memory_id": 7}, 422, "memory_id"),
        ("POST", "/v1/episodes/b.d/memories", {"memory_id": str(uuid.uuid4())}, 400, "episode_id"),
        ("POST", "/v1/episodes/bad/memories", {"memory_id": str(uuid.uuid4())}, 404, "no episode"),
        ("DELETE", "/v1/episodes/ep-0123456789ab/memories/nope", None, 400, "memory_id"),
        ("POST", "/v1/episodes/ep-0123456789ab/close", None, 404, "no episode"),
        ("POST", "/v1/episodes/nope/regenerate", None, 404, "no episode with id nope"),
        ("GET", "/v1/episodes/nope/chain", None, 404, "no episode with id nope"),
        ("GET", "/v1/episodes/ep-0123456789ab/chain", None, 404, "no episode"),
        ("POST", "/v1/episodes/search", {}, 422, "missing required field: query"),
        ("POST", "/v1/episodes/search", {"query": "x", "status": "open"}, 422, "status"),
        ("POST", "/v1/episodes/search", {"query": "x", "limit": 51}, 422, "limit"),
        (
            "POST",
            "/v1/episodes/search",
            {"query": "x", "time_start": "2025-02-01", "time_end": "2025-01-01"},
            422,
            "time_start",
        ),
        ("POST", "/v1/episodes/search", {"query": "x", "since": "2025"}, 422, "unknown field"),
        ("POST", "/v1/episodes/replay", {"topic": ""}, 422, "topic must not be empty"),
        ("POST", "/v1/episodes/replay", {"topic": "x", "limit": 21}, 422, "limit"),
        ("GET", "/v1/episodes/replay", None, 405, "method GET is not allowed"),
        ("DELETE", "/v1/episodes/nope", None, 404, "no episode with id nope"),
        ("DELETE", "/v1/episodes/costs", None, 405, "method DELETE is not allowed"),
    ],
)
def test_episode_routes_reject(
    module_client: TestClient,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    status: int,
    fragment: str,
) -> None:
    error(module_client.request(method, path, json=body), status, fragment)


@pytest.mark.parametrize(
    "op", [op for op in ROUTES if op.tag == "episodes"], ids=lambda op: f"{op.method} {op.path}"
)
def test_episode_routes_when_disabled_are_501(
    module_client_no_episodes: TestClient, op: Any
) -> None:
    path = op.path.replace("{episode_id}", "ep-0123456789ab").replace(
        "{memory_id}", str(uuid.uuid4())
    )
    bodies = {
        "episode_create": {"title": "t", "memory_ids": [str(uuid.uuid4())]},
        "episode_add": {"memory_id": str(uuid.uuid4())},
        "episodes_search": {"query": "q"},
        "episodes_replay": {"topic": "t"},
        "episode_update": {"title": "t"},
        "episode_start": {"topic": "t", "session": "s"},
        "episode_merge": {"other_id": "ep-0123456789ac"},
        "episode_split": {"memory_ids": [str(uuid.uuid4())]},
    }
    body = bodies.get(op.call)
    response = module_client_no_episodes.request(op.method, path, json=body)
    assert response.status_code == 501
    assert response.json()["error"] == "Episode feature not enabled"


# -- MCP mount -------------------------------------------------------------------------------------

MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


def test_mcp_is_mounted_with_host_protection(client: TestClient) -> None:
    response = client.post("/mcp", json=MCP_INIT, headers=MCP_HEADERS)
    assert response.status_code == 200
    assert "tribal-memory" in response.text
    evil = client.post("/mcp", json=MCP_INIT, headers={**MCP_HEADERS, "host": "evil.example:18790"})
    assert evil.status_code == 421
    other_port = client.post(
        "/mcp", json=MCP_INIT, headers={**MCP_HEADERS, "host": "127.0.0.1:9999"}
    )
    assert other_port.status_code == 421


def test_an_mcp_endpoint_that_cannot_be_built_answers_503_and_logs_why(
    app_config: Config, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """/mcp is built on its first request; a build that fails is a clear 503 naming the
    log, the reason is in the log, and REST keeps answering."""
    from tribalmemory.interfaces import mcp_server

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no tools today")

    monkeypatch.setattr(mcp_server, "build_mcp_server", broken)
    with TestClient(create_app(app_config), base_url=BASE_URL) as test_client:
        for _ in range(2):  # the first request tried to build it; the next is told the same
            error(test_client.post("/mcp", json=MCP_INIT, headers=MCP_HEADERS), 503, "its log")
        assert test_client.get("/v1/stats").status_code == 200
    assert "no tools today" in caplog.text


# -- lifespan and persistence ----------------------------------------------------------------------


def test_restart_keeps_memories(tm_home: Path) -> None:
    config = load_config(write_config(tm_home, episodes={"enabled": False}))
    content = unique("Staging database is on port 5433")
    with TestClient(create_app(config), base_url=BASE_URL) as first:
        stored = first.post("/v1/remember", json={"content": content}).json()["memory_id"]
    with TestClient(create_app(config), base_url=BASE_URL) as second:
        found = second.post("/v1/recall", json={"query": "staging database port"}).json()
    assert [r["memory_id"] for r in found["results"]] == [stored]
    assert found["results"][0]["memory"]["content"] == content


# -- docs/http.md examples against a real daemon ---------------------------------------------------


def doc_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


def run_blocks(blocks: list[str], port: int, env: dict[str, str], cwd: Path) -> None:
    script = ["set -eo pipefail"]  # not -u: readers without a token leave the variable unset
    for number, block in enumerate(blocks, 1):
        block = block.replace("18790", str(port)).replace("curl -s ", "curl -sS --fail-with-body ")
        script += [f"echo '### block {number}'", block]
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("### block") == len(blocks)


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl, jq")
def test_http_docs_examples_run(tmp_path: Path) -> None:
    blocks = doc_blocks()
    assert len(blocks) >= 10
    # 501 without episodes
    episode_paths = ("/v1/episodes", "/v1/context", "/v1/patterns", "/v1/entities", "/v1/caus")
    memory_blocks = [b for b in blocks if not any(path in b for path in episode_paths)]
    token = generate_token()
    TokenStore(tmp_path / "home" / "auth.json").save(token)  # the examples must work with auth
    daemon = start_daemon(tmp_path)
    try:
        run_blocks(
            memory_blocks, daemon.port, {**daemon.env, "TRIBAL_MEMORY_TOKEN": token}, tmp_path
        )
    finally:
        assert daemon.stop() == 0


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl, jq")
def test_http_docs_episode_examples_run(tmp_path: Path) -> None:
    pytest.importorskip("tribalmemory.episodes.plugin", reason="episode engine not installed")
    daemon = start_daemon(tmp_path, episodes={"enabled": True, "detector_strategy": "embedding"})
    try:
        run_blocks(doc_blocks(), daemon.port, daemon.env, tmp_path)
    finally:
        assert daemon.stop() == 0
