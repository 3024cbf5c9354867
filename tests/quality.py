"""The quality gate's measurements and floors, shared by tests/test_quality.py and
`scripts/bench_quality.py report`.

The floors live in tests/data/quality_floors.toml: the figures measured with the default settings and the
real bundled models, and the tolerance a run may lose before the gate fails.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ragkit import measure
from ragkit.config import QueryConfig

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
FLOORS = REPO / "tests" / "data" / "quality_floors.toml"
LEGAL_QUERIES = REPO / "tests" / "data" / "legal_ref_queries.jsonl"
GERMAN_QUESTIONS = REPO / "tests" / "data" / "german_questions.jsonl"
GERMAN_HELD_OUT = REPO / "tests" / "data" / "german_questions_heldout.jsonl"  # written blind, never tuned on
HOTPOTQA = SHARED_DATA / "hotpotqa-100"
GERMAN_LAWS = SHARED_DATA / "german-laws" / "laws"


def floors() -> dict:
    return tomllib.loads(FLOORS.read_text())


@dataclass
class Check:
    """One measured figure against its recorded value: it fails below ``recorded - tolerance``."""

    name: str
    got: float
    recorded: float
    tolerance: float

    @property
    def floor(self) -> float:
        return round(self.recorded - self.tolerance, 4)

    @property
    def ok(self) -> bool:
        return self.got >= self.floor - 1e-9

    def __str__(self) -> str:
        return f"{self.name}: {self.got:.4f} (recorded {self.recorded:.4f}, floor {self.floor:.4f})"


def hotpotqa_eval(index_dir: Path, k: int, strategies: list[str], cfg: QueryConfig | None = None) -> dict:
    """``ragkit eval`` on hotpotqa-100 (all 100 questions): ``{strategy: metrics}``."""
    res = measure.evaluate(HOTPOTQA, strategies, index_dir=index_dir, k=k, qcfg=cfg)
    return {r["strategy"]: r for r in res["results"]}


def hotpotqa_checks(results: dict, table: dict, tolerance: float) -> list[Check]:
    """One check per strategy and recall cut-off named in the floors file's ``[hotpotqa.recorded]`` table."""
    return [
        Check(f"hotpotqa {strategy} {metric}", results[strategy][metric], value, tolerance)
        for strategy, recorded in table.items()
        for metric, value in recorded.items()
    ]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def legal_queries() -> list[dict]:
    return _jsonl(LEGAL_QUERIES)


def german_questions(held_out: bool = False) -> list[dict]:
    """Natural German questions over the shared laws, each labelled with the section(s) that answer it."""
    return _jsonl(GERMAN_HELD_OUT if held_out else GERMAN_QUESTIONS)


def section_rank(ix, q: dict, k: int = 3) -> tuple[int | None, str]:
    """The rank of the first passage from the labelled section of the right law (None: not in the top
    ``k``), and the first passage's section."""
    passages = ix.query(q["query"], QueryConfig(k=k)).passages
    expected = q["section"] if isinstance(q["section"], list) else [q["section"]]
    for p in passages:
        if p.section.split(" > ")[-1] in expected and _in_law(p.path, q["law"]):
            return p.rank, passages[0].section
    return None, passages[0].section if passages else ""


def _in_law(path: str, law: str) -> bool:
    """The passage's file lies in the law's own folder (``b/bdsg_2018/index.md`` for "bdsg"), never in another
    law whose folder merely contains the name (all of federal law holds 111 folders with "gg" in them)."""
    return any(part == law or part.startswith(f"{law}_") for part in Path(path).parts)


def legal_misses(ix, queries: list[dict]) -> list[tuple[str, str]]:
    """The queries naming a § / Art. whose cited section (in the right law) is not the first passage."""
    return [(q["query"], top) for q in queries for rank, top in [section_rank(ix, q)] if rank != 1]


def german_hits(ix, questions: list[dict]) -> dict[str, float]:
    """Share of the questions whose section is the first passage (top-1) and among the first three (top-3)."""
    ranks = [section_rank(ix, q)[0] for q in questions]
    return {
        "top1": round(sum(r == 1 for r in ranks) / len(ranks), 4),
        "top3": round(sum(r is not None for r in ranks) / len(ranks), 4),
    }


ROUTER_LABELS = REPO / "tests" / "data" / "router_labels.jsonl"


def router_records() -> list[dict]:
    return [json.loads(line) for line in ROUTER_LABELS.read_text().splitlines() if line.strip()]


def routed(record: dict) -> str:
    """The strategy the rules choose for a labelled query, from what the router saw when it was labelled."""
    from ragkit.retrieve.planner import plan_query
    from ragkit.retrieve.router import route

    plan = plan_query(record["planned"], syntax=False)  # the text after spelling correction
    return route(
        plan, record["known_entities"], True, record.get("has_communities", True), has_tree=record.get("has_tree", True)
    ).strategy


def router_accuracy(records: list[dict]) -> dict[str, tuple[int, int, int]]:
    """Per dataset and overall (``all``): (queries, routed to a best strategy, best includes hybrid)."""
    out: dict[str, list[int]] = {}
    for r in records:
        right, hybrid = routed(r) in r["best"], "hybrid" in r["best"]
        for key in (r["dataset"], "all"):
            row = out.setdefault(key, [0, 0, 0])
            row[0] += 1
            row[1] += right
            row[2] += hybrid
    return {k: (n, right, hybrid) for k, (n, right, hybrid) in out.items()}


def router_checks(recorded: dict) -> list[Check]:
    """Router accuracy (share of labelled queries routed to a strategy that reaches the best nDCG@10)."""
    acc = router_accuracy(router_records())
    return [
        Check(f"router accuracy {name}", round(acc[name][1] / acc[name][0], 4), value, 0)
        for name, value in recorded.items()
    ]


