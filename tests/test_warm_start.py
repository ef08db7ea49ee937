"""A fresh daemon loads what its first requests would wait for before it answers at all: the
request model's first run, the background embedder's model (episodes on) and litellm (an LLM
configured with its key). Lazily loaded, they stalled the first 100-200 remembers (issue 40)."""

from __future__ import annotations

from pathlib import Path

from helpers_http import LOCAL, free_port, start_daemon

from tribalmemory.embeddings.placement import parse_cpu_list


def test_a_fresh_daemon_is_warm_before_it_answers(tmp_path: Path) -> None:
    episodes = {
        "enabled": True,
        "summarizer_provider": "openai",
        "summarizer_model": "gpt-4o-mini",
        "api_base": f"http://127.0.0.1:{free_port()}/v1",  # nothing answers: not needed here
    }
    daemon = start_daemon(tmp_path, episodes=episodes, environ={"OPENAI_API_KEY": "x"})
    try:
        health = LOCAL.get(f"{daemon.url}/v1/health", timeout=30).json()
        warm = health["warm_up"]
        assert warm["done"] == [
            "request model",
            "background model",
            "entity extraction",
            "litellm",
        ], warm
        assert warm["failed"] == {}
        # nothing was remembered, so no summary loaded it: the warm-up did, before answering
        background = health["background_embeddings"]
        assert (background["model"], background["calls"]) == ("loaded", 0)
        # then its event loop runs where requests' embeddings do (embeddings/placement.py)
        request_cpus = health["embedding"]["request_cpus"]
        if request_cpus is not None:  # None: one CPU, or nothing pinned; any CPU then
            pid = daemon.process.pid
            status = Path(f"/proc/{pid}/task/{pid}/status").read_text(encoding="utf-8")
            allowed = next(s for s in status.splitlines() if s.startswith("Cpus_allowed_list"))
            assert sorted(parse_cpu_list(allowed.partition(":")[2])) == request_cpus
    finally:
        daemon.stop()
    log = daemon.output.read_text(encoding="utf-8")
    assert "warmed up in" in log and "Traceback" not in log
