"""``ragkit serve`` (issue 15): a real uvicorn server on a free loopback port, with the bundled model; and
``ragkit query`` through it and without it."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.quality import REPO

pytestmark = pytest.mark.integration
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def call(url: str, body: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode() if body is not None else None, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def ragkit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragkit", *args], capture_output=True, text=True, cwd=REPO, env=ENV, timeout=300
    )


def without_timings(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        obj = json.loads(line)
        obj.pop("timings_ms", None)
        obj.pop("query_id", None)  # each process names its results its own way
        (obj.get("metadata") or {}).pop("timings_ms", None)
        out.append(obj)
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from ragkit import library

    root = tmp_path_factory.mktemp("serve")
    docs = root / "handbook"
    shutil.copytree(REPO / "ragkit" / "samples" / "handbook", docs)
    idx = root / "idx"
    library.index([docs], idx)
    log = root / "server.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragkit", "serve", "--index", str(idx), "--port", "0"],
            cwd=REPO,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    port_file = idx / "server.json"
    deadline = time.time() + 120
    while not port_file.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert port_file.exists(), log.read_text() if proc.poll() is not None else "server did not start"
    info = json.loads(port_file.read_text())
    yield {"url": info["url"], "idx": idx, "docs": docs, "proc": proc, "info": info, "log": log}
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert not port_file.exists()  # removed on the way out


def test_http_endpoints_status_codes_and_errors(server):
    url = server["url"]
    assert server["info"]["host"] == "127.0.0.1"  # loopback unless told otherwise
    status, health = call(f"{url}/healthz")
    assert status == 200 and health["status"] == "ok"
    status, r = call(f"{url}/v1/query", {"query": "how are overtime hours limited?", "k": 3})
    assert status == 200 and r["schema"] == "ragkit.query/1" and len(r["passages"]) == 3
    top = r["passages"][0]
    assert top["section"] == "Working Time Policy > Overtime > Limits on overtime" and top["pages"] is None
    status, doc = call(f"{url}/v1/documents/{top['document']['id']}")
    assert status == 200 and doc["path"] == top["document"]["path"] and "Overtime" in doc["text"]
    assert all(c["lines"][0] <= c["lines"][1] for c in doc["chunks"])
    section_id = doc["chunks"][-1]["section_id"]
    status, sec = call(f"{url}/v1/sections/{section_id}")
    assert status == 200 and sec["document_id"] == doc["id"] and sec["text"]
    status, st = call(f"{url}/v1/stats")
    assert status == 200 and st["documents"] == 5
    for path, body, want_status, want_code in (
        ("/v1/query", {"query": "x", "strategy": "nope"}, 422, 6),  # not of the schema (issue 64): 422
        ("/v1/query", {"k": 3}, 422, 6),
        ("/v1/query", {"query": "x", "k": 0}, 422, 6),
        ("/v1/query", {"query": "  "}, 422, 6),
        ("/v1/query", {"query": "x", "config": {"k": 0}}, 422, 6),
        ("/v1/query", {"query": "x", "config": {"no_such_setting": 1}}, 422, 6),
        ("/v1/query", {"query": "-x"}, 400, 6),  # of the schema, but nothing to search: 400, as it says
        ("/v1/documents/nope", None, 404, 6),
        ("/v1/sections/nope", None, 404, 6),
    ):
        status, body = call(url + path, body)
        assert status == want_status and body["error"]["code"] == want_code and body["error"]["message"], path
        assert body["error"]["type"] == "BadQuery" or want_status == 404, body
    with urllib.request.urlopen(f"{url}/openapi.json", timeout=30) as resp:
        assert "/v1/query" in json.loads(resp.read())["paths"]


def test_query_through_the_server_prints_what_in_process_prints(server):
    idx, port_file = str(server["idx"]), server["idx"] / "server.json"
    cases = [
        ["--json", "how are overtime hours limited?"],
        ["--jsonl", "-k", "2", "--strategy", "lexical", "remote work equipment"],
        ["--json", "--filter", "doc_type=policy", "--explain", "overtime"],  # --explain: the full CLI's path
        ["-k", "3", "how are overtime hours limited?"],
    ]  # the terminal's rendering
    through = [ragkit("query", "--index", idx, *c) for c in cases]
    saved = port_file.read_text()
    port_file.unlink()  # no server known: in process
    try:
        local = [ragkit("query", "--index", idx, *c) for c in cases]
    finally:
        port_file.write_text(saved)
    for a, b in zip(through[:3], local[:3]):
        assert a.returncode == b.returncode == 0, a.stderr + b.stderr
        assert without_timings(a.stdout) == without_timings(b.stdout)
    terminal = [re.sub(r"(passages · \w+ · )\d+ ms", r"\1… ms", r.stdout) for r in (through[3], local[3])]
    terminal = [re.sub(r"\b[0-9a-f]{16}\b", "QUERY_ID", t) for t in terminal]  # (each process names its own)
    assert terminal[0] == terminal[1] and "Working Time Policy > Overtime > Limits on overtime" in terminal[0]
    # the server really answered the first ones: its own warm process has no model load in the timings
    assert json.loads(through[0].stdout)["timings_ms"]["load_model"] < 50


def test_the_server_answers_with_quotes_or_says_the_documents_do_not_say(server):
    """``POST /v1/query {"answer": true}``: the same answer structure as the CLI's JSON (quotes with their
    places, ``abstained``), and the passages either way."""
    url = server["url"]
    status, r = call(f"{url}/v1/query", {"query": "How is approved overtime compensated?", "answer": True, "k": 3})
    a = r["answer"]
    assert status == 200 and a["mode"] == "extract" and a["abstained"] is False and r["passages"]
    quote = next(q for q in a["quotes"] if "125%" in q["text"])
    assert quote["path"].endswith("working-time.md") and quote["lines"][0] == 34 and quote["lines"][1] in (35, 36)
    status, r = call(f"{url}/v1/query", {"query": "What is the dress code for client visits?", "answer": True})
    assert status == 200 and r["answer"]["abstained"] is True and r["answer"]["quotes"] == [] and r["passages"]
    status, r = call(f"{url}/v1/query", {"query": "x", "answer": True, "answer_mode": "nope"})
    assert status == 422 and "answer_mode" in r["error"]["message"] and r["error"]["type"] == "BadQuery"


def test_a_stale_port_file_falls_back_to_the_process(server, tmp_path):
    from ragkit.serve.client import server_for

    idx = tmp_path / "stale"
    shutil.copytree(server["idx"], idx)
    (idx / "server.json").write_text(json.dumps({**server["info"], "pid": 2**22 + 12345}))  # no such process
    assert server_for(idx) is None
    r = ragkit("query", "--index", str(idx), "--json", "overtime")
    assert r.returncode == 0 and json.loads(r.stdout)["passages"]


def test_the_server_answers_from_each_committed_run(server):
    from ragkit import library

    url = server["url"]
    _, before = call(f"{url}/healthz")
    (server["docs"] / "parking.md").write_text(
        "# Parking Policy\n\nEach employee gets one parking badge for the garage under building B.\n"
    )
    library.index([server["docs"]], server["idx"])
    _, after = call(f"{url}/healthz")
    assert after["run"] == before["run"] + 1
    _, r = call(f"{url}/v1/query", {"query": "parking badge garage", "k": 1, "strategy": "lexical"})
    assert r["passages"][0]["document"]["path"].endswith("parking.md")


def test_queries_running_while_a_run_commits_all_succeed(server):
    """Four clients query the workers without a pause while another run is committed: no request fails, and
    once the run is in, every worker answers from it."""
    import threading

    from ragkit import library

    url, failures, answered, done = server["url"], [], [0], threading.Event()

    def client() -> None:
        while not done.is_set():
            status, body = call(f"{url}/v1/query", {"query": "how are overtime hours limited?", "k": 3})
            if status != 200 or not body["passages"]:
                failures.append((status, body))
            answered[0] += 1

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    (server["docs"] / "bicycles.md").write_text(
        "# Bicycle Policy\n\nEmployees may park bicycles in the courtyard rack next to the quartermaster's office.\n"
    )
    try:
        library.index([server["docs"]], server["idx"])
    finally:
        done.set()
        for t in threads:
            t.join()
    assert failures == [] and answered[0] >= 4
    for _ in range(4):  # whichever worker answers
        _, r = call(f"{url}/v1/query", {"query": "quartermaster bicycles courtyard", "k": 1, "strategy": "lexical"})
        assert r["passages"][0]["document"]["path"].endswith("bicycles.md")


def test_mcp_session_through_the_sdks_stdio_client(server):
    """A real MCP client session (the SDK's stdio client): the tools, a search, a section by the id the search
    gave, and an error that names its cause."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def session():
        params = StdioServerParameters(
            command=sys.executable,
            cwd=str(REPO),
            env=ENV,
            args=["-m", "ragkit", "serve", "--mcp", "--index", str(server["idx"])],
        )
        async with stdio_client(params) as streams:
            async with ClientSession(*streams) as s:
                await s.initialize()
                tools = sorted(t.name for t in (await s.list_tools()).tools)
                found = json.loads(
                    (await s.call_tool("search", {"query": "how are overtime hours limited?", "k": 2})).content[0].text
                )
                section = json.loads(
                    (await s.call_tool("get_section", {"section_id": found["passages"][0]["section_id"]}))
                    .content[0]
                    .text
                )
                bad = await s.call_tool("get_section", {"section_id": "nope"})
                stats = json.loads((await s.call_tool("stats", {})).content[0].text)
                quoted = json.loads(
                    (await s.call_tool("answer", {"question": "How is approved overtime compensated?", "k": 3}))
                    .content[0]
                    .text
                )
                silent = json.loads(
                    (await s.call_tool("answer", {"question": "What is the dress code for client visits?"}))
                    .content[0]
                    .text
                )
                return tools, found, section, bad, stats, quoted, silent

    tools, found, section, bad, stats, quoted, silent = anyio.run(session)
    assert quoted["mode"] == "extract" and quoted["abstained"] is False and quoted["passages"]
    assert any("125%" in q["text"] and q["lines"][0] == 34 for q in quoted["quotes"])
    assert quoted["query_id"] and len(quoted["query_id"]) == 16
    assert silent["abstained"] is True and silent["answer"].startswith("The documents do not say")
    assert tools == [
        "answer",
        "feedback",
        "get_document",
        "get_section",
        "list_documents",
        "outline",
        "search",
        "stats",
    ]
    top = found["passages"][0]
    assert top["section"] == "Working Time Policy > Overtime > Limits on overtime" and top["source"].endswith(".md")
    assert section["breadcrumb"] == top["section"] and "Overtime" in section["text"]
    assert bad.is_error and "no section 'nope'" in bad.content[0].text
    assert stats["documents"] >= 5


def test_a_worker_that_dies_is_replaced_and_the_server_goes_on(server):
    """A worker killed (SIGKILL) while idle: requests go to the other worker, another starts in its place."""
    url, pids = server["url"], server["info"]["workers"]
    os.kill(pids[0], signal.SIGKILL)
    for _ in range(6):  # whichever worker they go to
        status, r = call(f"{url}/v1/query", {"query": "how are overtime hours limited?", "k": 1})
        assert status == 200 and r["passages"]
    deadline = time.time() + 300
    while "worker 1 stopped; starting another" not in (log := server["log"].read_text()):
        assert time.time() < deadline, log
        call(f"{url}/healthz")
        time.sleep(0.2)
    status, _ = call(f"{url}/healthz")
    assert status == 200 and server["proc"].poll() is None


def test_index_watch_picks_up_a_change(tmp_path):
    """`ragkit index PATH --watch` stays up; a new file is indexed and committed without another command."""
    docs = tmp_path / "handbook"
    shutil.copytree(REPO / "ragkit" / "samples" / "handbook", docs)
    idx = tmp_path / "idx"
    out_file, err_file = (tmp_path / "out.txt").open("w"), (tmp_path / "err.txt").open("w")
    # Ctrl-C as on a terminal: a CI runner may start the suite with SIGINT ignored, and a child inherits that
    # (Python then never raises KeyboardInterrupt); the child is started with the default disposition
    inherited = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragkit", "index", str(docs), "--index", str(idx), "--watch"],
            cwd=REPO,
            env=ENV,
            stdout=out_file,
            stderr=err_file,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)

    def last_run() -> int | None:
        try:
            return json.loads((idx / "manifest.json").read_text())["last_run"]["id"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    try:
        deadline = time.time() + 120
        while last_run() is None and proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        first = last_run()
        assert first is not None, "the first run did not commit"
        time.sleep(1.0)  # the watcher is up once the first run has been reported
        (docs / "parking.md").write_text(
            "# Parking Policy\n\nEach employee gets one parking badge for the garage under building B.\n"
        )
        deadline = time.time() + 60
        while last_run() == first and proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        assert last_run() == first + 1, "the change was not indexed within 60 s"
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "no exit within 30 s of SIGINT"
        out_file.close()
        err_file.close()
    out, errs = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    assert code in (0, 130), (code, out, errs)
    assert "1 change(s): indexing again" in errs and out.count("Indexed") == 2, (out, errs)
    r = ragkit("query", "--index", str(idx), "--json", "--strategy", "lexical", "parking badge garage")
    assert json.loads(r.stdout)["passages"][0]["document"]["path"].endswith("parking.md")


def test_serve_an_index_on_s3(tmp_path):
    """``ragkit serve --index s3://…`` (moto's S3 server on loopback): health names the URI, queries answer from
    the committed run and follow a run committed by another process; ``ragkit query`` finds the server."""
    from ragkit import library
    from ragkit.config import resolve_index_dir
    from tests.s3 import BUCKET, NoServer, moto_s3

    docs = tmp_path / "handbook"
    shutil.copytree(REPO / "ragkit" / "samples" / "handbook", docs)
    try:
        server = moto_s3(tmp_path / "moto.log", BUCKET, tmp_path / "cache")
        env = server.__enter__()
    except NoServer as exc:
        pytest.skip(str(exc))
    uri = f"s3://{BUCKET}/served"
    proc = None
    try:
        library.index([docs], uri)
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragkit", "serve", "--index", uri, "--port", "0"],
            cwd=REPO,
            env={**ENV, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        port_file = resolve_index_dir(uri) / "server.json"  # in this machine's mirror of the index
        deadline = time.time() + 120
        while not port_file.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert port_file.exists(), proc.stderr.read() if proc.poll() is not None else "server did not start"
        url = json.loads(port_file.read_text())["url"]
        status, health = call(f"{url}/healthz")
        assert status == 200 and health["index"] == "served" and health["run"] == 1  # its name, never its URI
        status, r = call(f"{url}/v1/query", {"query": "how are overtime hours limited?", "k": 2})
        assert status == 200 and r["passages"][0]["section"] == "Working Time Policy > Overtime > Limits on overtime"
        (docs / "parking.md").write_text(
            "# Parking Policy\n\nEach employee gets one parking badge for the garage under building B.\n"
        )
        library.index([docs], uri)
        time.sleep(1.2)  # the server looks for a newer manifest at most once a second
        _, r = call(f"{url}/v1/query", {"query": "parking badge garage", "k": 1, "strategy": "lexical"})
        assert r["metadata"]["run"] == 2 and r["passages"][0]["document"]["path"].endswith("parking.md")
        q = subprocess.run(
            [sys.executable, "-m", "ragkit", "query", "--index", uri, "--json", "parking badge"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**ENV, **env},
            timeout=300,
        )
        assert q.returncode == 0 and json.loads(q.stdout)["passages"][0]["document"]["path"].endswith("parking.md")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        server.__exit__(None, None, None)
