"""The answer scorer's features (ragkit/answer/scorer.py scores with them; ragkit/learn/answers.py fits on them).

Each candidate unit is described by ``unit_features``: how close the index's encoder puts it to the question
(the question with the model's query prompt, the unit with its passage prompt), how much of the question's
weighted words it and its passage hold and how much it says beyond them, what the question asks for (a
quantity, a duration, a time, a person or place, a permission, a negation) and whether the unit holds it, its
passage's rank and score, and its place and kind in the passage. A question is described by
``question_features``: the best units' probabilities and similarities, how much of the question the passages
hold, how much of it the index has never seen.

The answer model records a hash of this code (``ragkit.answer.fingerprint.feature_code``: ``FEATURE_CODE`` names
what it hashes): features computed otherwise are not the ones it was fitted with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragkit.answer.evidence import NEGATIONS, STOP, Evidence, Sentence, Terms, fits, question_type, stem_match, words

UNIT_FEATURES = (
    "lang_de", "lang_sv",
    "sim", "sim_rel", "sim_chunk", "sim_z", "sim_rank",
    "cov_sent", "cov_sent_rel", "cov_ctx", "cov_head", "cov_passage", "novelty", "repeats",
    "inv_rank", "rank1", "score_rel",
    "first", "position", "paragraph", "item", "pair", "log_len",
    "typed", "type_fit", "number", "duration_fit", "permission_fit", "negation_fit", "negation_miss",
    "cited", "yesno", "legal", "legal_sim", "legal_cov", "legal_rank",
    "dense_rank", "lexical_rank", "passage_sim_rank", "units", "q_terms",
)  # fmt: skip
# what the no-encoder unit model reads: no encoder's similarity (it runs before the encoder, and for an index whose encoder
# the scorer was not fitted with it is all there is)
_ENCODED = ("sim", "sim_rel", "sim_z", "sim_rank", "legal_sim", "passage_sim_rank", "sim_chunk")
UNIT_FEATURES_NO_ENCODER = tuple(f for f in UNIT_FEATURES if f not in _ENCODED)
# what the full unit model reads: the encoder's similarities only as they compare the units of one question
# (each encoder has its own scale: all-MiniLM-L6-v2's cosines spread over 0.1-0.8, multilingual-e5-small's over
# 0.75-0.9; trees that split on the raw value learn one encoder's scale)
MODEL_FEATURES = tuple(f for f in UNIT_FEATURES if f not in ("sim", "sim_rel", "sim_chunk"))
QUESTION_STATS = (  # of the question, its passages and its hits alone
    "cov_passages", "oov", "missing_rare", "q_terms", "dense_top", "dense_gap", "lexical_top", "passage_score",
)  # fmt: skip
QUESTION_FEATURES = (
    "lang_de", "lang_sv",
    "p_best", "p_second", "logit_best", "sim_best", "sim_max", "sim_chunk_best",
    "cov_sent_best", "cov_ctx_best", "cov_top", "typed_no_fit", "sim_max_de", "sim_max_sv", *QUESTION_STATS,
)  # fmt: skip
# the question features that read an encoder's similarities on its own scale: left out where the index's encoder
# is not one the scorer was fitted with (``AnswerModel.answerable_no_encoder``)
SCALED = ("sim_best", "sim_max", "sim_chunk_best", "sim_max_de", "sim_max_sv", "dense_top", "dense_gap")
QUESTION_FEATURES_NO_ENCODER = tuple(f for f in QUESTION_FEATURES if f not in SCALED)
_DURATION_ASK = re.compile(r"\b(how long|wie lange?|hur länge|bis wann|ab wann|innerhalb welcher frist|wie viele? (tage|wochen|monate|jahre|stunden)|hur (många|lång) (dagar|veckor|månader|år|timmar|tid))\b", re.I)  # fmt: skip
_DURATION = re.compile(r"\b(\d+|ein|eine[nm]?|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|elf|zwölf|en|ett|två|tre|fyra|fem|sex|sju|åtta|nio|tio|elva|tolv|one|two|three|four|five|six|seven|eight|nine|ten|twelve|halb\w*)\s+(\w+\s+)?(sekunde|minute|stunde|tag|woche|monat|jahr|kalender\w*|werktag|arbeitstag|sekund|minut|timm|dag|dygn|vecka|veck|månad|år|second|minute|hour|day|week|month|year)", re.I)  # fmt: skip
_PERMISSION_ASK = re.compile(r"^\s*(darf|dürfen|kann|können|muss|müssen|får|kan|måste|behöver|may|can|must|do i have to|is it allowed)\b|\b(erlaubt|verboten|zulässig|tillåtet|förbjudet|allowed|permitted)\b", re.I)  # fmt: skip
_MODAL = re.compile(r"\b(darf|dürfen|kann|können|muss|müssen|soll|sollen|ist verpflichtet|hat das recht|zulässig|unzulässig|verboten|får|kan|måste|ska|skall|behöver|inte får|tillåt\w*|förbjud\w*|may|must|shall|can|cannot|prohibited|permitted|allowed)\b", re.I)  # fmt: skip
_NUMBER = re.compile(r"\d|\b(eins|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|elf|zwölf|hundert|tausend|två|tre|fyra|fem|sex|sju|åtta|nio|tio|elva|tolv|hundra|tusen|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|hundred|thousand)\b", re.I)  # fmt: skip
TYPED = ("quantity", "time", "person", "place")
_LEGAL = re.compile(r"§|\bArt\.? \d|\bArtikel \d|\d+ kap\.|\bBilaga\b|\bAnlage\b")


# the code of this module that turns a question and its units into features (besides its constants and all of
# ragkit/answer/evidence.py, which cuts the units): what ``ragkit.answer.fingerprint.feature_code`` hashes
FEATURE_CODE = (
    "Question", "_context", "_novelty", "unit_features", "with_vectors", "relative", "unit_text", "_has", "columns",
    "question_stats", "question_features",
)  # fmt: skip


@dataclass
class Question:
    """What the scorer needs of a question once: its weighted terms, its kind and its asks."""

    text: str
    language: str
    terms: Terms
    kind: str | None
    duration: bool
    permission: bool
    negated: bool
    cited: list  # legal references to a section (ragkit.records.Ref)
    oov: float  # the share of its terms' weight the index has never seen
    vector: np.ndarray | None

    @classmethod
    def of(cls, text: str, idf, language: str, vector: np.ndarray | None, cited: list) -> Question:
        terms = Terms.of(text, idf, language)
        unseen = idf("\x00unseen")  # what a word the index lacks weighs
        oov = sum(w for t, w in terms.weights.items() if w >= unseen - 1e-9 and not t[:1].isdigit())
        kind = question_type(text, language)
        low = f" {text.lower()} "
        return cls(
            text,
            language,
            terms,
            kind,
            bool(_DURATION_ASK.search(text)),
            bool(_PERMISSION_ASK.search(text)),
            any(f" {n} " in low for n in NEGATIONS),
            cited,
            oov / terms.total if terms.total else 0.0,
            None if vector is None else np.asarray(vector, dtype=np.float32),
        )


def _context(s: Sentence) -> set[str]:
    return s.words | set(words(s.passage.title)) | set(words(s.passage.section))


def _novelty(q: Question, s: Sentence) -> float:
    """The share of the unit's content words that meet none of the question's (what it says beyond it)."""
    content = [w for w in s.words if w not in STOP and len(w) >= 3]
    if not content:
        return 0.0
    terms = list(q.terms.weights)
    return sum(not any(stem_match(w, t) for t in terms) for w in content) / len(content)


def unit_features(q: Question, units: list[Sentence], is_cited: Callable[[Sentence], bool]) -> np.ndarray:
    """One row of ``UNIT_FEATURES`` per unit, the encoder's ``sim`` columns 0 (``with_vectors`` fills them) and
    the relative columns computed among ``units`` (``relative``)."""
    if not units:
        return np.zeros((0, len(UNIT_FEATURES)))
    top_score = max(s.passage.score for s in units) or 1.0
    passage_cov: dict[int, float] = {}
    rows = []
    for s in units:
        rank = s.passage.rank
        if rank not in passage_cov:
            passage_cov[rank] = q.terms.coverage(set(words(s.passage.text)) | set(words(s.passage.section)))
        cov_sent = q.terms.coverage(s.words)
        novelty = _novelty(q, s)
        fit = q.kind in TYPED and fits(q.kind, s.text)
        negated = any(w in NEGATIONS for w in s.words)
        chunk_sim = float(np.dot(np.asarray(s.vector, dtype=np.float32), q.vector)) if _has(s.vector, q) else 0.0
        rows.append(
            [
                q.language == "de",
                q.language == "sv",
                0.0,
                0.0,
                chunk_sim,
                0.0,
                0.0,
                cov_sent,
                0.0,
                q.terms.coverage(_context(s)),
                q.terms.coverage(set(words(s.passage.title)) | set(words(s.passage.section.rsplit(">", 1)[-1]))),
                passage_cov[rank],
                novelty,
                cov_sent * (1.0 - novelty),
                1.0 / rank,
                rank == 1,
                s.passage.score / top_score,
                s.position == 0,
                min(s.position, 10) / 10,
                s.kind == "paragraph",
                s.kind == "item",
                s.kind == "pair",
                math.log1p(len(s.text)) / math.log(1000),
                q.kind in TYPED,
                fit,
                bool(_NUMBER.search(s.text)),
                q.duration and bool(_DURATION.search(s.text)),
                q.permission and bool(_MODAL.search(s.text)),
                q.negated and negated,
                q.negated != negated,
                bool(q.cited) and is_cited(s),
                q.kind == "yesno",
                _LEGAL.search(s.passage.section) is not None,
                0.0,
                0.0,
                0.0,
                1.0 / s.ranks["dense"] if s.ranks.get("dense") else 0.0,
                1.0 / s.ranks["lexical"] if s.ranks.get("lexical") else 0.0,
                0.0,
                math.log1p(len(units)),
                math.log1p(len(q.terms.weights)),
            ]
        )
    return relative(np.asarray(rows, dtype=np.float64))


_I = {name: n for n, name in enumerate(UNIT_FEATURES)}


def with_vectors(X: np.ndarray, sims: np.ndarray | None) -> np.ndarray:
    """``X`` with the encoder's similarity of each unit to the question (``sims``; None leaves them 0)."""
    X = X.copy()
    if sims is not None and len(sims):
        X[:, _I["sim"]] = sims
    return relative(X)


