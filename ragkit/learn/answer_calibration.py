"""What the answer scorer's fit chooses once its models are fitted (ragkit/learn/answers.py, steps 4–6), each on
the fit questions' probabilities predicted out of fold: the ``thresholds`` under which an answer abstains, what a
unit's length costs when the quote is chosen (``quote_length``), the least probability at which a written
sentence counts as supported (``support_threshold``); and the table of the fit's cross-validated figures per set
(``table``)."""

from __future__ import annotations

import numpy as np

from ragkit.answer.features import UNIT_FEATURES, columns, relative
from ragkit.learn.answer_data import FitQuestions, UnitData

ABSTAIN_ANSWERABLE = 0.06  # the share of each set's answerable fit questions the threshold may abstain on
MAX_CHARS = 350  # the median quote a set's answers may run to (issue 43 asks at most 400 for the whole answer)
_LOG_LEN = UNIT_FEATURES.index("log_len")


def thresholds(pool: FitQuestions, p: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """Per language of the questions (each language's encoder has its own scale of similarity), the highest
    threshold at which none of its sets abstains on more than ``ABSTAIN_ANSWERABLE`` of its answerable fit
    questions (probabilities out of fold); ``"*"``, the lowest of them, for any other language."""
    language = np.asarray([str(pool.sets[s].language[i]) for s, i in pool.items])
    sets = np.asarray([s for s, _ in pool.items])
    out = {}
    for lang in sorted(set(language[target])):
        best = 0.0
        for t in np.unique(np.round(p[language == lang], 4)):
            worst = max((p[(sets == s) & target] < t).mean() for s in np.unique(sets[(language == lang) & target]))
            if worst > ABSTAIN_ANSWERABLE:
                break
            best = float(t)
        out[lang] = best
    out["*"] = min(out.values(), default=0.0)
    return out


def _chosen(X: np.ndarray, p: np.ndarray, length: float) -> int:
    return int(np.argmax(p - length * X[:, _LOG_LEN]))


def _chars(X: np.ndarray, i: int) -> float:
    return float(np.expm1(X[i, _LOG_LEN] * np.log(1000)))


def quote_length(pool: FitQuestions, oof) -> float:
    """What a unit's length costs when choosing the quote: of the costs at which every set's median quote
    (out of fold) stays within ``MAX_CHARS``, the one whose quotes hold the gold answer most often (the sets'
    mean)."""
    best, best_hits = None, -1.0
    for length in np.round(np.arange(0.0, 1.01, 0.05), 2):
        hits, medians = [], []
        for s in range(len(pool.sets)):
            mine = [
                i for i in range(len(pool.items)) if pool.items[i][0] == s and pool.answerable(i) and len(oof[i][1])
            ]
            if not mine:
                continue
            picks = [(oof[i][0], _chosen(oof[i][0], oof[i][1], length), oof[i][2]) for i in mine]
            hits.append(np.mean([y[j] for _, j, y in picks]))
            medians.append(np.median([_chars(X, j) for X, j, _ in picks]))
        if medians and max(medians) <= MAX_CHARS and np.mean(hits) > best_hits:
            best, best_hits = float(length), float(np.mean(hits))
    return best if best is not None else 1.0


def support_threshold(data: list[UnitData], unit_no_encoder, unit, size: int) -> tuple[float, tuple]:
    """The least probability at which a written sentence counts as supported by a unit: the threshold that best
    tells a fit question's answer sentence, checked against its own passages, from another question's checked
    against them (Youden's J: accepted own minus accepted foreign, greatest)."""
    own, foreign = [], []
    for d in data:
        c = d.claims
        if c is None:
            continue
        for k in np.flatnonzero(~c["claim_held_out"]):
            rows = np.flatnonzero(c["claim_q"] == k)
            X, y = c["claim_X"][rows], c["claim_y"][rows]
            keep = np.argsort(-unit_no_encoder.predict(columns(X, unit_no_encoder.names)), kind="stable")[:size]
            X, y = relative(X[keep].copy()), y[keep]
            p = unit.predict(columns(X, unit.names))
            if c["claim_own"][k]:
                own.append(float(p[y].max()) if y.any() else 0.0)
            else:
                foreign.append(float(p.max()))
    if not own or not foreign:
        return 0.5, ("written sentences", 0, "support", "0.5 (no claims)", "–", "–")
    own_, foreign_ = np.asarray(own), np.asarray(foreign)
    best = max(np.unique(own_), key=lambda t: (own_ >= t).mean() - (foreign_ >= t).mean())
    row = ("written sentences", f"{len(own)} + {len(foreign)}", "support", f"{best:.3f}")
    row += (f"own accepted {(own_ >= best).mean():.3f}", f"foreign accepted {(foreign_ >= best).mean():.3f}")
    return float(best), row


def table(pool: FitQuestions, oof, p_ans: np.ndarray, thresholds: dict[str, float], length: float) -> list:
    header = ("set", "fit questions", "quote holds the gold", "ceiling", "abstain answerable", "abstain absent")
    rows = [header]
    for s, d in enumerate(pool.sets):
        mine = [i for i in range(len(pool.items)) if pool.items[i][0] == s]
        good = [i for i in mine if pool.answerable(i)]
        bad = [i for i in mine if not pool.answerable(i)]
        first = sum(bool(len(oof[i][2])) and bool(oof[i][2][_chosen(oof[i][0], oof[i][1], length)]) for i in good)
        ceiling = sum(bool(oof[i][2].any()) for i in good)
        t = thresholds.get(str(d.language[0]) if len(d.language) else "*", thresholds["*"])
        rows.append(
            (
                d.name,
                len(mine),
                f"{first / max(len(good), 1):.3f}",
                f"{ceiling / max(len(good), 1):.3f}",
                f"{np.mean([p_ans[i] < t for i in good]):.3f}" if good else "–",
                f"{np.mean([p_ans[i] < t for i in bad]):.3f} ({len(bad)})" if bad else "–",
            )
        )
    return rows
