"""Schemathesis against the live server's OpenAPI: whatever it sends, never a 5xx.

The same from the command line, against any running server:

    .venv/bin/schemathesis run http://127.0.0.1:8080/openapi.json --checks not_a_server_error \\
        --max-examples 50
"""

from __future__ import annotations

import hypothesis
import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from server_helpers import Live

pytestmark = pytest.mark.slow


def test_no_server_errors(server: Live) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [op.ok() for op in schema.get_all_operations()]
    assert len(operations) >= 10
    calls = 0
    for operation in operations:

        @hypothesis.given(case=operation.as_strategy())
        @hypothesis.settings(
            max_examples=12,
            deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: schemathesis.Case) -> None:
            nonlocal calls
            calls += 1
            response = case.call(base_url=server.url, timeout=30)
            case.validate_response(response, checks=[not_a_server_error])

        check()
    assert calls >= 5 * len(operations)
