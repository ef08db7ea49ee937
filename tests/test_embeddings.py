"""The bundled offline model gives real, model-quality similarities."""

import numpy as np
import pytest

from tribalmemory.embeddings import BUNDLED_MODEL, EmbeddingModelError, load_embedder
from tribalmemory.embeddings.embedder import (
    BUNDLED_DIM,
    BUNDLED_MAX_TOKENS,
    CHARS_PER_TOKEN_BOUND,
    SINGLE_THREAD_TOKEN_BUDGET,
    STOP_SPINNING,
    TOKEN_BUDGET,
    Embedder,
    bundled_weights,
    estimated_tokens,
    token_counter,
    tokenizer_dir,
)


def test_bundled_model_loads_offline_and_ranks_paraphrases_above_unrelated(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = load_embedder()
    assert embedder.model_name == BUNDLED_MODEL and embedder.dim == 384
    vectors = embedder.embed(
        [
            "How do I run the billing service tests?",
            "What is the command to execute the billing test suite?",
            "The office coffee machine is broken again.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    paraphrase, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert paraphrase > 0.55 and unrelated < 0.2


def test_batch_order_is_kept_and_matches_single_embeddings():
    embedder = load_embedder()
    texts = ["a much longer sentence about database migrations and pgloader", "short", "mid one"]
    batch = embedder.embed(texts)
    for text, row in zip(texts, batch, strict=True):
        assert float(row @ embedder.embed_one(text)) > 0.999


# Their order by characters is not their order by tokens: digits and punctuation take a token
# each, a long known word one, a word over 100 characters one ([UNK]).
UNEVEN = [
    "ok",
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30",
    "internationalization " * 12,
    "the refresh token rotation race needs a grace window " * 40,  # cut at 256 tokens
    "Deploy failed: ECONNRESET at 10.0.3.7:5432 (pgbouncer), retry #3/5",
    "merci",
    "x" * 600,
    "a. b. c. d. e. f. g. h.",
]


class RecordingModel:
    """The real fastembed model; records the texts of every ONNX run."""

    def __init__(self, model):
        self.model = model
        self.runs = []

    def embed(self, texts, batch_size):
        self.runs.append(list(texts))
        return self.model.embed(texts, batch_size=batch_size)


def test_runs_are_sorted_by_token_count_and_give_one_by_one_vectors_in_order():
    real = load_embedder()
    count = token_counter(real._model)
    assert count is not None
    recording = RecordingModel(real._model)
    budget = SINGLE_THREAD_TOKEN_BUDGET
    embedder = Embedder(BUNDLED_MODEL, recording, BUNDLED_DIM, BUNDLED_MAX_TOKENS, count, budget)
    texts = UNEVEN * 3
    vectors = embedder.embed(texts)
    in_runs = [count(run) for run in recording.runs]
    flat = [n for run in in_runs for n in run]
    assert flat == sorted(count(texts))  # by tokens, not characters: little padding
    assert sorted(t for run in recording.runs for t in run) == sorted(texts)
    for run in in_runs:
        assert len(run) * max(run) <= budget or len(run) == 1
    # Row i is text i's vector as embedded alone. Tolerance: padding inside a run only
    # changes float sums in the last bits (measured: equal, or 1.5e-8 apart).
    alone = np.stack([real.embed([t])[0] for t in UNEVEN])
    np.testing.assert_allclose(vectors, np.concatenate([alone] * 3), atol=1e-6)


def test_token_counts_are_the_models_own_and_estimated_without_a_tokenizer():
    real = load_embedder()
    tokenizer = real._model.model.tokenizer
    padded = tokenizer.encode_batch(UNEVEN)  # fastembed's: padded to the longest
    assert real.tokens(UNEVEN) == [sum(e.attention_mask) for e in padded]
    assert real.tokens(UNEVEN)[3] == BUNDLED_MAX_TOKENS
    assert tokenizer.padding is not None  # the copy's padding was turned off, not the model's
    assert token_counter(object()) is None
    # one thread (imports, ingests): small runs; several (requests): larger ones
    assert load_embedder(threads=1).budget == SINGLE_THREAD_TOKEN_BUDGET < TOKEN_BUDGET
    assert real.budget == TOKEN_BUDGET
    guessing = Embedder(BUNDLED_MODEL, real._model, BUNDLED_DIM, BUNDLED_MAX_TOKENS)
    assert guessing.tokens(UNEVEN) == [estimated_tokens(t, BUNDLED_MAX_TOKENS) for t in UNEVEN]


def test_long_texts_count_as_the_most_the_model_reads_without_being_tokenized():
    real = load_embedder()
    count = token_counter(real._model)
    assert count is not None
    handed: list[str] = []

    def recording(texts: list[str]) -> list[int]:
        handed.extend(texts)
        return count(texts)

    embedder = Embedder(BUNDLED_MODEL, real._model, BUNDLED_DIM, BUNDLED_MAX_TOKENS, recording)
    longest = BUNDLED_MAX_TOKENS * CHARS_PER_TOKEN_BOUND
    long_text = "x" * longest  # one [UNK] token: the bound overestimates it, never under
    just_under = "1 " * ((longest - 1) // 2)  # one token a character: tokenized, cut at 256
    assert embedder.tokens([long_text, "short", just_under]) == [BUNDLED_MAX_TOKENS, 3, 256]
    assert handed == ["short", just_under]


def test_tokenizer_ships_as_package_data_with_its_notice():
    folder = tokenizer_dir()
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "config.json",
        "special_tokens_map.json",
        "NOTICE",
    ):
        assert (folder / name).is_file()
    assert bundled_weights().name == "model.onnx"


def test_unknown_model_name_fails_with_a_clear_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbeddingModelError, match="need a network"):
        load_embedder("no-such-org/no-such-model")


def test_the_models_threads_stop_spinning_when_a_run_ends():
    import onnxruntime as ort

    for embedder in (load_embedder(), load_embedder(threads=1)):
        session = embedder._model.model.model  # fastembed's model's onnxruntime session
        options = session.get_session_options()
        assert options.get_session_config_entry(STOP_SPINNING[0]) == STOP_SPINNING[1]
    assert isinstance(ort.SessionOptions, type)  # fastembed's class is given back after loading
