"""Updated facts are not dropped as near-duplicates (issue 16, point 3): the pure decision in
service/dedup.py, and remember() on a real store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tribalmemory.config import config_from_dict
from tribalmemory.runtime import start_runtime
from tribalmemory.service import dedup
from tribalmemory.service.dedup import NearDuplicate, decide, differences, is_same_fact
from tribalmemory.shapes import RememberRequest

UPDATES = [
    (
        "The API rate limit is 100 requests per minute",
        "The API rate limit is 1000 requests per minute",
    ),
    ("The build image uses Python 3.11", "The build image uses Python 3.12"),
    (
        "Code freeze for the release starts 2026-03-14",
        "Code freeze for the release starts 2026-03-21",
    ),
    ("Code freeze starts on March 14", "Code freeze starts on April 14"),
    ("The billing service is owned by Alice", "The billing service is owned by Bob"),
    ("Config lives in settings_prod.yaml", "Config lives in settings_stage.yaml"),
    ("We deploy on Fridays", "We do not deploy on Fridays"),
    ("We don't cache the session tokens", "We cache the session tokens"),
]

RESTATEMENTS = [
    ("The build image uses Python 3.11", "the build image uses python 3.11."),
    ("Limit: 1,000 requests per minute", "Limit: 1000 requests per minute"),
    ("We don't deploy on Fridays", "We do not deploy on Fridays!"),
    ("Deploys go through ArgoCD", "  Deploys go through ArgoCD  "),
]


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_a_changed_number_version_date_name_or_negation_is_a_new_fact(old: str, new: str) -> None:
    assert differences(new, old), f"{new!r} restates {old!r}?"
    assert not is_same_fact(new, old) and not is_same_fact(old, new)


@pytest.mark.parametrize(("old", "new"), RESTATEMENTS)
def test_case_punctuation_and_spacing_do_not_make_a_new_fact(old: str, new: str) -> None:
    assert differences(new, old) == []


def test_fact_tokens_are_numbers_versions_names_and_identifiers() -> None:
    tokens = dedup.fact_tokens("The worker in api/jobs.py retries 3 times on Redis v7.2 failures")
    assert tokens == {"api/jobs.py", "3", "redis", "v7.2"}  # "The" opens the sentence


def test_decide_prefers_a_real_duplicate_and_else_supersedes_the_nearest() -> None:
    new = "The build image uses Python 3.12"
    older = NearDuplicate("m-old", "The build image uses Python 3.11")
    same = NearDuplicate("m-same", "the build image uses Python 3.12.")
    assert decide(new, [older, same]) == dedup.DedupDecision(duplicate_of="m-same")
    assert decide(new, [older]) == dedup.DedupDecision(supersedes="m-old")
    assert decide(new, []) == dedup.DedupDecision()


def test_the_message_names_the_api_field_and_the_cli_flag() -> None:
    message = dedup.duplicate_message("m-1")
    assert "skip_dedup" in message and "--force" in message and "m-1" in message


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Any]:
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": {"enabled": False}})
    runtime = await start_runtime(config)
    yield runtime.service
    await runtime.stop()


async def test_remember_stores_updates_and_links_them_but_not_restatements(service: Any) -> None:
    first = await service.remember(
        RememberRequest(content="The API rate limit is 100 requests per minute")
    )
    update = await service.remember(
        RememberRequest(content="The API rate limit is 1000 requests per minute")
    )
    assert update.success, update.error
    stored = await service.get(update.memory_id)
    assert stored.supersedes == first.memory_id
    again = await service.remember(
        RememberRequest(content="the API rate limit is 1000 requests per minute.")
    )
    assert not again.success and again.duplicate_of == update.memory_id
    assert "skip_dedup" in again.error and "--force" in again.error
    assert (await service.stats())["total_memories"] == 2
