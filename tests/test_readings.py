"""What the engine reads off a memory's text, kept (episodes/readings.py): each text is read
once while kept, equal texts share the answer, and the least recently used answer goes first."""

from __future__ import annotations

from collections.abc import Callable

from tribalmemory.episodes import statements, structured
from tribalmemory.episodes.readings import by_text, digest


def counted(maxsize: int) -> tuple[list[str], Callable[[str], str]]:
    calls: list[str] = []

    @by_text(maxsize)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    return calls, shout


def test_a_text_is_read_once_while_its_answer_is_kept() -> None:
    calls, shout = counted(2)
    alpha = "".join(["al", "pha"])
    assert shout("alpha") == "ALPHA" and shout("b") == "B"
    assert shout(alpha) == "ALPHA"  # an equal text built anew: kept
    assert calls == ["alpha", "b"]
    shout("c")  # "b" was used least recently: it goes
    assert shout("alpha") == "ALPHA" and calls == ["alpha", "b", "c"]
    shout("b")
    assert calls == ["alpha", "b", "c", "b"]


def test_the_digest_tells_texts_apart_and_keeps_none_of_them() -> None:
    assert digest("Postgres") == digest("".join(["Post", "gres"]))
    assert digest("Postgres") != digest("postgres") and len(digest("x" * 20_000)) == 16
    assert digest("\ud800") != digest("")  # a lone surrogate (JSON allows one) is digested too


def test_the_kept_readings_answer_as_the_rules_do() -> None:
    text = "We decided to pin pgloader to 3.6 because the newer one drops zero dates."
    for _ in range(2):  # the second answer is the kept one
        assert statements.decision(text) == text
        assert statements.lesson("Lesson learned: always pin the loader version.") is not None
        assert structured.event_type("The deploy failed with a timeout error.") == "error"
