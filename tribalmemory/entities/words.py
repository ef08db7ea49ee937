"""English words, as the bundled model's tokenizer holds them whole (its 30,000 word pieces,
learned from English text): a dictionary read once, which tells a common word (``desktop``,
``long``) from a team's made-up name for a component (``bidgen``, ``storefeed``)."""

from __future__ import annotations

import functools
import json
from importlib.resources import files

_TOKENIZER = ("embeddings", "data", "all-MiniLM-L6-v2-tokenizer", "tokenizer.json")


@functools.cache
def english_words() -> frozenset[str]:
    """The tokenizer's whole words in small letters (not its ``##`` word endings)."""
    path = files("tribalmemory").joinpath(*_TOKENIZER)
    vocab: dict[str, int] = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    return frozenset(word for word in vocab if word.isalpha() and word.islower())
