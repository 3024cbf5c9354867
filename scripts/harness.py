"""The helpers the benchmark entry points in scripts/ share (not an entry point itself).

The entry points are ``python scripts/bench_cost.py``, ``bench_query.py``, ``bench_quality.py``,
``bench_answer.py``, ``bench_ingest.py`` (each ``SUBCOMMAND [options]``, ``--help`` lists them) and
``crash_test.py``. Run them from anywhere: Python puts scripts/ on sys.path (so ``import harness`` works) and
ragkit is installed (``pip install -e .``). The few that use the test suite's helpers (tests/quality.py,
tests/s3.py, tests/documents.py) load them by path with ``tests_module()``, so no PYTHONPATH is needed.

- paths: REPO (the checkout), SHARED (``../shared/data`` beside it), SCIFACT_QUERIES, eval_index();
- dataset → index: indexed() and load_model();
- the index: open_index() and index_into(), through which the scripts open and write indexes (not ragkit.open /
  ragkit.index directly; train_reranker.py, which has no harness, and bench_cost.py's LONG_LIVED, a memory
  measurement, excepted). Why: bench_cost.py versus, fit_answers.py report and bench_trust.py measure an older
  checkout side by side with this one, in a child process with that checkout's package first on sys.path and
  this checkout's harness.py and tests/answer_sets.py. A checkout before issue 64 has only ``ragkit.api``
  (functions over an IndexReader; its ``ragkit.library.Index``, where it has one, lacks these methods), so on
  one open_index() gives an adapter over those functions with the few ``Index`` methods the scripts call
  (query, retrieve, ask, answer_for, log, feedback, stats, documents, reader, path), and index_into() calls its
  ``api.index``; on this checkout they are ``ragkit.open`` and ``ragkit.index``;
- query settings: query_config() (the one place a QueryConfig is built; strategy settings such as damping or
  vector_seeds go into QueryConfig's per-strategy settings) and parse_settings() ("strategy=hippo,damping=0.9");
- child processes: ragkit_cmd(), run_seconds(), timed() (wall seconds and peak RSS);
- output: print_table() (a rich table with notes under it, or one JSON object per table with ``--json``);
- CLI: a typer app with one subcommand per function, described by its docstring (arguments given as argparse
  words, ``arg(...)``).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import fields, replace
from pathlib import Path
from types import ModuleType
from typing import Annotated

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
SCIFACT_QUERIES = SHARED / "scifact-train" / "queries.jsonl"
MB = 1024 * 1024
JSON = {"on": False}  # --json: print_table writes JSON objects instead of tables


# --- paths and inputs ----------------------------------------------------------------------------------------------


def eval_index(dataset: Path) -> Path:
    """The index ``ragkit eval DATASET`` builds (and these scripts reuse): indexes/eval-<name of the data set>."""
    from ragkit.config import DEFAULT_HOME

    return DEFAULT_HOME / f"eval-{Path(dataset).resolve().name}"


def query_texts(path: Path, n: int | None = None) -> list[str]:
    """The ``text`` of each query in a BEIR queries.jsonl, the first ``n`` (all when None)."""
    with Path(path).open() as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()][:n]


def tests_module(name: str) -> ModuleType:
    """tests/<name>.py of the checkout, loaded by path (tests/ is no installed package)."""
    if f"tests.{name}" not in sys.modules:
        spec = importlib.util.spec_from_file_location(f"tests.{name}", REPO / "tests" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules[f"tests.{name}"]


def workdir(path: Path | None, prefix: str) -> Path:
    """``path`` (created), or a new temporary folder."""
    work = path or Path(tempfile.mkdtemp(prefix=f"ragkit-{prefix}-"))
    work.mkdir(parents=True, exist_ok=True)
    return work


# --- dataset → index ---------------------------------------------------------------------------------------------


def corpus_source(corpus: Path, docs: int | None, work: Path) -> Path:
    """What to index: a folder as it is, the corpus.jsonl of a BEIR data set folder, or the first ``docs``
    documents of a BEIR corpus.jsonl (a copy in ``work``, rewritten only when it changes, so that an index of it
    stays unchanged)."""
    corpus = Path(corpus)
    if (corpus / "corpus.jsonl").is_file():
        corpus = corpus / "corpus.jsonl"
    if not corpus.is_file() or docs is None:
        return corpus
    src = work / "data" / "corpus.jsonl"
    with corpus.open() as fh:
        text = "".join(line for n, line in enumerate(fh) if n < docs)
    if not src.is_file() or src.read_text() != text:
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
    return src


def load_model(src: Path, cfg=None):
    """``(cfg, embedder)``: the embedding model an index run of ``src`` would choose (``cfg.embed_model`` "auto":
    by the documents' language), loaded and warmed up, so that index timings leave its load out."""
    from ragkit.config import IndexConfig
    from ragkit.embed import load_embedder
    from ragkit.ingest.source import model_for_paths

    cfg = cfg or IndexConfig()
    cfg = replace(cfg, embed_model=model_for_paths([src], cfg))
    emb = load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)
    emb.encode(["warm up the model"] * 8)
    return cfg, emb


