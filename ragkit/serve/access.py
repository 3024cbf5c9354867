"""Who may read what from ``ragkit serve``: the tokens file (``--tokens FILE``), the server's limits, and the rule
that a server beyond loopback needs tokens.

    shared = ["laws"]              # collections every token reads (and "default": documents indexed without
                                   # --collection)
    [limits]                       # optional; these are the defaults
    body_bytes = 1048576           # request body
    query_chars = 2000             # query text
    k = 100                        # passages per query
    max_tokens = 2048              # answer tokens
    rate_per_minute = 600          # requests per token and minute
    in_flight = 8                  # requests per token at once

    [[token]]
    name = "team-a"
    value_env = "RAGKIT_TOKEN_A"   # the token's value comes from this environment variable
    collections = ["team-a"]

A token's value is read from its variable only; it is never written in the file, logged, echoed or put in an
error. Requests present it as ``Authorization: Bearer VALUE``; it is compared with every token's in constant
time (``hmac.compare_digest`` over SHA-256 digests, so neither content nor length shows in the timing).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ragkit.errors import AccessDenied, BadInput

DEFAULT_COLLECTION = "default"  # documents indexed without --collection: readable by every token
MIN_TOKEN_CHARS = 16
TOKEN_KEYS = ("name", "value_env", "collections")


@dataclass(frozen=True)
class Limits:
    """What one request, and one token, may ask of a server (``[limits]``; 413 or 429 beyond)."""

    body_bytes: int = 1 << 20
    query_chars: int = 2000
    k: int = 100
    max_tokens: int = 2048
    rate_per_minute: int = 600
    in_flight: int = 8


@dataclass(frozen=True)
class Token:
    """A bearer token: its name (what logs and errors show), its value (never shown) and what it reads."""

    name: str
    value: str = field(repr=False)
    collections: tuple[str, ...]
    shared: tuple[str, ...] = ()

    @property
    def readable(self) -> tuple[str, ...]:
        """Its own collections, the shared ones and ``default``."""
        return tuple(sorted({*self.collections, *self.shared, DEFAULT_COLLECTION}))

    @property
    def pseudonym(self) -> str:
        """What the query log keeps of the token instead of its name: a keyed hash of its value, the same for
        every query it asks (so that it rates only its own), meaningless to anyone without the value."""
        return "t-" + hmac.new(self.value.encode(), b"ragkit query log", hashlib.sha256).hexdigest()[:16]


@dataclass(frozen=True)
class Caller:
    """Who asks, as the operations see it: a token's name and readable collections (``None``, ``None``: the
    index's owner on loopback, who reads everything and chooses models freely), the server's limits, and the
    token's pseudonym (``Token.pseudonym``), the only mark of it in the index's query log."""

    name: str | None = None
    readable: tuple[str, ...] | None = None
    limits: Limits = Limits()
    asker: str | None = None  # what the query log keeps of the token: its pseudonym, never its name


@dataclass(frozen=True)
class Access:
    """The tokens a server knows, its shared collections and its limits."""

    tokens: tuple[Token, ...]
    shared: tuple[str, ...] = ()
    limits: Limits = Limits()

    def authenticate(self, authorization: str | None) -> Token:
        """The token an ``Authorization`` header presents; ``AccessDenied`` when it has none or an unknown one."""
        scheme, _, given = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise AccessDenied("this server needs a token: no `Authorization: Bearer …` header")
        digest = hashlib.sha256(given.strip().encode()).digest()
        found = None
        for token in self.tokens:  # every token compared, whichever matches
            if hmac.compare_digest(hashlib.sha256(token.value.encode()).digest(), digest):
                found = token
        if found is None:
            raise AccessDenied("unknown token")
        return found


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, access: Access | None) -> None:
    """A server beyond loopback must have tokens: ``BadInput`` otherwise."""
    if access is None and not is_loopback(host):
        raise BadInput(
            f"refusing to serve {host} without tokens: anyone who reaches the port would read every document",
            hint="Give --tokens FILE (bearer tokens, each with the collections it may read), "
            "or serve on 127.0.0.1 behind your own authentication.",
        )


def load_tokens(path: str | Path, environ: Mapping[str, str] | None = None) -> Access:
    """The tokens file at ``path``, each token's value from the environment (``environ``: os.environ by
    default). ``BadInput`` names the first problem: a file that is not TOML, an unknown key, a value written in
    the file, a variable that is not set, a value shorter than ``MIN_TOKEN_CHARS``, two tokens of one name or
    value, a bad limit."""
    environ = os.environ if environ is None else environ
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise BadInput(f"cannot read the tokens file {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: invalid TOML ({exc})") from None
    unknown = sorted(set(data) - {"shared", "limits", "token"})
    if unknown:
        raise BadInput(f"{path}: unknown key(s) {', '.join(unknown)}", hint="Known: shared, [limits], [[token]].")
    shared = _names(data.get("shared", []), f"{path}: shared")
    limits = _limits(data.get("limits", {}), path)
    entries = data.get("token")
    if not isinstance(entries, list) or not entries or not all(isinstance(t, dict) for t in entries):
        raise BadInput(f"{path}: no [[token]] table", hint='[[token]] name = "team-a" value_env = "VAR" …')
    tokens = [_token(t, i, path, shared, environ) for i, t in enumerate(entries, start=1)]
    for i, a in enumerate(tokens):
        for b in tokens[i + 1 :]:
            if a.name == b.name:
                raise BadInput(f"{path}: two tokens are named {a.name!r}")
            if hmac.compare_digest(a.value.encode(), b.value.encode()):
                raise BadInput(f"{path}: tokens {a.name!r} and {b.name!r} have the same value")
    return Access(tuple(tokens), shared, limits)


def _token(entry: dict, number: int, path: Path, shared: tuple[str, ...], environ: Mapping[str, str]) -> Token:
    label = f"{path}: token {entry.get('name', number)!r}"
    if "value" in entry:
        raise BadInput(
            f"{label}: a token's value is never written in the file",
            hint='Name the environment variable that holds it: value_env = "RAGKIT_TOKEN_A".',
        )
    unknown = sorted(set(entry) - set(TOKEN_KEYS))
    if unknown:
        raise BadInput(f"{label}: unknown key(s) {', '.join(unknown)}", hint=f"Known: {', '.join(TOKEN_KEYS)}.")
    name, var = entry.get("name"), entry.get("value_env")
    if not isinstance(name, str) or not name.strip():
        raise BadInput(f"{path}: token number {number} has no name")
    if not isinstance(var, str) or not var.strip():
        raise BadInput(f"{label}: no value_env (the environment variable that holds its value)")
    value = environ.get(var, "").strip()
    if not value:
        raise BadInput(f"{label}: the environment variable {var} is not set", hint=f"export {var}=… before serving.")
    if len(value) < MIN_TOKEN_CHARS:
        raise BadInput(
            f"{label}: its value (from {var}) is shorter than {MIN_TOKEN_CHARS} characters",
            hint='A long random value: python -c "import secrets; print(secrets.token_urlsafe(32))"',
        )
    if "collections" not in entry:
        raise BadInput(f"{label}: no collections (the collections it may read; [] for the shared ones only)")
    return Token(name, value, _names(entry["collections"], f"{label}: collections"), shared)


def _names(value, label: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise BadInput(f"{label} must be a list of collection names", hint='e.g. ["team-a", "laws"]')
    return tuple(v.strip() for v in value)


def _limits(table, path: Path) -> Limits:
    known = {f.name for f in dataclasses.fields(Limits)}
    if not isinstance(table, dict):
        raise BadInput(f"{path}: [limits] must be a table", hint=f"Keys: {', '.join(sorted(known))}.")
    unknown = sorted(set(table) - known)
    if unknown:
        raise BadInput(
            f"{path}: [limits] unknown key(s) {', '.join(unknown)}", hint=f"Known: {', '.join(sorted(known))}."
        )
    for key, value in table.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadInput(f"{path}: [limits] {key} = {value!r} is not a positive whole number")
    return Limits(**table)
