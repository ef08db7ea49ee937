"""A fake OpenAI-compatible (and Ollama) LLM server on 127.0.0.1 for tests and crash drills.

It is a real HTTP server (stdlib ``ThreadingHTTPServer``) in a background thread, so calls go
through litellm's real client. Endpoints: ``POST /v1/chat/completions`` (OpenAI shape with
``choices`` and ``usage``), ``POST /api/chat`` and ``POST /api/generate`` (Ollama shape).

Scripting: ``fake.script(Reply.json({...}), Reply.error(429), ...)`` queues replies used in
order; when the queue is empty ``fake.responder`` (default :func:`default_reply`) answers. The
default responder reads the ``tm-purpose: <name>`` marker in the system prompt and returns
valid JSON for that purpose, so engine tests work without scripting. Every request is recorded
in ``fake.requests`` (:class:`Recorded`).

Standalone: ``python -m tests.fakellm --port 8099 --delay 0.5 [--agree]`` serves until killed
and prints ``READY <base_url>`` on stdout once listening (``--agree``: :func:`agreeing_reply`).
For tests that run it as a process: ``GET /stats`` counts the requests received (by purpose),
``POST /delay`` with ``{"seconds": s}`` sets the delay of the answers to come.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import html
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

PURPOSE_RE = re.compile(r"tm-purpose:\s*([a-z_]+)")
MEMORY_RE = re.compile(r"<memory\b([^>]*)>(.*?)</memory>", re.S)
ID_RE = re.compile(r'\bid="([^"]*)"')
EPISODE_RE = re.compile(r'<episode id="([^"]*)"[^>]*>(.*?)</episode>', re.S)
WORD_RE = re.compile(r"[a-z0-9_]{4,}")
STOPWORDS = frozenset(
    "that this with from have were will when what which their there them then than they into "
    "also been more some only over should would could about after before because user uses "
    "used using".split()
)


@dataclass
class Reply:
    """One scripted answer: content, an HTTP error, a delay, or a raw (broken) body.

    ``prompt_tokens`` / ``completion_tokens`` set the reported usage (default: characters / 4);
    ``usage`` replaces the whole reported ``usage`` object (a dishonest or broken provider).
    """

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    raw_body: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    usage: dict[str, Any] | None = None

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def error(cls, status: int, message: str = "fake failure", **kw: Any) -> Reply:
        body = json.dumps({"error": {"message": message, "type": "fake_error", "code": status}})
        return cls(status=status, raw_body=body, **kw)

    @classmethod
    def garbage(cls, **kw: Any) -> Reply:
        """A 200 whose message content is not JSON at all."""
        return cls(content="Sure! Here is your answer: the episode is great.", **kw)

    @classmethod
    def truncated(cls, **kw: Any) -> Reply:
        """JSON content cut off mid-way, as when max_tokens is hit."""
        kw.setdefault("finish_reason", "length")
        return cls(content='{"title": "Auth refresh race", "summary": "The team inv', **kw)

    @classmethod
    def broken_body(cls, **kw: Any) -> Reply:
        """A 200 whose HTTP body itself is truncated JSON."""
        return cls(raw_body='{"id": "chatcmpl-x", "choices": [{"mess', **kw)

    @classmethod
    def slow(cls, delay: float, **kw: Any) -> Reply:
        """Answer with the default responder after ``delay`` seconds."""
        return cls(delay=delay, **kw)


@dataclass
class Recorded:
    """One request as received."""

    path: str
    body: dict[str, Any]
    purpose: str | None
    time: float = field(default_factory=time.time)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def model(self) -> str | None:
        return self.body.get("model")

    @property
    def max_tokens(self) -> int | None:
        opts = self.body.get("options") or {}
        return self.body.get(
            "max_tokens", self.body.get("max_completion_tokens", opts.get("num_predict"))
        )

    @property
    def response_format(self) -> Any:
        return self.body.get("response_format", self.body.get("format"))

    @property
    def text(self) -> str:
        """All message contents (or the Ollama prompt) joined."""
        parts = [str(m.get("content") or "") for m in self.messages]
        if "prompt" in self.body:
            parts.append(str(self.body["prompt"]))
        return "\n".join(parts)


def estimate_tokens(text: str) -> int:
    """Plausible token count: about four characters a token (tiktoken-like for English)."""
    return max(1, math.ceil(len(text) / 4))


def _words(text: str) -> set[str]:
    return {w for w in WORD_RE.findall(text.lower()) if w not in STOPWORDS}


def _memories(text: str) -> list[tuple[str, str]]:
    """(id, unescaped content) of every ``<memory>`` element in a prompt."""
    found = []
    for attrs, body in MEMORY_RE.findall(text):
        mid = ID_RE.search(attrs)
        found.append((html.unescape(mid.group(1)) if mid else "", html.unescape(body).strip()))
    return found


def _title_from(text: str) -> str:
    words = re.sub(r"\s+", " ", text).strip().split(" ")[:8]
    return " ".join(words)[:80].rstrip(" .,;:") or "Untitled episode"


def _summary_from(memories: list[tuple[str, str]]) -> str:
    parts = [content.split(". ")[0].strip()[:140] for _, content in memories[-6:]]
    return ("; ".join(p for p in parts if p) or "No details.")[:1200]


def new_memories(user: str) -> list[tuple[str, str]]:
    """(id, content) of the new memories of a classify prompt (inside ``<new>``)."""
    new_part = user.partition("<candidates>")[0]
    return _memories(new_part.partition("<new>")[2] or new_part)


def _classify_one(memory_id: str, content: str, episodes_part: str) -> dict[str, Any]:
    if re.search(r"\b(prefer|prefers|always|never)\b", content.lower()):
        return {"memory_id": memory_id, "action": "none"}
    words = _words(content)
    best, best_score = None, 0.0
    for ep_id, body in EPISODE_RE.findall(episodes_part):
        other = _words(html.unescape(body))
        score = len(words & other) / max(1, min(len(words), len(other)))
        if score > best_score:
            best, best_score = ep_id, score
    if best is not None and best_score >= 0.2:
        return {"memory_id": memory_id, "action": "join", "episode_id": best}
    return {"memory_id": memory_id, "action": "create", "title": _title_from(content)}


def _classify(user: str) -> dict[str, Any]:
    """One heuristic decision per new memory: shared words join, preferences stand alone;
    merge checks riding along are answered "none" (a careful model)."""
    episodes_part = user.partition("<candidates>")[2].partition("<checks>")[0]
    return decisions(
        *(_classify_one(i, c, episodes_part) for i, c in new_memories(user)), user=user
    )


def decisions(*items: dict[str, Any], user: str = "") -> dict[str, Any]:
    """A scripted classify answer: ``decisions({"memory_id": ..., "action": ...}, ...)``. Merge
    checks riding along in the prompt ``user`` are answered "none" (a careful model; an answer
    without them keeps its decisions but leaves the checks unanswered, with a WARNING)."""
    answer: dict[str, Any] = {"decisions": list(items)}
    checks = merge_checks(user)
    if checks:
        answer["merges"] = merges(*((e, None) for e in checks))["merges"]
    return answer


CHECK_RE = re.compile(r'<check episode_id="([^"]+)">')


def merge_checks(user: str) -> list[str]:
    """The checked episode ids of a merge or split prompt, in order."""
    return CHECK_RE.findall(user)


def merges(*pairs: tuple[str, str | None]) -> dict[str, Any]:
    """A scripted merge answer: ``merges(("ep-new", "ep-old"), ("ep-x", None))``."""
    return {"merges": [{"episode_id": e, "same_as": other} for e, other in pairs]}


def split_parts(user: str) -> dict[str, tuple[list[str], list[str]]]:
    """The memory ids each split check shows in its parts a and b, by checked episode id."""
    out = {}
    for episode_id, body in re.findall(r'<check episode_id="([^"]+)">(.*?)</check>', user, re.S):
        parts = dict(re.findall(r'<part id="([ab])">(.*?)</part>', body, re.S))
        ids = {k: re.findall(r'<memory id="([^"]+)"', v) for k, v in parts.items()}
        out[episode_id] = (ids.get("a", []), ids.get("b", []))
    return out


def splits(*pairs: tuple[str, bool]) -> dict[str, Any]:
    """A scripted split answer: ``splits(("ep-mixed", True), ("ep-x", False))``."""
    return {"splits": [{"episode_id": e, "two_threads": two} for e, two in pairs]}


def _metadata(memories: list[tuple[str, str]]) -> dict[str, Any]:
    counts = collections.Counter(w for _, c in memories for w in _words(c))
    tags = [w for w, _ in counts.most_common(5)]
    return {
        "participants": [],
        "tools_used": [],
        "entities": tags[:3],
        "key_decisions": [],
        "outcome": "unknown",
        "tags": tags,
    }


STRUCTURED_CUES = (
    ("fix", re.compile(r"\b(fixed|resolved|works now)\b", re.I)),
    ("decision", re.compile(r"\b(decided|decision|chose|going with|switch(ed)? to)\b", re.I)),
    ("error", re.compile(r"\b(error|failed|failure|crash|broken)\b", re.I)),
    ("discovery", re.compile(r"\b(found|root cause|turns out)\b", re.I)),
)
LESSON_WORDS = re.compile(r"\b(lesson|learned|next time|gotcha|never|always)\b", re.I)


def structured_answer(memories: list[tuple[str, str]], title: str) -> dict[str, Any]:
    """A plausible structured record citing the prompt's memory ids (cue words, like a model
    that reads them): events, decisions from "decided", lessons from "lesson"/"learned"."""
    events, decisions, lessons = [], [], []
    for mid, content in memories:
        first = content.split(". ")[0].strip()[:200] or "Untitled"
        kind = next((k for k, rx in STRUCTURED_CUES if rx.search(content)), None)
        if kind:
            events.append({"type": kind, "text": first, "memory_ids": [mid]})
        if kind == "decision":
            decisions.append(
                {
                    "context": "from the memories",
                    "options": [],
                    "chosen": first,
                    "rationale": "stated in the memory",
                    "outcome": None,
                    "memory_ids": [mid],
                }
            )
        if LESSON_WORDS.search(content):
            lessons.append({"text": first, "memory_ids": [mid]})
    kinds = [e["type"] for e in events if e["type"] in ("error", "fix")]
    outcome = "unknown" if not kinds else ("success" if kinds[-1] == "fix" else "failure")
    return {
        "task": title[:200],
        "outcome": outcome,
        "outcome_reason": f"fake: last error/fix cue is {kinds[-1] if kinds else 'none'}",
        "decisions": decisions,
        "events": events,
        "lessons": lessons,
    }


def _title_in(user: str) -> str | None:
    found = re.search(r"<title>(.*?)</title>", user, re.S)
    return html.unescape(found.group(1)).strip() if found else None


def default_answer(purpose: str | None, user: str, system: str = "") -> dict[str, Any]:
    """A valid, plausible JSON answer for each prompt purpose."""
    mems = _memories(user)
    if purpose == "classify":
        return _classify(user)
    if purpose == "merge":  # a careful model: no merge unless told (scripted by a test)
        return merges(*((e, None) for e in merge_checks(user)))
    if purpose == "split":  # a careful model: one thread unless told (scripted by a test)
        return splits(*((e, False) for e in merge_checks(user)))
    title = _title_in(user) or _title_from(mems[0][1] if mems else user)
    if purpose == "title":
        return {"title": title}
    if purpose == "metadata":
        return {"metadata": _metadata(mems)}
    answer: dict[str, Any] = {"title": title, "summary": _summary_from(mems)}
    if purpose == "final" or '"metadata"' in system:
        answer["metadata"] = _metadata(mems)
    if '"structured"' in system:
        answer["structured"] = structured_answer(mems, title)
    return answer


def default_reply(request: Recorded) -> Reply:
    """The default responder: per-purpose valid JSON."""
    system = "\n".join(
        str(m.get("content") or "") for m in request.messages if m.get("role") == "system"
    )
    user = "\n".join(
        str(m.get("content") or "") for m in request.messages if m.get("role") != "system"
    )
    if "prompt" in request.body:  # Ollama /api/generate: litellm flattens the chat
        head, _, tail = str(request.body["prompt"]).partition("### User:")
        system, user = (head, tail) if tail else (system, head)
    return Reply.json(default_answer(request.purpose, user, system))


def final_naming(names: list[str], key: str = "entities") -> Callable[[Recorded], Reply]:
    """A responder whose final summaries' metadata lists ``names`` under ``key`` (``entities``
    or ``tools_used``); the default answer otherwise."""

    def answer(request: Recorded) -> Reply:
        reply = default_reply(request)
        if request.purpose != "final":
            return reply
        data = json.loads(reply.content or "{}")
        data["metadata"][key] = names
        return Reply.json(data)

    return answer


class FakeLLM:
    """The server. Use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, default_delay: float = 0.0
    ) -> None:
        self.host, self.port = host, port
        self.default_delay = default_delay
        self.responder: Callable[[Recorded], Reply] = default_reply
        self.requests: list[Recorded] = []
        self._queue: collections.deque[Reply] = collections.deque()
        self._lock = threading.Lock()
        self._received = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()

    @property
    def base_url(self) -> str:
        """OpenAI-style base, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """Ollama-style base, e.g. ``http://127.0.0.1:PORT``."""
        return f"http://{self.host}:{self.port}"

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def script(self, *replies: Reply) -> None:
        """Queue replies, used one per request in order."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
        self.responder = default_reply
        self.default_delay = 0.0

    def by_purpose(self, purpose: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.purpose == purpose]

    def wait_for_calls(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests were received (True) or ``timeout`` passed (False)."""
        with self._received:
            return self._received.wait_for(lambda: len(self.requests) >= count, timeout)

    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            self._received.notify_all()
            if self._queue:
                return self._queue.popleft()
        return self.responder(request)

    def start(self) -> FakeLLM:
        fake = self
        self._stopping.clear()

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut open keep-alive connections (the provider is "down")."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; returns early (True) when the server is stopping."""
        return self._stopping.wait(seconds)

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    owner: FakeLLM
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        with self.owner._lock:
            self.owner._conns.add(self.connection)

    def finish(self) -> None:
        with self.owner._lock:
            self.owner._conns.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/") == "/stats":  # for tests that run the fake as a process
            with self.owner._lock:
                purposes = collections.Counter(r.purpose for r in self.owner.requests)
                count = len(self.owner.requests)
            self._send(200, json.dumps({"requests": count, "by_purpose": dict(purposes)}))
        elif self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": []}))
        else:
            self._send(404, json.dumps({"error": {"message": "not found"}}))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, json.dumps({"error": {"message": "body is not JSON"}}))
            return
        path = self.path.split("?")[0].rstrip("/")
        if path == "/delay":  # for tests that run the fake as a process
            self.owner.default_delay = float(body["seconds"])
            self._send(200, json.dumps({"delay": self.owner.default_delay}))
            return
        if path == "/api/show":
            self._send(200, json.dumps({"model_info": {}, "template": ""}))
            return
        if not path.endswith(("/chat/completions", "/api/chat", "/api/generate")):
            self._send(404, json.dumps({"error": {"message": f"no route {path}"}}))
            return
        system = " ".join(
            str(m.get("content") or "")
            for m in body.get("messages") or []
            if m.get("role") == "system"
        ) + str(body.get("system") or "")
        system += str(body.get("prompt") or "") if not system else ""
        found = PURPOSE_RE.search(system)
        request = Recorded(path=path, body=body, purpose=found.group(1) if found else None)
        reply = self.owner._next(request)
        delay = reply.delay or self.owner.default_delay
        if delay and self.owner.wait(delay):
            return
        if reply.delay and reply.content is None and reply.raw_body is None and reply.status == 200:
            reply = _merge(reply, self.owner.responder(request))
        self._answer(path, request, reply)

    def _answer(self, path: str, request: Recorded, reply: Reply) -> None:
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body)
            return
        content = reply.content or ""
        prompt_tokens = (
            reply.prompt_tokens
            if reply.prompt_tokens is not None
            else estimate_tokens(request.text)
        )
        completion_tokens = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else estimate_tokens(content)
        )
        model = request.model or "fake"
        if path.endswith("/chat/completions"):
            payload: dict[str, Any] = {
                "id": f"chatcmpl-fake-{len(self.owner.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": reply.finish_reason,
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                }
                if reply.usage is None
                else reply.usage,
            }
        else:
            payload = {
                "model": model,
                "created_at": "2026-01-01T00:00:00Z",
                "done": True,
                "done_reason": "stop" if reply.finish_reason == "stop" else "length",
                "prompt_eval_count": prompt_tokens,
                "eval_count": completion_tokens,
            }
            if path.endswith("/api/chat"):
                payload["message"] = {"role": "assistant", "content": content}
            else:
                payload["response"] = content
        self._send(reply.status, json.dumps(payload))

    def _send(self, status: int, text: str) -> None:
        data = text.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to do