def indexed(
    corpus: Path, index_dir: Path, cfg=None, *, docs: int | None = None, embedder=None, generator=None, **kwargs
):
    """Dataset → index: ``(ix, summary)`` after indexing ``corpus`` (a folder, a BEIR corpus.jsonl or a BEIR data
    set folder; with ``docs`` its first N documents, copied beside the index) into ``index_dir`` with ``cfg``
    (the bare defaults when None, never a ragkit.toml), ``ix`` the index opened (open_index). The run is
    incremental: an index of an unchanged corpus is reused as it is. ``embedder``: an already loaded model
    (load_model) for the run and the index; ``generator``: the model that writes answers (open_index); other
    keywords go to the indexing run (reporter, full; index_into)."""
    index_dir = Path(index_dir)
    src = corpus_source(corpus, docs, index_dir.parent / f"{index_dir.name}-source")
    factory = (lambda c: embedder) if embedder is not None else None
    summary = index_into([src], index_dir, cfg, embedder_factory=factory, **kwargs)
    return open_index(index_dir, embedder=embedder, generator=generator), summary


# --- the index, by this checkout or an older one (the module docstring says why) -----------------------------------


def _new_library() -> bool:
    """Does the ragkit on the path have issue 64's ``Index`` (an older checkout's has other methods, or none)?"""
    try:
        from ragkit import library
    except ImportError:
        return False
    return hasattr(getattr(library, "Index", None), "answer_for")


def open_index(where, *, embedder=None, embed_model=None, full_embedder=None, generator=None):
    """The index at ``where`` for querying: ``ragkit.open(...)`` (an ``Index``), or on an older checkout
    (ragkit.api) an ``_ApiIndex`` answering the same few calls: ``query``, ``retrieve``, ``ask`` and
    ``answer_for`` (``.result``, ``.answer``, ``.error``), ``log``, ``feedback``, ``stats``, ``documents``,
    ``reader`` and ``path``. ``generator`` (the model that writes answers) is handed to an ``Index``; an older
    checkout loads the one its settings name."""
    if _new_library():
        import ragkit

        kw = {"embedder": embedder, "embed_model": embed_model, "full_embedder": full_embedder}
        return ragkit.open(where, generator=generator, **kw)
    return _ApiIndex(where, embedder=embedder, embed_model=embed_model, full_embedder=full_embedder)


def index_into(paths, where, cfg=None, **kwargs):
    """Index ``paths`` into ``where`` with ``cfg`` (the bare ``IndexConfig()`` when None, as ragkit.api did:
    never a ragkit.toml); ``kwargs``: the run's options (full, reporter, embedder_factory, max_fill_batches, …).
    ``ragkit.index(...)``, or an older checkout's ``ragkit.api.index``. Returns the IndexSummary."""
    from ragkit.config import IndexConfig

    cfg = cfg if cfg is not None else IndexConfig()
    if _new_library():
        import ragkit

        return ragkit.index([Path(p) for p in paths], where, cfg=cfg, **kwargs)
    return _old_api().index([Path(p) for p in paths], where, cfg, **kwargs)


def _old_api() -> ModuleType:
    """An older checkout's ``ragkit.api`` (this checkout has none: tests/test_layers.py forbids importing it, so
    it is imported by name, here only)."""
    return importlib.import_module("ragkit.api")


class _Answered:
    """An older checkout's answer as an ``Answered``: the result, its answer, or the error that kept it."""

    def __init__(self, result, error=None):
        self.result, self.error = result, error

    @property
    def answer(self):
        return self.result.answer

    @property
    def text(self) -> str:
        if self.result.answer is None:
            raise self.error
        return self.result.answer.text


