"""An index you can trust from anywhere: every file of an index is data. A pickle planted in an index folder is
never executed, by a query, ``ragkit check``, ``ragkit serve``'s operations or the next ``ragkit index``; an index
an older version wrote with pickles is refused with a hint, and converted by its next run or ``check --repair``."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ragkit
from ragkit import library
from ragkit.config import QueryConfig
from ragkit.store import layout
from ragkit.store.arrays import UnsafeIndexFile
from ragkit.store.manifest import read_manifest


class Planted:
    """Unpickling this writes a file: proof that a pickle ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _plant(folder, name, marker):
    (folder / name).write_bytes(pickle.dumps(Planted(marker)))


def _graph_dir(ix):
    return layout.graph_path(ix.path, read_manifest(ix.path))


def test_no_pickle_is_loaded_by_index_query_check_or_a_server_operation(corpus, index_with, monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("a pickle was loaded")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    _, ix = index_with(corpus)
    for strategy in ("hybrid", "local", "hippo", "hierarchical", "global"):
        ix.query("how is overtime limited? § 3", QueryConfig(strategy=strategy, k=3, log=False))
    reader = ix.reader
    assert reader.vocabulary and reader.resolver and reader.graph and reader.entity_graph is not None
    assert library.check(ix.path).to_dict()["ok"]
    (corpus / "notes" / "meeting.txt").write_text("Meeting notes\n\nThe planning meeting moved to Wednesday.\n")
    index_with(corpus)  # the next run
    names = sorted(p.name for p in _graph_dir(ix).iterdir())
    assert names == ["entities.npz", "evidence.npz", "resolver.npz", "vocab.npz"]


@pytest.mark.parametrize("name", ["evidence.pkl", "entities.pkl", "vocab.pkl", "resolver.pkl"])
def test_a_planted_pickle_is_refused_never_run_and_converted_by_the_next_run(corpus, index_with, tmp_path, fake, name):
    _, ix = index_with(corpus)
    folder = _graph_dir(ix)
    marker = tmp_path / "ran"
    (folder / name.replace(".pkl", ".npz")).unlink()  # what an older version left: the pickle only
    _plant(folder, name, marker)
    ix = ragkit.open(ix.path, embedder=fake)
    with pytest.raises(UnsafeIndexFile, match="pickle") as err:
        for strategy in ("hybrid", "hippo", "lexical"):
            ix.query("how is overtime limited? § 3 meeting", QueryConfig(strategy=strategy, k=3, log=False))
        _ = ix.reader.vocabulary, ix.reader.resolver, ix.reader.graph, ix.reader.entity_graph
    assert "check --repair" in err.value.hint
    report = library.check(ix.path).to_dict()
    assert not report["ok"] and any(name in p["what"] for p in report["problems"])
    index_with(corpus)  # nothing changed: the run still writes its files anew, as data
    assert not (folder / name).exists() and (folder / name.replace(".pkl", ".npz")).is_file()
    ragkit.open(ix.path, embedder=fake).query("how is overtime limited?", QueryConfig(k=3, log=False))
    assert not marker.exists()


def test_a_pickle_beside_the_data_files_is_never_read_and_repair_removes_it(corpus, index_with, tmp_path, fake):
    _, ix = index_with(corpus)
    folder = _graph_dir(ix)
    marker = tmp_path / "ran"
    for name in ("evidence.pkl", "vocab.pkl"):
        _plant(folder, name, marker)
    _plant(ix.path, "manifest.pkl", marker)
    ix = ragkit.open(ix.path, embedder=fake)
    ix.query("how is overtime limited?", QueryConfig(k=3, log=False))
    assert ix.reader.vocabulary and not marker.exists()
    done = library.check(ix.path, repair=True).to_dict()
    assert not (folder / "evidence.pkl").exists() and done["ok"] and not marker.exists()


def test_the_cli_and_a_server_refuse_an_index_of_pickles_with_a_hint(corpus, tmp_path):
    idx = tmp_path / "idx"
    run = [sys.executable, "-m", "ragkit"]
    subprocess.run([*run, "index", str(corpus), "--index", str(idx)], check=True, capture_output=True)
    folder = layout.graph_path(idx, read_manifest(idx))
    marker = tmp_path / "ran"
    (folder / "evidence.npz").unlink()
    _plant(folder, "evidence.pkl", marker)
    out = subprocess.run([*run, "query", "overtime § 3", "--index", str(idx)], capture_output=True, text=True)
    assert out.returncode == 7 and "pickle" in out.stderr and "check --repair" in out.stderr and not marker.exists()
    fixed = subprocess.run([*run, "check", "--repair", "--index", str(idx)], capture_output=True, text=True)
    assert fixed.returncode == 0 and not marker.exists()
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)
    out = subprocess.run([*run, "query", "overtime", "--index", str(idx), "--json"], capture_output=True, text=True)
    assert out.returncode == 0 and not marker.exists()


