"""ragkit query [QUERY]"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ragkit.cli.common import console, handle_errors
from ragkit.errors import BadQuery


@handle_errors
def query_cmd(
    query: str | None = typer.Argument(None, help='The question; "-" reads one query per line from stdin.'),
    index: str | None = typer.Option(None, "--index", "-i", help="Index name (under ./indexes) or directory."),
    strategy: str | None = typer.Option(
        None,
        "--strategy",
        "-s",
        help="auto (default: the router picks) | naive | lexical | hybrid | local | global | light | hippo | hierarchical",
    ),
    k: int | None = typer.Option(None, "-k", "--top", help="Number of passages."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (schema ragkit.query/1)."),
    as_jsonl: bool = typer.Option(False, "--jsonl", help="One passage per line; one object per query from stdin."),
    filters: list[str] | None = typer.Option(
        None, "--filter", "-f", help="KEY=VALUE: doc_type, collection, path=GLOB, front-matter keys."
    ),
    alpha: float | None = typer.Option(
        None,
        "--alpha",
        help="Dense weight in hybrid fusion (0..1; default 0.5, the model's own 0.8 for multilingual-e5-small).",
    ),
    budget: int | None = typer.Option(None, "--budget", help="Token budget per passage."),
    explain: bool = typer.Option(False, "--explain", help="Show plan and scoring details."),
    rerank: str | None = typer.Option(None, "--rerank", help="none | features | cross (+ cross-encoder from config)."),
    mode: str | None = typer.Option(None, "--mode", help="precision | balanced | recall (rerank weights)."),
    all_versions: bool = typer.Option(False, "--all-versions", help="Include superseded document versions."),
    trace: Path | None = typer.Option(None, "--trace", help="Append every candidate's features as JSON lines."),
    context: bool = typer.Option(False, "--context", help="Print the packed, source-labelled context block only."),
    context_budget: int = typer.Option(8000, "--context-budget", help="Token budget of --context."),
    expand: bool | None = typer.Option(
        None, "--expand/--no-expand", help="Add related words from the index vocabulary (BM25, lower weight)."
    ),
    planner: str | None = typer.Option(
        None, "--planner", help="rules (default) | llm (a GGUF model rewrites and splits the query)."
    ),
    model: str | None = typer.Option(
        None, "--model", help="GGUF file for --answer and --planner llm (default: the bundled model)."
    ),
    answer: bool = typer.Option(False, "--answer", "-a", help="Write a cited answer with the local GGUF model."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Answer budget in tokens (default 512)."),
    temperature: float | None = typer.Option(None, "--temperature", help="Answer sampling temperature (default 0.3)."),
    no_spelling: bool = typer.Option(False, "--no-spelling", help="Do not correct words unknown to the index."),
    decompose: bool = typer.Option(False, "--decompose", help="Also retrieve the sub-queries of comparisons."),
    no_retry: bool = typer.Option(False, "--no-retry", help="No corrective retry when the first results look poor."),
    tree_mode: str | None = typer.Option(
        None,
        "--tree-mode",
        help="hierarchical: collapsed (default: nodes and chunks in one ranking) | tree (levels, then children).",
    ),
):
    """Retrieve passages for a question (the router picks the strategy unless --strategy says).

    Without a question on a terminal: an interactive session (:help lists its commands)."""
    from ragkit import api
    from ragkit.config import load_config, override, parse_filters

    _, qcfg = load_config(index_dir=api.resolve_index_dir(index))
    flt = {**qcfg.filters, **parse_filters(filters or [])}
    qcfg = override(
        qcfg,
        strategy=strategy,
        k=k,
        alpha=alpha,
        budget=budget,
        filters=flt,
        rerank=rerank,
        # an explicit --alpha holds for every query language and embedding model
        foreign_alpha=alpha,
        model_alpha=False if alpha is not None else None,
        mode=mode,
        all_versions=all_versions or None,
        spelling=False if no_spelling else None,
        decompose=decompose or None,
        expand=expand,
        planner=planner,
        model=model,
        answer=answer or None,
        max_tokens=max_tokens,
        temperature=temperature,
        retry=False if no_retry else None,
        tree_mode=tree_mode,
        context_budget=context_budget if context else None,
    )
    streamed = qcfg.answer and not (as_json or as_jsonl)  # an answer written token by token: in process
    if (
        query not in (None, "-")
        and trace is None
        and not context
        and not streamed
        and _through_server(api.resolve_index_dir(index), query, qcfg, as_json, as_jsonl, explain)
    ):
        return
    reader = api.open_index(index)
    if query is None and sys.stdin.isatty():
        if as_json or as_jsonl:
            raise BadQuery("no query given", hint='ragkit query --json "your question" (or pipe queries with -)')
        from ragkit.cli.session import run

        run(reader, qcfg, console, explain)
        return
    failed = None
    texts = [query] if query is not None and query != "-" else (ln.strip() for ln in sys.stdin if ln.strip())
    batch = query is None or query == "-"
    for text in texts:
        result = _run(reader, text, qcfg, trace)
        streamed = qcfg.answer and not (as_json or as_jsonl)
        if qcfg.answer:
            failed = _answer(result, qcfg, streamed) or failed
        _emit(result, as_json, as_jsonl, explain, batch=batch)
    if failed is not None:  # the passages are out; now say why the answer is missing
        raise failed


def _through_server(index_dir, text, qcfg, as_json: bool, as_jsonl: bool, explain: bool) -> bool:
    """Answer from a running ``ragkit serve`` of this index, printing what answering in process would print
    (timings aside); False when no server answers its health check in time."""
    from ragkit.render import result_from_dict
    from ragkit.serve.client import emit, remote_query, server_for

    info = server_for(index_dir)
    if info is None:
        return False
    obj, failed = remote_query(info, text, qcfg, explain)
    if as_json or as_jsonl:
        emit(obj, as_json)
    else:
        _emit(result_from_dict(obj), False, False, explain, batch=False)
    if failed is not None:
        raise failed
    return True


def _run(reader, text, qcfg, trace):
    from ragkit import api

    result = api.query(reader, text, qcfg)
    if trace is not None:
        from ragkit.render import trace_line

        with trace.open("a") as fh:
            fh.write(trace_line(result) + "\n")
    return result


def _answer(result, qcfg, stream: bool, con=None):
    """Write the answer into ``result`` (streaming it to ``con``, the terminal by default); returns the error
    instead of raising."""
    con = con or console
    from ragkit import api

    started = []

    def show(text: str) -> None:
        if not started:  # the header only once the model writes (a model that fails to load prints nothing)
            con.print("[bold]Answer[/]")
            started.append(True)
        con.out(text, end="", highlight=False)

    try:
        failed = api.answer_into(result, qcfg, on_text=show if stream else None)
    finally:
        if started:
            con.out("")
    if stream and result.answer is not None:
        _print_sources(result.answer, con)
    return failed


def _print_sources(a, con) -> None:
    for c in a.citations:
        con.print(f"  [cyan][{c.number}][/] {c.path}{c.location}  (passage {c.rank})", highlight=False)
    if a.dropped_citations:
        con.print(f"  [yellow]{a.dropped_citations} citation(s) named no source and were removed[/]")
    con.print(
        f"[dim]{a.model} · {a.prompt_tokens} prompt + {a.completion_tokens} answer tokens · "
        f"{a.seconds:.1f} s · {a.tokens_per_second:.1f} tokens/s[/]"
    )
    con.rule()


def _emit(result, as_json: bool, as_jsonl: bool, explain: bool, batch: bool) -> None:
    from ragkit.render import print_result, result_dict

    if result.context is not None and not (as_json or as_jsonl):
        sys.stdout.write(result.context.text + "\n")
    elif as_json or as_jsonl:  # the same printing as a server's result gets (ragkit/serve/client.py)
        from ragkit.serve.client import emit

        emit(result_dict(result, explain), as_json=as_json or batch)
    else:
        if batch:
            console.rule(f"[bold]{result.query}")
        if explain:
            from ragkit.render import metadata

            console.print_json(data=result.plan)
            console.print_json(data=metadata(result))
        print_result(console, result, explain)
