"""``ragkit serve`` for a team (issue 35): a real server with tokens on a free loopback port, over an index of two
workspaces that share people, companies and a project (tests/team.py). Token A never receives a byte of
workspace B, by any strategy, endpoint or MCP tool; B does receive its own (the check has teeth)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragkit.errors import BadInput
from ragkit.serve.access import load_tokens
from tests.team import MARKERS, QUESTIONS, REPO, STRATEGIES, build_index, ids_of, leaks, serve, tokens_file

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("team")
    return build_index(root / "src", root / "idx")


@pytest.fixture(scope="module")
def b_markers(index) -> list[str]:
    return MARKERS["team-b"] + ids_of(index, "team-b")


@pytest.fixture(scope="module")
def server(index, tmp_path_factory):
    tokens, env = tokens_file(tmp_path_factory.mktemp("tokens") / "tokens.toml")
    with serve(index, index.parent / "server.log", "--tokens", str(tokens), env=env) as srv:
        yield srv
    log = srv.log.read_text()
    assert env["RAGKIT_TOKEN_A"] not in log and env["RAGKIT_TOKEN_B"] not in log  # never logged
    assert "dropped" not in log  # retrieval itself kept to the token's collections (the last check had nothing to do)


def test_token_a_never_receives_a_byte_of_workspace_b(server, b_markers):
    """Every strategy, with and without an answer, --explain and a trace: 200, A's own markers found, none of B's;
    the same questions from B find B's (the check has teeth)."""
    a, b = server.token("a"), server.token("b")
    seen_a, seen_b = set(), set()
    for strategy in STRATEGIES:
        for question in QUESTIONS:
            for extra in ({}, {"answer": True, "answer_mode": "extract", "explain": True, "trace": True}):
                body = {"query": question, "strategy": strategy, "k": 5, **extra}
                status, out = server.call("/v1/query", body, token=a)
                text = json.dumps(out, ensure_ascii=False)
                assert status == 200, (body, out)
                assert leaks(text, b_markers) == [], (body, leaks(text, b_markers))
                seen_a.update(leaks(text, MARKERS["team-a"]))
        for question in QUESTIONS[:2]:
            status, out = server.call("/v1/query", {"query": question, "strategy": strategy, "k": 5}, token=b)
            assert status == 200
            seen_b.update(leaks(json.dumps(out, ensure_ascii=False), MARKERS["team-b"]))
    assert {"Amberfield", "Lindqvist", "alpha/"} <= seen_a
    assert {"Zebraquill", "Bluequartz", "bravo/"} <= seen_b


def test_graph_context_reaches_token_a_from_its_own_workspace(server):
    """Entities, relations, community reports and summary-tree nodes are there for A, all of A's readable
    collections (the graphs of A and B meet at Helena Varga and Project Orion)."""
    kinds = {}
    for strategy in ("local", "global", "light", "hierarchical"):
        body = {"query": QUESTIONS[0], "strategy": strategy, "k": 5}
        _, out = server.call("/v1/query", body, token=server.token("a"))
        assert out["context"], strategy
        for item in out["context"]:
            kinds.setdefault(strategy, set()).add(item["type"])
            if item["type"] == "summary":
                continue
            assert item["collection"] in ("team-a", "laws", "default"), item
    assert kinds["local"] >= {"entity"} and kinds["global"] == {"community"} and kinds["hierarchical"] == {"summary"}
    assert kinds["light"] >= {"entity", "relation"}


def test_documents_sections_outline_and_stats_are_scoped(server, index, b_markers):
    """A lists, reads, outlines and counts its collections, the shared ones and "default"; B's documents and
    sections are 404 to A as if absent, by id or by path."""
    a = server.token("a")
    status, listed = server.call("/v1/documents?limit=100", token=a)
    assert status == 200 and {d["collection"] for d in listed["documents"]} == {"team-a", "laws", "default"}
    assert listed["total"] == len(listed["documents"]) == 4
    own = next(d for d in listed["documents"] if d["path"].endswith("orion-plan.md"))
    for path in (f"/v1/documents/{own['id']}", "/v1/documents/alpha/orion-plan.md", "/v1/documents/orion-plan.md"):
        status, doc = server.call(path, token=a)
        assert status == 200 and doc["id"] == own["id"] and "Amberfield" in doc["text"], path
    status, part = server.call(f"/v1/documents/{own['id']}/text?start=9&end=10", token=a)
    assert status == 200 and part["lines"][0] <= 9 <= part["lines"][1] and "Lindqvist" in part["text"]
    status, outline = server.call(f"/v1/documents/{own['id']}/outline", token=a)
    assert status == 200 and [s["heading"] for s in outline["sections"][1:]] == ["Goals", "People", "Decisions"]
    status, section = server.call(f"/v1/sections/{outline['sections'][2]['id']}", token=a)
    assert status == 200 and "Greta Amberg" in section["text"]
    status, stats = server.call("/v1/stats", token=a)
    assert status == 200 and stats["documents"] == 4 and set(stats["collections"]) == {"team-a", "laws", "default"}
    assert leaks(json.dumps(listed) + json.dumps(stats), b_markers) == []
    b_doc, b_section = ids_of(index, "team-b")[0], None
    for path in (f"/v1/documents/{b_doc}", f"/v1/documents/{b_doc}/text?start=1", f"/v1/documents/{b_doc}/outline"):
        status, out = server.call(path, token=a)
        assert status == 404 and out["error"]["type"] == "UnknownId", path
        assert server.call(path, token=server.token("b"))[0] == 200  # there for B
    _, b_outline = server.call(f"/v1/documents/{b_doc}/outline", token=server.token("b"))
    b_section = b_outline["sections"][0]["id"]
    assert server.call(f"/v1/sections/{b_section}", token=a)[0] == 404
    assert server.call("/v1/documents/bravo/orion-rollout.md", token=a)[0] == 404
    status, out = server.call("/v1/documents?collection=team-b", token=a)
    assert status == 403 and out["error"]["code"] == 12


