"""``ragkit check`` (issue 16): a whole index passes; damaged derived files are found and repaired; a
LanceDB/DuckDB/manifest disagreement is found and named (exit 7)."""

import json

from typer.testing import CliRunner

from ragkit.cli.app import app
from ragkit.store import check as checker

runner = CliRunner()


def damaged(ix, change) -> list[str]:
    path = ix.path / "manifest.json"
    saved = path.read_text()
    manifest = json.loads(saved)
    change(manifest)
    path.write_text(json.dumps(manifest))
    try:
        return [p.what for p in checker.check(ix.path)[0]]
    finally:
        path.write_text(saved)


def test_check_passes_finds_and_repairs(corpus, index_with):
    _, ix = index_with(corpus)
    idx = str(ix.path)
    problems, facts = checker.check(ix.path)
    assert problems == [] and facts["lance_rows"] == facts["chunks"] > 0
    r = runner.invoke(app, ["check", "--index", idx])
    assert r.exit_code == 0 and "ok" in r.output

    (ix.reader.graph_dir / "entities.npz").unlink()
    r = runner.invoke(app, ["check", "--index", idx, "--json"])
    assert r.exit_code == 7
    out = json.loads(r.output.splitlines()[0])
    assert not out["ok"] and out["problems"][0]["derived"] and "entity graph" in out["problems"][0]["what"]
    r = runner.invoke(app, ["check", "--index", idx, "--repair"])
    assert r.exit_code == 0 and "repaired: the entity graph is missing" in r.output
    assert checker.check(ix.path)[0] == []


def test_check_names_disagreements(corpus, index_with):
    _, ix = index_with(corpus)

    def version(m):
        m["last_run"]["lance_version"] += 50

    def run(m):
        m["last_run"]["id"] -= 1

    def count(m):
        m["counts"]["chunks"] += 1

    assert any("does not open" in p for p in damaged(ix, version))
    assert any("did not finish its commit" in p for p in damaged(ix, run))
    assert any("the manifest says" in p for p in damaged(ix, count))
    path = ix.path / "manifest.json"
    saved = path.read_text()
    path.write_text(
        json.dumps({**json.loads(saved), "last_run": {**json.loads(saved)["last_run"], "lance_version": 999}})
    )
    r = runner.invoke(app, ["check", "--index", str(ix.path)])
    assert r.exit_code == 7 and "index PATH --full" in r.output
    path.write_text(saved)


def test_a_second_writer_waits_or_exits_busy(corpus, tmp_path, fake):
    """While another run holds an index, `ragkit index --no-wait` exits 9 at once; by default a run says it
    waits and goes on when the first is done. The lock is the kernel's (flock): it ends with its process."""
    import fcntl
    import threading
    import time

    import ragkit
    from ragkit.events import Reporter

    idx = tmp_path / "idx"
    ragkit.index([corpus], idx, embedder_factory=lambda c: fake)
    (corpus / "new.md").write_text("# New\n\nA new note about parking badges.\n")
    holder = open(idx / ".lock", "w")
    fcntl.flock(holder, fcntl.LOCK_EX)  # another indexing run holds the index
    said, done = [], []

    class Listening(Reporter):
        def warn(self, message: str) -> None:
            said.append(message)

    second = threading.Thread(
        target=lambda: done.append(
            ragkit.index([corpus], idx, reporter=Listening(), wait=True, embedder_factory=lambda c: fake)
        )
    )
    try:
        r = runner.invoke(app, ["index", str(corpus), "--index", str(idx), "--no-wait"])
        assert r.exit_code == 9 and "being indexed by another process" in r.output
        second.start()
        deadline = time.time() + 30
        while not said and time.time() < deadline:
            time.sleep(0.05)
        assert said and "waiting for it to finish" in said[0]
        assert second.is_alive() and not done
    finally:
        fcntl.flock(holder, fcntl.LOCK_UN)
        holder.close()
    second.join(timeout=60)
    assert done and done[0].new == 1
