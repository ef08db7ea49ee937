"""Sizes of the episode engine's prompts and answers: input budgets, answer limits, token caps."""

from __future__ import annotations

import re

PURPOSES = ("classify", "merge", "split", "update", "regenerate", "final")
MARKER = "tm-purpose: {purpose}"

#: The longest title accepted: what the API accepts for a user's title (``episode_create``),
#: since the summary prompts show the episode's title and the model keeps it.
TITLE_MAX = 200
#: The length the prompts ask for when the model writes a title.
TITLE_TARGET = 80
SUMMARY_MAX = 1200
LIST_MAX_ITEMS = 20
ITEM_MAX = 100
OUTCOMES = ("success", "failure", "partial", "ongoing", "unknown")
METADATA_KEYS = ("participants", "tools_used", "entities", "key_decisions", "outcome", "tags")

# Input budgets (characters / counts) that bound the prompt size and so its cost.
NEW_MEMORY_CHARS = 2000
MEMORY_CHARS = 1500
SNIPPET_CHARS = 300
CANDIDATE_SUMMARY_CHARS = 600
SNIPPETS_PER_CANDIDATE = 3
SNIPPETS_PER_CHECK = 6  # a merge check judges two whole episodes: show more of each
MAX_CANDIDATES = 20
MAX_BATCH = 8  # new memories in one classify call
MAX_MEMORIES = 40
HEAD_MEMORIES = 5
MAX_NEW_MEMORIES = 10

#: The structured part (task, outcome, decisions, events, lessons, facts) rides in the same
#: answer as the summary of ``regenerate`` and ``final``: no extra call, more output tokens
#: (facts added 300 to each: ten facts of about 30 tokens; causes 200 more: events' caused_by /
#: leads_to ids of about 15 tokens each, decisions' type and effects; the final's entities 100
#: more: 20 names, not 8, of about 8 tokens each, since its record vouches for the names found).
#: ``classify``, ``merge`` and ``split`` answer a list: these are tokens an item, plus
#: :data:`LIST_ANSWER_TOKENS` for the list around them. Sized on the longest valid items
#: (ids of uuid length, an 80-character title) printed with indents, as a model may: a cap
#: that is too tight truncates the JSON, and the whole answer is lost (tests/test_prompts.py).
MAX_TOKENS = {
    "classify": 95,
    "merge": 50,
    "split": 40,
    "update": 450,
    "regenerate": 1700,
    "final": 2100,
}
LIST_ANSWER_TOKENS = 25

#: Control characters: never in an attribute of a rendered memory, nor in a one-line answer.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
