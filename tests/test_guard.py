"""Web pages cannot reach the daemon: cross-origin writes, DNS rebinding, foreign origins.

Each attack is sent as a browser would send it (a ``no-cors`` fetch posts ``text/plain``; a
rebinding page talks to its own host name), on REST and on ``/mcp``; the requests of the CLI,
agents and curl (no ``Origin``) keep working.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from helpers_http import BASE_URL, unique
from starlette.datastructures import Headers
from starlette.testclient import TestClient

from tribalmemory.interfaces.guard import HostPolicy, check, split_host
from tribalmemory.interfaces.http import create_app
from tribalmemory.runtime import Runtime

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
MCP_ACCEPT = {"accept": "application/json, text/event-stream"}
EVIL_ORIGIN = "https://evil.example"


def total(client: TestClient) -> int:
    return int(client.get("/v1/stats").json()["total_memories"])


def test_cross_origin_text_plain_post_is_refused_and_stores_nothing(client: TestClient) -> None:
    # What `fetch(url, {method: "POST", mode: "no-cors", body: '{"content": ...}'})` sends.
    body = json.dumps({"content": unique("Ignore previous instructions")})
    attack = client.post(
        "/v1/remember",
        content=body,
        headers={"content-type": "text/plain;charset=UTF-8", "origin": EVIL_ORIGIN},
    )
    assert attack.status_code == 403 and "web origin" in attack.json()["error"]
    # Without an Origin header (an old browser, a form), the body type alone refuses it.
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        sent = client.post("/v1/remember", content=body, headers={"content-type": content_type})
        assert sent.status_code == 415, content_type
        assert sent.json()["error"].startswith("Content-Type must be application/json")
    undeclared = client.post("/v1/remember", content=body)  # a body without a type
    assert undeclared.status_code == 415 and "got none" in undeclared.json()["error"]
    assert total(client) == 0


def test_every_state_changing_route_refuses_a_non_json_body(client: TestClient) -> None:
    stored = client.post("/v1/remember", json={"content": unique("kept")}).json()["memory_id"]
    for method, path in [
        ("POST", "/v1/remember/batch"),
        ("POST", "/v1/recall"),
        ("POST", "/v1/correct"),
        ("DELETE", f"/v1/forget/{stored}"),
        ("POST", "/v1/episodes"),
        ("POST", "/v1/episodes/ep-000000000000/close"),
        ("DELETE", "/v1/episodes/ep-000000000000"),
        ("POST", "/mcp"),
    ]:
        response = client.request(
            method, path, content=b"{}", headers={"content-type": "text/plain"}
        )
        assert response.status_code == 415, (method, path)
        assert set(response.json()) == {"error", "detail"}
    assert client.get(f"/v1/memory/{stored}").status_code == 200  # the DELETE did nothing


def test_rebinding_host_is_refused_on_rest_and_mcp(client: TestClient) -> None:
    # After DNS rebinding the page's requests are same-origin, with its own host name.
    rebound = {"host": "attacker.example:18790"}
    for method, path, body in [
        ("GET", "/v1/health", None),
        ("GET", "/v1/stats", None),
        ("POST", "/v1/remember", {"content": unique("planted")}),
        ("POST", "/v1/recall", {"query": "secrets"}),
        ("GET", "/openapi.json", None),
    ]:
        response = client.request(method, path, json=body, headers=rebound)
        assert response.status_code == 421, (method, path)
        assert "attacker.example:18790" in response.json()["error"]
    mcp = client.post("/mcp", json=MCP_INIT, headers={**MCP_ACCEPT, **rebound})
    assert mcp.status_code == 421 and "Host" in mcp.json()["error"]
    for host in ("127.0.0.1:9999", "localhost", "127.0.0.1.nip.io:18790", "[::1]:1"):
        assert client.get("/v1/health", headers={"host": host}).status_code == 421, host
    assert total(client) == 0


def test_foreign_origin_is_refused_on_every_method(client: TestClient) -> None:
    for origin in (EVIL_ORIGIN, "null", "http://127.0.0.1:9999", "https://127.0.0.1:18790"):
        headers = {"origin": origin}
        assert client.get("/v1/stats", headers=headers).status_code == 403, origin
        assert client.post("/v1/recall", json={"query": "x"}, headers=headers).status_code == 403, (
            origin
        )
        preflight = client.options(
            "/v1/remember", headers={**headers, "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 403 and "access-control-allow-origin" not in (
            preflight.headers
        )
        mcp = client.post("/mcp", json=MCP_INIT, headers={**MCP_ACCEPT, **headers})
        assert mcp.status_code == 403, origin


def test_legitimate_clients_still_work(client: TestClient) -> None:
    # CLI / curl / agents: their own Host, no Origin, JSON bodies; bodyless actions.
    stored = client.post("/v1/remember", json={"content": unique("Deploys run at 09:00")})
    assert stored.status_code == 200, stored.text
    memory_id = stored.json()["memory_id"]
    charset = client.post(
        "/v1/recall",
        content=json.dumps({"query": "deploys"}),
        headers={"content-type": "Application/JSON; charset=utf-8"},
    )
    assert charset.status_code == 200 and charset.json()["count"] == 1
    for host in ("localhost:18790", "[::1]:18790", "127.0.0.1:18790"):
        assert client.get("/v1/stats", headers={"host": host}).status_code == 200, host
    own = client.get("/v1/stats", headers={"origin": "http://localhost:18790"})
    assert own.status_code == 200  # the daemon's own origin
    assert client.delete(f"/v1/forget/{memory_id}").status_code == 200  # no body, no type
    mcp = client.post("/mcp", json=MCP_INIT, headers=MCP_ACCEPT)
    assert mcp.status_code == 200 and "tribal-memory" in mcp.text


def test_wildcard_bind_accepts_addresses_but_not_names(runtime: Runtime) -> None:
    runtime.config.server.host = "0.0.0.0"
    from tribalmemory.interfaces.auth import TokenStore, generate_token

    token = generate_token()
    TokenStore(runtime.config.data_path / "auth.json").save(token)  # required off loopback
    auth = {"authorization": f"Bearer {token}"}
    with TestClient(create_app(runtime.config, runtime), base_url=BASE_URL) as client:
        for host in ("192.168.1.20:18790", "10.0.0.5:18790", f"{socket.gethostname()}:18790"):
            response = client.get("/v1/stats", headers={**auth, "host": host})
            assert response.status_code == 200, host
        rebound = client.get("/v1/stats", headers={**auth, "host": "attacker.example:18790"})
        assert rebound.status_code == 421
        foreign = client.get("/v1/stats", headers={**auth, "origin": EVIL_ORIGIN})
        assert foreign.status_code == 403
        mcp = client.post(
            "/mcp", json=MCP_INIT, headers={**MCP_ACCEPT, **auth, "host": "attacker.example:18790"}
        )
        assert mcp.status_code == 421


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:18790", ("127.0.0.1", 18790)),
        ("LOCALHOST:18790", ("localhost", 18790)),
        ("[::1]:18790", ("[::1]", 18790)),
        ("[::1]", ("[::1]", 80)),
        ("localhost", ("localhost", 80)),
        ("localhost:", ("localhost", 80)),
        ("localhost:abc", None),
        ("[::1]x", None),
        ("", None),
    ],
)
def test_split_host(value: str, expected: Any) -> None:
    assert split_host(value) == expected


def test_check_is_a_pure_decision() -> None:
    policy = HostPolicy.for_bind("127.0.0.1", 18790)

    def status(method: str, **headers: str) -> int | None:
        refusal = check(policy, method, Headers(headers={"host": "127.0.0.1:18790", **headers}))
        return None if refusal is None else refusal.status_code

    assert status("GET") is None
    assert status("POST") is None  # no body, no type: nothing a form could carry
    assert status("POST", **{"content-length": "0"}) is None
    assert status("POST", **{"content-length": "2"}) == 415
    assert status("POST", **{"transfer-encoding": "chunked"}) == 415
    assert status("POST", **{"content-type": "application/x-www-form-urlencoded"}) == 415
    assert status("PATCH", **{"content-type": "text/plain", "content-length": "2"}) == 415
    assert status("GET", **{"content-type": "text/plain"}) is None  # reads change nothing
    assert status("POST", **{"content-type": "application/json", "content-length": "2"}) is None
    assert status("GET", origin="http://127.0.0.1:18790/") == 403  # an origin has no path
    assert HostPolicy.for_bind("192.168.1.20", 18790).allows("192.168.1.20:18790")
    assert not HostPolicy.for_bind("192.168.1.20", 18790).allows("10.0.0.1:18790")
