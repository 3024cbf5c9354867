"""The labelled answer sets the answer scorer is fitted on and measured with: questions with a short verbatim gold
answer over a corpus, and questions the corpus does not answer, each split once into a fit half and a held-out
half (``tests/data/answer_splits.json``, written by ``python scripts/fit_answers.py split`` with a fixed seed and
committed; fit and tune only on the fit halves, report the held-out halves).

| set | documents | answerable | unanswerable | split by |
|---|---|---|---|---|
| german | ../shared/data/german-laws (8 laws) | tests/data/german_questions*.jsonl, german_answers.jsonl | german_unanswerable.jsonl | question |
| swedish | ../shared/data/swedish-regulations (59 PDFs) | tests/data/swedish_questions.jsonl, swedish_answers.jsonl | swedish_unanswerable.jsonl | question |
| hotpotqa | ../shared/data/hotpotqa-100 (994 paragraphs) | its 100 questions | hotpotqa_unanswerable.jsonl (absent topics) | question |
| xquad | ../shared/data/xquad-de: its 240 paragraphs as documents | 1,190 questions (CC BY-SA 4.0) | – | article |
| swequad | ../shared/data/swequad-mc-train: its 434 pages as documents | 962 questions (CC BY 4.0) | – | page |

xquad and swequad are read from their upstream files and written as BEIR corpora (``corpus.jsonl``) into a work
folder to be indexed; their attribution stays with them in ../shared/data (nothing of them is copied into the
repository but the ids of the held-out half).
"""

from __future__ import annotations

import json
import random
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
DATA = REPO / "tests" / "data"
SPLITS = DATA / "answer_splits.json"
SEED = 43
NAMES = ("german", "swedish", "hotpotqa", "xquad", "swequad")
LANGUAGE = {"german": "de", "swedish": "sv", "hotpotqa": "en", "xquad": "de", "swequad": "sv"}
# the upstream files a set needs (a set whose files are absent is skipped with this reason)
NEEDS = {
    "german": SHARED_DATA / "german-laws" / "laws",
    "swedish": SHARED_DATA / "swedish-regulations",
    "hotpotqa": SHARED_DATA / "hotpotqa-100",
    "xquad": SHARED_DATA / "xquad-de" / "xquad.de.json",
    "swequad": SHARED_DATA / "swequad-mc-train" / "training.json",
}


@dataclass
class AnswerSet:
    """One labelled set: what to index (``source``), its answerable questions (``id``, ``query``, ``answer``,
    ``group``: the unit it is split by) and its unanswerable ones (``why``)."""

    name: str
    language: str
    source: Path
    answerable: list[dict]
    unanswerable: list[dict] = field(default_factory=list)

    def half(self, which: str, splits: dict[str, str] | None = None) -> tuple[list[dict], list[dict]]:
        """The answerable and unanswerable questions of the ``fit`` or ``held_out`` half."""
        splits = splits if splits is not None else split_of(self.name)
        pick = [q for q in self.answerable if splits.get(q["id"], "fit") == which]
        return pick, [q for q in self.unanswerable if splits.get(q["id"], "fit") == which]


def available(name: str) -> bool:
    return NEEDS[name].exists()


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def _ours(files: list[str], unanswerable: str) -> tuple[list[dict], list[dict]]:
    good = [q for name in files for q in _jsonl(DATA / name) if q.get("answer")]
    bad = _jsonl(DATA / unanswerable)
    for q in good + bad:
        q.setdefault("group", q["id"])
    return good, bad


