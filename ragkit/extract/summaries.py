"""RAPTOR-lite summary tree: section (level 1) and document (level 2) nodes above the chunks.

A node exists only where it says more than one chunk: a section whose
subtree holds two or more chunks, a document with two or more chunks. A
section covering exactly the same chunks as its document or as an enclosing
section is not repeated (the higher node stands for it), so a flat corpus of
one-chunk documents gets no tree at all and a one-section abstract gets one
document node.

Summaries are extractive by default: the centroid sentences of the node's
text (MEAD-style: the node's top TF-IDF words form its centroid, sentences
score by the centroid weight of their distinct words, the best few that do
not repeat each other are kept in document order). With ``--summaries llm``
a GGUF model writes the summary instead (the extractive one is kept if the
model returns nothing).

A node's vector is the normalised mean of its chunks' vectors (the centroid of
what it covers, derived when a query first needs it: ragkit/store/knowledge/vectors.py);
an LLM summary is embedded after the commit, averaged in and stored, since it
may say what no chunk says alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

import numpy as np

from ragkit.records import Chunk, Document, Section, SummaryNode
from ragkit.text import split_sentences

CENTROID_WORDS = 20
SUMMARY_SENTENCES = 3
SUMMARY_CHARS = 600
MIN_SENTENCE_CHARS = 25
REDUNDANT = 0.5  # word overlap (Jaccard) above which a sentence repeats one already chosen
_WORD = re.compile(r"[a-zà-öø-ÿß]{3,}")

LLM_PROMPT = """Summarise the following text in two or three sentences. Keep names, numbers and terms.

Title: {title}
Text:
{text}

Summary:"""


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def centroid_sentences(
    texts: list[str],
    df: dict[str, int],
    n_chunks: int,
    sentences: int = SUMMARY_SENTENCES,
    max_chars: int = SUMMARY_CHARS,
) -> str:
    """The centroid sentences of ``texts`` (in order), under ``max_chars``.

    ``df``: chunk frequency of each word in the index, ``n_chunks`` the number of chunks (IDF).
    """
    units = []
    for text in texts:
        for a, b in split_sentences(text):
            s = " ".join(text[a:b].split())
            if len(s) >= MIN_SENTENCE_CHARS:
                units.append(s)
    if not units:
        return " ".join(" ".join(texts).split())[:max_chars]
    tf = Counter(w for u in units for w in _words(u))
    weight = {w: c * math.log((n_chunks + 1) / (df.get(w, 0) + 1)) for w, c in tf.items()}
    centroid = dict(sorted(weight.items(), key=lambda kv: -kv[1])[:CENTROID_WORDS])
    scored = []
    for i, u in enumerate(units):
        ws = set(_words(u))
        score = sum(centroid.get(w, 0.0) for w in ws) / math.sqrt(len(ws) or 1)
        scored.append((score + (0.1 if i == 0 else 0.0) * max(centroid.values(), default=0.0), i, ws))
    chosen: list[tuple[int, set[str]]] = []
    used = 0
    for _score, i, ws in sorted(scored, key=lambda t: (-t[0], t[1])):
        if len(chosen) == sentences:
            break
        if any(len(ws & o) / (len(ws | o) or 1) > REDUNDANT for _, o in chosen):
            continue
        if chosen and used + len(units[i]) > max_chars:
            continue
        chosen.append((i, ws))
        used += len(units[i]) + 1
    text = " ".join(units[i] for i, _ in sorted(chosen, key=lambda t: t[0]))
    return text if len(text) <= max_chars else text[: max_chars - 1].rsplit(" ", 1)[0] + "…"


def unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


def build_nodes(
    doc: Document,
    sections: list[Section],
    chunks: list[Chunk],
    df: dict[str, int],
    n_chunks: int,
    vectors: dict[str, np.ndarray],
) -> list[SummaryNode]:
    """The tree nodes of one document (extractive summaries, centroid vectors)."""
    chunks = sorted(chunks, key=lambda c: c.index)
    if len(chunks) < 2:
        return []
    by_id = {s.id: s for s in sections}
    children: dict[str | None, list[Section]] = {}
    for s in sections:
        children.setdefault(s.parent_id if s.parent_id in by_id else None, []).append(s)
    own: dict[str, list[Chunk]] = {}
    for c in chunks:
        own.setdefault(c.section_id, []).append(c)
    under: dict[str, list[str]] = {}

    def collect(s: Section) -> list[str]:
        ids = [c.id for c in own.get(s.id, [])]
        for child in children.get(s.id, []):
            ids += collect(child)
        under[s.id] = ids
        return ids

    for root in children.get(None, []):
        collect(root)
    order = {c.id: c.index for c in chunks}
    chunk_by_id = {c.id: c for c in chunks}
    doc_node = _node(
        f"L2:{doc.id}", 2, doc, None, None, doc.title, [c.id for c in chunks], chunk_by_id, df, n_chunks, vectors
    )
    nodes = [doc_node]

    def walk(s: Section, parent: SummaryNode, parent_set: frozenset) -> None:
        ids = sorted(set(under.get(s.id, [])), key=order.__getitem__)
        here = parent
        if len(ids) >= 2 and frozenset(ids) != parent_set:
            here = _node(f"L1:{s.id}", 1, doc, s, parent.id, s.breadcrumb, ids, chunk_by_id, df, n_chunks, vectors)
            nodes.append(here)
        for child in sorted(children.get(s.id, []), key=lambda x: x.order):
            walk(child, here, frozenset(here.chunk_ids))

    for root in sorted(children.get(None, []), key=lambda x: x.order):
        walk(root, doc_node, frozenset(doc_node.chunk_ids))
    return nodes


def _node(node_id, level, doc, section, parent_id, title, ids, chunk_by_id, df, n_chunks, vectors) -> SummaryNode:
    members = [chunk_by_id[i] for i in ids]
    vecs = [unit(np.asarray(vectors[i], dtype=np.float32)) for i in ids if vectors.get(i) is not None]
    return SummaryNode(
        id=node_id,
        level=level,
        document_id=doc.id,
        section_id=section.id if section else None,
        parent_id=parent_id,
        collection=doc.collection,
        title=title,
        text=centroid_sentences([c.text for c in members], df, n_chunks),
        chunk_ids=list(ids),
        method="extractive",
        line_start=min(c.line_start for c in members),
        line_end=max(c.line_end for c in members),
        vector=unit(np.mean(vecs, axis=0)).astype(np.float32) if vecs else None,
    )


def llm_summarize(generator, node: SummaryNode, texts: list[str], max_tokens: int = 120) -> str:
    """An LLM-written summary of the node's text (first ~3,000 characters); empty when the model says nothing."""
    body = "\n".join(texts)[:3000]
    out = generator.complete(LLM_PROMPT.format(title=node.title, text=body), max_tokens=max_tokens, stop=["\n\n"])
    return " ".join(out.split())


def rewrite_with(
    nodes: list[SummaryNode],
    texts_of: Callable[[SummaryNode], list[str]],
    summarize: Callable[[SummaryNode, list[str]], str],
    embed,
) -> None:
    """Replace extractive summaries by written ones; the written text's embedding joins the node's vector."""
    written = []
    for node in nodes:
        text = summarize(node, texts_of(node))
        if text:
            node.text, node.method = text, "llm"
            written.append(node)
    if written and embed is not None:
        vecs = embed([f"{n.title}\n{n.text}" for n in written])
        for node, v in zip(written, vecs):
            base = node.vector if node.vector is not None else np.zeros_like(v)
            node.vector = unit(unit(np.asarray(base, dtype=np.float32)) + unit(np.asarray(v, dtype=np.float32)))