def _merge(slow: Reply, answer: Reply) -> Reply:
    answer.usage = slow.usage if slow.usage is not None else answer.usage
    answer.prompt_tokens = (
        slow.prompt_tokens if slow.prompt_tokens is not None else answer.prompt_tokens
    )
    answer.completion_tokens = (
        slow.completion_tokens if slow.completion_tokens is not None else answer.completion_tokens
    )
    return answer


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running :class:`FakeLLM`; ``fake_llm.base_url`` is the OpenAI api_base."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def fake_llm_env(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """:func:`fake_llm` plus ``OPENAI_API_KEY=x`` and ``OPENAI_BASE_URL`` pointing at it."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    return fake_llm


def agreeing_reply(request: Recorded) -> Reply:
    """A model that agrees with every check (for crash drills of consolidation): a checked
    episode is the same thread as its first candidate, a split check's parts are two threads;
    other purposes as :func:`default_reply`."""
    if request.purpose not in ("merge", "split", "classify"):
        return default_reply(request)
    user = "\n".join(
        str(m.get("content") or "") for m in request.messages if m.get("role") != "system"
    )
    same = []
    for checked, body in re.findall(r'<check episode_id="([^"]+)">(.*?)</check>', user, re.S):
        candidates = EPISODE_RE.findall(body.partition("<candidates>")[2])
        same.append((checked, candidates[0][0] if candidates else None))
    if request.purpose == "merge":
        return Reply.json(merges(*same))
    if request.purpose == "split":
        return Reply.json(splits(*((e, True) for e in merge_checks(user))))
    answer = _classify(user)
    if same:
        answer["merges"] = merges(*same)["merges"]
    return Reply.json(answer)


def run_forever(
    host: str = "127.0.0.1", port: int = 0, delay: float = 0.0, agree: bool = False
) -> None:
    """Serve until the process is killed; prints ``READY <base_url>`` once listening."""
    fake = FakeLLM(host, port, default_delay=delay).start()
    if agree:
        fake.responder = agreeing_reply
    print(f"READY {fake.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument(
        "--agree", action="store_true", help="agree with every merge and split check"
    )
    args = parser.parse_args(argv)
    run_forever(args.host, args.port, args.delay, args.agree)


if __name__ == "__main__":
    main()