def load(name: str, work: Path | None = None) -> AnswerSet:
    """The set ``name``; ``work``: where xquad and swequad write their corpus (default: a folder under /tmp)."""
    work = Path(work or Path("/tmp") / "ragkit-answer-sets")
    if name == "german":
        good, bad = _ours(
            ["german_questions.jsonl", "german_questions_heldout.jsonl", "german_answers.jsonl"],
            "german_unanswerable.jsonl",
        )
        return AnswerSet(name, "de", NEEDS[name], good, bad)
    if name == "swedish":
        good, bad = _ours(["swedish_questions.jsonl", "swedish_answers.jsonl"], "swedish_unanswerable.jsonl")
        return AnswerSet(name, "sv", NEEDS[name], good, bad)
    if name == "hotpotqa":
        good = [
            {"id": q["_id"], "query": q["text"], "answer": q["answer"], "group": q["_id"]}
            for q in _jsonl(NEEDS[name] / "queries.jsonl")
            if q.get("answer")
        ]
        # on topics absent from the paragraphs; those asking a fact missing about an entity they hold
        # (``entities_in_corpus``) are another question, measured apart by scripts/bench_answer.py trust
        bad = [q for q in _jsonl(DATA / "hotpotqa_unanswerable.jsonl") if not q.get("entities_in_corpus")]
        for q in bad:
            q["group"] = q["id"]
        return AnswerSet(name, "en", NEEDS[name] / "corpus.jsonl", good, bad)
    if name == "xquad":
        return _xquad(work / "xquad")
    if name == "swequad":
        return _swequad(work / "swequad")
    raise KeyError(name)


def _write_corpus(folder: Path, rows: list[dict]) -> Path:
    """``folder/corpus.jsonl`` with ``rows``, rewritten only when it changes (an index of it stays as it is)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "corpus.jsonl"
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def _xquad(folder: Path) -> AnswerSet:
    """XQuAD German: each of its 240 paragraphs a document titled by its article; each question's first answer
    span its gold answer; split by article (questions of one article never fall in both halves)."""
    data = json.loads(NEEDS["xquad"].read_text())["data"]
    rows, good = [], []
    for article in data:
        title = article["title"].replace("_", " ")
        for i, paragraph in enumerate(article["paragraphs"]):
            rows.append({"_id": f"{article['title']}-{i}", "title": title, "text": paragraph["context"]})
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]["text"]
                good.append({"id": qa["id"], "query": qa["question"], "answer": answer, "group": article["title"]})
    return AnswerSet("xquad", "de", _write_corpus(folder, rows), good)


def _swequad(folder: Path) -> AnswerSet:
    """SweQUAD-MC training split: each of its 434 pages a document (its first line the title); each question's
    correct choice its gold answer; split by page."""
    data = json.loads(NEEDS["swequad"].read_text())["data"]
    pages: dict[str, int] = {}
    rows, good = [], []
    for n, item in enumerate(data):
        context = item["context"].replace("\r\n", "\n")
        if context not in pages:
            pages[context] = len(pages)
            title, _, body = context.partition("\n")
            rows.append({"_id": f"page-{pages[context]}", "title": title.strip(), "text": body.strip()})
        answer = next(c["text"] for c in item["choices"] if c["type"] == "Correct answer")
        good.append(
            {"id": f"swequad-{n}", "query": item["question"], "answer": answer, "group": f"page-{pages[context]}"}
        )
    return AnswerSet("swequad", "sv", _write_corpus(folder, rows), good)


SCIFACT = SHARED_DATA / "scifact-train"


def scifact() -> AnswerSet:
    """scifact-train's judged claims as a set without answers (``answer`` empty): split by claim like the
    others, for the learned ranker's measurements (its documents are ranked, not quoted)."""
    from ragkit.evaluate import load_dataset

    ds = load_dataset(SCIFACT)
    good = [{"id": qid, "query": text, "answer": "", "group": qid} for qid, text in sorted(ds.queries.items())]
    return AnswerSet("scifact", "en", SCIFACT, good)


