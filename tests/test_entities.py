"""Entity extraction and alias rules, as pure functions on small hand-written fixtures."""

from __future__ import annotations

import pytest

from tribalmemory.entities import canonical, extract_entities


def found(text: str) -> dict[str, str]:
    return {e.text: e.kind for e in extract_entities(text)}


@pytest.mark.parametrize(
    "alias", ["orders-svc", "orders service", "Orders Service", "orders_service"]
)
def test_aliases_of_one_service_meet(alias: str) -> None:
    assert canonical(alias) == "orders-service"


def test_distinct_things_stay_apart() -> None:
    assert canonical("orders") != canonical("orders-service")
    assert canonical("orders-api") != canonical("orders-service")


def test_versions_paths_and_calls_have_one_spelling() -> None:
    assert canonical("0.9.2") == canonical("v0.9.2") == "v0.9.2"
    assert canonical("docs/") == "docs"
    assert canonical("//Depot/Builds/...") == "//depot/builds"
    assert canonical("flush()") == canonical("@flush") == "flush"


def test_tickets_versions_paths_and_code_names_are_found() -> None:
    text = (
        "Merged PR #4521 for BILL-77: billing-api v1.8.2 moves src/billing/tax.py and "
        "calls round_half_up() from TaxTable::apply under /v2/invoices with --dry-run."
    )
    got = found(text)
    assert got["#4521"] == "ticket"
    assert got["BILL-77"] == "ticket"
    assert got["billing-api"] == "system"
    assert got["v1.8.2"] == "version"
    assert got["src/billing/tax.py"] == "path"
    assert got["round_half_up"] == "identifier"
    assert got["TaxTable::apply"] == "identifier"
    assert got["/v2/invoices"] == "path"
    assert got["--dry-run"] == "identifier"


def test_mentions_carry_their_span() -> None:
    text = "We asked Ingrid Salo about #9001."
    spans = {e.text: (e.start, e.end) for e in extract_entities(text)}
    start, end = spans["Ingrid Salo"]
    assert text[start:end] == "Ingrid Salo"
    assert text[slice(*spans["#9001"])] == "#9001"


def test_capitalised_names_inside_a_sentence_are_found_but_not_stop_words() -> None:
    got = found("Yesterday we asked Bruno and the Kestrel team on Monday in March.")
    assert "Bruno" in got and "Kestrel" in got
    assert not {"Yesterday", "Monday", "March"} & set(got)


def test_units_acronyms_and_word_pairs_are_not_entities() -> None:
    got = found("The dump is 12 GB and the PAN check moved 2024/03/01; sign-out and gain/loss too.")
    assert not {"GB", "PAN", "2024/03/01", "sign-out", "gain/loss"} & set(got)


def test_a_known_name_is_found_at_a_sentence_start_and_in_lower_case() -> None:
    text = "Quill owns the migration. We run quill nightly."
    assert "Quill" not in found(text)
    names = [e.text for e in extract_entities(text, known={"quill"})]
    assert names == ["Quill", "quill"]


def test_a_known_capitalised_name_is_found_only_as_written() -> None:
    text = "Wren signed off. The wren in the logo is not her."
    assert [e.text for e in extract_entities(text, known={"Wren"})] == ["Wren"]
