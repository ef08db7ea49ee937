"""Prompt builders and strict answer validators of the episode engine.

Each ``build_*`` returns a :class:`Prompt`: the chat ``messages``, the ``purpose`` (also written
as a ``tm-purpose: <name>`` marker on the first line of the system prompt), a per-purpose
``max_tokens`` and a ``validate`` callable that turns the parsed JSON answer into a typed result
or raises ``ValueError``. Memory text is data: it is placed inside ``<memory ...>...</memory>``
with ``&``, ``<`` and ``>`` escaped, so no content can close or open a tag, and the system
prompt says instructions inside memories are never followed.

Over-long answers (title > 200 characters, what the API accepts for a title; summary > 1200
characters, lists > 20 items or items > 100 characters) are rejected, not truncated: the
client retries and then falls back. The prompts ask for titles of at most 80 characters.

Parts: :mod:`.limits` (budgets and caps), :mod:`.render` (the shared builders: memories and
episodes as escaped data), :mod:`.system` (the system prompt of each purpose), :mod:`.answers`
(JSON parsing and strict checks), and one module per task family: :mod:`.classification`
(``classify``), :mod:`.consolidation` (``merge``, ``split``), :mod:`.summaries` (``update``,
``regenerate``, ``final``, with metadata and the structured record).
"""

from .answers import parse_json_object
from .classification import Classification, Verdicts, build_classify, validate_classify
from .consolidation import (
    MergeCheck,
    SplitCheck,
    build_merge,
    build_split,
    validate_merge,
    validate_split,
)
from .limits import (
    LIST_ANSWER_TOKENS,
    MAX_BATCH,
    MAX_CANDIDATES,
    MAX_MEMORIES,
    MAX_NEW_MEMORIES,
    MAX_TOKENS,
    MEMORY_CHARS,
    PURPOSES,
    SNIPPETS_PER_CANDIDATE,
    SNIPPETS_PER_CHECK,
    TITLE_MAX,
    TITLE_TARGET,
)
from .render import EpisodeText, MemoryText, Prompt, as_episode_text, as_memory
from .summaries import (
    EpisodeMetadata,
    SummaryResult,
    build_final,
    build_regenerate,
    build_update,
    validate_metadata,
    validate_summary,
)
from .system import CLASSIFY_ANSWER, CLASSIFY_ITEMS, SEED_TITLE, system_prompt

__all__ = [
    "CLASSIFY_ANSWER",
    "CLASSIFY_ITEMS",
    "LIST_ANSWER_TOKENS",
    "MAX_BATCH",
    "MAX_CANDIDATES",
    "MAX_MEMORIES",
    "MAX_NEW_MEMORIES",
    "MAX_TOKENS",
    "MEMORY_CHARS",
    "PURPOSES",
    "SEED_TITLE",
    "SNIPPETS_PER_CANDIDATE",
    "SNIPPETS_PER_CHECK",
    "TITLE_MAX",
    "TITLE_TARGET",
    "EpisodeText",
    "Classification",
    "EpisodeMetadata",
    "MemoryText",
    "MergeCheck",
    "Prompt",
    "SplitCheck",
    "SummaryResult",
    "Verdicts",
    "as_episode_text",
    "as_memory",
    "build_classify",
    "build_final",
    "build_merge",
    "build_regenerate",
    "build_split",
    "build_update",
    "parse_json_object",
    "system_prompt",
    "validate_classify",
    "validate_merge",
    "validate_metadata",
    "validate_split",
    "validate_summary",
]