class _ApiIndex:
    """An older checkout's ``ragkit.api`` functions as the ``Index`` methods the scripts call (open_index)."""

    def __init__(self, where, **models):
        self._api = api = _old_api()
        self.reader = api.open_index(where, **{k: v for k, v in models.items() if v is not None})
        self.path = Path(self.reader.index_dir)

    def __repr__(self) -> str:
        return f"_ApiIndex({str(self.path)!r})"

    @staticmethod
    def _cfg(cfg):
        from ragkit.config import QueryConfig

        return cfg if cfg is not None else QueryConfig()

    def query(self, text: str, cfg=None, *, log: bool = False):
        result = self._api.query(self.reader, text, self._cfg(cfg))
        if log:
            self.log(result, cfg)
        return result

    def retrieve(self, text: str, cfg=None, limit: int | None = None):
        return self._api.retrieve(self.reader, text, self._cfg(cfg), limit)

    def answer_for(self, result, cfg=None) -> _Answered:
        from ragkit.errors import RagkitError

        try:
            result.answer = self._api.answer(result, self._cfg(cfg), reader=self.reader)
        except RagkitError as exc:
            result.answer, result.answer_error = None, str(exc)
            return _Answered(result, exc)
        return _Answered(result)

    def ask(self, text: str, cfg=None, on_text=None, *, passages_ready=None, token=None, source="cli") -> _Answered:
        cfg, said = self._cfg(cfg), {"token": token, "source": source}
        if hasattr(self._api, "ask"):  # issue 53 on
            return _Answered(*self._api.ask(self.reader, text, cfg, on_text, passages_ready=passages_ready, **said))
        result = self.query(text, cfg)
        if passages_ready is not None:
            passages_ready(result)
        asked = self.answer_for(result, cfg) if cfg.answer else _Answered(result)
        self.log(result, cfg, **said)
        return asked

    def log(self, result, cfg=None, **kwargs) -> bool:
        return self._api.log_query(self.reader, result, self._cfg(cfg), **kwargs)

    def feedback(self, query_id: str, *, good=None, grade=None, rank=None, **kwargs):
        grade = grade if good is None else "good" if good else "bad"
        return self._api.feedback(self.path, query_id, rank, grade, **kwargs)

    def stats(self, readable=None):
        return self._api.stats(self.reader, readable)

    def documents(self, limit: int = 50, offset: int = 0, *, readable=None, filters=None):
        return self._api.documents(self.reader, filters or {}, readable, limit, offset)


def chunk_texts(ix) -> list[str]:
    """Every chunk of an index (open_index) as the indexer embedded it (contextual header, newline, text), in
    document order."""
    with ix.reader.duck() as store:
        rows = store.con.execute("SELECT header, text FROM chunks ORDER BY document_id, chunk_index").fetchall()
    return [f"{h}\n{x}" if h else x for h, x in rows]


# --- query settings ------------------------------------------------------------------------------------------------

# The strategy settings QueryConfig had as flat fields, and where each lives in the per-strategy layout
# (QueryConfig.settings: one Settings object per strategy, ragkit/retrieve/strategies/).
STRATEGY_SETTINGS = {
    "damping": [("hippo", "damping")],
    "vector_seeds": [("hippo", "vector_seeds"), ("local", "vector_seeds")],
    "passage_share": [("hippo", "passage_share")],
    "ppr_weight": [("hippo", "graph_weight")],
    "max_hops": [("local", "max_hops")],
    "entity_weight": [("light", "entity_weight")],
    "tree_mode": [("hierarchical", "mode")],
    "tree_nodes": [("hierarchical", "nodes")],
    "tree_children": [("hierarchical", "children")],
    "tree_discount": [("hierarchical", "discount")],
}


def query_config(**flat):
    """A QueryConfig from flat settings: its own fields, strategy settings by their flat names (damping,
    vector_seeds, … STRATEGY_SETTINGS) or as ``**{"hippo.damping": 0.9}``. Every script builds its QueryConfig
    here, so that only this function follows QueryConfig's layout: flat fields where QueryConfig still has them,
    else its per-strategy ``settings``."""
    from ragkit.config import QueryConfig

    own = {f.name for f in fields(QueryConfig)}
    plain, settings = {}, {}
    for key, value in flat.items():
        if key in own:
            plain[key] = value
            continue
        targets = [key.split(".", 1)] if "." in key else STRATEGY_SETTINGS.get(key)
        if not targets:
            raise SystemExit(f"unknown query setting {key!r}; known: {', '.join(sorted(setting_kinds()))}")
        for strategy, name in targets:
            settings.setdefault(strategy, {})[name] = value
    return QueryConfig(**plain, **({"settings": settings} if settings else {}))


