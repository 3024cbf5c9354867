"""Title links: documents that the query or the first passage names by their title join the candidates.

A second hop without a language model. A bridge question ("Who directed the film shot in Leland, North Carolina
in 1986?") first finds the passage about its first entity; that passage names the bridge ("Maximum Overdrive"),
which is the title of another document: that document is the second hop. A comparison names both of its
subjects in the question itself ("Are Nantong and Jingdezhen in the same province?"). So two rankings join the
strategy's by weighted reciprocal rank fusion: the documents whose titles the query contains, and the documents
whose titles the first-ranked passage contains, each entering with its chunk most similar to the query and
ranked by that similarity.

A title counts when it is specific: at most ``MAX_TOKENS`` words once a trailing "(…)" qualifier is dropped
("Big Hero 6 (film)" → "big hero 6"), and a one-word title only where the text capitalises it and it is not
one of the language's common words. Matching is on whole words, longest title first, over the query and one
passage (a few hundred dictionary look-ups); the titles are read once per reader.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ragkit.reader import IndexReader
from ragkit.records import Hit
from ragkit.store.lance_rows import to_hits
from ragkit.text import is_known_word

MAX_TOKENS = 8  # longer titles are not looked for (a question rarely quotes a paper title whole)
QUERY_WEIGHT = 1.0  # fusion weight of the documents the query names (the strategy's ranking counts 1)
PASSAGE_WEIGHT = 1.0  # … of the documents the first passage names
MAX_PASSAGE_LINKS = 4  # a passage naming more documents is a list or a table of contents, not a bridge
_TOKEN = re.compile(r"\w+")
_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")


def title_key(title: str) -> list[str]:
    """The words a title is matched by: lower case, without a trailing "(…)" qualifier."""
    return [t.lower() for t in _TOKEN.findall(_QUALIFIER.sub("", title or ""))]


def title_index(reader: IndexReader) -> TitleIndex:
    """The index's specific titles, read once per reader; common words are English's and the index language's."""

    def build() -> TitleIndex:
        return TitleIndex(reader.titles(), lambda w: is_known_word(w, "en") or is_known_word(w, reader.language))

    return reader.memo("title_index", build)


class TitleIndex:
    """Specific document titles → documents, and which of them a text names."""

    def __init__(self, titles: Iterable[tuple[str, str]], common: Callable[[str], bool] | None = None):
        """``titles``: (document id, title) pairs; ``common(word)``: whether a one-word title is a common word."""
        self.keys: dict[str, list[str]] = {}
        for doc, title in titles:
            words = title_key(title)
            if not words or len(words) > MAX_TOKENS:
                continue
            if len(words) == 1 and (len(words[0]) < 4 or words[0].isdigit() or (common and common(words[0]))):
                continue
            self.keys.setdefault(" ".join(words), []).append(doc)
        self.longest = max((k.count(" ") + 1 for k in self.keys), default=0)

    def named(self, text: str) -> list[str]:
        """The documents whose titles ``text`` contains (whole words, longest first), in order of appearance."""
        if not self.keys:
            return []
        words = _TOKEN.findall(text)
        low = [w.lower() for w in words]
        out: dict[str, None] = {}
        i = 0
        while i < len(low):
            for n in range(min(self.longest, len(low) - i), 0, -1):
                docs = self.keys.get(" ".join(low[i : i + n]))
                if docs and (n > 1 or words[i][:1].isupper()):
                    out.update(dict.fromkeys(docs))
                    i += n
                    break
            else:
                i += 1
        return list(out)


def fuse(hits: list[Hit], extra: dict[str, list[Hit]], weights: dict[str, float], k: int) -> list[Hit]:
    """Weighted RRF of ``extra`` rankings into ``hits`` (which count 1); hits keep the ranks they carry and get
    one per extra ranking that has them."""
    out = {h.chunk_id: h for h in hits}
    score = {h.chunk_id: 1.0 / (k + rank) for rank, h in enumerate(hits, start=1)}
    for name, ranked in extra.items():
        for rank, h in enumerate(ranked, start=1):
            cur = out.setdefault(h.chunk_id, h)
            cur.ranks[name] = rank
            score[h.chunk_id] = score.get(h.chunk_id, 0.0) + weights[name] / (k + rank)
    for cid, h in out.items():
        h.score = score[cid]
    return sorted(out.values(), key=lambda h: (-h.score, h.chunk_id))


def with_links(ctx, hits: list[Hit]) -> list[Hit]:
    """``hits`` with the documents the query and the first hit name by title (see the module's text)."""
    if not hits:
        return hits
    index = title_index(ctx.reader)
    with ctx.timed("links"):
        found: dict[str, list[Hit]] = {}
        named = index.named(ctx.query.text)
        if named:  # the documents the query names, ranked with the strategy's
            found["query_links"] = _best_chunks(ctx, named)
            hits = fuse(hits, {"query_links": found["query_links"]}, {"query_links": QUERY_WEIGHT}, ctx.cfg.rrf_k)
        first = hits[0]
        named = [d for d in index.named(first.text) if d != first.document_id]
        if 0 < len(named) <= MAX_PASSAGE_LINKS:  # the second hop: below the passage that names them
            found["passage_links"] = _best_chunks(ctx, named)
            rest = fuse(
                hits[1:], {"passage_links": found["passage_links"]}, {"passage_links": PASSAGE_WEIGHT}, ctx.cfg.rrf_k
            )
            hits = [first] + [h for h in rest if h.chunk_id != first.chunk_id]
            for position, h in enumerate(hits, start=1):  # scores that keep this order (the reranker reads them)
                h.score = 1.0 / (ctx.cfg.rrf_k + position)
        if found:
            ctx.notes["links"] = {name: [h.title for h in docs] for name, docs in found.items()}
    return hits[: ctx.limit]


def _best_chunks(ctx, docs: list[str]) -> list[Hit]:
    return to_hits(ctx.reader.chunks.best_of_documents(ctx.query_vector(), docs, ctx.where), "dense")
