"""Property-based run against /openapi.json of a real daemon.

No input yields a 5xx, every answer (success or error) has a documented status code, content
type and a body that conforms to the document's schema for it, and the daemon's log has no
traceback after the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from helpers_http import EPISODES, Daemon, start_daemon
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def episode_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("schemathesis"), episodes=EPISODES)
    yield running
    running.stop()


def test_every_answer_conforms_and_the_log_has_no_traceback(episode_daemon: Daemon) -> None:
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
        def conforms(case: Any) -> None:
            response = case.call_and_validate(checks=CHECKS, timeout=30)
            content_type = response.headers.get("content-type") or [""]
            assert content_type[0].startswith("application/json")

        conforms()

    # Read after the run it checks (one test: run alone, a separate check would read a log
    # of nothing): no input made the daemon log a traceback, even one answered with a 4xx.
    text = Path(episode_daemon.output).read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text