def setting_kinds() -> dict[str, str]:
    """Every query setting's name and the name of its type: QueryConfig's fields, each strategy's settings as
    ``strategy.name`` and by their flat names (STRATEGY_SETTINGS)."""
    from ragkit.config import QueryConfig

    kinds = {f.name: str(f.type) for f in fields(QueryConfig)}
    if "settings" in kinds:
        from ragkit.retrieve.strategies import STRATEGIES

        for name, strategy in STRATEGIES.items():
            if strategy.settings:
                kinds |= {f"{name}.{f.name}": str(f.type) for f in fields(strategy.settings)}
        kinds |= {flat: kinds[".".join(where[0])] for flat, where in STRATEGY_SETTINGS.items()}
    return kinds


def parse_settings(spec: str) -> dict:
    """``"strategy=hippo,vector_seeds=0,hippo.damping=0.9"`` → ``{"strategy": "hippo", "vector_seeds": 0,
    "hippo.damping": 0.9}`` (typed as the settings are), for query_config()."""
    kinds, out = setting_kinds(), {}
    for item in spec.split(","):
        key, _, raw = item.partition("=")
        if key not in kinds:
            raise SystemExit(f"unknown setting {key!r}; known: {', '.join(sorted(kinds))}")
        kind = kinds[key].split(" |")[0]
        if kind == "bool":
            out[key] = raw.lower() in ("1", "true", "yes", "on")
        else:
            out[key] = int(raw) if kind == "int" else float(raw) if kind == "float" else raw
    return out


def ranked_documents(ix, text: str, cfg, k: int, limit: int | None = None) -> list[str]:
    """The top ``k`` documents (their ids in the data set) of one query, from ``2 k`` chunk hits by default."""
    from ragkit.evaluate import documents_of

    hits, _, _ = ix.retrieve(text, cfg, limit or 2 * k)
    return documents_of(hits, k)


def score(ix, ds, cfg, label: str, k: int):
    """ragkit.evaluate's scores (nDCG@10, recall@k, p50/p95 ms) of ``cfg`` over a data set's queries."""
    from ragkit.evaluate import score_strategy
    from ragkit.events import Reporter

    return score_strategy(label, ds, lambda text: ranked_documents(ix, text, cfg, k), Reporter())


# --- child processes -----------------------------------------------------------------------------------------------


def ragkit_cmd(*args: str) -> list[str]:
    """The ``ragkit`` command line of this interpreter."""
    return [sys.executable, "-m", "ragkit", *map(str, args)]


