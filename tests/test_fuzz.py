"""Fuzzed as attackers and careless clients would (tests/fuzz.py; scripts/fuzz.py runs the same at scale): the
query syntax and planner, the legal-reference parser and the tokens file answer or raise a RagkitError on
anything; ``ragkit serve`` answers generated requests, valid and invalid, with no 5xx and never with another
team's data. And the regressions the fuzzing found, each pinned."""

from __future__ import annotations

import json
import urllib.parse

import pytest

import ragkit
from ragkit.config import QueryConfig
from ragkit.errors import BadQuery
from tests import fuzz
from tests.team import MARKERS, build_index, ids_of, serve, tokens_file


def test_the_query_syntax_and_the_planner_never_crash():
    tally = fuzz.fuzz_queries(300)
    assert tally.cases == 300 and tally.failures == []


def test_the_legal_reference_parser_never_crashes():
    tally = fuzz.fuzz_legal(300)
    assert tally.cases == 300 and tally.failures == []


def test_a_tokens_file_is_read_or_named_as_bad_never_a_crash(tmp_path):
    tally = fuzz.fuzz_tokens(300, tmp_path)
    assert tally.cases == 300 and tally.failures == []


@pytest.mark.parametrize("key", ['a"b', "x[", "$.y", "a\\b", "1x", "", "k" * 70, "a'; DROP TABLE documents; --"])
def test_an_unusual_filter_key_is_a_bad_query_not_a_store_error(key):
    with pytest.raises(BadQuery, match="filter key"):
        QueryConfig(filters={key: "v"})


@pytest.fixture(scope="module")
def team_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    index = build_index(root / "src", root / "idx")
    # a rate above what the fuzzing sends (the conformance run alone: ~1000 requests of team A's in a minute)
    tokens, env = tokens_file(root / "tokens.toml", {"max_tokens": 64, "rate_per_minute": 100_000})
    with serve(index, root / "server.log", "--tokens", str(tokens), env=env) as srv:
        srv.index = index
        yield srv


@pytest.mark.integration
def test_generated_requests_get_no_5xx_and_no_other_teams_data(team_server):
    srv = team_server
    a, b = MARKERS["team-a"] + ids_of(srv.index, "team-a"), MARKERS["team-b"] + ids_of(srv.index, "team-b")
    callers = {"no token": None, "team A": srv.token("a"), "team B": srv.token("b")}
    where = [str(srv.index.resolve().parent)]  # no answer says where the index lives
    markers = {"no token": a + b + where, "team A": b + where, "team B": a + where}
    tally = fuzz.fuzz_api(srv.url, callers, markers, per_operation=8)
    assert tally.requests >= 120 and tally.server_errors == [] and tally.leaks == []
    assert {401, 404, 422} <= set(tally.by_status)  # refused, unknown and invalid requests were all made


@pytest.mark.integration
def test_the_openapi_schema_says_what_the_server_accepts(team_server, tmp_path):
    """Issue 64: schemathesis found two operations that mostly refused requests their schema allows ("schema
    validation mismatch"): ``GET /v1/documents/{key}/text`` (``start=0``, ``end=0``, an end before the start: 400)
    and ``POST /v1/feedback`` (an empty query_id, a rating saying neither grade nor good: 400); and
    ``GET /v1/documents`` refused ``limit=0`` the schema allowed. The schema now says the constraints, and an end
    before the start is an empty range. ``POST /v1/query`` refused an empty query, an unknown strategy, answer
    mode or reranker, ``k = 0`` and a ``config`` QueryConfig refused with 400s its schema did not say: its schema
    now says them (ragkit/serve/schema.py: a request outside it is 422), and what the index or the server's
    limits refuse is a documented 400 or 413."""
    doc = ids_of(team_server.index, "team-a")[0]
    run = fuzz.conformance(team_server.url, team_server.token("a"), doc, tmp_path)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "No issues found" in run.stdout and "Tested: 10" in run.stdout, run.stdout[-3000:]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/query", {"query": "orion", "filters": {'a"b': "x"}}),  # found by the first fuzzing run: a 500
        ("/v1/query", {"query": "orion", "filters": {"$.x[0]": "1"}}),
        ("/v1/query", {"query": "orion", "filters": {"collection": "team-a' OR '1'='1"}}),
        ("/v1/documents?" + urllib.parse.urlencode({'we"ird': "1"}), None),  # found by the first run: a 500
        ("/v1/documents?" + urllib.parse.urlencode({"date_from": "not a date"}), None),
        ("/v1/documents?" + urllib.parse.urlencode({"path": "[unclosed"}), None),
    ],
)
def test_unusual_filters_are_answered_400_or_narrowed_never_500(team_server, path, body):
    status, out = team_server.call(path, body, token=team_server.token("a"))
    assert status in (200, 400, 403, 422), (status, out)  # a query's filter key outside the schema: 422
    text = json.dumps(out)
    assert not any(m in text for m in MARKERS["team-b"])


