"""Durable cost ledger of LLM calls (SQLite, WAL) with an atomic monthly ceiling.

One row per attempt. Before an attempt, :meth:`Ledger.reserve` inserts a row in state
``reserved`` holding the attempt's worst-case cost, inside a ``BEGIN IMMEDIATE`` transaction
that first checks ``settled spend + open reservations + this one <= ceiling`` for the current
UTC month. SQLite serialises such transactions across connections, threads and processes.
:meth:`Ledger.settle` replaces the reservation by the actual cost and outcome, never more than
the reservation: the month's recorded spend cannot pass the ceiling.

A reservation left open by a crashed process is "abandoned" after ``stale_after_seconds``
(checked on open and on every reservation): it stays counted at its reserved (worst-case)
cost, since the provider may have billed the request.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..timeutil import to_epoch, to_iso, utc_now
from . import ledger_math as lm

logger = logging.getLogger("tribalmemory.llm")

RESERVED = "reserved"
OK = "ok"
ABANDONED = "abandoned"
DENIED_CEILING = "denied_ceiling"
DENIED_CALL_CAP = "denied_call_cap"
DENIED = (DENIED_CEILING, DENIED_CALL_CAP)

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    time TEXT NOT NULL,
    ts REAL NOT NULL,
    month TEXT NOT NULL,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    episode_id TEXT,
    memory_id TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    reserved_nano INTEGER NOT NULL DEFAULT 0,
    cost_nano INTEGER NOT NULL DEFAULT 0,
    outcome TEXT NOT NULL,
    detail TEXT,
    settled_time TEXT
);
CREATE INDEX IF NOT EXISTS calls_month ON calls (month, outcome);
CREATE INDEX IF NOT EXISTS calls_memory ON calls (memory_id);
CREATE INDEX IF NOT EXISTS calls_episode ON calls (episode_id);
CREATE INDEX IF NOT EXISTS calls_open ON calls (outcome, ts);
"""

# Open reservations count at their reserved cost, everything else at its recorded cost.
SPEND_SQL = (
    "SELECT COALESCE(SUM(CASE WHEN outcome = 'reserved' THEN 0 ELSE cost_nano END), 0),"
    " COALESCE(SUM(CASE WHEN outcome = 'reserved' THEN reserved_nano ELSE 0 END), 0)"
    " FROM calls WHERE month = ?"
)


@dataclass(frozen=True)
class Reservation:
    """The answer of :meth:`Ledger.reserve`; ``id`` is None when the call was denied."""

    id: int | None
    outcome: str
    month: str
    reserved_usd: float
    detail: str = ""
    row: int = 0  # the ledger row of the decision, granted or denied: their order

    @property
    def granted(self) -> bool:
        return self.outcome == RESERVED


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch the file to WAL. Connections opening a new ledger at once (threads, processes)
    can get "database is locked" here without SQLite's busy handler waiting (the switch needs
    the file to itself): try again until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)  # another connection is switching it; it takes microseconds