# ---------------------------------------------------------------- Swedish regulations (issue 34)

SWEDISH_QUESTIONS = REPO / "tests" / "data" / "swedish_questions.jsonl"
_SE_REF = re.compile(r"(?:(\d+)\s*kap\.\s*)?(\d+(?:\s?[a-z])?)\s*§")


def swedish_questions(kind: str | None = None) -> list[dict]:
    """Swedish questions over ../shared/data/swedish-regulations, each with its regulation (``doc``), page(s)
    and paragraph (``ref``: "2 kap. 4 §"); ``kind`` "everyday" or "reference" (the question cites the paragraph)."""
    return [q for q in _jsonl(SWEDISH_QUESTIONS) if kind is None or q["kind"] == kind]


def is_cited_section(passage, ref: str) -> bool:
    """The passage lies in the paragraph ``ref`` names ("2 kap. 4 §": in chapter 2, the section "4 §")."""
    chapter, number = _SE_REF.fullmatch(ref.strip()).groups()
    parts = [p.replace(" ", "") for p in passage.section.split(" > ")]
    in_chapter = chapter is None or any(p.startswith(f"{chapter}kap.") for p in parts)
    return in_chapter and f"{number.replace(' ', '')}§" in parts


def swedish_rank(ix, q: dict, k: int = 3) -> int | None:
    """The rank of the first passage from the question's regulation that holds its answer: on its page(s)
    for an everyday question, in the cited paragraph for a reference question."""
    first, last = q["pages"]
    for p in ix.query(q["query"], QueryConfig(k=k)).passages:
        if not p.path.endswith(q["doc"]):
            continue
        if q["kind"] == "reference" and is_cited_section(p, q["ref"]):
            return p.rank
        if q["kind"] != "reference" and p.pages and p.pages[0] <= last and p.pages[1] >= first:
            return p.rank
    return None


def swedish_hits(ix, questions: list[dict]) -> dict[str, float]:
    """Reference questions: the share whose cited paragraph is the first passage (``reference_top1``);
    everyday ones: the share whose page is the first passage's / among the first three's."""
    out = {}
    for kind, prefix in (("reference", "reference_"), ("everyday", "everyday_")):
        ranks = [swedish_rank(ix, q) for q in questions if q["kind"] == kind]
        if ranks:
            out[prefix + "top1"] = round(sum(r == 1 for r in ranks) / len(ranks), 4)
            if kind == "everyday":
                out[prefix + "top3"] = round(sum(r is not None for r in ranks) / len(ranks), 4)
    return out


# ---------------------------------------------------------------- answers (issues 33, 43)

DATA = REPO / "tests" / "data"
SWEDISH_REGULATIONS = SHARED_DATA / "swedish-regulations"


def _answer_sets():
    """tests/answer_sets.py, also where tests/ is no package on the path (scripts load this file by path)."""
    import importlib.util
    import sys

    if "tests.answer_sets" not in sys.modules:
        spec = importlib.util.spec_from_file_location("tests.answer_sets", REPO / "tests" / "answer_sets.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["tests.answer_sets"]


def answer_set(name: str, work: Path | None = None):
    """A labelled answer set (tests/answer_sets.py): german, swedish, hotpotqa, xquad, swequad."""
    return _answer_sets().load(name, work)


def answer_questions(name: str, half: str = "held_out", work: Path | None = None) -> tuple[list[dict], list[dict]]:
    """The answerable and unanswerable questions of a set's ``half`` (the held-out half by default: the answer
    scorer was fitted on the other)."""
    return answer_set(name, work).half(half)


def norm(text: str) -> str:
    """Lower-case words joined by single spaces: "Walt Disney Pictures." and "walt disney pictures" meet."""
    return " ".join(re.findall(r"\w+", str(text).lower()))


def answer_eval(ix, good: list[dict], bad: list[dict], k: int = 10) -> dict[str, float]:
    """Extractive answers as ``ragkit query --answer`` gives them (tests/answer_sets.py ``answer_measures``):
    contained, ceiling, answered, page_right (Swedish), abstain_absent, and the median answer's characters
    (``chars_p50``)."""
    m = _answer_sets().answer_measures(ix, good, bad, k)
    chars = sorted(m["chars"])
    return {key: v for key, v in m.items() if isinstance(v, float)} | {
        "chars_p50": chars[len(chars) // 2] if chars else 0
    }


def answer_checks(measured: dict[str, float], recorded: dict[str, float], name: str, tolerance: float) -> list[Check]:
    """One check per figure the floors file records for a set's answers (``[answers.NAME]``)."""
    return [Check(f"{name} answers {key}", measured[key], value, tolerance) for key, value in recorded.items()]


def plain_questions(corpus: str) -> list[dict]:
    """tests/data/plain_questions.jsonl: everyday questions written from the bundled sample ("sample"), the German
    laws ("german-laws") and the Swedish regulations ("swedish"), each with a short answer found verbatim in its
    document (issue 63)."""
    rows = [json.loads(line) for line in (DATA / "plain_questions.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if r["corpus"] == corpus]


def plain_right(ix, questions: list[dict]) -> list[str]:
    """The questions ``ragkit query --answer`` (extractive, no model) answers right: not abstained, its quotes
    holding the written answer."""
    right = []
    for q in questions:
        result = ix.ask(q["query"], QueryConfig(answer=True, answer_mode="extract", log=False)).result
        answer = result.answer
        if answer is not None and not answer.abstained and norm(q["answer"]) in norm(answer.text):
            right.append(q["id"])
    return right
