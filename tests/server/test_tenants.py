"""Tokens to tenants (issue 26): where they come from, what a malformed entry says, and who
the caller of a request is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.server import Settings
from assay.server._service import caller_of
from assay.server.tenants import ANONYMOUS, SCOPE_KEY, Tenant, Tenants, load, parse_tokens

A, B = "a" * 24, "b" * 24


def test_a_token_file_allows_comments_and_blank_lines() -> None:
    text = f"# trainers\n\nalice:{A}\n  bob : {B}  \n# end\n"
    assert parse_tokens(text, "f") == [("alice", A), ("bob", B)]


@pytest.mark.parametrize(
    "line", ["bob", f"bob {B}", f":{B}", "bob:", f"b/b:{B}", f"bob:{B} x", f"{'n' * 65}:{B}"]
)
def test_a_malformed_line_names_its_line_and_never_the_token(line: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_tokens(f"# c\nalice:{A}\n{line}\n", "ASSAY_API_TOKENS_FILE /etc/t")
    assert "ASSAY_API_TOKENS_FILE /etc/t line 3: expected name:token" in str(err.value)
    assert B not in str(err.value)


def test_the_environment_list_names_the_entry() -> None:
    with pytest.raises(ConfigError, match="ASSAY_API_TOKENS entry 2"):
        load({"ASSAY_API_TOKENS": f"alice:{A},bob"})


def test_tokens_from_the_list_the_file_and_the_shared_token_are_one_set(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"bob:{B}\n")
    pairs, admins = load(
        {"ASSAY_API_TOKENS": f"alice:{A}", "ASSAY_API_TOKENS_FILE": str(path)}
        | {"ASSAY_ADMIN_TENANTS": " bob ,"}
    )
    settings = Settings(api_token="c" * 24, api_tokens=pairs, admin_tenants=admins)
    tenants = settings.tenants()
    assert tenants.authenticate(f"Bearer {A}".encode()) == Tenant("alice")
    assert tenants.authenticate(f"Bearer {B}".encode()) == Tenant("bob", admin=True)
    assert tenants.authenticate(b"Bearer " + b"c" * 24) == Tenant("default")
    assert "c" * 24 not in repr(settings) and A not in repr(settings)


@pytest.mark.parametrize(
    "header", [None, b"", A.encode(), b"Bearer ", b"Bearer x", b"Basic " + A.encode()]
)
def test_anything_but_a_configured_bearer_token_is_nobody(header: bytes | None) -> None:
    assert Tenants([("alice", A)]).authenticate(header) is None


def test_without_tokens_everyone_is_the_anonymous_admin() -> None:
    tenants = Settings().tenants()
    assert not tenants.enabled
    assert tenants.authenticate(None) is ANONYMOUS and ANONYMOUS.admin


@pytest.mark.parametrize(
    ("pairs", "admins", "message"),
    [
        ([("alice", A), ("alice", B)], frozenset(), "tenant 'alice' is given more than once"),
        ([("alice", A), ("bob", A)], frozenset(), "two tenants have the same token"),
        ([("alice", A)], frozenset({"ops"}), "ASSAY_ADMIN_TENANTS: ops is not a tenant"),
    ],
)
def test_an_inconsistent_set_is_a_startup_error(
    pairs: list[tuple[str, str]], admins: frozenset[str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Tenants(pairs, admins)


def test_an_unreadable_token_file_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ASSAY_API_TOKENS_FILE .*cannot read it"):
        load({"ASSAY_API_TOKENS_FILE": str(tmp_path / "missing")})


def _scope(tenant: Tenant, **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    return {SCOPE_KEY: tenant, "headers": raw, "client": ("10.0.0.7", 5555)}


def test_the_caller_is_the_tenant_whatever_the_header_or_body_says() -> None:
    bob = _scope(Tenant("bob"), x_assay_caller="alice")
    assert caller_of(bob) == "bob"
    assert caller_of(bob, "alice") == "bob"


def test_without_tokens_the_caller_is_the_body_the_header_or_the_address() -> None:
    assert caller_of(_scope(ANONYMOUS, x_assay_caller="grpo"), "sessions") == "sessions"
    assert caller_of(_scope(ANONYMOUS, x_assay_caller="grpo")) == "grpo"
    assert caller_of(_scope(ANONYMOUS)) == "10.0.0.7"


def test_a_request_that_skipped_the_gate_has_no_caller() -> None:
    with pytest.raises(RuntimeError, match="tenant gate"):
        caller_of({"headers": [], "client": None})
