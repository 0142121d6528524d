"""Tenants: who is calling, from the bearer token, and what they may see.

Each configured token names a tenant. The tenant is the caller everywhere the service keys
work by caller (fair shares of the queue, records, the dashboard), and it owns every batch
and session it creates: another tenant's ids answer 404, exactly as ids that never existed,
so an id is neither confirmed nor usable by anyone but its owner. Admin tenants see all.

Where the tokens come from (merged; a name or token given twice is a startup error):

- ``ASSAY_API_TOKENS="name:token,name:token"``;
- ``ASSAY_API_TOKENS_FILE``: one ``name:token`` a line, ``#`` comments and blank lines allowed
  (keeps the secrets out of the process environment);
- ``ASSAY_API_TOKEN``: one shared token, the tenant ``default`` (what the service had before
  tenants: everyone holding it is that one tenant).

``ASSAY_ADMIN_TENANTS="name,name"`` names tenants that see and may act on every tenant's
batches, sessions and dashboard rows (operators, not trainers).

``X-Assay-Caller`` is ignored when tokens are configured: a label chosen by the client would
either let it pose as another tenant or, as extra fair-share keys, let one tenant claim more
than one share of the queue. Trainers that need separate shares get separate tokens. Without
tokens (a loopback-only service) there is one tenant, ``anonymous``, who sees everything, and
the header (else the client address) still names the fair-share caller.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fastapi import Request

from ..errors import ConfigError

__all__ = ["ANONYMOUS", "DEFAULT_TENANT", "Tenant", "Tenants", "of_scope", "parse_tokens"]

#: The tenant of the single ``ASSAY_API_TOKEN``.
DEFAULT_TENANT = "default"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: The key of the authenticated tenant in an ASGI scope (set by the app's gate).
SCOPE_KEY = "assay.tenant"


@dataclass(frozen=True, slots=True)
class Tenant:
    """The authenticated caller. ``admin``: sees and acts on every tenant's work."""

    name: str
    admin: bool = False

    def owns(self, owner: str) -> bool:
        """Whether this tenant may see work owned by ``owner``."""
        return self.admin or owner == self.name

    @property
    def owner(self) -> str | None:
        """The owner a lookup must match: None (anything) for an admin."""
        return None if self.admin else self.name


#: The one tenant of a service without tokens (it is only reachable from this host).
ANONYMOUS = Tenant("anonymous", admin=True)


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


class Tenants:
    """Tokens to tenants. A presented token's SHA-256 digest is compared, in constant time,
    with every tenant's (no early exit): how long a check takes depends on the number of
    tenants only, never on how much of a token a guess got right (a few microseconds per
    request for a hundred tenants)."""

    def __init__(
        self, tokens: Iterable[tuple[str, str]], admins: frozenset[str] = frozenset()
    ) -> None:
        pairs = list(tokens)
        names = {name for name, _ in pairs}
        if len(names) != len(pairs):
            twice = sorted(n for n in names if sum(1 for m, _ in pairs if m == n) > 1)
            raise ConfigError(f"API tokens: tenant {twice[0]!r} is given more than once")
        if len({token for _, token in pairs}) != len(pairs):
            raise ConfigError("API tokens: two tenants have the same token")
        unknown = sorted(admins - names)
        if unknown:
            raise ConfigError(
                f"ASSAY_ADMIN_TENANTS: {', '.join(unknown)} is not a tenant with a token"
            )
        self._digests = [
            (_digest(token.encode()), Tenant(name, name in admins)) for name, token in pairs
        ]
        self.names = frozenset(names)

    @property
    def enabled(self) -> bool:
        """Whether a token is required (False: every caller is :data:`ANONYMOUS`)."""
        return bool(self._digests)

    def authenticate(self, authorization: bytes | None) -> Tenant | None:
        """The tenant of an ``Authorization: Bearer <token>`` header value, None if it names
        none (:data:`ANONYMOUS` when no token is configured)."""
        if not self.enabled:
            return ANONYMOUS
        if authorization is None or not authorization.startswith(b"Bearer "):
            return None
        given = _digest(authorization[7:])
        found = None
        for digest, tenant in self._digests:  # every one, matched or not
            if hmac.compare_digest(digest, given):
                found = tenant
        return found


def parse_tokens(text: str, where: str, *, separator: str = "\n") -> list[tuple[str, str]]:
    """``name:token`` entries of ``text`` split on ``separator``; blank entries and ``#``
    comments are skipped. A malformed entry is a :class:`ConfigError` naming ``where`` and
    its line (or entry) number, never a silently dropped tenant."""
    out: list[tuple[str, str]] = []
    unit = "line" if separator == "\n" else "entry"
    for n, raw in enumerate(text.split(separator), 1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        name, colon, token = entry.partition(":")
        name, token = name.strip(), token.strip()
        if not colon or not _NAME.fullmatch(name) or not token or any(c.isspace() for c in token):
            raise ConfigError(
                f"{where} {unit} {n}: expected name:token (a name of letters, digits, '.', "
                "'_' or '-', at most 64; a token without spaces)"
            )
        out.append((name, token))
    return out


def load(env: Mapping[str, str]) -> tuple[tuple[tuple[str, str], ...], frozenset[str]]:
    """The ``(name, token)`` pairs of ``ASSAY_API_TOKENS`` and ``ASSAY_API_TOKENS_FILE`` and
    the names of ``ASSAY_ADMIN_TENANTS`` (an unreadable file is a :class:`ConfigError`)."""
    pairs: list[tuple[str, str]] = []
    listed = env.get("ASSAY_API_TOKENS")
    if listed:
        pairs += parse_tokens(listed, "ASSAY_API_TOKENS", separator=",")
    path = env.get("ASSAY_API_TOKENS_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"ASSAY_API_TOKENS_FILE {path}: cannot read it ({exc})") from None
        pairs += parse_tokens(text, f"ASSAY_API_TOKENS_FILE {path}")
    admins = env.get("ASSAY_ADMIN_TENANTS", "").split(",")
    return tuple(pairs), frozenset(a.strip() for a in admins if a.strip())


def of_scope(scope: Mapping[str, object]) -> Tenant:
    """The tenant the gate authenticated for this request. A scope the gate never saw has
    none: that is a wiring fault, refused rather than treated as anyone."""
    found = scope.get(SCOPE_KEY)
    if not isinstance(found, Tenant):
        raise RuntimeError("request reached a route without passing the tenant gate")
    return found


async def tenant(request: Request) -> Tenant:
    """The request's tenant (a route dependency; ``async`` because it never blocks: FastAPI
    runs a plain ``def`` dependency on its thread pool, a thread hop per request)."""
    return of_scope(request.scope)
