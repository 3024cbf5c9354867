from ragkit.ingest.chunk import HARD, PARAGRAPH, SENTENCE, chunk_document
from ragkit.ingest.discover import stable_id
from ragkit.ingest.parse import parse_markdown
from ragkit.ingest.sections import build_sections
from ragkit.text import split_sentences
from tests.fakes import FakeEmbedder

count = FakeEmbedder().count_tokens


def chunks_for(md: str, max_tokens: int):
    raw = parse_markdown(md)
    secs, blocks = build_sections(raw, "d", "Doc", stable_id)
    return secs, chunk_document(secs, blocks, max_tokens, count, stable_id)


def test_sentences_respect_abbreviations():
    text = "See e.g. Art. 5 of the law. It applies! Does it? Yes, in § 3 Abs. 2 it does."
    spans = [text[a:b] for a, b in split_sentences(text)]
    assert spans == ["See e.g. Art. 5 of the law.", "It applies!", "Does it?", "Yes, in § 3 Abs. 2 it does."]


def test_chunks_never_cross_sections_and_carry_header():
    md = "# Doc\n\n## A\n\n" + "alpha words here. " * 5 + "\n\n## B\n\nbeta text.\n"
    secs, chunks = chunks_for(md, 200)
    assert len(chunks) == 2
    assert {c.section_id for c in chunks} == {secs[1].id, secs[2].id}
    assert chunks[0].header == "Doc > A" and chunks[1].header == "Doc > B"
    assert chunks[1].embed_text.startswith("Doc > B\n")
    assert [c.index for c in chunks] == [0, 1]


def test_paragraph_cuts_have_full_confidence():
    paras = "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(6))
    _, chunks = chunks_for("# Doc\n\n" + paras + "\n", 90)
    assert len(chunks) > 1
    assert all(c.token_count <= 90 for c in chunks)
    assert all(c.boundary_confidence == PARAGRAPH for c in chunks)
    # paragraphs are kept whole: every chunk starts at a paragraph start
    assert all(c.text.startswith("Paragraph") for c in chunks)


def test_long_paragraph_cut_at_sentences():
    para = " ".join(f"Sentence number {i} has several words in it." for i in range(40))
    _, chunks = chunks_for("# Doc\n\n" + para + "\n", 80)
    assert len(chunks) > 2
    assert all(c.token_count <= 80 for c in chunks)
    assert all(c.text.rstrip().endswith(".") for c in chunks)
    assert chunks[0].boundary_confidence == SENTENCE
    assert chunks[-1].boundary_confidence == SENTENCE  # its start was a sentence cut


def test_overlong_sentence_hard_split():
    para = "word " * 400
    _, chunks = chunks_for("# Doc\n\n" + para.strip() + "\n", 60)
    assert len(chunks) >= 7
    assert all(c.token_count <= 60 for c in chunks)
    assert min(c.boundary_confidence for c in chunks) == HARD


def test_line_spans_of_chunks():
    md = "# Doc\n\nfirst para\nline two\n\nsecond para\n"
    _, chunks = chunks_for(md, 200)
    assert (chunks[0].line_start, chunks[0].line_end) == (3, 6)
