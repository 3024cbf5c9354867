"""PDF and DOCX documents (issue 15): section trees, pages, metadata, and files that cannot be read.

The files are generated (tests/documents.py) so their headings, page text and metadata are known."""

import json

import pytest

from ragkit.answer import Citation
from ragkit.answer.generated import Source
from ragkit.config import QueryConfig
from ragkit.ingest.pdf import page_of, parse_pdf
from ragkit.ingest.raw import RawHeading
from ragkit.ingest.word import parse_docx
from ragkit.records import Passage
from ragkit.render import passage_dict
from tests.documents import Page, Spec, handbook_spec, write_docx, write_pdf, write_scanned_pdf

pytest.importorskip("fpdf")


def headings(raw):
    return [(h.level, h.text) for h in raw.items if isinstance(h, RawHeading)]


@pytest.mark.parametrize("outline", [True, False], ids=["bookmarks", "font sizes"])
def test_pdf_section_tree_and_pages(tmp_path, outline):
    """Bookmarks, or without them the larger fonts, give the same tree; every line knows its page."""
    spec = handbook_spec(4, outline=outline)
    raw = parse_pdf(write_pdf(spec, tmp_path / "h.pdf").read_bytes())
    assert headings(raw) == [(p.level, p.heading) for p in spec.pages]
    assert raw.metadata["title"] == "Mitarbeiterhandbuch Northwind" and raw.metadata["author"] == "Northwind Legal"
    assert raw.metadata["pages"] == 4 and raw.metadata["date"] == raw.metadata["created"]
    assert len(raw.page_starts) == 4
    for item in raw.items:  # each block lies on one page and holds that page's text
        if not isinstance(item, RawHeading):
            page = page_of(raw.page_starts, item.line_start)
            assert page == page_of(raw.page_starts, item.line_end)
            assert " ".join(item.text.split()) in " ".join(spec.page_text(page - 1).split())
    paragraphs = [i for i in raw.items if not isinstance(i, RawHeading)]
    assert len(paragraphs) == sum(len(p.paragraphs) for p in spec.pages)  # split at the paragraph gaps


def test_pdf_without_headings_gets_a_section_per_page(tmp_path):
    spec = Spec(
        "Notiz",
        [Page(None, 1, ["Erste Seite über Urlaub."]), Page(None, 1, ["Zweite Seite über Pausen."])],
        outline=False,
    )
    raw = parse_pdf(write_pdf(spec, tmp_path / "n.pdf").read_bytes())
    assert headings(raw) == [(1, "Page 1"), (1, "Page 2")]


def test_pdf_index_query_and_json_pages(tmp_path, index_with):
    root = tmp_path / "docs"
    root.mkdir()
    write_pdf(handbook_spec(6), root / "handbuch.pdf")
    summary, ix = index_with(root)
    assert summary.new == 1 and summary.skipped == 0
    with ix.reader.duck() as store:
        doc = store.con.execute("SELECT title, metadata FROM documents").fetchone()
        sections = [s for (s,) in store.con.execute("SELECT breadcrumb FROM sections ORDER BY ord").fetchall()]
    assert doc[0] == "Mitarbeiterhandbuch Northwind" and json.loads(doc[1])["author"] == "Northwind Legal"
    assert "Mitarbeiterhandbuch Northwind > Kapitel 2: Arbeitszeit und Urlaub > Abschnitt 2.1 Überstunden" in sections
    r = ix.query("Abschnitt 2.1 Überstunden", QueryConfig(strategy="lexical", k=3))
    top = r.passages[0]
    assert top.section.endswith("Abschnitt 2.1 Überstunden") and top.pages == [4, 4]
    assert passage_dict(top)["pages"] == [4, 4] and top.location == " p. 4"
    assert all(p.pages and p.pages[0] <= p.pages[1] for p in r.passages)


def test_unreadable_and_scanned_pdfs_are_skipped_and_counted(tmp_path, index_with):
    root = tmp_path / "docs"
    root.mkdir()
    write_pdf(handbook_spec(1), root / "geheim.pdf", password="secret")
    (root / "kaputt.pdf").write_bytes(b"%PDF-1.4 this is not a PDF")
    write_scanned_pdf(root / "scan.pdf", pages=2)
    spec = handbook_spec(2)
    spec.pages.insert(1, Page(None, 1, []))  # an empty page between two with text: blank, not a scan
    write_pdf(spec, root / "teils.pdf")
    summary, ix = index_with(root)
    assert summary.new == 1 and summary.skipped == 3 and summary.pages_without_text == 2
    text = "\n".join(summary.warnings)
    assert "geheim.pdf: encrypted PDF" in text and "kaputt.pdf: not a readable PDF" in text
    assert "2 scanned page(s) in 1 file(s) were not read (docs/scan.pdf (page(s) 1-2))" in text
    assert "teils.pdf" not in text
    meta = parse_pdf((root / "teils.pdf").read_bytes()).metadata
    assert meta["blank_pages"] == [2] and "pages_without_text" not in meta
    pages = {p for p in ix.query("Überstunden Arbeitszeit", QueryConfig(k=10)).passages for p in p.pages}
    assert pages <= {1, 3}  # the text of page 2 of teils.pdf is nowhere: it has none