def test_a_filter_narrows_never_widens(server, b_markers):
    a = server.token("a")
    body = {"query": QUESTIONS[0], "filters": {"collection": "laws"}, "k": 5}
    status, out = server.call("/v1/query", body, token=a)
    assert status == 200 and {p["document"]["collection"] for p in out["passages"]} <= {"laws"}
    status, out = server.call("/v1/query", {"query": QUESTIONS[0], "filters": {"collection": "team-b"}}, token=a)
    assert status == 403 and out["error"]["type"] == "Forbidden" and out["error"]["code"] == 12
    # what `ragkit query` sends, a whole config: its `readable` does not lift the token's
    config = {"strategy": "hybrid", "k": 5, "readable": ["team-a", "team-b"], "expand": True}
    status, out = server.call("/v1/query", {"query": "Zebraquill furnace frames", "config": config}, token=a)
    assert status == 200 and leaks(json.dumps(out), b_markers, "Zebraquill furnace frames") == []
    status, out = server.call("/v1/query", {"query": "collection:team-b Zebraquill furnace", "k": 5}, token=a)
    assert status == 200 and out["passages"] == []


def test_a_token_uses_the_servers_models(server):
    """A model spec names a file or URL the server would open: a token's request may name no other."""
    a = server.token("a")
    for body in (
        {"query": "x", "model": "/etc/passwd"},
        {"query": "x", "rerank_model": "http://127.0.0.1:9/v1#m"},
        {"query": "x", "config": {"planner_rules": "/etc/hostname"}},
        {"query": "x", "config": {"api_keys": {"example.com": "HOME"}}},
    ):
        status, out = server.call("/v1/query", body, token=a)
        assert status == 403 and out["error"]["type"] == "Forbidden", body


def test_planning_keeps_to_the_tokens_collections(server):
    """The speller, the router's entities and legal references know every collection; for a token they keep to
    its own: "Zebraquil" is not corrected to B's "Zebraquill", B's entities are not "known", "§ 5 ZQC" (B's
    charter) resolves to nothing for A and to B's section for B."""
    a, b = server.token("a"), server.token("b")
    _, out = server.call("/v1/query", {"query": "Zebraquil rollout", "k": 3}, token=a)
    assert out["plan"]["corrections"] == []
    _, out = server.call("/v1/query", {"query": "Zebraquil rollout", "k": 3}, token=b)
    assert out["plan"]["corrections"] == [{"from": "Zebraquil", "to": "zebraquill"}]
    _, out = server.call("/v1/query", {"query": "What do Odalys Bluequartz and Tobias Kettlewire weigh?"}, token=a)
    assert out["plan"]["entities"] == [] and "Bluequartz" not in json.dumps(out["plan"]["planner_notes"])
    _, out = server.call("/v1/query", {"query": "What does § 5 ZQC say about rest?"}, token=a)
    assert [r["document_id"] for r in out["plan"]["references"]] == [None]
    _, out = server.call("/v1/query", {"query": "What does § 5 ZQC say about rest?"}, token=b)
    assert out["plan"]["references"][0]["section_ids"] and out["passages"][0]["section"].endswith("§ 5 Rest periods")


