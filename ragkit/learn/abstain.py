"""``ragkit learn`` for answers: when to say "the documents do not say", learned from rated answers.

The answer scorer (ragkit/answer/scorer.py) gives each answer a confidence, the probability that the passages
answer the question, and abstains under a threshold per language fitted on the shared labelled sets. An index's
own questions may sit elsewhere: near-miss topics that should be abstained on, or everyday wording the scorer
doubts. A rated answer says which way it should have gone:

- an answer rated good, or an abstention rated bad: an answer was wanted;
- an abstention rated good, or an answer rated bad: silence was (a wrong quote serves no one better than none).

Only quoted answers teach it (a generated answer is not held back by the threshold), and only those the
threshold decided: a query whose log shows no answer, an answer quoting the section the question cites, and one
with nothing to quote are left out. Each rated query is asked again as it was (its strategy, filters and scope,
the learned ranker as in use) and answered by the extractive scorer, for the confidence the current scorer gives
it; whether it abstained is taken from the log (what the person saw). Per scope and language (of the question's
text, as ``Index.answer`` reads it) with at least ``MIN_ANSWERS`` rated questions, the threshold that decides most
of them right without silencing over ``MAX_SILENCED`` of the answers wanted is fitted on two thirds (split by
question, seeded) and adopted only when it decides the held-out third better than the threshold in use, within
the same bound (``learned/current.json`` "answers"; ``ragkit learn --reset`` drops it
with the rankers).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ragkit.errors import RagkitError
from ragkit.learn import guard
from ragkit.learn.feedback import Judged
from ragkit.learn.ranker import SEED, Outcome
from ragkit.rerank.ranker import ALL, CURRENT, adopted, collections_of, learned_dir, write_current
from ragkit.retrieve.config import QueryConfig
from ragkit.text import query_language

MIN_ANSWERS = 20
MIN_WANTED = 5  # answers wanted in the fit part before a threshold may rise
MAX_SILENCED = 0.10  # of the answers people wanted (rated good, or abstentions rated bad), the share a threshold may
# silence: a bad answer says the quote was wrong, not that the documents are silent, and without this bound a set
# whose quotes are often wrong learns to say nothing (German fit half: 0.21 → 0.76, 63 % of answerable held-out
# questions silenced); the shipped thresholds are bound the same way (6 % of the answerable fit questions)
HOLD_OUT = 1 / 3
GOOD = 2  # a grade from which an answer counts as good (good is 3, bad 0)


@dataclass(frozen=True)
class Rated:
    """One rated answer: its query, scope and language, the scorer's confidence now, whether it abstained when
    it was shown, and whether the person found it good."""

    query: str
    scope: str
    language: str
    confidence: float
    abstained: bool
    good: bool

    @property
    def wanted(self) -> bool:
        """Whether an answer (rather than an abstention) was wanted."""
        return self.good != self.abstained


def rated_answers(reader, judged: list[Judged], ask) -> list[Rated]:
    """The rated answers of the log, asked again (``ask(reader, text, cfg)`` → the extractive Answer)."""
    out = []
    for j in judged:
        rated = [e for e in j.answers if isinstance(e.get("grade"), int)]
        q = j.query
        shown = q.get("answer")
        if not rated or not isinstance(shown, dict) or shown.get("mode") != "extract" or "abstained" not in shown:
            continue
        scope = q.get("scope", ALL)
        readable = collections_of(scope) if q.get("token") else None
        cfg = QueryConfig(
            strategy=q.get("strategy") or "auto",
            k=int(q.get("k") or 10),
            filters=q.get("filters") or {},
            answer=True,
            answer_mode="extract",
            log=False,
        )
        try:
            answer = ask(reader, q["query"], replace(cfg, readable=readable))
        except RagkitError:  # asked again it fails (a filter the index no longer knows): nothing to learn from it
            continue
        if answer is None or answer.confidence is None or answer.decided != "confidence":
            continue
        good = rated[-1]["grade"] >= GOOD
        language = query_language(q["query"])
        out.append(Rated(q["query"], scope, language, float(answer.confidence), bool(shown["abstained"]), good))
    return out


def decided_right(rated: list[Rated], threshold: float) -> float:
    """The share of ``rated`` that ``threshold`` decides the way it was wanted (answer at or above it)."""
    return sum((r.confidence >= threshold) == r.wanted for r in rated) / len(rated) if rated else 0.0


def silenced(rated: list[Rated], threshold: float) -> float:
    """The share of the answers wanted in ``rated`` that ``threshold`` would abstain on."""
    wanted = [r for r in rated if r.wanted]
    return sum(r.confidence < threshold for r in wanted) / len(wanted) if wanted else 0.0


def fit_threshold(rated: list[Rated], current: float) -> float:
    """The threshold deciding most of ``rated`` right while silencing at most ``MAX_SILENCED`` of the answers
    wanted, and no higher than ``current`` unless ``MIN_WANTED`` answers were wanted (a share of two says
    little; with none every threshold silences "none of them"); of the best, the one nearest ``current`` (an
    interval's midpoint between two confidences, or ``current`` itself)."""
    values = sorted({r.confidence for r in rated})
    cuts = [values[0] - 1e-3] + [(a + b) / 2 for a, b in zip(values, values[1:])] + [values[-1] + 1e-3, current]
    few = sum(r.wanted for r in rated) < MIN_WANTED
    allowed = [t for t in cuts if silenced(rated, t) <= MAX_SILENCED and not (few and t > current)] or [current]
    best = max(decided_right(rated, t) for t in allowed)
    return min((t for t in allowed if decided_right(rated, t) == best), key=lambda t: abs(t - current))


def split(rated: list[Rated], seed: int = SEED) -> tuple[list[Rated], list[Rated]]:
    """By query: each distinct question falls wholly into the fit part or the held-out part."""
    texts = sorted({r.query for r in rated})
    random.Random(seed).shuffle(texts)
    held = set(texts[: max(1, round(len(texts) * HOLD_OUT))]) if len(texts) > 1 else set()
    return [r for r in rated if r.query not in held], [r for r in rated if r.query in held]


def fit_if_better(
    scope: str, language: str, rated: list[Rated], current: float, min_answers: int = MIN_ANSWERS, seed: int = SEED
) -> tuple[Outcome, float | None]:
    """The guard: fit the threshold on part of the rated answers, measure the rest with the threshold in use and
    the new one; adopted when the new one decides more of them right and there are ``min_answers`` of them."""
    outcome = Outcome(f"{scope} · {language}", len({r.query for r in rated}), kind="abstain")
    if outcome.queries < min_answers:
        outcome.reason = f"{outcome.queries} questions with rated answers, {min_answers} needed"
        return outcome, None
    fit_part, held = split(rated, seed)
    outcome.fit, outcome.held_out = len({r.query for r in fit_part}), len({r.query for r in held})
    if not fit_part or not held:
        outcome.reason = "too few questions to hold some out"
        return outcome, None
    threshold = fit_threshold(fit_part, current)

    def figures(t: float) -> dict[str, float]:
        return {
            "right": round(decided_right(held, t), 4),
            "silenced": round(silenced(held, t), 4),
            "threshold": round(t, 4),
        }

    outcome.before, outcome.after = figures(current), figures(threshold)
    quieter = outcome.after["silenced"] > max(MAX_SILENCED, outcome.before["silenced"])
    told, p = guard.better(
        [float((r.confidence >= current) == r.wanted) for r in held],
        [float((r.confidence >= threshold) == r.wanted) for r in held],
    )
    outcome.after["p"] = round(p, 4)
    outcome.adopted = told and not quieter
    outcome.reason = (
        "decides more held-out answers right"
        if outcome.adopted
        else f"silences over {MAX_SILENCED:.0%} of the held-out answers wanted: kept"
        if quieter
        else f"no held-out gain beyond chance (p {p:.2f}): kept"
    )
    return outcome, threshold


def learn(
    reader,
    judged: list[Judged],
    ask,
    current,
    *,
    dry_run: bool = False,
    min_answers: int = MIN_ANSWERS,
    seed: int = SEED,
) -> list[Outcome]:
    """Fit and (unless ``dry_run``) adopt an abstention threshold per scope and language with enough rated
    answers. ``current(scope, language)``: the threshold in use."""
    groups: dict[tuple[str, str], list[Rated]] = {}
    for r in rated_answers(reader, judged, ask):
        groups.setdefault((r.scope, r.language), []).append(r)
    out = []
    for (scope, language), rated in sorted(groups.items()):
        t = time.perf_counter()
        outcome, threshold = fit_if_better(scope, language, rated, current(scope, language), min_answers, seed)
        if outcome.adopted and not dry_run:
            outcome.path = str(adopt(reader.index_dir, scope, language, threshold, outcome))
        else:
            outcome.adopted = False
        outcome.seconds = round(time.perf_counter() - t, 2)
        out.append(outcome)
    return out


def adopt(index_dir: Path, scope: str, language: str, threshold: float, outcome: Outcome) -> Path:
    """Name the threshold in ``learned/current.json`` (replaced in one rename, with the rankers it names)."""
    current = adopted(index_dir)
    answers = current.setdefault("answers", {})
    answers.setdefault(scope, {})[language] = {
        "threshold": round(threshold, 4),
        "fitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "answers": outcome.queries,
        "fit": outcome.fit,
        "held_out": outcome.held_out,
        "before": outcome.before,
        "after": outcome.after,
    }
    write_current(index_dir, current)
    return learned_dir(index_dir) / CURRENT
