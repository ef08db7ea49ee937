"""Shared fixtures: the fake LLM server, the HTTP and runtime helpers, and the reaper that ends
what a session started (see each module's docstring)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fakellm import fake_llm, fake_llm_env  # noqa: E402,F401

pytest_plugins = ["helpers_http", "helpers_runtime", "helpers_reaper"]

LONGEST_FIRST = (
    "test_durability.py",
    "test_damaged_files.py",
    "test_page_browser.py",
    "test_http.py",
    "test_mcp.py",
    "test_status.py",
    "test_forget.py",
    "test_storage_contract.py",
    "test_schemathesis.py",
    "test_portability.py",
    "test_conversations.py",
    "test_offline.py",
    "test_cli.py",
    "test_episode_edits.py",
    "test_all_projects.py",
    "test_structured_episodes.py",
    "test_disk_full.py",
    "test_agent_names.py",
    "test_identity.py",
    "test_causes.py",
    "test_privacy.py",
    "test_import_shutdown.py",
    "test_projects.py",
    "test_classify_batches.py",
    "test_entity_store.py",
    "test_memory_bounds.py",
    "test_scopes.py",
    "test_merge_checks.py",
)
"""The test files that take 28 s or more (each file's test times summed from ``--junitxml`` of a
full run with ``-n 2 --dist loadfile``, 2026-12-01), longest first. They run first: ``.ci/run``
gives whole files to its workers in collection order (``--dist loadfile
--no-loadscope-reorder``), so the run does not end on one long file while the other workers
wait. Files not listed follow in name order."""


def pytest_collection_modifyitems(items: list) -> None:
    rank = {name: number for number, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole
