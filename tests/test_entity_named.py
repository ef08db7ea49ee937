"""The entities an LLM's record names, kept for a memory when its text writes them: a pure
function on small hand-written texts."""

from __future__ import annotations

import pytest

from tribalmemory.entities import canonical, extract_entities
from tribalmemory.entities.named import NAME_MAX, named_mentions

TEXT = (
    "Moved the nightly batch to zorbctl; the ZORBCTL nodes drain fine. See src/auth/refresh.py "
    "and PR #2214, bumped to v1.8.2. The Orders Service (orders-svc) agrees."
)


def test_a_tool_the_rules_miss_is_kept_with_every_way_the_text_writes_it() -> None:
    assert "zorbctl" not in {e.name for e in extract_entities(TEXT)}  # the rules miss it
    assert named_mentions(TEXT, ["zorbctl"]) == {"zorbctl": ("name", ["zorbctl", "ZORBCTL"])}


def test_the_kind_is_the_rules_kind_when_one_entity_spans_the_name() -> None:
    got = named_mentions(TEXT, ["src/auth/refresh.py", "#2214", "1.8.2", "Nightly Batch"])
    assert got == {
        "src/auth/refresh.py": ("path", ["src/auth/refresh.py"]),
        "#2214": ("ticket", ["#2214"]),
        "v1.8.2": ("version", ["v1.8.2"]),  # found by its canonical form
        "nightly-batch": ("name", ["nightly batch"]),
    }


def test_spellings_of_one_entity_meet_under_its_canonical_name() -> None:
    got = named_mentions(TEXT, ["Orders Service", "orders-svc"])
    assert got == {"orders-service": ("name", ["Orders Service", "orders-svc"])}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (TEXT, "kubernetes"),  # not written at all
        (TEXT, "refresh.py"),  # only inside a longer path
        (TEXT, "auth/refresh"),  # the start of a longer path
        (TEXT, "karp"),  # part of a word
        (TEXT, "2214"),  # inside the ticket
        ("The orders-svc agrees.", "orders"),  # part of a hyphenated name
        ("Set it in config.zorbctl first.", "zorbctl"),  # part of a dotted name
        ("Pass --zorbctl to it.", "zorbctl"),  # inside a flag
    ],
)
def test_a_name_the_text_does_not_write_whole_is_not_kept(text: str, name: str) -> None:
    assert named_mentions(text, [name]) == {}


@pytest.mark.parametrize(
    "name", ["", "   ", "the", "API", "api", "UTF-8", "users", "SELECT", "German", "x" * 81]
)
def test_names_that_name_no_one_thing_are_dropped(name: str) -> None:
    text = f"The {name} and the API, users, SELECT, German: the {name} again."
    assert named_mentions(text, [name]) == {}


def test_a_long_name_up_to_the_limit_is_kept() -> None:
    name = "a" * NAME_MAX
    assert named_mentions(f"see {name} now", [name]) == {name: ("name", [name])}


def test_names_are_matched_in_any_case_and_across_line_breaks() -> None:
    got = named_mentions("Paging goes through Night\nShift Rota now.", ["night shift rota"])
    assert got == {"night-shift-rota": ("name", ["Night\nShift Rota"])}


def test_a_word_beside_a_slash_a_bare_release_and_a_ticket_after_its_repository() -> None:
    text = "Shipped for PC/Xbox in 5.11.2, see wren-eval#188 and src/auth/refresh.py."
    got = named_mentions(text, ["Xbox", "v5.11.2", "#188", "auth"])
    assert got == {
        "xbox": ("name", ["Xbox"]),
        "v5.11.2": ("version", ["5.11.2"]),
        "#188": ("ticket", ["#188"]),
        "auth": ("name", ["auth"]),  # a word: a folder of a path writes it too
    }


@pytest.mark.parametrize("name", ["Android", "iOS", "--fasta"])
def test_a_product_or_a_flag_spelled_like_a_generic_word_is_kept(name: str) -> None:
    assert set(named_mentions(f"Ran it on {name} first.", [name])) == {canonical(name)}
