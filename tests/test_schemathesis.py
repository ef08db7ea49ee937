"""Property-based run against /openapi.json of a real daemon: no input yields a 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from helpers_http import Daemon, start_daemon
from hypothesis import HealthCheck, given, settings


@pytest.fixture(scope="module")
def episode_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(
        tmp_path_factory.mktemp("schemathesis"), episodes={"detector_strategy": "embedding"}
    )
    yield running
    running.stop()


def test_no_input_makes_the_daemon_fail(episode_daemon: Daemon) -> None:
    schema = schemathesis.openapi.from_url(f"{episode_daemon.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=20,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def no_server_error(case: Any) -> None:
            response = case.call(timeout=30)
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path} -> {response.status_code}: "
                f"{response.text[:300]}"
            )
            content_type = response.headers.get("content-type") or [""]
            assert content_type[0].startswith("application/json")

        no_server_error()


def test_the_log_has_no_traceback(episode_daemon: Daemon) -> None:
    text = Path(episode_daemon.output).read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text
