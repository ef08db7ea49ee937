"""The episode engine with the LLM layer, end to end through the fake provider: summaries of
episodes with long user titles, and an explicit regenerate after an outage."""

from __future__ import annotations

import socket

import pytest
from fakellm import FakeLLM
from helpers_runtime import settle

from tribalmemory.runtime import Runtime

AUTH = [
    "Support ticket: customers are logged out at random when the web app is open in several "
    "tabs; Sentry shows 401 'refresh token revoked' right after a refresh.",
    "Two browser tabs call /auth/refresh at the same moment: the second one presents the "
    "already rotated refresh token and triggers the reuse detection logout.",
]
#: 162 characters: more than the 80 an LLM title was limited to, less than the API's 200.
LONG_TITLE = (
    "Customers logged out of every open tab after the refresh-token rotation release: "
    "reuse detection revokes the token family when two tabs refresh at the same moment"
)


async def episode_with_long_title(rt: Runtime) -> str:
    ids = [(await rt.api.remember(text))["memory_id"] for text in AUTH]
    assert 80 < len(LONG_TITLE) == 162 <= 200
    created = await rt.api.episode_create(LONG_TITLE, ids)
    await settle(rt)
    return created["episode_id"]


def ledger_outcomes(rt: Runtime, episode_id: str) -> list[str]:
    ledger = rt.episodes.summariser.client.ledger
    return [row["outcome"] for row in ledger.rows() if row["episode_id"] == episode_id]


async def test_an_episode_with_a_long_user_title_gets_its_llm_summary(
    engine_runtime, fake_llm_env: FakeLLM
) -> None:
    """18.9: with a user title of 81-200 characters every LLM summary failed validation (the
    model keeps the title it is shown): three billed attempts, then an extractive summary."""
    rt = await engine_runtime(llm_update_every=2)
    episode_id = await episode_with_long_title(rt)
    got = (await rt.api.episode_get(episode_id))["episode"]
    assert got["title"] == LONG_TITLE and got["summary_kind"] == "llm"
    assert ledger_outcomes(rt, episode_id) == ["ok"]  # one billed attempt, accepted
    # The model sees the whole title (the memories may first have formed an episode of
    # their own, summarised by another request).
    shown = [r for r in fake_llm_env.by_purpose("regenerate") if LONG_TITLE[:80] in r.text]
    assert len(shown) == 1 and f"<title>{LONG_TITLE}</title>" in shown[0].text


async def test_regenerate_after_an_outage_calls_the_provider_at_once(
    engine_runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """18.4: after an outage no LLM call was made again, not even on an explicit regenerate."""
    with socket.socket() as sock:  # the provider is down at start
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    # The scheduled re-probe is an hour away: only the explicit regenerate can call now.
    rt = await engine_runtime(
        client_kw={"probe_first": 3600.0},
        api_base=f"http://127.0.0.1:{port}/v1",
        llm_update_every=2,
    )
    health = rt.api.health()["llm"]
    assert health["state"] == "unreachable" and health["next_probe"].endswith("Z")
    assert "fallback" in health
    episode_id = await episode_with_long_title(rt)
    got = (await rt.api.episode_get(episode_id))["episode"]
    assert got["summary_kind"] == "extractive" and ledger_outcomes(rt, episode_id) == []
    with FakeLLM(port=port) as provider:  # the provider is back
        assert provider.calls == 0
        await rt.api.episode_regenerate(episode_id)
        await settle(rt)
        assert [r.purpose for r in provider.requests] == ["regenerate"]
        assert LONG_TITLE in provider.requests[0].text
    got = (await rt.api.episode_get(episode_id))["episode"]
    assert got["summary_kind"] == "llm" and ledger_outcomes(rt, episode_id) == ["ok"]
    assert rt.api.health()["llm"]["state"] == "ready"
