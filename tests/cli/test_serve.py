"""``assay serve``'s options (issue 14): ``--slots`` sets sandbox slots; ``--workers`` is a
deprecated alias that says so; the service guide's default matches the code."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.server import serving

GUIDE = Path(__file__).resolve().parents[2] / "docs/guides/service.md"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(serving, "serve", lambda *a, **k: calls.append(a))
    return calls


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["serve", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_slots_sets_sandbox_slots(served: list[tuple[Any, ...]]) -> None:
    result = invoke("--slots", "3")
    assert result.exit_code == 0, result.output
    assert served == [("127.0.0.1", 8080, 3, False)]
    assert "deprecated" not in result.output


def test_workers_is_a_deprecated_alias(served: list[tuple[Any, ...]]) -> None:
    result = invoke("--workers", "5")
    assert result.exit_code == 0, result.output
    assert served == [("127.0.0.1", 8080, 5, False)]
    assert "--workers is deprecated" in result.output and "--slots" in result.output


def test_bad_slots_name_the_option(served: list[tuple[Any, ...]]) -> None:
    for flag in ("--slots", "--workers"):
        result = invoke(flag, "0")
        assert result.exit_code == 2 and flag in result.output
    assert served == []


def test_auto_is_two_per_cpu_as_the_guide_says() -> None:
    cpus = len(os.sched_getaffinity(0))
    assert serving.slot_count("auto") == 2 * cpus
    text = GUIDE.read_text()
    assert re.search(r"assay serve .*--slots auto = 2 per CPU", text)
    assert "cores + 1" not in text and "serve --workers" not in text
    help_text = invoke("--help").output
    assert "--slots" in help_text and "2 per CPU" in help_text


@pytest.fixture
def no_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASSAY_API_TOKEN", "ASSAY_API_TOKENS", "ASSAY_API_TOKENS_FILE"):
        monkeypatch.delenv(name, raising=False)


def test_an_open_address_without_tokens_is_refused(
    served: list[tuple[Any, ...]], no_tokens: None
) -> None:
    # Issue 26: `--host 0.0.0.0` served anyone who could reach it, with no token at all.
    for host in ("0.0.0.0", "::", "10.1.2.3", "myhost.example"):
        result = invoke("--host", host)
        assert result.exit_code == 2, (host, result.output)
        assert result.output.startswith("error: refusing to serve on"), result.output
        assert "--insecure-no-auth" in result.output and result.output.count("\n") == 1
    assert served == []


def test_loopback_tokens_or_the_explicit_flag_are_served(
    served: list[tuple[Any, ...]], no_tokens: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert invoke("--host", host).exit_code == 0, host
    assert invoke("--host", "0.0.0.0", "--insecure-no-auth").exit_code == 0
    monkeypatch.setenv("ASSAY_API_TOKENS", "alice:" + "a" * 24)
    assert invoke("--host", "0.0.0.0").exit_code == 0
    assert [call[0] for call in served] == ["127.0.0.1", "::1", "localhost", "127.0.0.2"] + [
        "0.0.0.0"
    ] * 2


def test_a_malformed_token_entry_stops_serve_at_once(
    served: list[tuple[Any, ...]], no_tokens: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_API_TOKENS", "alice:" + "a" * 24 + ",bob")
    result = invoke()
    assert result.exit_code == 2 and "ASSAY_API_TOKENS entry 2" in result.output
    assert served == []


@pytest.mark.slow
@pytest.mark.parametrize("flag", [False, True], ids=["default", "--access-log"])
def test_access_log_is_a_line_per_request_only_when_asked(flag: bool, tmp_path: Path) -> None:
    """A real ``assay serve``: off by default (a JSON line per request on a step's hot
    path), a line per request with ``--access-log``."""
    import httpx

    from serve_helpers import assay_serve

    log = tmp_path / "serve.log"
    args = ["--slots", "1", "--records", "off", *(["--access-log"] if flag else [])]
    with assay_serve(*args, env={**os.environ, "ASSAY_API_TOKEN": ""}, log=log) as url:
        assert httpx.get(f"{url}/no-such-page-xyz").status_code == 404
    lines = [x for x in log.read_text().splitlines() if "no-such-page-xyz" in x]
    assert len(lines) == (1 if flag else 0), log.read_text()[-2000:]