@pytest.mark.integration
@pytest.mark.parametrize("text", ['""', '"""', 'pay "', '"the bonus" "', '" OR "x'])
def test_stray_and_empty_quotes_are_searched_as_words_not_lance_phrases(team_server, text):
    """Found by scripts/fuzz.py: a bare ``""`` reached Lance as a phrase query, which the index (no positions)
    cannot answer: a ValueError out of the store."""
    ix = ragkit.open(team_server.index)
    ix.query(text, QueryConfig(strategy="lexical", k=3, log=False, retry=False))
    ix.query(text, QueryConfig(strategy="hybrid", k=3, log=False, retry=False))


@pytest.mark.integration
def test_whole_lexical_queries_never_crash(team_server):
    tally = fuzz.fuzz_queries(150, ragkit.open(team_server.index))
    assert tally.cases == 150 and tally.failures == []


@pytest.mark.integration
def test_collection_names_with_quotes_and_sql_words_are_values_not_sql(tmp_path):
    """A collection named with a quote, a semicolon and SQL keywords is indexed, filtered on and scoped like any
    other, and a token of another collection reads none of it."""
    from dataclasses import replace

    from ragkit.config import IndexConfig
    from tests.conftest import write

    hostile = "hr'; DROP TABLE documents; --"
    root = tmp_path / "docs"
    write(root / "a", "pay.md", "# Pay\n\nThe Quillfeather bonus is paid in March.\n")
    write(root / "b", "other.md", "# Other\n\nThe Brassmoor bonus is paid in June.\n")
    idx = tmp_path / "idx"
    ragkit.index([root / "a"], idx, cfg=replace(IndexConfig(), collection=hostile))
    ragkit.index([root / "b"], idx, cfg=replace(IndexConfig(), collection="plain"))
    ix = ragkit.open(idx)
    mine = ix.query("When is the bonus paid?", QueryConfig(k=5, readable=(hostile,), log=False))
    assert mine.passages and all(p.collection == hostile for p in mine.passages)
    other = ix.query("When is the bonus paid?", QueryConfig(k=5, readable=("plain",), log=False))
    assert other.passages and "Quillfeather" not in json.dumps([p.text for p in other.passages])
    filtered = ix.query("bonus", QueryConfig(k=5, filters={"collection": hostile}, log=False))
    assert {p.collection for p in filtered.passages} == {hostile}
    assert ix.stats((hostile,))["documents"] == 1 and ix.documents(readable=(hostile,))["total"] == 1


def test_a_page_far_beyond_the_documents_is_a_bad_request_not_a_server_error(corpus, index_with):
    _, ix = index_with(corpus)
    for limit, offset in ((50, 88814815595580952150016), (0, 0), (50, -1)):
        with pytest.raises(BadQuery):
            ix.documents(limit, offset)
    assert ix.documents(50, 2**31 - 1)["documents"] == []
