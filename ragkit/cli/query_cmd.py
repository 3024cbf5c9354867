"""ragkit query [QUERY]"""

from __future__ import annotations

import sys

from ragkit.cli import options as o
from ragkit.cli import output, session
from ragkit.cli.common import console, handle_errors, models
from ragkit.config import QueryConfig, parse_filters, query_settings, resolve_index_dir
from ragkit.errors import BadQuery


@handle_errors
def query_cmd(
    query: o.QueryText = None,
    index: o.IndexOpt = None,
    strategy: o.StrategyOpt = None,
    k: o.TopK = None,
    as_json: o.QueryJson = False,
    as_jsonl: o.QueryJsonl = False,
    filters: o.Filters = None,
    alpha: o.Alpha = None,
    budget: o.Budget = None,
    explain: o.Explain = False,
    rerank: o.Rerank = None,
    no_rerank: o.NoRerank = False,
    mode: o.Mode = None,
    all_versions: o.AllVersions = False,
    trace: o.Trace = None,
    context: o.Context = False,
    context_budget: o.ContextBudget = 8000,
    expand: o.Expand = None,
    planner: o.Planner = None,
    model: o.Model = None,
    rerank_model: o.RerankModel = None,
    answer: o.Answer = False,
    answer_mode: o.AnswerMode = None,
    max_tokens: o.MaxTokens = None,
    temperature: o.Temperature = None,
    no_spelling: o.NoSpelling = False,
    decompose: o.Decompose = False,
    no_retry: o.NoRetry = False,
    tree_mode: o.TreeMode = None,
    query_encoder: o.QueryEncoder = None,
):
    """Retrieve passages for a question (the router picks the strategy unless --strategy says).

    Without a question on a terminal: an interactive session (:help lists its commands)."""

    given = dict(
        alpha=alpha,
        strategy=strategy,
        k=k,
        budget=budget,
        filters=parse_filters(filters or []),
        rerank="features" if no_rerank else rerank or ("cross" if rerank_model else None),
        rerank_model=rerank_model,
        mode=mode,
        all_versions=all_versions or None,
        spelling=False if no_spelling else None,
        decompose=decompose or None,
        expand=expand,
        planner=planner,
        model=model,
        answer=answer or bool(answer_mode) or None,
        answer_mode=answer_mode,
        max_tokens=max_tokens,
        temperature=temperature,
        retry=False if no_retry else None,
        context_budget=context_budget if context else None,
        query_encoder=query_encoder,
    )
    qcfg = query_settings(resolve_index_dir(index), given)
    if tree_mode is not None:
        qcfg = qcfg.tuned(hierarchical={"mode": tree_mode})
    streamed = qcfg.answer and not (as_json or as_jsonl)  # an answer written token by token: in process
    one = query not in (None, "-")
    if one and trace is None and not context and not streamed:
        if output.through_server(resolve_index_dir(index), query, qcfg, as_json, as_jsonl, explain):
            return
    ix = models().open(index, settings=qcfg)
    if query is None and sys.stdin.isatty():
        if as_json or as_jsonl:
            raise BadQuery("no query given", hint='ragkit query --json "your question" (or pipe queries with -)')
        session.run(ix, qcfg, console, explain)
        return
    _answer_each(
        ix,
        [query] if one else (ln.strip() for ln in sys.stdin if ln.strip()),
        qcfg,
        trace,
        as_json,
        as_jsonl,
        explain,
        batch=not one,
    )


def _answer_each(
    ix, texts, qcfg: QueryConfig, trace, as_json: bool, as_jsonl: bool, explain: bool, batch: bool
) -> None:
    """Each query's result (and answer) printed in turn; a missing answer is reported after the passages."""
    failed = None
    for text in texts:
        result, error = output.run_query(ix, text, qcfg, trace, stream=not (as_json or as_jsonl))
        failed = error or failed
        output.emit(result, as_json, as_jsonl, explain, batch=batch)
    if failed is not None:  # the passages are out; now say why the answer is missing
        raise failed
