#!/usr/bin/env python
"""The answer scorer (ragkit/answer/answer_model.json): fitted on labelled answers, measured on held-out ones.

    python scripts/fit_answers.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  split     once: every labelled set split into a fit half and a held-out half (tests/data/answer_splits.json,
            seed 43); committed, never redrawn
  features  index each set, run each question (both halves) as ``ragkit query --answer`` would, and keep every
            candidate unit's features and whether it holds the gold answer (WORK/features/SET.npz)
  fit       the scorer from the fit halves only: the unit model without the encoder and the full one, the answerable model and its
            threshold (chosen on the fit halves' questions left out of each cross-validation fold), written to
            ragkit/answer/answer_model.json
  report    the held-out halves, end to end through ``Index.answer_for``: gold answer contained, abstention on
            answerable and absent questions, answer length, the answer step's added milliseconds; before (a
            checkout given with --before, run in its own process) and after, one table

The sets (tests/answer_sets.py): german (8 laws), swedish (59 regulations), hotpotqa, xquad (xquad-de), swequad
(SweQUAD-MC train). Every subcommand also takes ``--json``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import harness
import numpy as np
from harness import arg, print_table

import ragkit
from ragkit.answer import Evidence, idf_of
from ragkit.answer.extractive import cited_by, question_of
from ragkit.answer.features import QUESTION_STATS, UNIT_FEATURES, question_stats, unit_features, unit_text
from ragkit.config import QueryConfig
from ragkit.learn import answers as fitting

cli = harness.CLI(__doc__)
sets = harness.tests_module("answer_sets")
WORK = arg("--work", type=Path, default=Path("/tmp/ragkit-fit-answers"), help="indexes, corpora and features")
SETS = arg("--sets", default=",".join(sets.NAMES))
K = 10  # passages a query returns (ragkit query's default); the answer quotes from the first five


def _names(spec: str) -> list[str]:
    out = []
    for name in (s.strip() for s in spec.split(",") if s.strip()):
        if not sets.available(name):
            print(f"skipping {name}: {sets.NEEDS[name]} is absent", file=sys.stderr)
            continue
        out.append(name)
    return out


@cli.command(
    "split", SETS, arg("--force", action="store_true", help="draw a set's split again (never for a committed one)")
)
def split(args) -> None:
    """Split each set once (seed 43) into fit and held-out halves by its split unit (question, article or
    page) and write the held-out ids to tests/data/answer_splits.json; a set already there is kept as it is."""
    data = json.loads(sets.SPLITS.read_text()) if sets.SPLITS.is_file() else {"seed": sets.SEED, "sets": {}}
    rows = []
    for name in _names(args.sets):
        aset = sets.load(name)
        if name in data["sets"] and not args.force:
            held = data["sets"][name]
        else:
            held = data["sets"][name] = sets.make_split(aset)
        ids = {q["id"] for q in aset.answerable + aset.unanswerable}
        rows.append((name, len(ids), len(ids) - len(set(held) & ids), len(set(held) & ids)))
    if sets.SCIFACT.is_dir():  # the learned ranker's measurements (scripts/bench_learn.py) split it too
        aset = sets.scifact()
        held = data["sets"].setdefault("scifact", sets.make_split(aset))
        rows.append(("scifact", len(aset.answerable), len(aset.answerable) - len(held), len(held)))
    data["note"] = "ids of each set's held-out half (tests/answer_sets.py make_split); every other id is fit"
    sets.SPLITS.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print_table("answer splits", ("set", "questions", "fit", "held out"), rows)


# --- features ------------------------------------------------------------------------------------------------------


def _indexed(name: str, work: Path):
    aset = sets.load(name, work / "corpora")
    ix, _ = harness.indexed(aset.source, work / "indexes" / name)
    return aset, ix


class VectorCache:
    """Unit vectors by text, kept beside the features so that a second run encodes nothing twice."""

    def __init__(self, path: Path, encode):
        self.path, self.encode = path, encode
        self.vectors: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path, allow_pickle=False) as data:
                self.vectors = dict(zip(data["keys"].tolist(), data["vectors"]))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()

    def __call__(self, texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))
        for start in range(0, len(todo), 64):
            batch = todo[start : start + 64]
            for text, vector in zip(batch, np.asarray(self.encode(batch), dtype=np.float32)):
                self.vectors[self.key(text)] = vector
        return np.stack([self.vectors[self.key(t)] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def save(self) -> None:
        keys = list(self.vectors)
        np.savez(self.path, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))


@cli.command("features", SETS, WORK)
def features(args) -> None:
    """For each set: index its documents (reused when unchanged), run every question of both halves (strategy
    auto, k 10, as ``ragkit query --answer``), and write each candidate unit's features (the encoder's
    similarity included) with its label (the unit holds the gold answer) to WORK/features/SET.npz; and, to fit
    the check of written answers, the same for claims: the shortest unit holding a question's gold answer, as if a
    model had written it, against that question's units (``own``), and against the next question's (foreign)."""
    out = args.work / "features"
    out.mkdir(parents=True, exist_ok=True)
    splits_rows = []
    for name in _names(args.sets):
        aset, ix = _indexed(name, args.work)
        reader = ix.reader
        split = sets.split_of(name)
        cache = VectorCache(out / f"{name}.vectors.npz", reader.embedder.encode)
        idf = idf_of(reader.vocabulary, reader.manifest.counts.chunks)
        cfg = QueryConfig(k=K, answer=True, answer_mode="extract")
        X, y, qi, stats, meta = [], [], [], [], []
        asked = []  # per question: its units, the shortest holding its gold answer, its group, held out, language
        t = time.perf_counter()
        questions = [(q, True) for q in aset.answerable] + [(q, False) for q in aset.unanswerable]
        for n, (item, answerable) in enumerate(questions):
            result = ix.query(item["query"], cfg)
            evidence = Evidence.of(result)
            language = sets.LANGUAGE[name]
            vector = result.plan.query_vector
            if vector is None:
                vector = reader.embedder.encode_query(item["query"])
            q = question_of(item["query"], idf, language, vector)
            units = evidence.sentences
            rows = _features(q, units, cache)
            gold = sets.norm(item["answer"]) if answerable else None
            X.append(rows)
            y += [bool(gold) and gold in sets.norm(s.text) for s in units]
            qi += [len(meta)] * len(units)
            stats.append(question_stats(q, evidence))
            ceiling = bool(gold) and any(gold in sets.norm(p.text) for p in evidence.passages)
            meta.append((item["id"], answerable, split.get(item["id"], "fit") == "held_out", language, ceiling))
            holding = sorted((s.text for s in units if gold and gold in sets.norm(s.text)), key=len)
            asked.append((units, holding[0] if holding else None, item.get("group"), meta[-1][2], language))
            if n % 100 == 99:
                print(f"{name}: {n + 1} / {len(questions)} questions, {time.perf_counter() - t:.0f} s", file=sys.stderr)
                cache.save()
        cache.save()
        claims = _claims(asked, idf, reader.embedder, cache)
        ids, ans, held, langs, ceil = zip(*meta)
        np.savez(
            out / f"{name}.npz",
            X=np.concatenate(X) if X else np.zeros((0, len(UNIT_FEATURES))),
            y=np.asarray(y, dtype=bool),
            q=np.asarray(qi, dtype=np.int32),
            stats=np.asarray(stats),
            ids=np.array(ids),
            answerable=np.asarray(ans, dtype=bool),
            held_out=np.asarray(held, dtype=bool),
            language=np.array(langs),
            ceiling=np.asarray(ceil, dtype=bool),
            names=np.array(UNIT_FEATURES),
            stat_names=np.array(QUESTION_STATS),
            encoder=np.array(reader.embedder.name),
            claim_X=np.concatenate(claims["X"]) if claims["X"] else np.zeros((0, len(UNIT_FEATURES))),
            claim_y=np.asarray(claims["y"], dtype=bool),
            claim_q=np.asarray(claims["q"], dtype=np.int32),
            claim_own=np.asarray(claims["own"], dtype=bool),
            claim_held_out=np.asarray(claims["held"], dtype=bool),
        )
        splits_rows.append((name, len(meta), sum(held), len(y), f"{time.perf_counter() - t:.0f}"))
    print_table("features", ("set", "questions", "held out", "units", "seconds"), splits_rows)


def _claims(asked: list, idf, embedder, cache) -> dict[str, list]:
    """Claims to fit the check of written answers on: each fit question's shortest unit holding its gold answer,
    as if a model had written it, checked against that question's units (``own``: supported), and the claim of
    the question half the set away (another article, page or law) against them (foreign: not supported)."""
    out: dict[str, list] = {"X": [], "y": [], "q": [], "own": [], "held": []}
    n = len(asked)
    for i, (units, own, group, held, language) in enumerate(asked):
        if held or not units:
            continue
        other = asked[(i + n // 2) % n]
        foreign = other[1] if not other[3] and other[2] != group else None
        for claim, is_own in ((own, True), (foreign, False)):
            if claim is None:
                continue
            cq = question_of(claim, idf, language, embedder.encode_query(claim))
            said = sets.norm(claim)
            out["X"].append(_features(cq, units, cache))
            out["y"] += [said in sets.norm(s.text) or sets.norm(s.text) in said for s in units]
            out["q"] += [len(out["own"])] * len(units)
            out["own"].append(is_own)
            out["held"].append(False)
    return out


def _features(q, units, cache) -> np.ndarray:
    """The units' features for ``q`` with the encoder's similarity of every unit (the scorer encodes only its
    shortlist; the fit chooses the shortlist from these rows as the scorer would)."""
    rows = unit_features(q, units, cited_by(q))
    if len(units):
        rows[:, UNIT_FEATURES.index("sim")] = cache([unit_text(s) for s in units]) @ q.vector
    return rows


# --- fit -----------------------------------------------------------------------------------------------------------


@cli.command(
    "fit",
    SETS,
    WORK,
    arg("--out", type=Path, default=None, help="where to write the model (default: ragkit/answer/answer_model.json)"),
)
def fit(args) -> None:
    """Fit the scorer on the fit halves (features from ``features``) and write it; prints the cross-validated
    figures of the fit halves (never the held-out halves')."""
    data = [fitting.UnitData.load(args.work / "features" / f"{name}.npz", name) for name in _names(args.sets)]
    model, table = fitting.fit_answer_model(data)
    path = args.out or Path(ragkit.__file__).parent / "answer" / "answer_model.json"
    path.write_text(json.dumps(model.to_json(), ensure_ascii=False) + "\n")
    print_table(f"answer scorer fitted → {path}", table[0], table[1:])


# --- report --------------------------------------------------------------------------------------------------------


@cli.command(
    "report",
    SETS,
    WORK,
    arg("--before", type=Path, default=None, help="a checkout of ragkit before the change (its own venv not needed)"),
    arg("--half", default="held_out", choices=("held_out", "fit")),
)
def report(args) -> None:
    """The held-out halves end to end, through ``Index.query`` and ``Index.answer_for`` (extract) as ``ragkit query
    --answer`` runs them: gold answer contained, its ceiling (in the first five passages), abstention on
    answerable and on absent-topic questions, the median answer's characters, the answer step's milliseconds
    (p50 / p95). With ``--before CHECKOUT`` the same measured by that checkout's code in a child process, and
    both in one table."""
    rows = []
    for name in _names(args.sets):
        if args.before:
            rows.append(_child(args.before, name, args.work, args.half))
        rows.append([name, "after", *measure(name, args.work, args.half)])
    cols = ["set", "code", "contained", "ceiling", "abstain answerable", "abstain absent", "answer chars p50"]
    print_table(f"answers, {args.half} halves", [*cols, "answer ms p50", "answer ms p95"], rows)


def measure(name: str, work: Path, half: str) -> list[str]:
    """One set's row, by the ragkit this process imports (``_child`` runs it for another checkout)."""
    aset = sets.load(name, work / "corpora")
    ix, _ = harness.indexed(aset.source, work / "indexes" / name)
    good, bad = aset.half(half, sets.split_of(name))
    return sets.answer_figures(ix, good, bad, K)


def _child(checkout: Path, name: str, work: Path, half: str) -> list[str]:
    """The same row measured by another checkout's ragkit (its package first on the path; this checkout's
    tests/answer_sets.py and scripts/harness.py, whose open_index and index_into run a checkout before issue 64
    through its ragkit.api), in a child process and its own indexes (WORK/before)."""
    here = Path(__file__).resolve().parent
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]);"
        "import harness; from pathlib import Path; sets = harness.tests_module('answer_sets');"
        "name, work, half = sys.argv[3], Path(sys.argv[4]), sys.argv[5];"
        "aset = sets.load(name, work / 'corpora');"
        "ix, _ = harness.indexed(aset.source, work / 'indexes' / name);"
        "good, bad = aset.half(half, sets.split_of(name));"
        f"print(json.dumps(sets.answer_figures(ix, good, bad, {K})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(checkout.resolve()), str(here), name, str(work / "before"), half],
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise SystemExit(f"the checkout at {checkout} failed on {name}:\n{out.stderr[-3000:]}")
    return [name, "before", *json.loads(out.stdout.strip().splitlines()[-1])]


if __name__ == "__main__":
    cli.main()
