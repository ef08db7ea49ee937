"""A name as the memories write it, word for word (``entities/written.py``): what an entity
read answers with for a name the extraction never stored."""

from __future__ import annotations

import pytest

from tribalmemory.entities.written import search_text, written_forms


@pytest.mark.parametrize(
    ("text", "name", "forms"),
    [
        # small letters: any case, each way of writing it once, in order
        (
            "Heron crashed; the heron pipeline retried; HERON is up.",
            "heron",
            ["Heron", "heron", "HERON"],
        ),
        # whole words only: not inside a longer word or an identifier
        ("The rebookings and bookings_v2 reports.", "bookings", []),
        ("Moved bookings, then bookings-archive.", "bookings", ["bookings"]),
        # a name with capitals is matched with them
        ("EX and ex and EXT", "EX", ["EX"]),
        ("the usubjid column", "USUBJID", []),
        ("ios and iOS", "iOS", ["iOS"]),
        # a capital opening a word only: any case
        ("the bookings table", "Bookings", ["bookings"]),
        # words parted by any run of spaces; other spellings are the stored entities' aliases
        ("Norvane  Tagus sailed", "Norvane Tagus", ["Norvane  Tagus"]),
        ("orders service and orders_svc", "orders-svc", []),
        # digits and punctuation inside the name are literal
        ("Firmware v4.1 shipped; r44 too.", "v4", []),  # a longer release
        ("Firmware v4. Then 1.2.4 and 2.4.", "v4", ["v4"]),
        ("Then 1.2.4 and 2.4.", "2.4", ["2.4"]),
        # a release with its v or without
        ("Shipped 4.8.0, then v4.8.0-rc1 and V4.8.0.", "v4.8.0", ["4.8.0", "V4.8.0"]),
        ("Shipped v2.14.1 and 12.14.1", "2.14.1", ["v2.14.1"]),
        ("see a.b.c and aXbXc", "a.b.c", ["a.b.c"]),
        ("anything", "  ", []),
    ],
)
def test_written_forms(text: str, name: str, forms: list[str]) -> None:
    assert written_forms(text, name) == forms


def test_a_release_is_looked_up_with_its_v_and_without() -> None:
    assert search_text("v4.8.0") == "v4.8.0 4.8.0"
    assert search_text("4.8.0-rc1") == "v4.8.0-rc1 4.8.0-rc1"
    assert search_text("heron pipeline") == "heron pipeline"