@pytest.mark.integration
def test_index_dot_slash_dir_means_that_folder_for_every_command(corpus, tmp_path):
    """``--index ./DIR`` is the folder DIR under the working directory for every command that takes it (a
    server's workers included), never ``indexes/DIR``."""
    run = [sys.executable, "-m", "ragkit"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def ragkit(*args):
        return subprocess.run([*run, *args], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)

    done = ragkit("index", str(corpus), "--index", "./myindex")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "myindex" / "manifest.json").is_file() and not (tmp_path / "indexes").exists()
    out = ragkit("query", "--json", "how is overtime limited?", "--index", "./myindex")
    assert out.returncode == 0, out.stderr
    qid = json.loads(out.stdout)["query_id"]
    for args in (
        ["stats", "--json"],
        ["check"],
        ["graph", "stats"],
        ["show", "passage", qid, "1"],
        ["feedback", qid, "-p", "1", "--good"],
        ["learn", "--dry-run"],
        ["models", "--no-probe"],
    ):
        got = ragkit(*args, "--index", "./myindex")
        assert got.returncode == 0 and "no index" not in got.stderr, (args, got.stderr)
    assert not (tmp_path / "indexes").exists()
    import time
    import urllib.request

    port_file = tmp_path / "myindex" / "server.json"
    with (tmp_path / "server.log").open("w") as log:
        proc = subprocess.Popen(
            [*run, "serve", "--index", "./myindex", "--port", "0"], cwd=tmp_path, env=env, stdout=log, stderr=log
        )
    try:
        deadline = time.time() + 300
        while not port_file.exists():
            assert proc.poll() is None and time.time() < deadline, (tmp_path / "server.log").read_text()[-2000:]
            time.sleep(0.2)
        info = json.loads(port_file.read_text())
        body = json.dumps({"query": "how is overtime limited?", "k": 2}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{info['port']}/v1/query", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as resp:
            assert resp.status == 200 and json.loads(resp.read())["passages"]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert not (tmp_path / "indexes").exists()


@pytest.mark.integration
def test_a_file_edited_under_a_running_server_gets_its_new_quote_and_lines(tmp_path):
    """Quotes are matched against the source file as it is now: after an edit and the run that indexes it, the
    server quotes the new sentence at its new lines (the old text is not kept for the life of the process)."""
    import time
    import urllib.request

    import ragkit

    src = tmp_path / "handbook"
    shutil.copytree(Path(ragkit.__file__).parent / "samples" / "handbook", src)
    run = [sys.executable, "-m", "ragkit"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    idx = tmp_path / "idx"
    subprocess.run([*run, "index", str(src), "--index", str(idx)], check=True, capture_output=True, env=env)
    with (tmp_path / "server.log").open("w") as log:
        proc = subprocess.Popen([*run, "serve", "--index", str(idx), "--port", "0"], env=env, stdout=log, stderr=log)

    def quote() -> dict:
        body = json.dumps({"query": "How is approved overtime compensated?", "answer": True, "k": 3}).encode()
        request = urllib.request.Request(f"{url}/v1/query", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as resp:
            return next(q for q in json.loads(resp.read())["answer"]["quotes"] if "hourly rate" in q["text"])

    try:
        deadline = time.time() + 300
        while not (idx / "server.json").exists():
            assert proc.poll() is None and time.time() < deadline
            time.sleep(0.2)
        url = f"http://127.0.0.1:{json.loads((idx / 'server.json').read_text())['port']}"
        before = quote()
        assert "125%" in before["text"] and before["lines"][0] == 34
        policy = src / "policies" / "working-time.md"
        text = policy.read_text().replace("125%", "150%")
        lines = text.split("\n")
        at = lines.index("# Working Time Policy") + 1
        policy.write_text("\n".join(lines[:at] + ["", "A note added above.", ""] + lines[at:]))
        subprocess.run([*run, "index", str(src), "--index", str(idx)], check=True, capture_output=True, env=env)
        deadline = time.time() + 60
        while "150%" not in (after := quote())["text"]:
            assert time.time() < deadline, after
            time.sleep(0.5)
        assert after["lines"][0] == 37 and "125%" not in after["text"]
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_a_reader_following_a_new_run_keeps_the_embedder_it_was_given(corpus, index_with, fake):
    _, ix = index_with(corpus)
    (corpus / "notes" / "meeting.txt").write_text("Meeting notes\n\nThe planning meeting moved to Friday.\n")
    index_with(corpus)
    assert ix.follow() and ix.reader.embedder is fake
    assert ix.query("planning meeting", QueryConfig(k=2, log=False)).passages


def test_a_reader_following_a_new_run_keeps_the_full_model_it_was_given(corpus, index_with, fake):
    """A progressive index's full model handed in (``ragkit.open(full_embedder=…)``) outlives a run."""
    _, built = index_with(corpus)
    ix = ragkit.open(built.path, embedder=fake, full_embedder=(full := object()))
    (corpus / "notes" / "meeting.txt").write_text("Meeting notes\n\nThe planning meeting moved to Friday.\n")
    index_with(corpus)
    assert ix.follow() and ix.reader.given_full_embedder is full and ix.reader.embedder is fake


def test_a_source_copied_over_with_its_old_modification_time_is_read_again(tmp_path):
    from ragkit.answer.evidence import file_lines

    source = tmp_path / "rules.md"
    source.write_text("Desks hold ten folders.\n")
    st = source.stat()
    assert file_lines(str(source)) == ["Desks hold ten folders.", ""]
    source.write_text("Desks hold six folders.\n")  # the same size, its old modification time put back (cp -p)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    for _ in range(200):  # a kernel whose change time moves once a tick (before 6.13): let one pass
        if source.stat().st_ctime_ns != st.st_ctime_ns:
            break
        time.sleep(0.005)
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_lines(str(source)) == ["Desks hold six folders.", ""]
