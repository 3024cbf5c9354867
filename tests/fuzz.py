"""Fuzzing ragkit as attackers and careless clients would (tests/test_fuzz.py in the suite, small; scripts/fuzz.py
for the figures, large):

- ``parsers``: hypothesis over the query syntax (``parse_query``, the planner's whole plan), the legal-reference
  parser (``find_legal_refs`` on German and Swedish text with citations spliced in) and the tokens file
  (``load_tokens`` on generated TOML): each must answer or raise a ``RagkitError``, never crash otherwise;
- ``api``: schemathesis over ``ragkit serve``'s OpenAPI schema, every route, valid and invalid requests, without a
  token, with team A's and with team B's: no 5xx, and nothing of team B's in a response to team A;
- ``conformance``: schemathesis's own run (its coverage and fuzzing phases) with its checks that the schema says what
  the server accepts: a request the schema allows is not refused as invalid (400, 422), one it forbids is refused,
  and no operation "mostly rejected generated data" (its warning "schema validation mismatch" fails the run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from ragkit.errors import RagkitError

LEGAL_PIECES = [
    "§ 3", "§§ 3 bis 5", "§ 622 Abs. 2 Satz 1 BGB", "Art. 12 GG", "Art 3 Abs. 1", "§ 5 Abs. 2 ArbZG",
    "des Kündigungsschutzgesetzes", "2 kap. 6 § AFS 2023:2", "AFS 2023:2 2:6", "6 § i 2 kap.", "SFS 1977:1160",
    "3 kap. 2 a §", "14 § i föreskrifterna om radon", "Nr. 3 Buchst. a", "Anlage 2", "Bilaga 1", "§", "kap.", "Art.",
]  # fmt: skip
QUERY_PIECES = ['"', "-", '-"', "doc_type:", "collection:", "path:", "since 2020", "before 2019-05-01", "between 2018 and",
                "seit", "zwischen", "§", "AND", "OR", "*", "?", "'", ";", "--", "\\", "\x00", "日本", "ÅÄÖ", "ß"]  # fmt: skip


@st.composite
def legal_text(draw) -> str:
    words = draw(st.lists(st.one_of(st.sampled_from(LEGAL_PIECES), st.text(max_size=12)), max_size=12))
    return " ".join(words)


@st.composite
def query_text(draw) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(QUERY_PIECES), st.text(max_size=15)), min_size=1, max_size=10))
    return draw(st.sampled_from(["", " "])).join(parts)


@st.composite
def tokens_toml(draw) -> str:
    """A tokens file, from well-formed to broken: tokens with names, variables, collections and limits."""
    value = st.one_of(
        st.text(max_size=20), st.integers(-5, 10**6), st.booleans(), st.lists(st.text(max_size=8), max_size=3)
    )
    key = st.sampled_from(["name", "value_env", "collections", "value", "rate_per_minute", "in_flight", "x"])
    lines = ['shared = ["laws"]'] if draw(st.booleans()) else []
    if draw(st.booleans()):
        limits = draw(
            st.dictionaries(st.sampled_from(["body_bytes", "query_chars", "k", "max_tokens", "y"]), value, max_size=3)
        )
        lines += ["[limits]", *(f"{k} = {json.dumps(v)}" for k, v in limits.items())]
    for _ in range(draw(st.integers(0, 3))):
        fields = draw(st.dictionaries(key, value, max_size=5))
        lines += ["[[token]]", *(f"{k} = {json.dumps(v)}" for k, v in fields.items())]
    if draw(st.booleans()):
        lines.append(draw(st.text(max_size=30)))  # anything at all
    return "\n".join(lines)


@dataclass
class Tally:
    """What a fuzzing run met: cases, and the failures (the case and what went wrong)."""

    cases: int = 0
    failures: list[str] = field(default_factory=list)


def _run(strategy, check: Callable, examples: int, tally: Tally) -> Tally:
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck), derandomize=True
    )
    @given(strategy)
    def run(value):
        tally.cases += 1
        try:
            check(value)
        except RagkitError:
            pass
        except Exception as exc:  # a crash: recorded, the run goes on
            tally.failures.append(f"{type(exc).__name__}: {exc} ← {value!r}"[:300])

    run()
    return tally


def fuzz_queries(examples: int, ix=None) -> Tally:
    """The query syntax; with ``ix`` (a ``ragkit.Index``) also the planner and a whole query (lexical, no model)
    over it."""
    from ragkit.config import QueryConfig
    from ragkit.retrieve.planner import plan_query
    from ragkit.retrieve.query_syntax import parse_query

    def check(text: str) -> None:
        parse_query(text)
        plan_query(text)
        if ix is not None:
            ix.query(text, QueryConfig(strategy="lexical", k=3, log=False, retry=False))

    return _run(query_text(), check, examples, Tally())


def fuzz_legal(examples: int) -> Tally:
    from ragkit.legal import find_legal_refs

    def check(text: str) -> None:
        for ref in find_legal_refs(text):
            assert 0 <= ref.start <= ref.end <= len(text), ref

    return _run(legal_text(), check, examples, Tally())


def fuzz_tokens(examples: int, folder: Path) -> Tally:
    from ragkit.serve.access import load_tokens

    path = folder / "tokens.toml"
    environ = {"A": "x" * 32, "B": "short", "C": ""}

    def check(text: str) -> None:
        path.write_text(text)
        load_tokens(path, environ)

    return _run(tokens_toml(), check, examples, Tally())


@dataclass
class ApiTally:
    requests: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def fuzz_api(url: str, tokens: dict[str, str | None], markers: dict[str, list[str]], per_operation: int) -> ApiTally:
    """schemathesis over the server's schema: for each operation and each caller (``tokens``: name → bearer
    value or None), ``per_operation`` cases, valid and invalid. ``markers``: caller name → texts it must never
    receive (another team's)."""
    import schemathesis
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    tally = ApiTally()
    for result in schema.get_all_operations():
        operation = result.ok()
        for caller, token in tokens.items():
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                _fuzz_operation(
                    operation, mode, url, headers, caller, markers.get(caller, []), per_operation // 2, tally
                )
    return tally


def _fuzz_operation(operation, mode, url, headers, caller, forbidden, examples, tally) -> None:
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck), derandomize=True
    )
    @given(operation.as_strategy(generation_mode=mode))
    def run(case):
        t = time.perf_counter()
        try:
            response = case.call(base_url=url, headers=headers, timeout=60)
        except Exception as exc:  # a refused or cut connection is the server's failure too
            tally.server_errors.append(f"{operation.label} [{caller}] {type(exc).__name__}: {exc}"[:300])
            return
        tally.seconds.append(time.perf_counter() - t)
        tally.requests += 1
        tally.by_status[response.status_code] = tally.by_status.get(response.status_code, 0) + 1
        if response.status_code >= 500:
            tally.server_errors.append(
                f"{operation.label} [{caller}] {response.status_code}: {case.as_curl_command()}"[:500]
            )
        body = response.content.decode(errors="replace")
        found = [m for m in forbidden if m in body]
        if found:
            tally.leaks.append(f"{operation.label} [{caller}] {found}: {case.as_curl_command()}"[:500])

    try:
        run()
    except Unsatisfiable:  # an operation with nothing to get wrong (no parameters, no body): no invalid case
        pass