def make_split(aset: AnswerSet, seed: int = SEED) -> list[str]:
    """The ids of ``aset``'s held-out half: its groups (questions, articles or pages) shuffled with ``seed`` and
    the first half of them held out; answerable and unanswerable questions are split apart, each in half."""
    held = []
    for questions in (aset.answerable, aset.unanswerable):
        groups = sorted({q["group"] for q in questions})
        random.Random(f"{seed}:{aset.name}:{len(groups)}").shuffle(groups)
        out = set(groups[: len(groups) // 2])
        held += [q["id"] for q in questions if q["group"] in out]
    return sorted(held)


def split_of(name: str) -> dict[str, str]:
    """``{question id: "fit" | "held_out"}`` from the committed split (ids it does not name are fit)."""
    if not SPLITS.is_file():
        return {}
    held = json.loads(SPLITS.read_text())["sets"].get(name, [])
    return dict.fromkeys(held, "held_out")


def norm(text: str) -> str:
    """Lower-case words joined by single spaces: "Walt Disney Pictures." and "walt disney pictures" meet."""
    return " ".join(re.findall(r"\w+", str(text).lower()))


def answer_measures(ix, good: list[dict], bad: list[dict], k: int = 10, settings: dict | None = None) -> dict:
    """Extractive answers end to end through ``Index.query`` and ``Index.answer_for`` as ``ragkit query --answer``
    runs them (strategy auto, ``k`` passages): of the answerable questions (``good``) the share whose gold answer
    the answer holds (``contained``), whose gold answer stands in the first five passages (``ceiling``), that are
    answered (``answered``) and whose quote lies on the gold page (``page_right``, where pages are labelled); of
    the unanswerable ones (``bad``) the share abstained on (``abstain_absent``); the answers' characters
    (``chars``) and the answer step's milliseconds (``ms``). ``settings``: more QueryConfig fields (e.g.
    ``query_encoder``). ``ix``: an ``Index``, or scripts/harness.py's opener over an older checkout (its
    ``query`` and ``answer_for``), so that an older checkout can be measured with it."""
    from ragkit.config import QueryConfig

    cfg = QueryConfig(k=k, answer=True, answer_mode="extract", **(settings or {}))
    ix.answer_for(ix.query("warm up", cfg), cfg)
    counts = dict.fromkeys(("contained", "ceiling", "answered", "page_right", "absent"), 0)
    chars, ms = [], []
    for q in good + bad:
        result = ix.query(q["query"], cfg)
        t = time.perf_counter()
        a = ix.answer_for(result, cfg).answer
        ms.append((time.perf_counter() - t) * 1000)
        if q in bad:
            counts["absent"] += a.abstained
            continue
        gold = norm(q["answer"])
        counts["contained"] += gold in norm(a.text)
        counts["ceiling"] += any(gold in norm(p.text) for p in sorted(result.passages, key=lambda p: p.rank)[:5])
        counts["answered"] += not a.abstained
        counts["page_right"] += "pages" in q and page_right(q, a)
        if not a.abstained:
            chars.append(len(a.text))
    n = max(len(good), 1)
    out = {key: round(counts[key] / n, 4) for key in ("contained", "ceiling", "answered")}
    if any("pages" in q for q in good):
        out["page_right"] = round(counts["page_right"] / n, 4)
    if bad:
        out["abstain_absent"] = round(counts["absent"] / len(bad), 4)
    return out | {"n": len(good), "n_absent": len(bad), "chars": chars, "ms": ms}


def page_right(q: dict, a) -> bool:
    """A quote (or a citation) of the answer lies on the gold pages of the gold document (Swedish PDFs)."""
    first, last = q["pages"]
    spans = [(x.path, x.pages) for x in a.quotes] or [(c.path, c.pages) for c in a.citations]
    return any(path.endswith(q["doc"]) and pages and pages[0] <= last and pages[1] >= first for path, pages in spans)


def answer_figures(ix, good: list[dict], bad: list[dict], k: int = 10) -> list[str]:
    """``answer_measures`` as a table's cells: contained (n), ceiling, abstain answerable, abstain absent (n),
    answer characters p50, answer milliseconds p50 and p95."""
    m = answer_measures(ix, good, bad, k)
    ms = sorted(m["ms"])
    return [
        f"{m['contained']:.2f} ({m['n']})",
        f"{m['ceiling']:.2f}",
        f"{1 - m['answered']:.2f}",
        f"{m['abstain_absent']:.2f} ({m['n_absent']})" if bad else "–",
        f"{statistics.median(m['chars']):.0f}" if m["chars"] else "–",
        f"{statistics.median(ms):.0f}",
        f"{ms[min(len(ms) - 1, int(0.95 * len(ms)))]:.0f}",
    ]