def run_seconds(cmd: list[str], **kwargs) -> float:
    """Wall seconds of one child process (output discarded unless ``kwargs`` say otherwise; fails when it does)."""
    kwargs.setdefault("stdout", subprocess.DEVNULL)
    kwargs.setdefault("stderr", subprocess.DEVNULL)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, **kwargs)
    return time.perf_counter() - t


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process (exits with its error when it fails). The peak
    comes from ``/usr/bin/time``: the kernel's own accounting of a child forked from a big process starts at
    that process's size."""
    timer = shutil.which("time") or "/usr/bin/time"
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        t = time.perf_counter()
        proc = subprocess.run(
            [timer, "-f", "%M", "-o", out.name, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr.decode()[-2000:]}")
        return wall, int(out.read().split()[-1]) / 1024


# --- output --------------------------------------------------------------------------------------------------------


def print_table(
    title: str,
    columns: Iterable[str],
    rows: Iterable[Iterable],
    *,
    left: Iterable[str] | None = None,
    width: int = 160,
    notes: Iterable[str] = (),
) -> None:
    """One table: ``columns`` (those in ``left`` left-aligned, by default the first), ``rows`` of cells (str()
    of each), then ``notes`` as dim lines. With ``--json``: one JSON object (title, rows as objects by column,
    notes) on one line instead."""
    columns, notes = list(columns), list(notes)
    rows = [[str(c) for c in r] for r in rows]
    if JSON["on"]:
        print(json.dumps({"title": title, "rows": [dict(zip(columns, r)) for r in rows], "notes": notes}))
        return
    lefts = set(columns[:1] if left is None else left)
    tab = Table(title=title)
    for col in columns:
        tab.add_column(col, justify="left" if col in lefts else "right")
    for r in rows:
        tab.add_row(*r)
    console = Console(width=width)
    console.print(tab)
    for line in notes:
        console.print(f"[dim]{line}[/]", highlight=False)


# --- entry points --------------------------------------------------------------------------------------------------


SUPPRESS = "==SUPPRESS=="  # help=SUPPRESS: an option the script passes itself, hidden from --help


def arg(*names: str, **kwargs) -> tuple[tuple[str, ...], dict]:
    """One argument of a subcommand, in argparse's words (``arg("--n", type=int, default=100)``, ``action=
    "store_true"`` or ``"append"``, ``nargs``, ``choices``, ``dest``, ``required``), turned into a typer parameter."""
    return names, kwargs


def _parameter(names: tuple[str, ...], kwargs: dict) -> inspect.Parameter:
    """An ``arg`` as a typer parameter: positional names are arguments (``nargs`` "+" or "*": a list), options
    keep their flags; "append" and ``nargs="*"`` options repeat (``--index A --index B``), ``nargs=2`` takes a
    pair, a value outside ``choices`` is refused."""
    import typer

    kind, nargs, action = kwargs.get("type", str), kwargs.get("nargs"), kwargs.get("action")
    help_text = kwargs.get("help")
    extra = {"hidden": True} if help_text == SUPPRESS else {"help": help_text}
    if kwargs.get("choices"):
        choices = list(kwargs["choices"])

        def one_of(value):
            if value not in choices:
                raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
            return value

        extra["callback"] = one_of
        extra["help"] = f"{help_text or ''} (one of: {', '.join(choices)})".strip()
    default = kwargs.get("default")
    if names[0][0] != "-":  # positional
        annotation = list[kind] if nargs in ("+", "*") else kind
        info = typer.Argument(**extra) if default is None else typer.Argument(default=default, **extra)
        return inspect.Parameter(names[0], inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[annotation, info],
                                 default=default if default is not None else inspect.Parameter.empty)  # fmt: skip
    dest = kwargs.get("dest") or names[0].lstrip("-").replace("-", "_")
    if action == "store_true":
        annotation, default = bool, False
    elif action == "append" or nargs in ("+", "*"):
        annotation, default = list[kind], list(default or [])
    elif nargs == 2:
        annotation = tuple[kind, kind]
    else:
        annotation = kind
    required = kwargs.get("required") and default in (None, [])
    info = typer.Option(*names, **extra)
    return inspect.Parameter(dest, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[annotation, info],
                             default=inspect.Parameter.empty if required else default)  # fmt: skip


class CLI:
    """An entry point: ``cli = CLI(__doc__)``, ``@cli.command("name", arg(...), ...)`` on ``def name(args)`` (its
    docstring is the subcommand's help), then ``cli.main()``: a typer app, as ragkit's own command line."""

    def __init__(self, doc: str):
        self.doc = doc
        self.commands: dict[str, tuple[Callable, tuple]] = {}

    def command(self, name: str, *arguments: tuple[tuple[str, ...], dict]):
        def register(fn: Callable) -> Callable:
            self.commands[name] = (fn, arguments)
            return fn

        return register

    def app(self):
        """The typer app: a subcommand per command, each with ``--json``."""
        import typer

        app = typer.Typer(help=_as_written(self.doc), add_completion=False, no_args_is_help=True,
                          context_settings={"help_option_names": ["-h", "--help"]}, rich_markup_mode=None)  # fmt: skip
        for name, (fn, arguments) in self.commands.items():
            params = [_parameter(names, kwargs) for names, kwargs in arguments]
            json_flag = typer.Option("--json", help="print each table as one JSON object per line")
            params.append(inspect.Parameter("json", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[bool, json_flag],
                                            default=False))  # fmt: skip
            doc = inspect.cleandoc(fn.__doc__ or name)
            short = " ".join(doc.split("\n\n")[0].split())
            app.command(name, help=_as_written(doc), short_help=short)(_runner(fn, params))
        return app

    def main(self, argv: list[str] | None = None) -> None:
        self.app()(args=argv, prog_name=Path(sys.argv[0]).name)


def _as_written(doc: str) -> str:
    """A docstring as help that keeps its lines (click rewraps a paragraph unless it opens with "\\b")."""
    return "\n\n".join("\b\n" + part for part in inspect.cleandoc(doc).split("\n\n"))


def _runner(fn: Callable, params: list[inspect.Parameter]) -> Callable:
    """A function typer can read (its signature: ``params``) that calls ``fn(args)`` with the values parsed."""

    def run(**values) -> None:
        JSON["on"] = values.pop("json")
        os.environ["HF_HUB_OFFLINE"] = "1"  # this process and its children: no model hub
        fn(argparse.Namespace(**values))

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__name__ = fn.__name__
    return run
