"""Options shared by the commands, with their choices taken from the registries (strategies, rerank modes,
the ``Literal`` fields of the configs), so that ``--help`` lists what ``QueryConfig`` accepts. Values are checked
where every front end checks them: when the config is built (one ``BadQuery`` naming the setting)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragkit.cli import flags
from ragkit.config import EXTRACTORS, MODES, PLANNERS, RERANKERS, STRATEGY_NAMES, SUMMARIES, TREE_MODES


def one_of(values) -> str:
    return "|".join(str(v) for v in values)


IndexOpt = Annotated[
    str | None,
    typer.Option(
        *flags.INDEX,
        help="Index name (indexes/NAME here, in a folder above, or in $RAGKIT_HOME; default: default), "
        "folder or s3:// URI.",
    ),
]
AsJson = Annotated[bool, typer.Option(flags.JSON, help="Print as JSON (one object).")]
StrategyOpt = Annotated[
    str | None,
    typer.Option(
        *flags.STRATEGY, metavar=f"[{one_of(STRATEGY_NAMES)}]", help="Retrieval strategy (auto: the router picks)."
    ),
]
TopK = Annotated[int | None, typer.Option(*flags.K, help="Number of passages.")]
Filters = Annotated[
    list[str] | None,
    typer.Option(
        *flags.FILTER, help="KEY=VALUE: doc_type, collection, path=GLOB, date_from, date_to, front-matter keys."
    ),
]
Alpha = Annotated[
    float | None,
    typer.Option(
        "--alpha",
        help="Dense weight in the fusion, 0..1 (default 0.5; multilingual-e5-small's own 0.8 on German and Swedish "
        "documents); holds for every query language and model.",
    ),
]
Mode = Annotated[str | None, typer.Option("--mode", metavar=f"[{one_of(MODES)}]", help="Rerank weights.")]
Rerank = Annotated[
    str | None,
    typer.Option(
        "--rerank",
        metavar=f"[{one_of(RERANKERS)}]",
        help="Reranking after retrieval: auto (default: the structure features, then a configured cross-encoder, or "
        "ragkit's own in a language its held-out guard chose), features, cross (always a cross-encoder), none.",
    ),
]
NoRerank = Annotated[
    bool, typer.Option("--no-rerank", help="No cross-encoder: the structure features' order (--rerank features).")
]
Planner = Annotated[
    str | None,
    typer.Option(
        "--planner",
        metavar=f"[{one_of(PLANNERS)}]",
        help="rules (default) | llm (a GGUF model rewrites and splits the query).",
    ),
]
QueryEncoder = Annotated[
    str | None,
    typer.Option(
        "--query-encoder",
        metavar="[auto|original|ragkit]",
        help="Who encodes the question over a multilingual-e5-small index: ragkit's own query encoder where its "
        "held-out guard chose the language (auto), always (ragkit), or e5's own (original).",
    ),
]
TreeMode = Annotated[
    str | None,
    typer.Option(
        "--tree-mode",
        metavar=f"[{one_of(TREE_MODES)}]",
        help="hierarchical: collapsed (default: nodes and chunks in one ranking) | tree (levels, then children).",
    ),
]


def flag(*decls: str, help: str):
    """An on/off option."""
    return Annotated[bool, typer.Option(*decls, help=help)]


def value(kind: type, *decls: str, help: str):
    """An option with a value, None when not given (the config's own value stands)."""
    return Annotated[kind | None, typer.Option(*decls, help=help)]


# ragkit query
QueryText = Annotated[str | None, typer.Argument(help='The question; "-" reads one query per line from stdin.')]
QueryJson = flag(flags.JSON, help="Print one JSON object (schema ragkit.query/1).")
QueryJsonl = flag(flags.JSONL, help="One passage per line; one object per query from stdin.")
Budget = value(int, "--budget", help="Token budget per passage.")
Explain = flag("--explain", help="Show plan and scoring details.")
AllVersions = flag("--all-versions", help="Include superseded document versions.")
Trace = value(Path, "--trace", help="Append every candidate's features as JSON lines.")
Context = flag("--context", help="Print the packed, source-labelled context block only.")
ContextBudget = Annotated[int, typer.Option("--context-budget", help="Token budget of --context.")]
Expand = value(bool, "--expand/--no-expand", help="Add related words from the index vocabulary (BM25, lower weight).")
SPECS = "bundled:NAME, a folder, a .gguf file or a server http://host:port/v1#model"
Model = value(
    str, "--model", help=f"The generate model for --answer and --planner llm ({SPECS}; default: the bundled GGUF)."
)
RerankModel = value(
    str, "--rerank-model", help=f"The rerank model after the structure features ({SPECS}); implies --rerank cross."
)
Answer = flag(
    "--answer",
    "-a",
    help="Answer from the passages: --answer [auto|extract|generate] (auto: quoted from the sources unless a "
    "generate model other than the bundled one is configured; generate: written by the model, every sentence "
    "checked).",
)
AnswerMode = value(str, "--answer-mode", help="How --answer answers: auto | extract | generate.")
MaxTokens = value(int, "--max-tokens", help="Answer budget in tokens (default 512).")
Temperature = value(float, "--temperature", help="Answer sampling temperature (default 0.3).")
NoSpelling = flag("--no-spelling", help="Do not correct words unknown to the index.")
Decompose = flag("--decompose", help="Also retrieve the sub-queries of comparisons.")
NoRetry = flag("--no-retry", help="No corrective retry when the first results look poor.")

# ragkit index
Paths = Annotated[list[Path], typer.Argument(help="Folders or files to index.")]
Include = value(list[str], "--include", help="Glob of files to index (repeatable).")
Exclude = value(list[str], "--exclude", help="Glob of files to skip (repeatable).")
Hidden = flag("--hidden", help="Also index hidden files and folders.")
Full = flag("--full", help="Rebuild everything instead of only what changed.")
FillBatches = value(
    int, "--fill-batches", help="--progressive: fill in at most N batches of the full model's vectors now (0: none)."
)
FillFirst = value(
    list[str], "--fill-first", help="--progressive: give the chunks of paths matching GLOB their full vectors first."
)
Progressive = flag(
    "--progressive",
    help="A new index searchable after one fast run (a static model distilled from the embedding model), then "
    "the full model's vectors filled in batch by batch, each committed; run it again to go on after a stop.",
)
NoOcr = flag("--no-ocr", help="Do not read scanned pages and pictures by OCR (they are counted, not indexed).")
OcrLang = value(
    str,
    "--ocr-lang",
    help="The language of scanned pages: auto (German, Swedish or English, found per page) or Tesseract's names "
    "(deu, swe, eng; several as deu+eng).",
)
DocType = value(str, "--doc-type", help="doc_type for documents whose front matter names none.")
Collection = value(str, "--collection", help="Collection tag for these documents.")
EmbedModel = value(
    str,
    "--embed-model",
    help="The embed model: auto (by the documents' language), bundled:all-MiniLM-L6-v2, bundled:multilingual-e5-small "
    "(either + -static: a static embedder distilled from it; static:FOLDER), "
    "a sentence-transformers folder, a .gguf file or a server http://host:port/v1#model (a new index, or with --full).",
)
ChunkTokens = value(int, "--chunk-tokens", help="Upper bound of tokens per chunk.")
Language = value(
    str, "--language", help="Full-text stemming language (English, German, …; default: the documents' own)."
)
Extract = Annotated[
    str | None, typer.Option("--extract", metavar=f"[{one_of(EXTRACTORS)}]", help="Entity and relation extraction.")
]
Summaries = Annotated[
    str | None,
    typer.Option("--summaries", metavar=f"[{one_of(SUMMARIES)}]", help="Community reports and summary-tree nodes."),
]
NoTree = flag("--no-tree", help="No summary tree (section/document nodes for --strategy hierarchical).")
IndexModel = value(
    str, "--model", "--llm-model", help=f"The generate model for --extract llm / --summaries llm ({SPECS})."
)
Yes = flag("--yes", "-y", help="Do not ask before a long LLM extraction.")
VersionOf = value(str, "--version-of", help="These documents supersede this path or id.")
NoWait = flag("--no-wait", help="Exit 9 at once when another run holds the index (default: wait for it).")
MaxFileSize = value(float, "--max-file-size", help="Skip files larger than this many MB (default 50).")
Engine = value(str, "--engine", help="Parse, chunk and embed here (local, default) or on Ray (ray).")
RayAddress = value(
    str, "--ray-address", help="--engine ray: the cluster to join (auto, ray://host:10001); default: a local Ray."
)
RayWorkers = value(int, "--ray-workers", help="--engine ray: worker actors (default: every CPU).")
Watch = flag("--watch", help="Stay up and index again whenever files change (Ctrl-C stops).")
