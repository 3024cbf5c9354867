"""Title links (ragkit/retrieve/links.py): the documents a query or the first passage names by title."""

from __future__ import annotations

import json

import ragkit
from ragkit.config import QueryConfig
from ragkit.records import Hit
from ragkit.retrieve.links import TitleIndex, fuse, title_key
from tests.fakes import FakeEmbedder


def test_title_keys_drop_a_trailing_qualifier():
    assert title_key("Big Hero 6 (film)") == ["big", "hero", "6"]
    assert title_key("Korn's Groovy Pirate Ghost Mystery") == ["korn", "s", "groovy", "pirate", "ghost", "mystery"]
    assert title_key("(untitled)") == []


def test_named_titles_longest_first_whole_words_and_specific():
    index = TitleIndex(
        [
            ("d1", "Never Cry Wolf (film)"),
            ("d2", "Big Hero 6 (film)"),
            ("d3", "Big Hero 6 (TV series)"),
            ("d4", "Wolf"),
            ("d5", "Nantong"),
            ("d6", "Drop"),
            ("d7", "Cry"),
            ("d8", "A Title Far Too Long To Be Looked For In Text"),
        ],
        common=lambda w: w in {"drop", "wolf"},
    )
    assert index.named("Both Never Cry Wolf and Big Hero 6 films were released by what label?") == ["d1", "d2", "d3"]
    assert index.named("Is Nantong in Jiangsu?") == ["d5"]
    assert index.named("the nantong port") == []  # a one-word title only where the text capitalises it
    assert index.named("What does Drop do? A Wolf howls.") == []  # common words are not titles
    assert index.named("Nantongese cuisine") == []  # whole words only
    assert index.named("A Title Far Too Long To Be Looked For In Text") == []


def hit(cid: str, doc: str) -> Hit:
    return Hit(
        chunk_id=cid,
        document_id=doc,
        section_id="s",
        chunk_index=0,
        text="",
        header="",
        path=doc,
        title=doc,
        doc_type="note",
        collection="",
        line_start=1,
        line_end=1,
        token_count=1,
    )


def test_fuse_keeps_ranks_and_adds_the_extra_rankings():
    base = [hit("a", "A"), hit("b", "B"), hit("c", "C")]
    base[0].ranks = {"dense": 1}
    fused = fuse(base, {"links": [hit("c", "C"), hit("d", "D")]}, {"links": 1.0}, k=60)
    assert [h.chunk_id for h in fused] == ["c", "a", "b", "d"]
    assert fused[1].ranks == {"dense": 1} and fused[0].ranks == {"links": 1}


def test_the_first_passage_brings_the_document_it_names_right_after_it(tmp_path):
    docs = tmp_path / "wiki"
    docs.mkdir()
    records = [
        {
            "_id": "kiss",
            "title": "Kiss and Tell (1945 film)",
            "text": "Kiss and Tell is a 1945 comedy film in which Shirley Temple plays the teenage Corliss Archer.",
        },
        {
            "_id": "temple",
            "title": "Shirley Temple",
            "text": "Shirley Temple Black was an actress who later served as a diplomat and ambassador.",
        },
        {
            "_id": "toc",
            "title": "Index of films",
            "text": "Films: Kiss and Tell, Shirley Temple, Big Hero 6, Never Cry Wolf, Maximum Overdrive.",
        },
        *(
            {"_id": t.lower().replace(" ", "-"), "title": t, "text": f"{t} is a film."}
            for t in ("Big Hero 6", "Never Cry Wolf", "Maximum Overdrive")
        ),
        *(
            {
                "_id": f"x{i}",
                "title": f"Filler {i}",
                "text": f"Corliss Archer filler paragraph number {i} about comedy radio plays.",
            }
            for i in range(6)
        ),
    ]
    (docs / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    fake = FakeEmbedder()
    ragkit.index([docs], tmp_path / "idx", embedder_factory=lambda cfg: fake)
    ix = ragkit.open(tmp_path / "idx", embedder=fake)
    q = "Which position did the actress who played Corliss Archer in Kiss and Tell hold?"
    cfg = QueryConfig(strategy="lexical", k=5, syntax=False)
    hits, plan, _ = ix.retrieve(q, cfg)
    ids = [h.external_id for h in hits]
    assert ids[:2] == ["kiss", "temple"], ids  # the query names "Kiss and Tell", whose passage names "Shirley Temple"
    assert plan.notes["links"]["passage_links"] == ["Shirley Temple"]
    without, _, _ = ix.retrieve(q, QueryConfig(strategy="lexical", k=5, syntax=False, links=False))
    assert "temple" not in [h.external_id for h in without][:2]
    # a passage naming more than a few titles (a list, a table of contents) links nothing
    toc, plan, _ = ix.retrieve("Index of films", cfg)
    assert toc[0].external_id == "toc" and "passage_links" not in plan.notes.get("links", {})
