#!/usr/bin/env python
"""All of German federal law on one machine: a progressive index of bundestag/gesetze, its queries, its vector
index, its quality and its updates.

    python scripts/bench_scale.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  build    index a folder progressively (``ragkit index --progressive``) in a child process: time to the first
           committed (searchable) run, its phases, peak RSS, index size against the source; then the fill rate
  queries  warm p50/p95 of hybrid and auto and a one-shot ``ragkit query --json`` process on an index
  ann      the vector index against exact search: recall@10 and milliseconds with real query vectors
  quality  legal reference queries (section first) and the German everyday questions (top-1/top-3) on indexes
           side by side (the 8 laws alone, all of federal law)
  refs     how the references resolved: to a law, and to the cited section in it (a wrong law rarely has it)
  update   an incremental run between two upstream commits of the laws: seconds per changed law, what it touched
  ray      ``--engine ray`` with two workers against the local pipeline on a share of the laws: the same index?

The laws come from the public bundestag/gesetze repository (a checkout of its Markdown: ``<letter>/<slug>/
index.md``; index it with ``--include '*.md'``, its PDFs and images are not laws). Every subcommand also takes
``--json``.
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import harness
from harness import arg, print_table

cli = harness.CLI(__doc__)
quality = harness.tests_module("quality")


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def _md_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*.md"))


# --- build ---------------------------------------------------------------------------------------------------------


@cli.command(
    "build",
    arg("corpus", type=Path, help="a checkout of bundestag/gesetze (Markdown)"),
    arg("--index", type=Path, required=True),
    arg("--fill-batches", type=int, default=0, help="full-model batches after the first run (0: none, -1: all)"),
    arg("--fill-first", action="append", default=[], help="a glob of laws the full model fills first (repeatable)"),
)
def build(args) -> None:
    """A progressive index of ``corpus`` from scratch, in a child process (``ragkit index --progressive
    --include '*.md' --json``): the first run's wall time (when every law is searchable), its phases, the peak
    RSS, the index's size against the Markdown; with ``--fill-batches`` the full model's batches after it and
    their rate (chunks/s) and the time the whole fill would take at that rate.

        python scripts/bench_scale.py build <gesetze checkout> --index DIR [--fill-batches N] [--fill-first GLOB]
    """
    if args.index.exists():
        shutil.rmtree(args.index)
    cmd = harness.ragkit_cmd("index", str(args.corpus), "--index", str(args.index), "--include", "*.md")
    cmd += ["--progressive", "--json"] + ([] if args.fill_batches < 0 else ["--fill-batches", str(args.fill_batches)])
    cmd += [x for glob in args.fill_first for x in ("--fill-first", glob)]
    t = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if run.returncode:
        raise SystemExit(run.stderr[-3000:])
    summary = json.loads(run.stdout)
    rss = next(int(x.split()[-1]) for x in run.stderr.splitlines() if "Maximum resident set size" in x) / 1024
    size, source = _du(args.index), _md_bytes(args.corpus)
    secs = summary["seconds"]
    first = secs["total"]
    rows = [
        ("laws (documents) / chunks", f"{summary['total_documents']:,} / {summary['total_chunks']:,}"),
        ("skipped files", summary["skipped"]),
        ("first run: searchable after, min", f"{first / 60:.1f}"),
        *((f"  {k}, s", f"{v:.1f}") for k, v in secs.items() if k != "total"),
        ("peak RSS, MiB", f"{rss:.0f}"),
        ("index size / Markdown", f"{size / 1e6:.0f} MB / {source / 1e6:.0f} MB = {size / source:.2f}×"),
        ("process wall, min", f"{wall / 60:.1f}"),
    ]
    fill = summary.get("fill") or {}
    if fill.get("batches"):
        rate = fill["batches"] * _batch() / max(fill["seconds"]["total"], 1e-9)
        rows += [
            ("full-model batches / chunks filled", f"{fill['batches']} / {fill['filled']:,} of {fill['total']:,}"),
            ("full-model rate, chunks/s", f"{rate:.1f}"),
            ("whole fill at that rate, h", f"{fill['total'] / rate / 3600:.1f}"),
        ]
    print_table(f"progressive build of {args.corpus}", ("figure", "value"), rows, width=120)


def _batch() -> int:
    from ragkit.ingest import fill

    return fill.BATCH


# --- queries -------------------------------------------------------------------------------------------------------


def _queries() -> list[str]:
    return [q["query"] for q in quality.legal_queries()] + [q["query"] for q in quality.german_questions()]


@cli.command("queries", arg("--index", type=Path, required=True), arg("--rounds", type=int, default=3))
def queries(args) -> None:
    """Warm latency of hybrid and auto (p50/p95 over the legal reference queries and the German questions,
    after one warm-up round) and a one-shot ``ragkit query --json`` process (median of 3), peak RSS of each.

        python scripts/bench_scale.py queries --index DIR [--rounds 3]
    """
    from ragkit.config import QueryConfig

    ix = harness.open_index(args.index)
    texts = _queries()
    rows = []
    for strategy in ("hybrid", "auto"):
        cfg = QueryConfig(strategy=strategy, k=10)
        for text in texts:
            ix.query(text, cfg)
        times = []
        for _ in range(args.rounds):
            for text in texts:
                t = time.perf_counter()
                ix.query(text, cfg)
                times.append((time.perf_counter() - t) * 1000)
        times.sort()
        rows.append((f"warm {strategy}", f"{statistics.median(times):.1f}", f"{times[int(0.95 * len(times))]:.1f}"))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    one = []
    for text in texts[:3]:
        t = time.perf_counter()
        subprocess.run(harness.ragkit_cmd("query", "--index", str(args.index), "--json", text), capture_output=True)
        one.append(time.perf_counter() - t)
    rows.append(("one-shot ragkit query --json, s", f"{statistics.median(one):.2f}", ""))
    rows.append(("warm process peak RSS, MiB", f"{rss:.0f}", ""))
    print_table(f"queries on {args.index} ({len(texts)} texts)", ("figure", "p50 ms", "p95 ms"), rows, width=110)


# --- ann -----------------------------------------------------------------------------------------------------------


@cli.command("ann", arg("--index", type=Path, required=True), arg("--k", type=int, default=10))
def ann(args) -> None:
    """The index's vector index against exact search over the same vectors: recall@k and milliseconds per
    query, with the query vectors of the legal reference queries, the German questions and 300 section headings.

        python scripts/bench_scale.py ann --index DIR [--k 10]
    """
    import lance
    import numpy as np

    from ragkit.store.lance import ann_query

    reader = harness.open_index(args.index).reader
    ds = reader.chunks.ds
    data = ds.to_table(columns=["id", "vector", "header"])
    ids = data.column("id").to_pylist()
    mat = data.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False).reshape(len(ids), -1)
    headers = sorted(set(h for h in data.column("header").to_pylist() if h))[:: max(1, len(ids) // 3000)][:300]
    qs = reader.embedder.encode_queries(_queries() + [h.rsplit(" > ", 1)[-1] for h in headers])
    have = any("IVF" in str(i.index_type).upper() for i in ds.describe_indices())
    recall, exact_ms, ann_ms = [], [], []
    for q in qs:
        t = time.perf_counter()
        true = set(np.array(ids)[np.argsort(-(mat @ q))[: args.k]])
        exact_ms.append((time.perf_counter() - t) * 1000)
        if not have:
            continue
        t = time.perf_counter()
        got = ds.to_table(columns=["id"], nearest=ann_query(q, args.k, len(ids)), disable_scoring_autoprojection=True)
        ann_ms.append((time.perf_counter() - t) * 1000)
        recall.append(len(true & set(got.column("id").to_pylist())) / args.k)
    rows = [
        ("rows", f"{len(ids):,}"),
        ("queries", len(qs)),
        ("exact (numpy, in memory) ms p50", f"{statistics.median(exact_ms):.1f}"),
        (
            "vector index",
            next((str(i.index_type) for i in ds.describe_indices() if "IVF" in str(i.index_type).upper()), "none"),
        ),
    ]
    if recall:
        rows += [
            (f"recall@{args.k} vs exact", f"{statistics.mean(recall):.3f}"),
            ("ANN ms p50", f"{statistics.median(ann_ms):.1f}"),
        ]
    print_table(f"vector search on {args.index}", ("figure", "value"), rows, width=100)
    del lance


# --- quality -------------------------------------------------------------------------------------------------------


@cli.command("quality", arg("--index", type=Path, action="append", required=True, help="repeatable"))
def quality_cmd(args) -> None:
    """Per index: the 24 legal reference queries whose cited section is first, and the German everyday
    questions' top-1 / top-3 (36 tuned, 32 held out), strategy auto, k 3 (``tests/quality.py``).

        python scripts/bench_scale.py quality --index <8 laws> --index <all federal law>
    """
    rows = []
    for index in args.index:
        ix = harness.open_index(index)
        queries = quality.legal_queries()
        misses = quality.legal_misses(ix, queries)
        tuned = quality.german_hits(ix, quality.german_questions())
        held = quality.german_hits(ix, quality.german_questions(held_out=True))
        rows.append(
            (
                str(index),
                f"{len(queries) - len(misses)} / {len(queries)}",
                f"{tuned['top1']:.3f} / {tuned['top3']:.3f}",
                f"{held['top1']:.3f} / {held['top3']:.3f}",
            )
        )
    cols = ("index", "legal refs first", "German tuned top-1 / top-3", "held out top-1 / top-3")
    print_table("quality inside the index", cols, rows, width=140)


@cli.command("refs", arg("--index", type=Path, action="append", required=True, help="repeatable"))
def refs_cmd(args) -> None:
    """Per index: how its references resolved. A law named in the text ("§ 5 des Kreditwesengesetzes") that
    resolves to a law holding the cited section is most likely the right law; one resolving to a law without
    it most likely a wrong one (a law with the § numbered so counts as right: an upper bound).

        python scripts/bench_scale.py refs --index <before> --index <after>
    """
    from ragkit.store.duck import DuckStore
    from ragkit.store.layout import store_path

    count = (
        "SELECT count(*), count(resolved_document_id), count(resolved_section_id) FROM refs "
        "WHERE kind = 'law' AND numbers <> [] AND {}"
    )
    rows = []
    for index in args.index:
        ix = harness.open_index(index)
        with DuckStore(store_path(ix.path, ix.reader.manifest)) as db:
            for what, where in (("named (des …gesetzes)", "target LIKE 'name:%'"), ("all with a §", "true")):
                n, law, section = db.con.execute(count.format(where)).fetchone()
                share = f"{section / law:.2f}" if law else "-"
                rows.append((str(index), what, f"{n:,}", f"{law:,}", f"{section:,}", share))
    cols = ("index", "references", "count", "to a law", "to its section", "section / law")
    print_table("references resolved", cols, rows, width=130)


# --- update --------------------------------------------------------------------------------------------------------


@cli.command(
    "update",
    arg("--index", type=Path, required=True, help="an index of the older checkout, built from --old"),
    arg("--old", type=Path, required=True, help="the checkout the index was built from"),
    arg("--new", type=Path, required=True, help="a later checkout of the same repository"),
    arg("--fill-batches", type=int, default=0, help="a progressive index: full-model batches after the run"),
)
def update(args) -> None:
    """An incremental run from one upstream commit to a later one: the laws that differ are copied over the
    old checkout (and the gone ones removed), ``ragkit index`` runs again, and its summary says what it
    touched; seconds per changed law.

        python scripts/bench_scale.py update --index DIR --old <checkout A> --new <checkout B>
    """
    old = {p.relative_to(args.old): p for p in args.old.rglob("index.md")}
    new = {p.relative_to(args.new): p for p in args.new.rglob("index.md")}
    changed = [r for r in new if r in old and new[r].read_bytes() != old[r].read_bytes()]
    added, gone = [r for r in new if r not in old], [r for r in old if r not in new]
    for r in changed + added:
        (args.old / r).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(new[r], args.old / r)
    for r in gone:
        (args.old / r).unlink()
    cmd = harness.ragkit_cmd("index", str(args.old), "--index", str(args.index), "--include", "*.md", "--json")
    cmd += ["--fill-batches", str(args.fill_batches)]
    t = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if run.returncode:
        raise SystemExit(run.stderr[-3000:])
    s = json.loads(run.stdout)
    laws = len(changed) + len(added) + len(gone)
    rows = [
        ("laws changed / added / gone", f"{len(changed)} / {len(added)} / {len(gone)}"),
        (
            "run: new / changed / unchanged / removed files",
            f"{s['new']} / {s['changed']} / {s['unchanged']} / {s['removed']}",
        ),
        ("chunks embedded", f"{s['chunks']:,} of {s['total_chunks']:,}"),
        ("run seconds (process wall)", f"{s['seconds']['total']:.1f} ({wall:.1f})"),
        ("seconds per changed law", f"{s['seconds']['total'] / max(laws, 1):.2f}"),
        *((f"  {k}, s", f"{v:.1f}") for k, v in s["seconds"].items() if k != "total"),
    ]
    print_table("incremental run between two upstream commits", ("figure", "value"), rows, width=110)


# --- ray -----------------------------------------------------------------------------------------------------------


def _chunk_rows(index: Path) -> tuple[list[dict], dict]:
    from ragkit.store.chunks import open_chunks
    from ragkit.store.remote import lance_location

    ix = harness.open_index(index)
    run = ix.reader.manifest.last_run
    table = open_chunks(lance_location(ix.path), run.lance_table, run.lance_version)
    cols = ["id", "document_id", "section_id", "chunk_index", "content", "line_start", "line_end", "path"]
    rows = sorted(table.ds.to_table(columns=cols).to_pylist(), key=lambda r: r["id"])
    ids, mat = table.all_vectors()
    return rows, dict(zip(ids, mat))


def _duck_counts(index: Path) -> dict[str, int]:
    from ragkit.store.duck import DuckStore
    from ragkit.store.layout import store_path

    tables = ("documents", "sections", "chunks", "entities", "relations", "refs")
    ix = harness.open_index(index)
    with DuckStore(store_path(ix.path, ix.reader.manifest), read_only=True) as db:
        return {t: db.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


@cli.command(
    "ray",
    arg("corpus", type=Path, help="a checkout of bundestag/gesetze (Markdown)"),
    arg("--laws", type=int, default=400, help="every n-th law so that this many are indexed"),
    arg("--work", type=Path),
    arg("--embed-model", default="bundled:multilingual-e5-small-static", help="the model of both runs"),
)
def ray_cmd(args) -> None:
    """``ragkit index --engine ray --ray-workers 2`` against the local pipeline on an even share of the laws
    (fresh builds, one after the other, the same model): chunk rows, vectors, DuckDB row counts and the legal
    reference queries' passages compared.

        python scripts/bench_scale.py ray <gesetze checkout> [--laws 400] [--work DIR] [--embed-model SPEC]
    """
    import numpy as np

    from ragkit.config import QueryConfig

    work = harness.workdir(args.work, "scale-ray")
    laws = sorted(args.corpus.rglob("index.md"))
    laws = laws[:: max(1, len(laws) // args.laws)][: args.laws]
    keep = {f"{q['law']}" for q in quality.legal_queries()}  # the queried laws, so the passages can be compared
    laws += [p for p in args.corpus.rglob("index.md") if p.parent.name in keep and p not in laws]
    source = work / "laws"
    shutil.rmtree(source, ignore_errors=True)
    for p in laws:
        (source / p.relative_to(args.corpus)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, source / p.relative_to(args.corpus))
    runs = {}
    for label, extra in (("local", ()), ("ray", ("--engine", "ray", "--ray-workers", "2"))):
        shutil.rmtree(work / label, ignore_errors=True)
        cmd = harness.ragkit_cmd("index", source, "--index", work / label, "--embed-model", args.embed_model, "--json")
        t = time.perf_counter()
        out = subprocess.run([*cmd, *extra], check=True, capture_output=True, text=True)
        runs[label] = (time.perf_counter() - t, json.loads(out.stdout))
    (ra, va), (rb, vb) = _chunk_rows(work / "local"), _chunk_rows(work / "ray")
    diff = max((float(np.abs(va[k] - vb[k]).max()) for k in va if k in vb), default=0.0)
    ca, cb = _duck_counts(work / "local"), _duck_counts(work / "ray")
    same_passages = 0
    queries = quality.legal_queries()
    local, ray = harness.open_index(work / "local"), harness.open_index(work / "ray")
    for q in queries:
        a, b = (ix.query(q["query"], QueryConfig(k=5)) for ix in (local, ray))
        same_passages += [p.chunk_ids for p in a.passages] == [p.chunk_ids for p in b.passages]
    rows = [
        (
            "laws / chunks",
            f"{len(laws):,} / {runs['local'][1]['total_chunks']:,}",
            f"{runs['ray'][1]['total_chunks']:,}",
        ),
        ("wall s", f"{runs['local'][0]:.1f}", f"{runs['ray'][0]:.1f}"),
        ("chunk rows (id, content, lines, path) equal", "", str(ra == rb)),
        ("vectors: max abs difference", "", f"{diff:.2e}"),
        *((f"DuckDB {t}", f"{ca[t]:,}", f"{cb[t]:,}") for t in ca),
        ("legal queries with the same passages", "", f"{same_passages} / {len(queries)}"),
    ]
    print_table(f"--engine ray, 2 workers, against the local pipeline ({args.embed_model})", ("", "local", "ray"), rows)


if __name__ == "__main__":
    sys.exit(cli.main())
