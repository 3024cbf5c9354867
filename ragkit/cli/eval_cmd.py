"""ragkit eval DATASET_DIR"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragkit.cli.common import RichReporter, console, handle_errors, interactive, models, print_json
from ragkit.cli.options import Alpha, AsJson, IndexOpt, Mode, one_of
from ragkit.config import RERANKERS, STRATEGY_NAMES, load_config, override, resolve_index_dir

METRICS = ["ndcg@10", "recall@2", "recall@5", "recall@10", "recall@100", "mrr@10"]


@handle_errors
def eval_cmd(
    dataset: Annotated[Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv.")],
    strategy: Annotated[
        str, typer.Option("--strategy", "-s", help=f"Comma-separated strategies of {one_of(STRATEGY_NAMES)}.")
    ] = "naive,lexical,hybrid",
    k: Annotated[int, typer.Option("--k", help="Documents ranked per query.")] = 100,
    index: IndexOpt = None,
    alpha: Alpha = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Evaluate only the first N queries.")] = None,
    rerank: Annotated[
        str | None, typer.Option("--rerank", help=f"Comma-separated rerankers of {one_of(RERANKERS)} (a row each).")
    ] = None,
    mode: Mode = None,
    damping: Annotated[float | None, typer.Option("--damping", help="Personalized PageRank damping (hippo).")] = None,
    embed_model: Annotated[
        list[str] | None,
        typer.Option("--embed-model", help="An embed model to compare (repeatable; one cached index each)."),
    ] = None,
    rerank_model: Annotated[
        list[str] | None, typer.Option("--rerank-model", help="A rerank model to compare (repeatable; a row each).")
    ] = None,
    as_json: AsJson = False,
):
    """Measure retrieval quality on a labelled BEIR-layout dataset, strategies side by side (the index defaults
    to ./indexes/eval-NAME)."""
    from ragkit import measure

    icfg, qcfg = load_config()
    qcfg = override(qcfg.with_alpha(alpha), mode=mode)
    if damping is not None:
        qcfg = qcfg.tuned(hippo={"damping": damping})
    reranks = [r.strip() for r in rerank.split(",") if r.strip()] if rerank else None
    names = [s.strip() for s in strategy.split(",") if s.strip()]
    for name in names:  # each checked now, before the corpus is indexed
        override(qcfg, strategy=name)
    for rr in reranks or []:
        override(qcfg, rerank=rr)
    reporter = RichReporter(interactive(as_json))
    try:
        res = measure.evaluate(
            dataset,
            names,
            index_dir=resolve_index_dir(index) if index else None,
            k=k,
            qcfg=qcfg,
            icfg=icfg,
            reporter=reporter,
            limit=limit,
            reranks=reranks,
            embed_models=embed_model or None,
            rerank_models=rerank_model or None,
            embedder_factory=models().embedder_factory,
        )
    finally:
        reporter.close()
    if as_json:
        print_json(res)
    else:
        console.print(_table(dataset, res))


def _table(dataset: Path, res: dict) -> Table:
    t = Table(title=f"{dataset} — {res['queries']} queries, {res['documents']} documents, {res['chunks']} chunks")
    t.add_column("strategy", style="bold", no_wrap=True)
    for c in METRICS:
        t.add_column(c.replace("ndcg", "nDCG").replace("mrr", "MRR"), justify="right", no_wrap=True)
    t.add_column("p50 ms", justify="right")
    t.add_column("p95 ms", justify="right")
    best = {c: max(r[c] for r in res["results"]) for c in METRICS}
    for r in res["results"]:
        cells = [f"[bold green]{r[c]:.4f}[/]" if r[c] == best[c] else f"{r[c]:.4f}" for c in METRICS]
        t.add_row(r["strategy"], *cells, f"{r['latency_ms']['p50']:.1f}", f"{r['latency_ms']['p95']:.1f}")
    return t
