"""benchmarks/entities.py: another labelling of the kept-aside streams, and its agreement with the
labels, counted memory by memory on spans and canonical names."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from entities import (  # noqa: E402
    ASIDE,
    LABELS,
    TUNING,
    agreement,
    agreement_table,
    label_file,
    second_row,
)


def entity(start: int, end: int, canonical: str) -> dict:
    return {"start": start, "end": end, "canonical": canonical, "kind": "product"}


def test_another_labelling_replaces_the_kept_aside_streams_labels_only() -> None:
    assert label_file(ASIDE[0], "blind") == LABELS / "blind" / f"{ASIDE[0]}.jsonl"
    assert label_file(TUNING[0], "blind") == LABELS / f"{TUNING[0]}.jsonl"
    assert label_file(ASIDE[0]) == LABELS / f"{ASIDE[0]}.jsonl"


def test_agreement_counts_spans_and_names_memory_by_memory() -> None:
    gold = [
        {"id": "m001", "entities": [entity(0, 7, "Zendesk"), entity(10, 14, "0.14")]},
        {"id": "m002", "entities": []},
    ]
    other = [
        # the same span under an alias of the same name; one span more; the same name in
        # another memory does not match
        {"id": "m001", "entities": [entity(0, 7, "Zendesk"), entity(10, 14, "v0.14")]},
        {"id": "m002", "entities": [entity(0, 7, "Zendesk")]},
    ]
    assert agreement(gold, other) == {"span": (2, 3, 2), "name": (2, 3, 2)}
    assert agreement(other, gold) == {"span": (2, 2, 3), "name": (2, 2, 3)}


def test_a_second_labelling_is_compared_stream_by_stream_and_in_all() -> None:
    table = agreement_table("blind", ASIDE).splitlines()
    assert [line.split(" | ")[0] for line in table[4:]] == [f"| {s}" for s in ASIDE] + ["| all"]
    assert all(line.count("|") == 9 for line in table[4:])  # stream, memories, six figures


def test_a_stream_is_scored_against_both_labellings_side_by_side() -> None:
    first = {"span": (8, 10, 16), "name": (8, 10, 16)}
    second = {"span": (9, 10, 12), "name": (9, 10, 12)}
    assert second_row("s", 55, first, second) == "| s | 55 | 0.800 / 0.500 | 0.900 / 0.750 |"


def test_the_perfect_record_names_the_most_labelled_gold_entities_of_the_prompt() -> None:
    """benchmarks/entity_store.py --perfect-record: the fake model's final summary lists the
    gold names of the memories in its prompt, the most labelled first, at most N."""
    import json

    from entity_store import perfect_responder
    from fakellm import Recorded, default_reply

    names_of = {"a": ["zorbctl", "Larder"], "b": ["Larder"], "c": ["elsewhere"]}
    user = '<memory id="a">x</memory>\n<memory id="b">y</memory>'
    final = Recorded(
        "/v1/chat/completions",
        {
            "messages": [
                {"role": "system", "content": "tm-purpose: final"},
                {"role": "user", "content": user},
            ]
        },
        "final",
    )
    answer = json.loads(perfect_responder(names_of, 1)(final).content or "{}")
    assert answer["metadata"]["entities"] == ["Larder"]
    answer = json.loads(perfect_responder(names_of, 8)(final).content or "{}")
    assert answer["metadata"]["entities"] == ["Larder", "zorbctl"]
    other = Recorded(final.path, final.body, "regenerate")
    assert perfect_responder(names_of, 8)(other).content == default_reply(other).content
