"""``ragkit learn``: a ranker fitted on what people judged (and on labelled files), adopted only when it ranks
better on judged queries it was not fitted on.

For each judged query the log holds (``feedback.Judged``) the query is run again as it was asked (its strategy,
filters and scope; the learned ranker off), and each candidate gets its ``RANK_FEATURES`` and a label from the
feedback on it: a passage judged bad 0, one nobody judged 1, one opened or graded 1 2, graded 2 3, good (3) 4.
A query is one group however often it was judged: a hundred clicks on one passage for one question weigh as
one judgment. Labelled files (``--labels``: a BEIR folder with qrels, or questions with their gold section,
page or answer, as ``ragkit eval`` and the quality gate read them) add queries of their own.

The groups are split by query (``HOLD_OUT`` of them held out, drawn with a seed); LightGBM's LambdaRank is fitted
on the rest; the model is adopted only if, on the held-out queries, it raises nDCG@10 and does not lower top-1
(the best judged passage first) against the ranking in use, and only with at least ``MIN_QUERIES`` distinct
queries. nDCG here weighs a label by 2^label − 1 (``evaluate.ndcg_at``, exponential gain: what LambdaRank
optimises), not by the label itself as ``ragkit eval``'s does. Each scope (a token's collections, a collection,
or "all") with enough feedback gets its own model.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ragkit.evaluate import ndcg_at
from ragkit.fitted import Trees
from ragkit.learn import guard
from ragkit.learn.feedback import Judged, content_hash
from ragkit.learn.labels import labelled_queries
from ragkit.records import Hit
from ragkit.rerank.ranker import (
    ALL,
    CURRENT,
    RANK_FEATURES,
    Ranker,
    adopted,
    hit_matrix,
    learned_dir,
    prior,
    write_current,
)
from ragkit.retrieve.config import QueryConfig
from ragkit.text import query_language

MIN_QUERIES = 20
HOLD_OUT = 1 / 3
SEED = 43
UNJUDGED = 1
LABELS = {0: 0, 1: 2, 2: 3, 3: 4}  # a grade → the ranker's label (unjudged: UNJUDGED)
TREES = dict(
    objective="lambdarank",
    n_estimators=150,
    learning_rate=0.05,
    num_leaves=7,
    min_child_samples=10,
    subsample=0.8,
    subsample_freq=1,
    colsample_bytree=0.8,
    reg_lambda=1.0,
    deterministic=True,
    force_row_wise=True,
    verbose=-1,
)


@dataclass
class Group:
    """One judged query's candidates: their features and labels."""

    query: str
    scope: str
    X: np.ndarray
    labels: np.ndarray
    default: np.ndarray  # the candidates' order in use (0, 1, 2, …: the ranking the model must beat)
    source: str = "feedback"

    @property
    def useful(self) -> bool:
        return len(self.labels) > 1 and len(set(self.labels.tolist())) > 1


@dataclass
class Outcome:
    """What ``learn`` did for one scope."""

    scope: str
    queries: int
    fit: int = 0
    held_out: int = 0
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)
    adopted: bool = False
    reason: str = ""
    path: str | None = None
    seconds: float = 0.0
    kind: str = "ranker"  # or "abstain": an answer threshold (ragkit/learn/abstain.py), ``scope`` "SCOPE · LANG"


# --- labelled candidates --------------------------------------------------------------------------------------------


def _key(h: Hit) -> tuple[str, str, str]:
    return (h.path, h.header, content_hash(h.text))


def _labels_from_grades(hits: list[Hit], grades: dict[tuple[str, str, str], int]) -> np.ndarray:
    """A label per candidate: its grade's, matched by path, section and content hash, else by path and section
    alone (the text changed since it was judged); unjudged otherwise."""
    by_place = {(p, s): g for (p, s, _), g in grades.items()}
    out = []
    for h in hits:
        path, section, digest = _key(h)
        grade = grades.get((path, section, digest))
        if grade is None:
            grade = by_place.get((path, section))
        out.append(UNJUDGED if grade is None else LABELS[grade])
    return np.asarray(out, dtype=np.int32)


def candidates(reader, text: str, cfg: QueryConfig, retrieve) -> list[Hit]:
    """The query's candidates as they are ranked without the learned ranker (``retrieve``: the library's, ragkit/library/asking.py)."""
    hits, _, _ = retrieve(reader, text, replace(cfg, learned=False))
    return hits


