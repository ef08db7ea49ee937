"""The extraction's sure model (issue 43): pure functions over a found span and the shipped
model's file."""

from __future__ import annotations

import json
import re
from importlib.resources import files

import numpy as np
import pytest

from tribalmemory.entities import extract_entities, judged_mentions, warm_up
from tribalmemory.entities.confidence import (
    MODEL_FILE,
    SureModel,
    feature_names,
    span_features,
    sure_model,
    whole_word,
)
from tribalmemory.entities.mentions import WARM_UP_TEXT
from tribalmemory.entities.words import english_words


def test_every_span_has_one_value_per_feature_name() -> None:
    text = "See PAY-142: the `orders_db.py` fix by Priya Raman ships in v2.4.0 (KYC) today."
    found = extract_entities(text)
    assert len(found) >= 4
    for entity in found:
        assert len(span_features(text, entity)) == len(feature_names())


def test_what_a_span_is_taken_from() -> None:
    text = "The `ledger` job failed."
    (coded,) = extract_entities(text)
    values = dict(zip(feature_names(), span_features(text, coded), strict=True))
    assert values["in backticks"] == 1.0 and values["kind identifier"] == 1.0
    known = dict(zip(feature_names(), span_features(text, coded, {"ledger"}), strict=True))
    assert values["known name"] == 0.0 and known["known name"] == 1.0


def test_the_shipped_model_reads_these_features_and_says_how_it_was_chosen() -> None:
    model = sure_model()
    assert model.features == feature_names()
    assert 0.0 < model.threshold < 1.0
    assert "validation streams" in model.meta["threshold_rule"]
    assert model.meta["spans"]["validation"]["precision"] >= 0.85  # the rule that chose it


def test_a_model_fitted_on_other_features_is_refused() -> None:
    data = json.loads(files("tribalmemory.entities").joinpath(MODEL_FILE).read_text("utf-8"))
    data["features"] = data["features"][:-1]
    with pytest.raises(ValueError, match="fitted on other features"):
        SureModel.from_json(data)


def test_the_extraction_is_unsure_of_a_place_that_is_not_the_teams_and_sure_of_a_ticket() -> None:
    found, unsure = judged_mentions("The import moved to Leeds; see PAY-142.")
    assert set(found) == {"leeds", "pay-142"}
    assert unsure == {"leeds"}
    assert judged_mentions("") == ({}, set())


@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("kyc", "the kyc check"),
        ("kyc", "the kycs check"),
        ("kyc", "kyc"),
        ("v2.4.0", "on v2.4.0."),
        ("v2.4.0", "on v2.4.01"),
        (".net", "a .net app"),
        (".net", "asp.net app"),
        ("café", "le café_x et café"),
        ("a_b", "xa_b a_b"),
    ],
)
def test_awhole_word_is_what_re_calls_one(word: str, text: str) -> None:
    assert whole_word(word, text) is (re.search(rf"\b{re.escape(word)}\b", text) is not None)


def test_a_model_written_and_read_again_scores_the_same() -> None:
    model = sure_model()
    text = "See PAY-142: the `orders_db.py` fix by Priya Raman ships in v2.4.0 (KYC) today."
    rows = np.array([span_features(text, e) for e in extract_entities(text)])
    again = SureModel.from_json(json.loads(json.dumps(model.to_json())))
    assert np.array_equal(again.probabilities(rows), model.probabilities(rows))
    assert again.threshold == model.threshold and again.meta == model.meta


def test_the_warm_up_loads_what_the_first_extraction_would_read() -> None:
    """The daemon warms the extraction before its first answer (cli/service.py): the word
    list and the sure model are read then, not by the entity work's first step."""
    english_words.cache_clear()
    sure_model.cache_clear()
    warm_up()
    assert english_words.cache_info().currsize == 1
    assert sure_model.cache_info().currsize == 1
    found, _ = judged_mentions(WARM_UP_TEXT)
    # one entity of each common kind, so each kind's rules ran once
    assert {kind for kind, _ in found.values()} >= {"system", "ticket", "path", "version", "name"}