CONFORMANCE_CHECKS = "positive_data_acceptance,negative_data_rejection,not_a_server_error"


def conformance(
    url: str, token: str | None, key: str, folder: Path, examples: int = 10, exclude: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """``schemathesis run`` over the server's schema: does it say what the server accepts? ``key``: a document
    the caller reads, given to the routes of one document (a random key only finds 404s); ``exclude``: paths
    left out. Seeded and without the stateful phase (there a real query's rank or answer that is not there is
    refused by what the index holds, not by the request's shape): the same cases every run."""
    config = folder / "schemathesis.toml"
    config.write_text(
        "[warnings]\n"
        'display = ["validation_mismatch"]\n'
        'fail-on = ["validation_mismatch"]\n\n'
        # a request the schema allows may be over the limits of the server's tokens file: 413, as the schema says
        "[checks.positive_data_acceptance]\n"
        'expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]\n\n'
        # no values taken from responses: a real query's id makes a rating of an answer it never showed (400,
        # refused by what the log holds, not by the request's shape), as the stateful phase would
        "[phases.coverage.extra-data-sources]\nresponses = false\n\n"
        "[phases.fuzzing.extra-data-sources]\nresponses = false\n\n"
        "[[operations]]\n"
        "include-path-regex = '^/v1/documents/\\{key\\}(/text|/outline)?$'\n"
        f'parameters = {{ "path.key" = {json.dumps(key)} }}\n'
    )
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{url}/openapi.json"]
    command += ["--checks", CONFORMANCE_CHECKS, "--phases", "coverage,fuzzing", "-n", str(examples), "--seed", "1"]
    # a query may load the planner's or the answer's model first (seconds; more on a busy machine)
    command += ["--no-color", "--request-timeout", "120"] + [a for path in exclude for a in ("--exclude-path", path)]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=folder)