def relative(X: np.ndarray) -> np.ndarray:
    """The columns that compare a unit with the others being scored beside it (``*_rel``), and those that
    weigh a feature apart for legal text (``legal_*``: a law's or regulation's numbered sections)."""
    if len(X):
        X[:, _I["cov_sent_rel"]] = X[:, _I["cov_sent"]] - X[:, _I["cov_sent"]].max()
        sims = X[:, _I["sim"]]
        X[:, _I["sim_rel"]] = sims - sims.max()
        X[:, _I["sim_z"]] = (sims - sims.mean()) / sims.std() if sims.std() > 1e-9 else 0.0
        X[:, _I["sim_rank"]] = 1.0 / (1.0 + (sims[None, :] > sims[:, None]).sum(axis=1))  # (ties share a rank)
        legal = X[:, _I["legal"]]
        X[:, _I["legal_sim"]] = legal * X[:, _I["sim_z"]]
        X[:, _I["legal_cov"]] = legal * X[:, _I["cov_ctx"]]
        X[:, _I["legal_rank"]] = legal * X[:, _I["inv_rank"]]
        # 1 / the rank of the unit's passage (told by its 1 / rank) by the best similarity among its units
        sims, passage = X[:, _I["sim"]], X[:, _I["inv_rank"]]
        best = {r: sims[passage == r].max() for r in np.unique(passage)}
        order = {r: n for n, r in enumerate(sorted(best, key=lambda r: (-best[r], -r)), start=1)}
        X[:, _I["passage_sim_rank"]] = [1.0 / order[r] for r in passage]
    return X


