"""The bundled offline model gives real, model-quality similarities."""

import numpy as np
import pytest

from tribalmemory.embeddings import BUNDLED_MODEL, EmbeddingModelError, load_embedder
from tribalmemory.embeddings.embedder import bundled_weights, tokenizer_dir


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
