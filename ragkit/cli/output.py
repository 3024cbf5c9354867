"""How a query's result reaches the terminal or stdout, for ``ragkit query`` and its interactive session:
passages (rich), the answer streamed as the model writes it with its sources, JSON and JSON lines, and the
same printing for a result that a running ``ragkit serve`` sent."""

from __future__ import annotations

import sys
from pathlib import Path

from ragkit.cli.common import console
from ragkit.errors import OverLimit, RagkitError
from ragkit.records import QueryResult
from ragkit.render import emit_json, metadata, print_result, result_dict, result_from_dict, trace_line


def through_server(index_dir: Path, text: str, qcfg, as_json: bool, as_jsonl: bool, explain: bool) -> bool:
    """Answer from a running ``ragkit serve`` of this index, printing what answering in process would print
    (timings aside); False when no server answers its health check in time, or the question is over its limits
    (``-k 500``: this process answers it)."""
    from ragkit.serve import client

    info = client.server_for(index_dir)
    if info is None:
        return False
    try:
        obj, failed = client.remote_query(info, text, qcfg, explain)
    except OverLimit:
        return False
    if as_json or as_jsonl:
        emit_json(obj, as_json)
    else:
        emit(result_from_dict(obj), False, False, explain, batch=False)
    if failed is not None:
        raise failed
    return True


def run_query(
    ix, text: str, qcfg, trace: Path | None, source: str = "cli", stream: bool = True, con=None
) -> tuple[QueryResult, RagkitError | None]:
    """One question through ``Index.ask``: the passages and, when ``qcfg.answer``, the answer (streamed to ``con``
    unless not ``stream``); every candidate's features appended to ``trace`` when given. The query, with whether
    its answer abstained, is kept in the index's log for feedback (``ragkit feedback QUERY_ID``). Returns the
    result and the error that kept an answer from being written."""
    con = con or console
    writing = AnswerWriter(con)
    try:
        asked = ix.ask(text, qcfg, writing.show if stream else None, source=source)
        result, failed = asked.result, asked.error
    finally:
        writing.end()
    if stream and result.answer is not None:
        print_answer_notes(result.answer, con)
    if trace is not None:
        with trace.open("a") as fh:
            fh.write(trace_line(result) + "\n")
    return result, failed


class AnswerWriter:
    """An answer streamed to ``con`` as it is written: its header once the first words come (a model that fails
    to load prints nothing), its line ended after."""

    def __init__(self, con):
        self.con, self.started = con, False

    def show(self, text: str) -> None:
        if not self.started:
            self.con.print("[bold]Answer[/]")
            self.started = True
        self.con.out(text, end="", highlight=False)

    def end(self) -> None:
        if self.started:
            self.con.out("")


def print_answer_notes(a, con) -> None:
    """After a streamed answer: what the checks changed, its sources, and what it cost."""
    if a.replaced:
        con.print(f"[yellow]{a.note}[/]", soft_wrap=True)
        con.print(a.text, highlight=False, soft_wrap=True)
    elif a.mode == "generate" and a.claims:
        dropped = [c for c in a.claims if not c.supported]
        con.print(
            f"[dim]checked: {len(a.claims) - len(dropped)} of {len(a.claims)} sentence(s) supported by what "
            f"they cite[/]"
        )
        for c in dropped:
            missing = f" (the source lacks {', '.join(c.missing)})" if c.missing else ""
            con.print(f"  [red]removed:[/] [dim]{c.text}{missing}[/]", soft_wrap=True)
        if dropped:
            con.print(a.text, highlight=False, soft_wrap=True)
    for c in a.citations:
        con.print(f"  [cyan][{c.number}][/] {c.path}{c.location}  (passage {c.rank})", highlight=False)
    if a.mode == "extract" and a.confidence is not None:
        said = a.note if a.abstained and a.note else "the passages answer the question"
        con.print(f"[dim]{said}: confidence {a.confidence:.2f}[/]" if not a.abstained else f"[dim]{said}[/]")
    if a.dropped_citations:
        con.print(f"  [yellow]{a.dropped_citations} citation(s) named no source and were removed[/]")
    if a.mode == "generate" or a.replaced:
        con.print(
            f"[dim]{a.model} · {a.prompt_tokens} prompt + {a.completion_tokens} answer tokens · "
            f"{a.seconds:.1f} s · {a.tokens_per_second:.1f} tokens/s[/]"
        )
    con.rule()


def emit(result: QueryResult, as_json: bool, as_jsonl: bool, explain: bool, batch: bool) -> None:
    """One result as ``--json`` (one object), ``--jsonl`` (a line per passage), the packed context block, or
    rich passages on the terminal."""
    if result.context is not None and not (as_json or as_jsonl):
        sys.stdout.write(result.context.text + "\n")
    elif as_json or as_jsonl:  # the same printing as a server's result gets (render.emit_json)
        emit_json(result_dict(result, explain), as_json=as_json or batch)
    else:
        if batch:
            console.rule(f"[bold]{result.query}")
        if explain:
            console.print_json(data=result.plan.to_dict())
            console.print_json(data=metadata(result))
        print_result(console, result, explain)
