"""ragkit eval DATASET_DIR"""

from __future__ import annotations

from pathlib import Path

import typer

from ragkit.cli.common import RichReporter, console, handle_errors, interactive, print_json


@handle_errors
def eval_cmd(
    dataset: Path = typer.Argument(..., help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv."),
    strategy: str = typer.Option("naive,lexical,hybrid", "--strategy", "-s", help="Comma-separated strategies."),
    k: int = typer.Option(100, "--k", help="Documents ranked per query."),
    index: str | None = typer.Option(None, "--index", "-i", help="Index directory (default ./indexes/eval-NAME)."),
    alpha: float | None = typer.Option(
        None,
        "--alpha",
        help="Dense weight in hybrid fusion (default 0.5, the model's own 0.8 for multilingual-e5-small).",
    ),
    limit: int | None = typer.Option(None, "--limit", help="Evaluate only the first N queries."),
    rerank: str | None = typer.Option(None, "--rerank", help="Comma-separated: none,features,cross (each is a row)."),
    mode: str | None = typer.Option(None, "--mode", help="precision | balanced | recall."),
    damping: float | None = typer.Option(None, "--damping", help="Personalized PageRank damping (hippo)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as one JSON object."),
):
    """Measure retrieval quality on a labelled BEIR-layout dataset, strategies side by side."""
    from ragkit import api
    from ragkit.config import load_config, override

    icfg, qcfg = load_config()
    qcfg = override(
        qcfg,
        alpha=alpha,
        foreign_alpha=alpha,
        model_alpha=False if alpha is not None else None,
        mode=mode,
        damping=damping,
    )  # an explicit --alpha holds for every language and model
    reranks = [r.strip() for r in rerank.split(",") if r.strip()] if rerank else None
    names = [s.strip() for s in strategy.split(",") if s.strip()]
    from ragkit.errors import BadQuery
    from ragkit.retrieve.strategies import STRATEGIES

    unknown = [n for n in names if n not in STRATEGIES and n != "auto"]
    if unknown:
        raise BadQuery(f"unknown strategy {', '.join(unknown)}", hint=f"Choose from: auto, {', '.join(STRATEGIES)}")
    reporter = RichReporter(interactive(as_json))
    try:
        res = api.evaluate(
            dataset,
            names,
            index_dir=api.resolve_index_dir(index) if index else None,
            k=k,
            qcfg=qcfg,
            icfg=icfg,
            reporter=reporter,
            limit=limit,
            reranks=reranks,
        )
    finally:
        reporter.close()
    if as_json:
        print_json(res)
        return
    from rich.table import Table

    t = Table(title=f"{dataset} — {res['queries']} queries, {res['documents']} documents, {res['chunks']} chunks")
    cols = ["ndcg@10", "recall@2", "recall@5", "recall@10", "recall@100", "mrr@10"]
    t.add_column("strategy", style="bold", no_wrap=True)
    for c in cols:
        t.add_column(c.replace("ndcg", "nDCG").replace("mrr", "MRR"), justify="right", no_wrap=True)
    t.add_column("p50 ms", justify="right")
    t.add_column("p95 ms", justify="right")
    best = {c: max(r[c] for r in res["results"]) for c in cols}
    for r in res["results"]:
        cells = [f"[bold green]{r[c]:.4f}[/]" if r[c] == best[c] else f"{r[c]:.4f}" for c in cols]
        t.add_row(r["strategy"], *cells, f"{r['latency_ms']['p50']:.1f}", f"{r['latency_ms']['p95']:.1f}")
    console.print(t)