def _group(reader, text: str, cfg: QueryConfig, scope: str, label, retrieve, source: str) -> Group:
    hits = candidates(reader, text, cfg, retrieve)
    X = hit_matrix(hits, text, _language(text))
    return Group(text, scope, X, label(hits), np.arange(len(hits)), source)


def _language(text: str) -> str:
    return query_language(text)


def feedback_groups(reader, judged: list[Judged], retrieve) -> list[Group]:
    """The judged queries of the log, run again as they were asked, their candidates labelled."""
    out = []
    for j in judged:
        grades = j.grades()
        if not grades:
            continue
        q = j.query
        scope = q.get("scope", ALL)
        readable = tuple(scope.split(":", 1)[1].split(",")) if q.get("token") and scope != ALL else None
        cfg = QueryConfig(strategy=q.get("strategy") or "auto", k=int(q.get("k") or 10), filters=q.get("filters") or {})
        cfg = replace(cfg, readable=readable)
        out.append(
            _group(
                reader,
                q["query"],
                cfg,
                scope,
                lambda hits, g=grades: _labels_from_grades(hits, g),
                retrieve,
                "feedback",
            )
        )
    return out


def label_groups(reader, path: Path, retrieve, limit: int | None = None) -> list[Group]:
    """Queries with labels from a file (ragkit/learn/labels.py): a BEIR folder, or questions with their gold
    section, pages or answer; a candidate that holds the answer is labelled as one judged good."""
    rows = labelled_queries(path)
    out = []
    for text, judge in rows[:limit]:
        out.append(
            _group(
                reader,
                text,
                QueryConfig(),
                ALL,
                lambda hits, f=judge: np.asarray([4 if f(h) else UNJUDGED for h in hits], dtype=np.int32),
                retrieve,
                "labels",
            )
        )
    return out


# --- fitting and the guard ------------------------------------------------------------------------------------------


def per_query(groups: list[Group], score) -> tuple[list[float], list[float]]:
    """Each group's nDCG@10 and top-1 (the best-labelled candidate first) under the order ``score(group)`` gives."""
    nd, top = [], []
    for g in groups:
        order = np.argsort(-score(g), kind="stable")
        nd.append(ndcg_at(order.tolist(), dict(enumerate(g.labels.tolist())), 10, gain="exponential"))
        top.append(float(g.labels[order[0]] == g.labels.max()))
    return nd, top


def measure(groups: list[Group], score) -> dict[str, float]:
    """nDCG@10 and top-1 of the order ``score(group)`` gives, over ``groups``."""
    nd, top = per_query(groups, score)
    return {
        "ndcg@10": round(float(np.mean(nd)), 4) if nd else 0.0,
        "top1": round(float(np.mean(top)), 4) if top else 0.0,
    }


def split(groups: list[Group], seed: int = SEED) -> tuple[list[Group], list[Group]]:
    """By query: each distinct query text falls wholly into the fit part or the held-out part."""
    texts = sorted({g.query for g in groups})
    random.Random(seed).shuffle(texts)
    held = set(texts[: max(1, round(len(texts) * HOLD_OUT))]) if len(texts) > 1 else set()
    return [g for g in groups if g.query not in held], [g for g in groups if g.query in held]


def fit(groups: list[Group], seed: int = SEED) -> Ranker:
    """LightGBM's LambdaRank over the groups' candidates, boosted from the hand-set score; each feature held
    within the range it saw."""
    import lightgbm

    groups = [g for g in groups if g.useful]
    X = np.concatenate([g.X for g in groups])
    y = np.concatenate([g.labels for g in groups])
    start = np.concatenate([prior(g.X) for g in groups])  # boosted from the hand-set ranking
    model = lightgbm.LGBMRanker(**TREES, random_state=seed)
    model.fit(X, y, group=[len(g.labels) for g in groups], init_score=start)
    trees = Trees.from_lightgbm(model.booster_.dump_model(), RANK_FEATURES)
    return Ranker(trees, X.min(axis=0), X.max(axis=0))


def learn(
    reader,
    judged: list[Judged],
    retrieve,
    labels: Iterable[Path] = (),
    *,
    dry_run: bool = False,
    min_queries: int = MIN_QUERIES,
    scopes: Iterable[str] | None = None,
    seed: int = SEED,
) -> list[Outcome]:
    """Fit and (unless ``dry_run``) adopt a ranker per scope with enough judged queries; labelled files count
    for the index's own scope ("all")."""
    by_scope: dict[str, list[Group]] = {}
    for g in feedback_groups(reader, judged, retrieve):
        by_scope.setdefault(g.scope, []).append(g)
    for path in labels:
        by_scope.setdefault(ALL, []).extend(label_groups(reader, path, retrieve))
    out = []
    for scope in sorted(set(by_scope) if scopes is None else set(scopes) & set(by_scope)):
        t = time.perf_counter()
        outcome, model = fit_if_better(scope, by_scope[scope], reader.rankers.for_scope(scope), min_queries, seed)
        if outcome.adopted and not dry_run:
            outcome.path = str(adopt(reader.index_dir, scope, model, outcome))
        else:
            outcome.adopted = False
        outcome.seconds = round(time.perf_counter() - t, 2)
        out.append(outcome)
    return out


