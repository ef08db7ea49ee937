"""Entities named in memories, found without an LLM: pure functions, no I/O."""

from tribalmemory.entities.aliases import canonical
from tribalmemory.entities.extract import Entity, extract_entities
from tribalmemory.entities.mentions import judged_mentions, mentions_of, warm_up

__all__ = ["Entity", "canonical", "extract_entities", "judged_mentions", "mentions_of", "warm_up"]