def test_missing_or_unknown_tokens_are_401_and_limits_413(server):
    for token in (None, "not-a-token-of-this-server", server.token("a") + "x"):
        status, out = server.call("/v1/query", {"query": "overtime"}, token=token)
        assert status == 401 and out["error"]["type"] == "AccessDenied" and out["error"]["code"] == 12
        assert token is None or token not in json.dumps(out)  # never echoed
    assert server.call("/v1/stats")[0] == 401 and server.call("/healthz")[0] == 200
    a = server.token("a")
    for body in (
        {"query": "x", "k": 101},
        {"query": "x" * 2001},
        {"query": "x", "answer": True, "max_tokens": 4096},
        {"query": "x", "config": {"answer_context": 1 << 20}},
    ):
        status, out = server.call("/v1/query", body, token=a)
        assert status == 413 and out["error"]["type"] == "OverLimit" and out["error"]["code"] == 13, body
    status, out = server.call("/v1/query", token=a, raw=b'{"query": "' + b"x" * (1 << 20) + b'"}')
    assert status == 413 and out["error"]["type"] == "OverLimit"
    host, port = server.url.removeprefix("http://").split(":")
    con = http.client.HTTPConnection(host, int(port), timeout=60)  # a body without Content-Length, in chunks
    con.putrequest("POST", "/v1/query")
    con.putheader("Authorization", f"Bearer {a}")
    con.putheader("Transfer-Encoding", "chunked")
    con.endheaders()
    for _ in range(20):
        con.send(b"10000\r\n" + b" " * 0x10000 + b"\r\n")
    con.send(b"0\r\n\r\n")
    resp = con.getresponse()
    assert resp.status == 413 and json.loads(resp.read())["error"]["type"] == "OverLimit"
    con.close()
    assert server.alive()


