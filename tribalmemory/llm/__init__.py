"""The LLM layer of the episode engine: client, cost ledger and prompts.

Importing this package does not import litellm; the client imports it on first use.
"""

from .client import LLMClient, LLMUnavailable
from .ledger import Ledger, Reservation
from .prompts import (
    Classification,
    EpisodeMetadata,
    EpisodeText,
    MemoryText,
    MergeCheck,
    Prompt,
    SplitCheck,
    SummaryResult,
    Verdicts,
    build_classify,
    build_final,
    build_merge,
    build_regenerate,
    build_split,
    build_update,
)

__all__ = [
    "EpisodeText",
    "Classification",
    "EpisodeMetadata",
    "LLMClient",
    "LLMUnavailable",
    "Ledger",
    "MemoryText",
    "MergeCheck",
    "Prompt",
    "Reservation",
    "SplitCheck",
    "SummaryResult",
    "Verdicts",
    "build_classify",
    "build_final",
    "build_merge",
    "build_regenerate",
    "build_split",
    "build_update",
]