def fit_if_better(
    scope: str, groups: list[Group], in_use: Ranker | None, min_queries: int = MIN_QUERIES, seed: int = SEED
) -> tuple[Outcome, Ranker | None]:
    """The guard: fit on part of the judged queries, measure the rest with the ranking in use (``in_use``, or
    the hand-set weights') and with the new model; ``outcome.adopted`` when the new one is better there (higher
    nDCG@10, top-1 no lower) and there are at least ``min_queries`` distinct queries."""
    groups = [g for g in groups if g.useful]
    outcome = Outcome(scope, len({g.query for g in groups}))
    if outcome.queries < min_queries:
        outcome.reason = f"{outcome.queries} judged queries, {min_queries} needed"
        return outcome, None
    fit_part, held = split(groups, seed)
    outcome.fit, outcome.held_out = len(fit_part), len(held)
    if not fit_part or not held:
        outcome.reason = "too few queries to hold some out"
        return outcome, None
    model = fit(fit_part, seed)
    nd_before, top_before = per_query(held, _in_use(in_use))
    nd_after, top_after = per_query(held, model_score(model))
    outcome.before, outcome.after = measure(held, _in_use(in_use)), measure(held, model_score(model))
    told, p = guard.better(nd_before, nd_after)
    outcome.after["p"] = round(p, 4)
    outcome.adopted = told and np.mean(top_after) >= np.mean(top_before)
    outcome.reason = (
        "better on the held-out queries"
        if outcome.adopted
        else f"no held-out gain beyond chance (p {p:.2f}): kept"
        if not told
        else "a lower held-out top-1: kept"
    )
    return outcome, model


def model_score(model: Ranker):
    return lambda g: model.scores(g.X)


def _in_use(model: Ranker | None):
    """The ranking a scope's queries get now: its model's, else the hand-set weights' (the candidates' order)."""
    return model_score(model) if model is not None else (lambda g: -g.default.astype(float))


def _slug(scope: str) -> str:
    """A scope's part of its rankers' file names: readable, and told apart by a hash (scopes "collections:a,b"
    and "collections:a%2Cb" read alike)."""
    readable = re.sub(r"[^a-zA-Z0-9_-]+", "-", scope).strip("-")[:60] or "all"
    return f"{readable}-{hashlib.sha1(scope.encode()).hexdigest()[:8]}"


def adopt(index_dir: Path, scope: str, model: Ranker, outcome: Outcome) -> Path:
    """Write the model as the scope's next version and name it in ``learned/current.json`` (replaced in one
    rename, so a reader sees the old set or the new)."""
    folder = learned_dir(index_dir)
    folder.mkdir(parents=True, exist_ok=True)
    versions = [
        int(m.group(1))
        for p in folder.glob(f"ranker.{_slug(scope)}.*.json")
        if (m := re.search(r"\.(\d+)\.json$", p.name))
    ]
    version = max(versions, default=0) + 1
    model.scope, model.version = scope, version
    model.meta = {
        "fitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "queries": outcome.queries,
        "fit": outcome.fit,
        "held_out": outcome.held_out,
        "before": outcome.before,
        "after": outcome.after,
    }
    path = folder / f"ranker.{_slug(scope)}.{version}.json"
    path.write_text(json.dumps(model.to_json()) + "\n")
    current = adopted(index_dir)
    current["scopes"][scope] = path.name
    write_current(index_dir, current)
    return path


def reset(index_dir: Path) -> int:
    """Forget every adopted ranker and learned answer threshold; how many scopes had either. The rankers' files
    stay as history; the thresholds lived in ``current.json`` alone (``ragkit learn`` fits them again from the
    log, which keeps every rating)."""
    current = adopted(index_dir)
    n = len(set(current["scopes"]) | set(current.get("answers") or {}))
    if (learned_dir(index_dir) / CURRENT).exists():
        write_current(index_dir, {"scopes": {}})  # (an empty list, not none: readers of a bucket see it too)
    return n