def test_mcp_over_http_with_tokens_a_and_b(server, b_markers):
    """The SDK's streamable HTTP client with each token: the tools, a search, a document, the list, an answer;
    A sees none of B, B sees its own; another team's document is an error; no token is a 401."""
    import anyio
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def session(token: str | None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=300) as client:
            async with streamable_http_client(server.url + "/mcp", http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    tools = sorted(t.name for t in (await s.list_tools()).tools)
                    out = {"tools": tools}
                    for name, args in (
                        ("search", {"query": QUESTIONS[0], "k": 5, "strategy": "local"}),
                        ("search", {"query": QUESTIONS[2], "k": 5, "strategy": "global"}),
                        ("answer", {"question": QUESTIONS[0], "k": 3, "mode": "extract"}),
                        ("list_documents", {"limit": 100}),
                        ("stats", {}),
                        ("outline", {"document": "orion-rollout.md"}),
                        ("get_document", {"document": "orion-rollout.md", "start": 1, "end": 5}),
                    ):
                        result = await s.call_tool(name, args)
                        out[f"{name} {args}"] = (result.is_error, result.content[0].text)
                    return out

    a = anyio.run(session, server.token("a"))
    b = anyio.run(session, server.token("b"))
    assert a["tools"] == [
        "answer", "feedback", "get_document", "get_section", "list_documents", "outline", "search", "stats"
    ]  # fmt: skip
    a_text = json.dumps(a, ensure_ascii=False)
    assert leaks(a_text, b_markers, "orion-rollout.md") == [] and "Amberfield" in a_text
    assert {k: v[0] for k, v in a.items() if k != "tools" and v[0]} == {
        "outline {'document': 'orion-rollout.md'}": True,
        "get_document {'document': 'orion-rollout.md', 'start': 1, 'end': 5}": True,
    }
    assert "no document 'orion-rollout.md'" in a["outline {'document': 'orion-rollout.md'}"][1]
    assert not any(v[0] for k, v in b.items() if k != "tools") and "Zebraquill" in json.dumps(b)
    status, out = server.call("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 401 and out["error"]["type"] == "AccessDenied"


def test_tokens_file_problems_are_named(tmp_path):
    env = {"A": "a" * 24, "B": "b" * 24, "SHORT": "abc"}

    def problem(text: str) -> str:
        path = tmp_path / "tokens.toml"
        path.write_text(text)
        with pytest.raises(BadInput) as caught:
            load_tokens(path, env)
        assert "a" * 24 not in str(caught.value) and "b" * 24 not in str(caught.value)
        return caught.value.message

    token = '[[token]]\nname = "t"\nvalue_env = "{var}"\ncollections = ["x"]\n'
    assert "not set" in problem(token.format(var="NOPE"))
    assert "shorter than 16" in problem(token.format(var="SHORT"))
    assert "never written in the file" in problem('[[token]]\nname = "t"\nvalue = "xxxxxxxxxxxxxxxxxxxxx"\n')
    assert "same value" in problem(token.format(var="A") + token.replace('"t"', '"u"').format(var="A"))
    assert "named 't'" in problem(token.format(var="A") + token.format(var="B"))
    assert "unknown key(s) colections" in problem('[[token]]\nname = "t"\nvalue_env = "A"\ncolections = ["x"]\n')
    assert "[limits] k = 0" in problem("[limits]\nk = 0\n" + token.format(var="A"))
    assert "[limits] unknown key(s) speed" in problem("[limits]\nspeed = 3\n" + token.format(var="A"))
    assert "invalid TOML" in problem("[[token]\n")
    assert "no [[token]]" in problem('shared = ["laws"]\n')
    (tmp_path / "ok.toml").write_text(token.format(var="A"))
    access = load_tokens(tmp_path / "ok.toml", env)
    assert access.tokens[0].readable == ("default", "x") and "a" * 24 not in repr(access)


def test_serve_refuses_an_open_address_without_tokens(index, tmp_path):
    run = [sys.executable, "-m", "ragkit", "serve", "--index", str(index), "--port", "0"]
    proc = subprocess.run([*run, "--host", "0.0.0.0"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "refusing to serve 0.0.0.0 without tokens" in proc.stderr
    assert "--tokens FILE" in proc.stderr
    bad = tmp_path / "tokens.toml"
    bad.write_text('[[token]]\nname = "t"\nvalue_env = "RAGKIT_TEST_UNSET"\ncollections = []\n')
    proc = subprocess.run([*run, "--tokens", str(bad)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "RAGKIT_TEST_UNSET is not set" in proc.stderr


def test_ragkit_query_asks_a_token_server_only_with_a_token(server, index, b_markers):
    """With RAGKIT_TOKEN the one-shot query goes through the server and reads that token's collections;
    without it, the query is answered in process (the index's owner reads everything)."""
    cmd = [sys.executable, "-m", "ragkit", "query", "--index", str(index), "--json", "-k", "5", "Zebraquill furnace"]
    env = {**server.env, "RAGKIT_TOKEN": server.token("a")}
    through = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert through.returncode == 0, through.stderr
    assert leaks(through.stdout, b_markers, "Zebraquill furnace") == []
    assert json.loads(through.stdout)["timings_ms"]["load_model"] < 50  # the server's warm process answered
    env.pop("RAGKIT_TOKEN")
    alone = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert alone.returncode == 0 and "bravo/" in alone.stdout


@pytest.fixture(scope="module")
def strict(index, tmp_path_factory):
    """One worker, a tight rate and one request at a time per token."""
    tokens, env = tokens_file(
        tmp_path_factory.mktemp("strict") / "tokens.toml", {"rate_per_minute": 30, "in_flight": 1}
    )
    with serve(index, index.parent / "strict.log", "--tokens", str(tokens), "--workers", "1", env=env) as srv:
        yield srv


def streamed_answer(server, token: str, max_tokens: int) -> tuple[http.client.HTTPConnection, list[dict]]:
    """A generated answer streamed (the bundled GGUF), its first three lines read: the model is writing."""
    host, port = server.url.removeprefix("http://").split(":")
    con = http.client.HTTPConnection(host, int(port), timeout=600)
    question = "Describe everything about the Orion crates, the trucks and the shifts in detail."
    body = {"query": question, "answer": True, "answer_mode": "generate", "max_tokens": max_tokens, "stream": True}
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    con.request("POST", "/v1/query", body=json.dumps(body), headers=headers)
    resp = con.getresponse()
    assert resp.status == 200
    return con, [json.loads(resp.readline()) for _ in range(3)]


def hang_up(con: http.client.HTTPConnection) -> None:
    con.sock.close()
    con.close()


def test_a_client_that_hangs_up_stops_the_model(strict):
    """The client of a streamed generated answer reads the first pieces and hangs up; the worker stops writing
    at its next token and says so; the server goes on."""
    con, pieces = streamed_answer(strict, strict.token("b"), 400)
    assert all(set(p) == {"text"} for p in pieces)
    hang_up(con)
    while "the client hung up" not in strict.log.read_text():
        assert strict.proc.poll() is None
        time.sleep(0.2)
    stopped = next(line for line in strict.log.read_text().splitlines() if "the client hung up" in line)
    tokens = int(stopped.split("stopped after ")[1].split()[0])
    assert 2 <= tokens < 400, stopped
    assert strict.alive()


def test_rate_and_in_flight_limits_are_429(strict):
    """In flight: one request of a token at a time (a second while its answer is being written is 429); rate:
    the 31st request of a minute is 429."""
    b = strict.token("b")
    con, _ = streamed_answer(strict, b, 400)
    status, out = strict.call("/v1/stats", token=b)
    assert status == 429 and out["error"]["type"] == "RateLimited" and "requests are running" in out["error"]["message"]
    hang_up(con)
    while strict.call("/v1/stats", token=b)[0] == 429:  # until the server has seen the hang-up
        time.sleep(0.2)
    statuses = [strict.call("/v1/stats", token=strict.token("a"))[0] for _ in range(31)]
    assert statuses[:30] == [200] * 30 and statuses[30] == 429
    assert strict.alive()
