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
    gold = lambda m: names_of.get(m, [])  # noqa: E731
    answer = json.loads(perfect_responder(gold, 1)(final).content or "{}")
    assert answer["metadata"]["entities"] == ["Larder"]
    answer = json.loads(perfect_responder(gold, 8)(final).content or "{}")
    assert answer["metadata"]["entities"] == ["Larder", "zorbctl"]
    other = Recorded(final.path, final.body, "regenerate")
    assert perfect_responder(gold, 8)(other).content == default_reply(other).content

    # below full accuracy a name may be a wrong one of the prompt's memories instead; seeded
    # by the prompt, so the same prompt gets the same answer
    wrong = {"a": ["Leeds"], "b": ["Leeds", "Hull"], "c": ["Elsewhere"]}
    wrong_of = lambda m: wrong.get(m, [])  # noqa: E731
    never = perfect_responder(gold, 8, wrong_of, 0.0)
    answer = json.loads(never(final).content or "{}")
    assert sorted(answer["metadata"]["entities"]) == ["Hull", "Leeds"]
    assert never(final).content == never(final).content
    always = perfect_responder(gold, 8, wrong_of, 1.0)
    assert json.loads(always(final).content or "{}")["metadata"]["entities"] == [
        "Larder",
        "zorbctl",
    ]


def test_the_entity_list_is_judged_on_the_entities_labelled_memories_name(
    tmp_path: Path,
) -> None:
    """entity_store.list_quality: an entity named in a labelled memory is right when its name or
    an alias is a labelled entity's canonical name or spelling; one named only in unlabelled
    memories is not judged; recall counts the labelled entities the list holds."""
    from entity_store import gold_forms, list_quality

    from tribalmemory.entities import mentions_of
    from tribalmemory.episodes.store import EpisodeStore

    text = "Moved to orders-svc in Leeds."
    rows = [{"id": "r1", "content": text}]
    labels = {"r1": [{"start": 9, "end": 19, "canonical": "Orders Service"}]}
    forms = gold_forms(rows, labels)
    assert forms == {"orders-service": {"orders-service"}}
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    try:
        with store.transaction() as db:
            store.entities.record_memory(db, "bench", "m1", 1.0, mentions_of(text))
            store.entities.record_memory(
                db, "bench", "m9", 2.0, mentions_of("The depot in Hull is slow.")
            )
        # Hull, named in an unlabelled memory only, is not judged
        assert [r["name"] for r in store.entities.listing("bench", None)] == [
            "hull",
            "leeds",
            "orders-service",
        ]
        assert list_quality(store, forms, {"m1"}, False) == [2, 1, 1, 1]
        with store.transaction() as db:  # a record read m1 and left Leeds out: doubted
            store.entities.review(db, {"m1": ["orders-service"]})
        assert list_quality(store, forms, {"m1"}, False) == [1, 1, 1, 1]
        assert list_quality(store, forms, {"m1"}, True) == [2, 1, 1, 1]
    finally:
        store.close()