def unit_text(s: Sentence) -> str:
    """What the encoder reads of a unit: its passage's breadcrumb, then the unit (as chunks are embedded with
    their contextual header; the breadcrumb says what a "(2) Sie …" is about)."""
    return f"{s.passage.section}: {s.text}" if s.passage.section else s.text


def _has(vector, q: Question) -> bool:
    return vector is not None and q.vector is not None and len(vector) == len(q.vector)


def columns(X: np.ndarray, names: tuple[str, ...], of: tuple[str, ...] = UNIT_FEATURES) -> np.ndarray:
    """The columns ``names`` of ``X`` (whose columns are ``of``)."""
    return X[:, [of.index(n) for n in names]]


def question_stats(q: Question, evidence: Evidence) -> np.ndarray:
    """``QUESTION_STATS``: how much of the question's weight the passages hold, how much the index has never
    seen, the heaviest of its words no passage holds (against its heaviest word), and how many words it has."""
    seen: set[str] = set()
    for passage in evidence.passages:
        seen |= set(words(passage.text)) | set(words(passage.section)) | set(words(passage.title))
    missing = [w for t, w in q.terms.weights.items() if t not in seen and not any(stem_match(t, o) for o in seen)]
    top_weight = max(q.terms.weights.values()) if q.terms.weights else 1.0
    dense = [h["dense"] for h in evidence.retrieval if "dense" in h]
    lexical = [h["lexical"] for h in evidence.retrieval if "lexical" in h]
    return np.asarray(
        [
            q.terms.coverage(seen),
            q.oov,
            max(missing, default=0.0) / top_weight,
            math.log1p(len(q.terms.weights)),
            max(dense, default=0.0),
            max(dense, default=0.0) - float(np.mean(dense)) if dense else 0.0,
            max(lexical, default=0.0) / (q.terms.total or 1.0),  # BM25's best against all the question weighs
            evidence.passages[0].score if evidence.passages else 0.0,
        ]
    )


def question_features(language: str, stats: np.ndarray, X: np.ndarray, p: np.ndarray) -> np.ndarray:
    """One row of ``QUESTION_FEATURES``: ``X`` the scored units' features, ``p`` their probabilities."""
    order = np.argsort(-p) if len(p) else np.array([], dtype=int)
    best = order[0] if len(order) else None
    p_best = float(p[best]) if best is not None else 0.0

    def top(name: str) -> float:
        return float(X[:, _I[name]].max()) if len(X) else 0.0

    head = [
        language == "de",
        language == "sv",
        p_best,
        float(p[order[1]]) if len(order) > 1 else 0.0,
        math.log(max(p_best, 1e-6) / max(1 - p_best, 1e-6)),
        float(X[best, _I["sim"]]) if best is not None else 0.0,
        top("sim"),
        top("sim_chunk"),
        top("cov_sent"),
        top("cov_ctx"),
        top("cov_passage"),
        top("typed") > 0 and top("type_fit") == 0,
        top("sim") if language == "de" else 0.0,  # each language's model has its own scale of similarity
        top("sim") if language == "sv" else 0.0,
    ]
    return np.asarray([[*head, *stats]], dtype=np.float64)