def test_docx_headings_lists_tables_and_metadata(tmp_path, index_with):
    raw = parse_docx(write_docx(tmp_path / "r.docx").read_bytes())
    assert headings(raw) == [(1, "Reiserichtlinie"), (2, "Genehmigung"), (2, "Erstattung")]
    blocks = [i.text for i in raw.items if not isinstance(i, RawHeading)]
    assert "- Flüge über 1000 Euro" in blocks
    assert "Posten | Satz\nHotel | 120 Euro pro Nacht\nVerpflegung | 28 Euro pro Tag" in blocks
    assert raw.metadata == {
        "title": "Reiserichtlinie",
        "author": "Northwind HR",
        "created": "2024-03-01",
        "modified": "2025-01-15",
        "date": "2025-01-15",
    }
    root = tmp_path / "docs"
    root.mkdir()
    write_docx(root / "reise.docx")
    (root / "kaputt.docx").write_bytes(b"PK not a zip")
    (root / "alt.md").write_text("---\ndate: 2024-06-01\n---\n# Alte Regel\n\nHotel bis 90 Euro pro Nacht.\n")
    summary, ix = index_with(root)
    assert (
        summary.new == 2 and summary.skipped == 1 and "kaputt.docx: not a readable DOCX" in "\n".join(summary.warnings)
    )
    hotel = ix.query("Hotel 120 Euro pro Nacht", QueryConfig(strategy="lexical", k=1)).passages[0]
    assert hotel.section == "Reiserichtlinie > Erstattung" and hotel.pages is None and hotel.location.startswith(":8-")
    for filters, found in (
        ({"author": "Northwind HR"}, ["reise.docx"]),
        ({"author": "Someone Else"}, []),
        ({"date_from": "2025-01-01"}, ["reise.docx"]),
        ({"date_to": "2024-12-31"}, ["alt.md"]),
    ):
        r = ix.query("Hotel", QueryConfig(strategy="lexical", k=3, filters=filters))
        assert sorted({p.path.split("/")[-1] for p in r.passages}) == found, filters


def test_citations_name_pdf_pages():
    p = Passage(
        rank=1,
        score=1.0,
        anchor_score=1.0,
        document_id="d",
        path="law.pdf",
        title="t",
        section="§ 3",
        line_start=40,
        line_end=80,
        text="Die Arbeitszeit …",
        chunk_ids=["c"],
        token_count=5,
        pages=[12, 13],
    )
    assert Source(1, p).block().startswith("[1] § 3 (law.pdf p. 12–13)")
    assert Citation(1, 1, "law.pdf", (40, 80), p.pages, p.location).location == " p. 12–13"


def test_cli_shows_pdf_pages_and_counts_pages_without_text(tmp_path):
    """Through the CLI: the index summary counts pages without text, a PDF passage shows its pages."""
    from typer.testing import CliRunner

    from ragkit.cli.app import app
    from ragkit.library import Models
    from tests.fakes import FakeEmbedder

    fake = FakeEmbedder()
    models = Models(embedder=fake)  # handed to the CLI (the context object): it indexes and asks with it
    root = tmp_path / "docs"
    root.mkdir()
    write_pdf(handbook_spec(4), root / "handbuch.pdf")
    write_scanned_pdf(root / "scan.pdf", pages=1)
    idx = str(tmp_path / "idx")
    runner = CliRunner()
    r = runner.invoke(app, ["index", str(root), "--index", idx], obj=models)
    assert r.exit_code == 0 and "skipped 1 · 1 scanned page(s) not read" in " ".join(r.output.split()), r.output
    r = runner.invoke(
        app, ["query", "Abschnitt 2.1 Überstunden", "--index", idx, "-k", "1", "--strategy", "lexical"], obj=models
    )
    assert r.exit_code == 0 and "docs/handbuch.pdf p. 4" in r.output, r.output
