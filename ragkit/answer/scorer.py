"""The answer scorer: which unit of the top passages (a sentence, a numbered paragraph, a list item) answers the
question, and whether any does. Learned, not set by hand: ``scripts/fit_answers.py`` fits it on labelled
questions with short gold answers (the fit halves of the shared sets and ragkit's own; ``tests/answer_sets.py``)
and writes ``answer_model.json`` beside this file, which ragkit reads at run time (no pickle).

Each candidate unit is described by ``unit_features``: how close the index's encoder puts it to the question
(the question with the model's query prompt, the unit with its passage prompt), how much of the question's
weighted words it and its passage hold and how much it says beyond them, what the question asks for (a
quantity, a duration, a time, a person or place, a permission, a negation) and whether the unit holds it, its
passage's rank and score, and its place and kind in the passage. A logistic model turns them into the
probability that the unit holds the answer. Encoding costs time, so a first model without the encoder picks the
``shortlist`` units the full model then scores (``rank``).

Whether to answer at all is a second logistic model over the question's ``question_features`` (the best units'
probabilities and similarities, how much of the question the passages hold, how much of it the index has never
seen): the probability that the documents answer the question. The answer abstains below ``threshold``, which
the fitting script chose on questions the weights were not fitted on.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragkit.answer.evidence import NEGATIONS, STOP, Evidence, Sentence, Terms, fits, question_type, stem_match, words
from ragkit.fitted import Linear, ModelFileError, Trees, from_json

MODEL_FILE = Path(__file__).with_name("answer_model.json")
FORMAT = 2  # 2: the models without the encoder named so (format 1 called them "quick" and "plain")

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


@dataclass
class AnswerModel:
    """The fitted scorer: ``unit_no_encoder`` shortlists, ``unit`` scores the shortlist, ``answerable``
    decides whether to answer (abstain under ``threshold``)."""

    unit_no_encoder: Linear | Trees  # ``unit`` without the encoder: shortlists, and scores where it is unknown
    unit: Linear | Trees
    answerable: Linear | Trees
    threshold: dict[str, float]  # per language ("*": any other)
    answerable_no_encoder: (
        Linear | Trees
    )  # ``answerable`` without the encoder (``QUESTION_FEATURES_NO_ENCODER``, the no-encoder unit model's probabilities)
    threshold_no_encoder: dict[str, float]
    encoders: tuple[str, ...]  # the encoders (embedder names) it was fitted with
    shortlist: int
    support: float  # the least probability at which a unit supports a written sentence (answer/check.py)
    length: float  # what a unit's length costs against its probability when choosing the quote (``utility``)
    meta: dict
    feature_code: str = ""  # ``feature_code()`` when it was fitted: features computed otherwise are not its own

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> AnswerModel:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ModelFileError(
                f"cannot read the answer model {path}: {exc}", hint="reinstall ragkit, or fit it anew"
            ) from exc
        if data.get("format") != FORMAT:
            raise ModelFileError(f"{path} has format {data.get('format')}, this ragkit reads {FORMAT}")
        parts = {k: from_json(data[k]) for k in ("unit_no_encoder", "unit", "answerable", "answerable_no_encoder")}
        return cls(
            **parts,
            threshold={k: float(v) for k, v in data["threshold"].items()},
            threshold_no_encoder={k: float(v) for k, v in data["threshold_no_encoder"].items()},
            encoders=tuple(data["encoders"]),
            shortlist=int(data["shortlist"]),
            support=float(data["support"]),
            length=float(data.get("length", 0.0)),
            meta=data.get("meta", {}),
            feature_code=str(data.get("feature_code", "")),
        )

    def abstains(self, scored: Scored, language: str) -> bool:
        return scored.answerable < self._threshold(scored.encoded, language)

    def _threshold(self, encoded: bool, language: str) -> float:
        thresholds = self.threshold if encoded else self.threshold_no_encoder
        return thresholds.get(language, thresholds.get("*", 0.0))

    def threshold_for(self, language: str, encoder: str | None) -> float:
        """The confidence under which an answer in ``language`` abstains, over an index with ``encoder``."""
        return self._threshold(encoder in self.encoders, language)

    def with_thresholds(self, learned: dict[str, float]) -> AnswerModel:
        """The model with an index's learned thresholds per language (``ragkit learn``: ragkit/learn/abstain.py)
        in place of its own; an index reads units with one encoder, so they stand for either kind."""
        if not learned:
            return self
        return replace(
            self, threshold={**self.threshold, **learned}, threshold_no_encoder={**self.threshold_no_encoder, **learned}
        )

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "unit_no_encoder": self.unit_no_encoder.to_json(),
            "unit": self.unit.to_json(),
            "answerable": self.answerable.to_json(),
            "threshold": {k: round(v, 4) for k, v in self.threshold.items()},
            "answerable_no_encoder": self.answerable_no_encoder.to_json(),
            "threshold_no_encoder": {k: round(v, 4) for k, v in self.threshold_no_encoder.items()},
            "encoders": list(self.encoders),
            "shortlist": self.shortlist,
            "support": round(self.support, 4),
            "length": round(self.length, 4),
            "meta": self.meta,
            "feature_code": self.feature_code,
        }


@lru_cache(maxsize=1)
def default_model() -> AnswerModel:
    return AnswerModel.load()


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


@dataclass
class Scored:
    """The scorer's verdict on one result: the shortlisted ``units`` (best first), their features and
    probabilities of holding the answer, and the probability that the passages answer the question."""

    units: list[Sentence]
    X: np.ndarray
    p: np.ndarray
    answerable: float
    question: np.ndarray
    encoded: bool  # the encoder's similarities were read (else words, structure and rank alone)


def rank_units(
    model: AnswerModel,
    q: Question,
    units: list[Sentence],
    vectors: Callable[[list[Sentence]], np.ndarray | None] | None,
    is_cited: Callable[[Sentence], bool],
) -> tuple[list[Sentence], np.ndarray, np.ndarray]:
    """``units`` scored for ``q``, best first: ``model.unit_no_encoder`` over all of them, then the encoder's vectors
    (``vectors``: the units' own, read as ``unit_text``) and ``model.unit`` over the ``model.shortlist`` best.
    Without an encoder (``vectors`` None, or vectors of another width than the question's) the no-encoder unit model's
    probabilities stand. Returns the shortlist, its features and probabilities."""
    X0 = unit_features(q, units, is_cited)
    keep = shortlist(model, X0)
    short = [units[i] for i in keep]
    found = vectors(short) if vectors is not None and q.vector is not None and short else None
    if found is not None and found.ndim == 2 and found.shape[1] == len(q.vector):
        X = with_vectors(relative(X0[keep]), found @ q.vector)
        p = model.unit.predict(columns(X, model.unit.names))
    else:
        X = relative(X0[keep])
        X[:, _I["sim_chunk"]] = 0.0
        p = model.unit_no_encoder.predict(columns(X, model.unit_no_encoder.names)) if len(X) else np.zeros(0)
    order = np.argsort(-utility(model, X, p), kind="stable")
    return [short[i] for i in order], X[order], p[order]


def utility(model: AnswerModel, X: np.ndarray, p: np.ndarray) -> np.ndarray:
    """What choosing each unit as the quote is worth: its probability of holding the answer less
    ``model.length`` times its (log) length, so that of two units about as likely the shorter is quoted."""
    return p - model.length * X[:, _I["log_len"]] if len(X) else p


def encoded(encode: Callable[[list[str]], np.ndarray] | None) -> Callable[[list[Sentence]], np.ndarray] | None:
    """Units' vectors from a documents' encoder (``Embedder.encode``), each unit read once however often asked
    (a written answer's sentences are checked against the same units)."""
    if encode is None:
        return None
    seen: dict[int, np.ndarray] = {}

    def vectors(units: list[Sentence]) -> np.ndarray:
        todo = [s for s in units if id(s) not in seen]
        if todo:
            for s, v in zip(todo, np.asarray(encode([unit_text(s) for s in todo]), dtype=np.float32)):
                seen[id(s)] = v
        return np.stack([seen[id(s)] for s in units])

    return vectors


def score(
    model: AnswerModel,
    q: Question,
    evidence: Evidence,
    encode: Callable[[list[str]], np.ndarray] | None,
    is_cited: Callable[[Sentence], bool],
    encoder: str | None = None,
) -> Scored:
    """Score ``evidence``'s units for ``q`` (``rank_units``), then ``model.answerable`` over the question.
    ``encoder``: the name of the index's encoder; one the scorer was not fitted with (its similarities on
    another scale) is not read: words, structure and rank decide (``model.unit_no_encoder`` and ``model.answerable_no_encoder``)."""
    known = encode is not None and encoder in model.encoders
    short, X, p = rank_units(model, q, evidence.sentences, encoded(encode) if known else None, is_cited)
    Z = question_features(q.language, question_stats(q, evidence), X, p)
    if known:
        answerable = model.answerable.predict(columns(Z, model.answerable.names, QUESTION_FEATURES))
    else:
        answerable = model.answerable_no_encoder.predict(
            columns(Z, model.answerable_no_encoder.names, QUESTION_FEATURES)
        )
    return Scored(short, X, p, float(answerable[0]), Z[0], known)


def shortlist(model: AnswerModel, X0: np.ndarray) -> np.ndarray:
    """The indices of the ``model.shortlist`` units the no-encoder unit model scores best (in that order)."""
    if not len(X0):
        return np.zeros(0, dtype=int)
    p0 = model.unit_no_encoder.predict(columns(X0, model.unit_no_encoder.names))
    return np.argsort(-p0, kind="stable")[: model.shortlist]
