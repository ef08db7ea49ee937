"""The page at ``/``: served from the package with its own headers, no data without the token,
Host / Origin / Content-Type refused as for the API, and the spend per day it charts."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers_http import BASE_URL, write_config
from starlette.testclient import TestClient

from tribalmemory.config import load_config
from tribalmemory.interfaces.auth import generate_token, token_store
from tribalmemory.interfaces.http import create_app
from tribalmemory.interfaces.openapi import ROUTES
from tribalmemory.interfaces.page import STATIC_DIR
from tribalmemory.llm.ledger import Ledger

pytest_plugins = ["helpers_http"]

OWN = {"host": "127.0.0.1:18790"}
VENDOR = STATIC_DIR / "vendor"


@pytest.fixture
def token_client(tm_home: Path) -> Iterator[tuple[TestClient, str]]:
    config = load_config(write_config(tm_home, episodes={"enabled": False}))
    token = generate_token()
    token_store(config).save(token)
    with TestClient(create_app(config), base_url=BASE_URL) as test_client:
        yield test_client, token


def test_the_page_and_its_files_are_served_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.headers["x-frame-options"] == "DENY"
    # Every script and stylesheet the page names is served by the daemon itself (no CDN).
    assets = [a for a in re.findall(r'(?:src|href)="([^"]+)"', page.text) if a != "data:,"]
    assert assets and all(a.startswith("/page/") for a in assets), assets
    for asset in assets:
        answer = client.get(asset)
        assert answer.status_code == 200, asset
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert client.get("/page/nothing.js").status_code == 404
    assert client.get("/page/../auth.json").status_code == 404


def test_the_vendored_libraries_ship_with_their_licences() -> None:
    assert (VENDOR / "vis-timeline" / "LICENSE.MIT.txt").is_file()
    assert (VENDOR / "timeline-arrows" / "LICENSE").is_file()
    assert "8.5.4" in (VENDOR / "vis-timeline" / "vis-timeline-graph2d.min.js").read_text()[:400]


def test_with_a_token_the_page_loads_but_its_data_needs_the_bearer_header(
    token_client: tuple[TestClient, str],
) -> None:
    client, token = token_client
    assert client.get("/").status_code == 200  # the login form: no data in it
    assert client.get("/page/app.js").status_code == 200
    assert client.get("/v1/stats").status_code == 401
    assert client.get("/v1/episodes/costs").status_code == 401
    bearer = {"authorization": f"Bearer {token}"}
    assert client.get("/v1/stats", headers=bearer).status_code == 200
    # A state-changing call from the page without the header is refused, like any other.
    patch = client.patch("/v1/episodes/ep-000000000000", json={"title": "x"})
    assert patch.status_code == 401


def test_the_page_never_puts_the_token_in_a_url() -> None:
    script = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    assert "sessionStorage" in script and "Authorization" in script
    assert not re.search(r"[?&]token=", script)
    assert "localStorage" not in script  # gone when the tab closes


def test_every_text_the_page_shows_goes_through_clean() -> None:
    """A memory's U+202E shown raw reverses the text after it (a name can be spoofed) and an
    ESC shows as a glyph: each place app.js puts text in the page (text content, a tooltip, a
    text node, an option, a timeline bar's HTML) takes it from ``clean()`` (lanes.js), which
    escapes them as the CLI does; none writes HTML itself."""
    script = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    sinks = re.findall(
        r"(\.textContent\s*=(?!=)|\.title\s*=(?!=)|\.innerText\s*=(?!=)|createTextNode\(|"
        r"new Option\(|escapeHtml\()\s*(.{0,6})",
        script,
    )
    assert len(sinks) >= 6, sinks
    assert [sink for sink, given in sinks if not given.startswith("clean(")] == []
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", script)


def test_every_route_the_page_reads_is_served() -> None:
    """The page's data comes from the API's own routes (a typo would be a 404 in the page's
    error line): each ``/v1`` path in app.js, its ``${…}`` parts as path parameters, is one
    of the route table's; the causal links of an episode view come from ``GET /v1/causes``."""
    script = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    paths = {
        re.sub(r"(\{\})+", "{}", re.sub(r"\$\{[^}]*\}", "{}", path)).split("?")[0]
        for path in re.findall(r"[\"`](/v1/[^\"`]*)[\"`]", script)
    }
    served = {re.sub(r"\{[^}]*\}", "{}", op.path) for op in ROUTES}
    assert paths - served == set()
    assert {"/v1/causes", "/v1/memory/{}", "/v1/episodes/{}"} <= paths


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example:18790"}, 421),  # DNS rebinding: the attacker's name
        ({"host": "127.0.0.1:9999"}, 421),  # another port
        ({**OWN, "origin": "http://evil.example"}, 403),  # cross-origin page
        ({**OWN, "origin": "http://127.0.0.1:9999"}, 403),
        ({**OWN, "origin": "http://127.0.0.1:18790"}, 200),  # the page itself
        (OWN, 200),
    ],
)
def test_the_page_refuses_foreign_hosts_and_origins(
    client: TestClient, headers: dict[str, str], status: int
) -> None:
    assert client.get("/", headers=headers).status_code == status
    assert client.get("/page/app.js", headers=headers).status_code == status


def test_a_cross_origin_edit_is_refused_before_the_route(client: TestClient) -> None:
    stored = client.post("/v1/remember", json={"content": f"page guard {uuid.uuid4().hex}"})
    episode = client.post(
        "/v1/episodes", json={"title": "guarded", "memory_ids": [stored.json()["memory_id"]]}
    ).json()["episode_id"]
    forged = client.patch(
        f"/v1/episodes/{episode}",
        json={"title": "forged"},
        headers={"origin": "http://evil.example"},
    )
    assert forged.status_code == 403
    form = client.post(
        f"/v1/episodes/{episode}/close",
        content=b"x=1",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 415
    title = client.get(f"/v1/episodes/{episode}").json()["episode"]["title"]
    assert title == "guarded"
    same = client.patch(
        f"/v1/episodes/{episode}",
        json={"title": "renamed"},
        headers={"origin": "http://127.0.0.1:18790"},
    )
    assert same.status_code == 200 and same.json()["episode"]["title"] == "renamed"


def test_costs_count_spend_by_utc_day(tmp_path: Path) -> None:
    moments = iter(
        [
            datetime(2026, 11, 3, 23, 59, tzinfo=UTC),
            datetime(2026, 11, 4, 0, 1, tzinfo=UTC),
            datetime(2026, 11, 4, 9, 0, tzinfo=UTC),
        ]
    )
    now = [datetime(2026, 11, 3, 23, 59, tzinfo=UTC)]
    ledger = Ledger(tmp_path / "l.sqlite3", clock=lambda: now[0])
    for cost in (0.001, 0.002, 0.004):
        now[0] = next(moments)
        call = ledger.reserve(
            reserved_usd=0.01, purpose="final", model="m", call_id=uuid.uuid4().hex
        )
        ledger.settle(call.id, outcome="ok", cost_usd=cost, prompt_tokens=10, completion_tokens=1)
    days = ledger.summary()["by_day"]
    assert list(days) == ["2026-11-03", "2026-11-04"]
    assert days["2026-11-03"] == {"calls": 1, "tokens": 11, "cost_usd": pytest.approx(0.001)}
    assert days["2026-11-04"]["calls"] == 2
    assert days["2026-11-04"]["cost_usd"] == pytest.approx(0.006)
