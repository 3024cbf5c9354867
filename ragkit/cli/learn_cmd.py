"""ragkit feedback, ragkit learn"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragkit.cli.common import console, handle_errors, models, print_json
from ragkit.cli.options import AsJson, IndexOpt
from ragkit.errors import BadQuery


@handle_errors
def feedback_cmd(
    query_id: Annotated[str | None, typer.Argument(help="The query_id a result carries.")] = None,
    passage: Annotated[int | None, typer.Option("--passage", "-p", help="The passage's rank in that result.")] = None,
    good: Annotated[bool, typer.Option("--good", help="It answered the question (grade 3).")] = False,
    bad: Annotated[bool, typer.Option("--bad", help="It did not (grade 0).")] = False,
    grade: Annotated[int | None, typer.Option("--grade", "-g", help="0 (wrong) … 3 (exactly right).")] = None,
    answer: Annotated[bool, typer.Option("--answer", help="Rate the result's answer, not a passage.")] = False,
    file: Annotated[
        Path | None, typer.Option("--file", help='Bulk: JSON lines {"query_id", "rank", "grade" | "good"}.')
    ] = None,
    export: Annotated[Path | None, typer.Option("--export", help="Write every logged query and rating here.")] = None,
    index: IndexOpt = None,
    as_json: AsJson = False,
):
    """Say which passages (or answers) of a query were right: ``ragkit learn`` fits the ranking to it."""

    ix = models().open(index)
    if export is not None:
        n = ix.export_feedback(export)
        console.print(f"{n} event(s) → {export}")
        return
    if file is not None:
        n = ix.feedback_file(file)
        console.print(f"{n} rating(s) kept")
        return
    if query_id is None:
        raise BadQuery("name a query_id, or give --file or --export", hint="ragkit feedback QUERY_ID -p 2 --good")
    chosen = [x for x in (grade, "good" if good else None, "bad" if bad else None) if x is not None]
    if len(chosen) != 1:
        raise BadQuery("say one of --good, --bad or --grade G")
    if (passage is None) == (not answer):
        raise BadQuery("rate one passage (--passage N) or the answer (--answer)")
    event = ix.feedback(query_id, rank=passage, grade=chosen[0], source="cli")
    if as_json:
        print_json(event)
        return
    what = "the answer" if passage is None else f"passage {passage} ({event['path']} · {event['section']})"
    console.print(f"kept: {what} of query {query_id} graded {event['grade']}", highlight=False)


@handle_errors
def learn_cmd(
    index: IndexOpt = None,
    labels: Annotated[
        list[Path] | None,
        typer.Option("--labels", help="Labelled queries too: a BEIR folder (qrels) or questions with gold sections."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Fit and measure, adopt nothing.")] = False,
    reset: Annotated[
        bool, typer.Option("--reset", help="Drop what was learned (the defaults rank and abstain again).")
    ] = False,
    min_queries: Annotated[int, typer.Option("--min-queries", help="Distinct judged queries a model needs.")] = 20,
    min_answers: Annotated[
        int,
        typer.Option(
            "--min-answers", help="Questions with rated answers a scope and language need to learn when to abstain."
        ),
    ] = 20,
    as_json: AsJson = False,
):
    """Fit the ranking (and when answers abstain) to the feedback: per scope, adopted only if better held out."""

    ix = models().open(index)
    if reset:
        n = ix.unlearn()
        console.print(f"dropped what {n} scope(s) had learned (rankers, answer thresholds); the feedback stays")
        return
    outcomes = ix.learn(labels or (), dry_run=dry_run, min_queries=min_queries, min_answers=min_answers)
    if as_json:
        print_json([o.__dict__ for o in outcomes])
        return
    if not outcomes:
        console.print(
            "no feedback yet: rate passages with ragkit feedback (or the session's :good N), or give --labels"
        )
        return

    def adopted(o) -> str:
        return "yes" if o.adopted else "no (dry run)" if dry_run and o.after else "no"

    rankers = [o for o in outcomes if o.kind == "ranker"]
    if rankers:
        t = Table(title="learned ranker: held-out queries, before → after")
        for col in ("scope", "queries (fit / held out)", "nDCG@10", "top-1", "adopted", "why"):
            t.add_column(col)
        for o in rankers:
            before, after = o.before, o.after
            t.add_row(
                o.scope,
                f"{o.queries} ({o.fit} / {o.held_out})",
                f"{before.get('ndcg@10', 0):.3f} → {after.get('ndcg@10', 0):.3f}" if after else "–",
                f"{before.get('top1', 0):.3f} → {after.get('top1', 0):.3f}" if after else "–",
                adopted(o),
                o.reason,
            )
        console.print(t)
    answers = [o for o in outcomes if o.kind == "abstain"]
    if answers:
        t = Table(title="when answers abstain: held-out rated answers decided right, before → after")
        for col in ("scope · language", "questions (fit / held out)", "threshold", "right", "wanted silenced"):
            t.add_column(col)
        t.add_column("adopted")
        t.add_column("why")
        for o in answers:
            before, after = o.before, o.after
            t.add_row(
                o.scope,
                f"{o.queries} ({o.fit} / {o.held_out})",
                f"{before['threshold']:.3f} → {after['threshold']:.3f}" if after else "–",
                f"{before['right']:.3f} → {after['right']:.3f}" if after else "–",
                f"{before['silenced']:.3f} → {after['silenced']:.3f}" if after else "–",
                adopted(o),
                o.reason,
            )
        console.print(t)