class Ledger:
    """The ledger file; safe to share between threads, tasks and processes."""

    def __init__(
        self,
        path: str | Path,
        *,
        monthly_cost_ceiling: float = 5.0,
        max_calls_per_memory: int = 2,
        clock: Callable[[], datetime] = utc_now,
        stale_after_seconds: float = 900.0,
        busy_timeout_seconds: float = 30.0,
    ) -> None:
        self.path = Path(path).expanduser()
        self.monthly_cost_ceiling = monthly_cost_ceiling
        self.max_calls_per_memory = max_calls_per_memory
        self.clock = clock
        self.stale_after_seconds = stale_after_seconds
        self.busy_timeout_seconds = busy_timeout_seconds
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        # (month, spent nano, held nano, monotonic time read): what status checks may reuse
        self._totals: tuple[str, int, int, float] | None = None
        self._writes = 0  # writes through this ledger: a read older than one is not cached
        with self._connect() as conn:
            enable_wal(conn, self.busy_timeout_seconds)
            conn.executescript(SCHEMA)
        released = self.release_stale()
        if released:
            logger.warning(
                "LLM ledger: %d reservation(s) left by a stopped process were "
                "closed as abandoned (counted at their reserved cost)",
                released,
            )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection to the ledger file (opened once per thread).

        Each statement outside ``_write`` runs in its own implicit transaction, so a kept
        connection still sees what other connections and processes committed.
        """
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_seconds,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        yield conn

    def close(self) -> None:
        """Close every thread's connection (the ledger reopens them if used again)."""
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: one writer at a time across processes."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._writes += 1
                self._totals = None

    def _stale_sql(self, conn: sqlite3.Connection, now: datetime) -> int:
        cutoff = to_epoch(now) - self.stale_after_seconds
        cur = conn.execute(
            "UPDATE calls SET outcome = ?, cost_nano = reserved_nano, settled_time = ?,"
            " detail = 'reservation never settled (process stopped?)'"
            " WHERE outcome = 'reserved' AND ts < ?",
            (ABANDONED, to_iso(now), cutoff),
        )
        return cur.rowcount

    def release_stale(self) -> int:
        """Close reservations older than ``stale_after_seconds``; returns how many."""
        with self._write() as conn:
            return self._stale_sql(conn, self.clock())

    def reserve(
        self,
        *,
        purpose: str,
        model: str,
        reserved_usd: float,
        call_id: str,
        attempt: int = 1,
        episode_id: str | None = None,
        memory_id: str | None = None,
        prompt_tokens: int = 0,
        ceiling_usd: float | None = None,
        call_cap: int | None = None,
    ) -> Reservation:
        """Atomically admit (row ``reserved``) or deny (row ``denied_*``) one attempt.

        The per-memory call cap counts logical calls (first attempts) of ``memory_id`` over all
        months and applies to first attempts only: retries of an admitted call are not capped.
        """
        now = self.clock()
        month = lm.month_key(now)
        new = lm.usd_to_nano(reserved_usd)
        ceiling = lm.ceiling_to_nano(
            self.monthly_cost_ceiling if ceiling_usd is None else ceiling_usd
        )
        cap = self.max_calls_per_memory if call_cap is None else call_cap
        with self._write() as conn:
            self._stale_sql(conn, now)
            outcome, detail = RESERVED, ""
            if memory_id is not None and attempt == 1:
                made = conn.execute(
                    "SELECT COUNT(*) FROM calls WHERE memory_id = ? AND attempt = 1"
                    " AND outcome NOT IN (?, ?)",
                    (memory_id, *DENIED),
                ).fetchone()[0]
                if made >= cap:
                    outcome = DENIED_CALL_CAP
                    detail = f"memory {memory_id} already used {made} of {cap} LLM calls"
            if outcome == RESERVED:
                spent, held = conn.execute(SPEND_SQL, (month,)).fetchone()
                if not lm.can_reserve(spent, held, new, ceiling):
                    outcome = DENIED_CEILING
                    detail = (
                        f"month {month}: spent ${lm.nano_to_usd(spent):.6f} + reserved "
                        f"${lm.nano_to_usd(held):.6f} + this call "
                        f"${lm.nano_to_usd(new):.6f} > ceiling "
                        f"${lm.nano_to_usd(ceiling):.6f}"
                    )
            cur = conn.execute(
                "INSERT INTO calls (call_id, attempt, time, ts, month, purpose, model,"
                " episode_id, memory_id, prompt_tokens, reserved_nano, outcome, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    call_id,
                    attempt,
                    to_iso(now),
                    to_epoch(now),
                    month,
                    purpose,
                    model,
                    episode_id,
                    memory_id,
                    prompt_tokens if outcome == RESERVED else 0,
                    new if outcome == RESERVED else 0,
                    outcome,
                    detail or None,
                ),
            )
            row_id = cur.lastrowid
        return Reservation(
            id=row_id if outcome == RESERVED else None,
            outcome=outcome,
            month=month,
            reserved_usd=lm.nano_to_usd(new),
            detail=detail,
            row=row_id or 0,
        )

    def settle(
        self,
        reservation_id: int,
        *,
        outcome: str,
        cost_usd: float,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        detail: str | None = None,
    ) -> None:
        """Record the actual outcome and cost of a reserved attempt.

        The cost is clamped to the reservation (a cost that is not a non-negative number counts
        at the reservation), with a WARNING: the month's spend never passes the ceiling.
        """
        if outcome in (RESERVED, *DENIED):
            raise ValueError(f"cannot settle to {outcome!r}")
        with self._write() as conn:
            row = conn.execute(
                "SELECT reserved_nano, outcome FROM calls WHERE id = ?", (reservation_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"no ledger row {reservation_id}")
            if row[1] not in (RESERVED, ABANDONED):
                raise ValueError(f"ledger row {reservation_id} is already settled ({row[1]})")
            cost, clamped = lm.settled_nano(cost_usd, row[0])
            conn.execute(
                "UPDATE calls SET outcome = ?, cost_nano = ?, prompt_tokens = ?,"
                " completion_tokens = ?, detail = ?, settled_time = ? WHERE id = ?",
                (
                    outcome,
                    cost,
                    prompt_tokens,
                    completion_tokens,
                    detail,
                    to_iso(self.clock()),
                    reservation_id,
                ),
            )
        if clamped:
            logger.warning(
                "LLM ledger: row %s settled at its reservation $%.6f: %s",
                reservation_id,
                lm.nano_to_usd(row[0]),
                clamped,
            )

    def month_totals(
        self, month: str | None = None, max_age: float = 0.0
    ) -> tuple[float, float, float]:
        """(settled spend, open reservations, ceiling) of a month, in USD.

        ``max_age`` > 0 lets a status check reuse totals read up to that many seconds ago
        (never across a write made through this ledger); reserve() always reads afresh.
        """
        month = month or lm.month_key(self.clock())
        cached = self._totals
        if (
            max_age > 0
            and cached is not None
            and cached[0] == month
            and time.monotonic() - cached[3] <= max_age
        ):
            spent, held = cached[1], cached[2]
        else:
            writes = self._writes
            with self._connect() as conn:
                spent, held = conn.execute(SPEND_SQL, (month,)).fetchone()
            if writes == self._writes:
                self._totals = (month, spent, held, time.monotonic())
        ceiling = lm.ceiling_to_nano(self.monthly_cost_ceiling)
        return lm.nano_to_usd(spent), lm.nano_to_usd(held), lm.nano_to_usd(ceiling)

    def calls_for_memory(self, memory_id: str) -> int:
        """Logical calls (first attempts, not denied) made for one memory, all months."""
        with self._connect() as conn:
            return int(
                conn.execute(
                    "SELECT COUNT(*) FROM calls WHERE memory_id = ? AND attempt = 1"
                    " AND outcome NOT IN (?, ?)",
                    (memory_id, *DENIED),
                ).fetchone()[0]
            )

    def episode_cost(self, episode_id: str) -> float:
        """Total recorded cost of an episode's calls over all months, in USD."""
        with self._connect() as conn:
            nano = conn.execute(
                "SELECT COALESCE(SUM(CASE WHEN outcome = 'reserved' THEN reserved_nano"
                " ELSE cost_nano END), 0) FROM calls WHERE episode_id = ?",
                (episode_id,),
            ).fetchone()[0]
        return lm.nano_to_usd(nano)

    def rows(self, month: str | None = None) -> list[dict[str, Any]]:
        """Every row (of one month, or all), oldest first, with costs in USD."""
        query = "SELECT * FROM calls" + (" WHERE month = ?" if month else "") + " ORDER BY id"
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            found = conn.execute(query, (month,) if month else ()).fetchall()
        out = []
        for row in found:
            item = dict(row)
            item["cost_usd"] = lm.nano_to_usd(item.pop("cost_nano"))
            item["reserved_usd"] = lm.nano_to_usd(item.pop("reserved_nano"))
            out.append(item)
        return out

    def summary(self, month: str | None = None) -> dict[str, Any]:
        """Spend, budget and breakdowns of one month (default: the current UTC month)."""
        month = month or lm.month_key(self.clock())
        with self._connect() as conn:
            found = conn.execute(
                "SELECT purpose, model, episode_id, outcome, prompt_tokens, completion_tokens,"
                " CASE WHEN outcome = 'reserved' THEN 0 ELSE cost_nano END, reserved_nano,"
                " substr(time, 1, 10) FROM calls WHERE month = ?",
                (month,),
            ).fetchall()
        return _summarise(month, found, lm.ceiling_to_nano(self.monthly_cost_ceiling))


def _summarise(month: str, found: list[tuple[Any, ...]], ceiling: int) -> dict[str, Any]:
    spent = held = calls = ok = denied = p_tok = c_tok = 0
    by_purpose: dict[str, dict[str, Any]] = {}
    by_model: dict[str, dict[str, Any]] = {}
    by_episode: dict[str, int] = {}
    by_day: dict[str, dict[str, Any]] = {}
    for purpose, model, episode, outcome, ptok, ctok, cost, reserved, day in found:
        if outcome in DENIED:
            denied += 1
            continue
        if outcome == RESERVED:
            held += reserved
            continue
        calls += 1
        ok += outcome == OK
        spent += cost
        p_tok, c_tok = p_tok + ptok, c_tok + ctok
        for table, key in ((by_purpose, purpose), (by_model, model), (by_day, day)):
            entry = table.setdefault(key, {"calls": 0, "tokens": 0, "cost_nano": 0})
            entry["calls"] += 1
            entry["tokens"] += ptok + ctok
            entry["cost_nano"] += cost
        if episode:
            by_episode[episode] = by_episode.get(episode, 0) + cost

    def usd(table: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {
            k: {
                "calls": v["calls"],
                "tokens": v["tokens"],
                "cost_usd": lm.nano_to_usd(v["cost_nano"]),
            }
            for k, v in table.items()
        }

    return {
        "month": month,
        "spend_usd": lm.nano_to_usd(spent),
        "reserved_usd": lm.nano_to_usd(held),
        "ceiling_usd": lm.nano_to_usd(ceiling),
        "remaining_usd": lm.nano_to_usd(lm.remaining(spent, held, ceiling)),
        "calls": calls,
        "ok_calls": ok,
        "failed_calls": calls - ok,
        "denied_calls": denied,
        "open_reservations": sum(1 for row in found if row[3] == RESERVED),
        "prompt_tokens": p_tok,
        "completion_tokens": c_tok,
        "by_purpose": usd(by_purpose),
        "by_model": usd(by_model),
        "by_episode": {k: lm.nano_to_usd(v) for k, v in by_episode.items()},
        "by_day": usd(dict(sorted(by_day.items()))),
    }
