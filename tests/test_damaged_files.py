"""Damaged files never destroy data (issue 18, point 5).

A data folder with memories, episodes (with summary memories) and a month of LLM spend is
damaged the ways the attack run did it; ``tribalmemory serve`` (a real process) must stop with
a message naming the file and ``tribalmemory doctor``, without a traceback and without changing
a single file. ``tribalmemory doctor --repair`` then moves damaged files aside and the daemon
starts again with everything that could be kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers_http import free_port, subprocess_env
from test_durability import stream

from tribalmemory.cli.main import main
from tribalmemory.config import load_config
from tribalmemory.llm.ledger import Ledger
from tribalmemory.portability.sparse import copy_sparse
from tribalmemory.runtime import start_runtime
from tribalmemory.storage import EdgeStore, MemoryFilter
from tribalmemory.storage.integrity import DamagedDataError

SPENT = 0.4  # USD recorded in the template's ledger this month
CEILING = 5.0


def write_config(home: Path) -> Path:
    config = {
        "data_dir": str(home),
        "server": {"port": free_port()},
        "episodes": {
            "detector_strategy": "embedding",
            "summary_debounce_seconds": 0,
            "monthly_cost_ceiling": CEILING,
        },
    }
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


async def populate(home: Path) -> None:
    runtime = await start_runtime(load_config(write_config(home)))
    try:
        for item in stream(24):
            assert (await runtime.api.remember(**item))["success"]
        assert await runtime.episodes.worker.drain(60)
    finally:
        await runtime.stop()
    ledger = Ledger(home / "ledger.sqlite3", monthly_cost_ceiling=CEILING)
    granted = ledger.reserve(purpose="summary", model="gpt-4o-mini", reserved_usd=1, call_id="c1")
    assert granted.id is not None
    ledger.settle(granted.id, outcome="ok", cost_usd=SPENT)
    ledger.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("template") / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_API_KEY", raising=False)
        asyncio.run(populate(home))
    return home


@pytest.fixture
def home(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the template data folder (with its own port)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    copy = tmp_path / "home"
    shutil.copytree(template, copy, copy_function=copy_sparse)  # holes stay holes
    write_config(copy)
    return copy


def counts(home: Path) -> dict[str, int]:
    """Memories by kind, read from the store directly."""
    from tribalmemory.embeddings.embedder import BUNDLED_DIM, BUNDLED_MODEL
    from tribalmemory.models import ENGINE_WRITTEN

    with EdgeStore.open(home / "store", BUNDLED_MODEL, BUNDLED_DIM) as store:
        # What the episode engine wrote: summaries, lessons and decisions.
        summaries = store.count(MemoryFilter(source_types=sorted(ENGINE_WRITTEN)))
        return {"all": store.count(), "summaries": summaries}


IGNORED = {"store/lock", "identity.json"}


def snapshot(home: Path) -> dict[str, str]:
    """Every file's content hash; for files over 1 MB (the store's sparse, memory-mapped files)
    their size and allocated blocks. Left out: the log, the lock file (it holds the pid of the
    last opener) and identity.json (``serve`` creates the folder's identity before it starts)."""
    found = {}
    for path in sorted(home.rglob("*")):
        relative = str(path.relative_to(home))
        if path.is_dir() or relative.startswith("logs") or relative in IGNORED:
            continue
        stat = path.stat()
        if stat.st_size > 1_000_000:
            found[relative] = f"{stat.st_size}:{stat.st_blocks}"
        else:
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def segment(home: Path) -> Path:
    return next((home / "store" / "shard-1" / "segments").iterdir())


DAMAGE: dict[str, tuple[str, Callable[[Path], Any]]] = {
    "episodes db emptied": (
        "episodes.sqlite3",
        lambda h: (h / "episodes.sqlite3").write_bytes(b""),
    ),
    "episodes db deleted": ("episodes.sqlite3", lambda h: (h / "episodes.sqlite3").unlink()),
    "episodes db truncated": (
        "episodes.sqlite3",
        lambda h: (h / "episodes.sqlite3").write_bytes(
            (h / "episodes.sqlite3").read_bytes()[:9000]
        ),
    ),
    "episodes db garbage": (
        "episodes.sqlite3",
        lambda h: (h / "episodes.sqlite3").write_bytes(b"\x13garbage" * 900),
    ),
    "ledger emptied": ("ledger.sqlite3", lambda h: (h / "ledger.sqlite3").write_bytes(b"")),
    "ledger truncated": (
        "ledger.sqlite3",
        lambda h: (h / "ledger.sqlite3").write_bytes((h / "ledger.sqlite3").read_bytes()[:5000]),
    ),
    "store.json names a missing shard": (
        "store.json",
        lambda h: (h / "store" / "store.json").write_text(
            (h / "store" / "store.json").read_text().replace("shard-1", "shard-9")
        ),
    ),
    "store.json garbage": ("store.json", lambda h: (h / "store" / "store.json").write_text("{]")),
    "store.json deleted": ("store", lambda h: (h / "store" / "store.json").unlink()),
    "store folder deleted": ("store", lambda h: shutil.rmtree(h / "store")),
    "segments deleted": (
        "shard-1",
        lambda h: [shutil.rmtree(p) for p in (h / "store/shard-1/segments").iterdir()],
    ),
    "segment version.info deleted": ("shard-1", lambda h: (segment(h) / "version.info").unlink()),
    "segment payload deleted": ("shard-1", lambda h: shutil.rmtree(segment(h) / "payload_storage")),
    "segment BM25 vectors deleted": (
        "shard-1",
        lambda h: shutil.rmtree(segment(h) / "vector_storage-bm25"),
    ),
    "shard config garbage": (
        "shard-1",
        lambda h: (h / "store/shard-1/edge_config.json").write_bytes(b"\x00\xff" * 100),
    ),
    "manifest garbage": ("datafiles.json", lambda h: (h / "datafiles.json").write_text("[1")),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_file_stops_start_up_and_changes_nothing(home: Path, case: str) -> None:
    named, damage = DAMAGE[case]
    damage(home)
    before = snapshot(home)
    result = subprocess.run(
        [sys.executable, "-m", "tribalmemory", "serve", "--config", str(home / "config.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(home, home.parent),
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("tribalmemory: ") and named in message, output
    assert "nothing was deleted" in message and "tribalmemory doctor" in message
    assert snapshot(home) == before, "a failed start changed the data folder"


async def test_blank_episode_db_never_deletes_summaries(home: Path) -> None:
    """The reconcile rule on its own (a data folder from before datafiles.json existed)."""
    summaries = counts(home)["summaries"]
    assert summaries > 0
    (home / "datafiles.json").unlink()
    (home / "episodes.sqlite3").write_bytes(b"")
    # a memory in flight when it was lost: put in the database at start, it must not hide it
    (home / "episodes.sqlite3-intents").write_text('["a memory in flight", 1.0]\n')
    with pytest.raises(DamagedDataError) as refused:
        await start_runtime(load_config(home / "config.yaml"))
    assert refused.value.path == home / "episodes.sqlite3"
    assert f"{summaries} episode summary, lesson and decision memories" in str(refused.value)
    assert counts(home)["summaries"] == summaries


def doctor(home: Path, *args: str) -> int:
    return main(["doctor", "--config", str(home / "config.yaml"), *args])


def month_spend(home: Path) -> float:
    ledger = Ledger(home / "ledger.sqlite3", monthly_cost_ceiling=CEILING)
    try:
        spent, _, _ = ledger.month_totals()
        return spent
    finally:
        ledger.close()


async def start_and_count(home: Path) -> dict[str, int]:
    runtime = await start_runtime(load_config(home / "config.yaml"))
    try:
        stats = await runtime.service.stats()
    finally:
        await runtime.stop()
    written = sum(stats["by_source_type"][t] for t in ("EPISODE_SUMMARY", "LESSON", "DECISION"))
    return {"all": stats["total_memories"], "summaries": written}


def test_doctor_on_a_new_data_folder_creates_nothing(tmp_path: Path, capsys: Any) -> None:
    """doctor checks; it created an empty store (and the folder) where none was."""
    (tmp_path / "config.yaml").write_text(f"data_dir: {tmp_path / 'data'}\n", encoding="utf-8")
    assert doctor(tmp_path) == 0
    assert "Nothing stored in" in capsys.readouterr().out
    assert not (tmp_path / "data" / "store").exists()


def test_doctor_finds_nothing_on_a_healthy_folder(home: Path, capsys: Any) -> None:
    assert doctor(home) == 0
    out = capsys.readouterr().out
    assert "No damage found." in out and "DAMAGED" not in out


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("store.json names a missing shard", "everything"),
        ("store.json garbage", "everything"),
        ("store.json deleted", "everything"),
        ("shard config garbage", "everything"),
        ("manifest garbage", "everything"),
        ("episodes db emptied", "no summaries"),
        ("episodes db garbage", "no summaries"),
        ("ledger emptied", "month spent"),
        ("ledger truncated", "month spent"),
        ("segments deleted", "accepted"),
        ("segment payload deleted", "accepted"),
    ],
)
async def test_doctor_repairs_by_moving_aside(
    home: Path, case: str, expected: str, capsys: Any
) -> None:
    before = counts(home)
    DAMAGE[case][1](home)
    assert doctor(home) == 1
    assert "DAMAGED" in capsys.readouterr().out
    assert doctor(home, "--repair") == 0
    out = capsys.readouterr().out
    assert "Repaired." in out
    after = await start_and_count(home)
    aside = list(home.glob("damaged-*"))
    if expected == "everything":
        assert after == before
    elif expected == "no summaries":
        assert after == {"all": before["all"] - before["summaries"], "summaries": 0}
        exported = (aside[0] / "episode-summaries.jsonl").read_text().splitlines()
        assert len(exported) == before["summaries"]
        kinds = {json.loads(line)["source_type"] for line in exported}
        assert kinds <= {"EPISODE_SUMMARY", "LESSON", "DECISION"} and "EPISODE_SUMMARY" in kinds
        assert (aside[0] / "episodes.sqlite3").exists()
    elif expected == "month spent":
        assert month_spend(home) == pytest.approx(CEILING)  # never less than was spent
        assert (aside[0] / "ledger.sqlite3").exists()
    else:  # the memories of the deleted segments cannot come back; the rest starts
        assert after["all"] < before["all"]
    assert doctor(home) == 0  # and the folder is healthy now


def test_doctor_refuses_while_the_daemon_runs(home: Path, capsys: Any) -> None:
    from helpers_http import start_daemon

    daemon = start_daemon(home.parent, episodes={"enabled": False})
    try:
        code = main(["doctor", "--config", str(daemon.config_path)])
    finally:
        daemon.stop()
    assert code == 2
    assert "stop it" in capsys.readouterr().err.lower()


def test_ledger_month_spend_survives_a_normal_restart(home: Path) -> None:
    """The template's spend is really there (the ledger cases above test its loss)."""
    assert month_spend(home) == pytest.approx(SPENT)
    conn = sqlite3.connect(home / "ledger.sqlite3")
    assert conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 1
    conn.close()


def test_segment_and_count_checks_allow_what_a_crash_leaves(tmp_path: Path) -> None:
    from tribalmemory.storage.edge import SEGMENT_PARTS, count_problem, segments_problem

    shard = tmp_path / "shard-1"
    whole, unfinished = shard / "segments" / "a", shard / "segments" / "b"
    for part in ("version.info", *SEGMENT_PARTS):
        (whole / part).mkdir(parents=True)
    unfinished.mkdir()
    closed = {"open": False, "points": 10, "segments": ["a"]}
    assert segments_problem(None, shard) is None  # a store from before the state was recorded
    # Killed during optimize(): an unfinished segment is expected, Qdrant Edge removes it.
    assert segments_problem({"open": True, "points": None, "segments": None}, shard) is None
    assert "without their version.info (b)" in str(segments_problem(closed, shard))
    (unfinished / "version.info").mkdir()
    assert "(b) without its segment.json" in str(segments_problem(closed, shard))
    assert "lacks 1 of the 2" in str(segments_problem({**closed, "segments": ["a", "c"]}, shard))
    assert count_problem(closed, 10) is None
    assert "held 10 when it was closed" in str(count_problem(closed, 9))
    assert count_problem({**closed, "open": True}, 3) is None  # after a crash: WAL replay


def test_garbage_env_file_is_a_configuration_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_bytes(b"\x00\xffgarbage{")
    result = subprocess.run(
        [sys.executable, "-m", "tribalmemory", "status"],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(home, tmp_path),
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and ".env cannot be read" in result.stderr
