"""Scanned PDFs and pictures are read by OCR (issue 52): a German law scanned to images becomes passages that
carry their page and the engine's confidence, a quote is marked on the scanned page, a re-index reads no page
twice, and without an engine (or with --no-ocr) the run goes on and says once what was not read and how to fix
it. The engine is Tesseract through tesserocr with Debian's German/Swedish/English data (.ci/run installs them)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragkit.config import IndexConfig, QueryConfig
from ragkit.ingest import ocr
from ragkit.ingest.ocr import (
    OcrLine,
    OcrPage,
    Word,
    _paragraph_signs,
    find_words,
)
from ragkit.ingest.ocr_finish import number_paragraphs, split_glued_units, tidy_leaders, tidy_marks
from ragkit.ingest.pdf import parse_pdf
from ragkit.ingest.raw import RawDoc, RawHeading
from ragkit.ingest.structure import legal_structure
from ragkit.records import Block
from tests.documents import GESETZ_PAGES, Spec, write_pdf, write_scan_of

needs_ocr = pytest.mark.skipif(ocr.available() is not None, reason=f"no OCR engine here: {ocr.available()}")


def words(text: str) -> list[Word]:
    return [Word(t, (0.0, 0.0, 1.0, 1.0), 90.0) for t in text.split()]


def test_the_paragraph_sign_the_german_and_swedish_models_lack_is_read_back():
    cases = {
        "3 8 6-15 8S gäller": "3 § 6-15 §§ gäller",
        "enligt 3 $ för vissa": "enligt 3 § för vissa",
        "i 4-6 $$ gäller all": "i 4-6 §§ gäller all",
        "1$ Bestämmelser": "1 § Bestämmelser",
        "8 3 Arbeitszeit der Arbeitnehmer": "§ 3 Arbeitszeit der Arbeitnehmer",
        "nach $ 4 Abs. 2": "nach § 4 Abs. 2",
        "anges i 14 $ 12 a": "anges i 14 § 12 a",
        "wer 8 Stunden arbeitet": "wer 8 Stunden arbeitet",  # a number stays a number
        "von 30 Minuten und 8 Stunden": "von 30 Minuten und 8 Stunden",
    }
    for read, meant in cases.items():
        found = words(read)
        _paragraph_signs(found)
        assert " ".join(w.text for w in found) == meant, read


def test_a_paragraph_number_read_together_with_its_sign_gets_the_sign_back():
    """Swedish paragraphs open "1 §", "2 §"; the models read "18", "28", "108": a line opening with such a word
    and a capital gets "§" back when the number is next in the count (which starts again at "N kap. Title"),
    never a number out of the count, a reference at a line's start or a number in an English page."""
    lines = [
        ("1 kap. Allmänna bestämmelser", "1 kap. Allmänna bestämmelser"),
        ("18 Dessa föreskrifter gäller", "1 § Dessa föreskrifter gäller"),
        ("28 Ord och uttryck", "2 § Ord och uttryck"),
        ("enligt", "enligt"),
        ("19 § tillgängliga för den", "19 § tillgängliga för den"),  # a reference: the count stays at 2
        ("1 kap. 6 § strålskyddslagen", "1 kap. 6 § strålskyddslagen"),  # a reference: no new chapter
        ("58 Verksamhetsutövaren ska", "5 § Verksamhetsutövaren ska"),  # 3 and 4 read otherwise
        ("5a8 Den som", "5 a § Den som"),
        ("118 Arbetsgivaren ska", "118 Arbetsgivaren ska"),  # 11 is too far ahead of 5: a number stays
        ("2 kap. Tillstånd", "2 kap. Tillstånd"),
        ("18 Tillstånd krävs", "1 § Tillstånd krävs"),
        ("38 stycket gäller", "38 stycket gäller"),  # no capital after it
    ]
    page = OcrPage([OcrLine(read, (0, 0, 1, 1), True, words(read)) for read, _ in lines], 90.0, "swe", 595, 842)
    english = OcrPage([OcrLine("18 Main Street", (0, 0, 1, 1), True, words("18 Main Street"))], 90.0, "eng", 1, 1)
    number_paragraphs([page, english])
    assert [ln.text for ln in page.lines] == [meant for _, meant in lines]
    assert [w.text for w in page.lines[1].words] == ["1", "§", "Dessa", "föreskrifter", "gäller"]
    assert page.lines[1].words[0].box[2] == page.lines[1].words[1].box[0]  # the word's box shared
    assert english.lines[0].text == "18 Main Street"


def test_the_count_goes_on_from_a_paragraph_read_as_one_word_and_past_a_dash():
    """SSMFS 2008:47's scan: "8$" comes back as one word "8 §" (the count must go on from it), and the wide space
    after a paragraph's number is read as a dash ("118 — Nären …" for "11 § När en …")."""
    lines = [["8 §", "Dosekvivalentraten", "får"], ["98", "Brandvarnaren", "ska"], ["10 §", "Brandvarnare"],
             ["118", "—", "När", "en"], ["12", "§", "—", "Brandvarnare"], ["138", "–", "för", "den"]]  # fmt: skip
    page = OcrPage([OcrLine(" ".join(ws), (0, 0, 1, 1), True, words(" ".join(ws))) for ws in lines], 90, "swe", 1, 1)
    for line, ws in zip(page.lines, lines, strict=True):
        line.words[: len(line.words) - len(ws) + 1] = [Word(ws[0], (0.0, 0.0, 1.0, 1.0), 90.0)]
    number_paragraphs([page])
    assert [ln.text for ln in page.lines] == [
        "8 § Dosekvivalentraten får", "9 § Brandvarnaren ska", "10 § Brandvarnare", "11 § — När en",
        "12 § — Brandvarnare", "138 – för den",  # no capital after the dash: a number stays
    ]  # fmt: skip


def test_a_sign_read_together_with_its_number_is_parted_on_german_pages():
    """The German scans read "Art 7" as "Art7" (the heading, the breadcrumb, a citation "Art. 7 GG" all want
    the space) and "I. - Die Grundrechte" as "l. - …"; an English page, a word that only begins so, a number alone
    and an "l." not opening a line stay."""
    german = OcrPage(
        [OcrLine("", (0, 0, 1, 1), True, words("Art7 Schulwesen §3a und Artikel7 Art.12 8"))], 90, "deu", 1, 1
    )
    english = OcrPage([OcrLine("", (0, 0, 1, 1), True, words("Art7 gallery"))], 90.0, "eng", 1, 1)
    split_glued_units([german, english])
    assert german.lines[0].text == "Art 7 Schulwesen § 3a und Artikel 7 Art. 12 8"
    assert [w.text for w in german.lines[0].words][:2] == ["Art", "7"]
    assert german.lines[0].words[0].box[2] == german.lines[0].words[1].box[0]  # the word's box shared
    assert english.lines[0].words[0].text == "Art7"
    numerals = OcrPage([OcrLine(t, (0, 0, 1, 1), True, words(t)) for t in ("l. - Die Grundrechte", "Vll. Bund", "lch l.")],
                       90.0, "deu", 1, 1)  # fmt: skip
    split_glued_units([numerals])
    assert [ln.text for ln in numerals.lines] == ["I. - Die Grundrechte", "VII. Bund", "lch l."]


def test_a_table_of_contents_dot_leaders_read_as_letters_become_dots():
    """Dot leaders come out of OCR as dots and runs of few letters (scans of the shared Swedish regulations):
    from the leader to the page number they become one word of dots spanning their boxes; a word's own letters
    before its dots stay; body text, an ellipsis and a long word of the language stay as they are."""
    lines = [
        ("Tillämpningsområde......uussseesessssssnsnenennennnnnnnsnnnn 7", "Tillämpningsområde ", " 7"),
        ("Till vem riktar sig föreskrifterna misssssesessseresssrrersrrrr ere nn rar rr nenn 10",
         "Till vem riktar sig föreskrifterna ", " 10"),
        ("Bilaga 10 Fullständig kvalitetssäkring........seeesssssssssrnassssrrrn 105",
         "Bilaga 10 Fullständig kvalitetssäkring ", " 105"),
        ("2 kap. Produktkrav för arbetskorgar .......ssssssssssssssssss", "2 kap. Produktkrav för arbetskorgar ", ""),
    ]  # fmt: skip
    kept = ["enligt ... ska arbetsgivaren se till 4", "Tillhandahållande på marknaden och ibruktagande 16",
            "Övergångsbestämmelser 16"]  # fmt: skip
    page = OcrPage([OcrLine(read, (0, 0, 1, 1), True, [Word(t, (10.0 * i, 0.0, 10.0 * i + 9, 9.0), 80.0)
                                                        for i, t in enumerate(read.split())])
                    for read in [ln for ln, _, _ in lines] + kept], 80.0, "swe", 595, 842)  # fmt: skip
    tidy_leaders([page])
    for line, (_, before, after) in zip(page.lines, lines):
        head, dots, tail = line.text.partition("....")
        assert head == before and tail.lstrip(".") == after and len(line.text) > len(before + after) + 3, line.text
    assert [ln.text for ln in page.lines[len(lines) :]] == kept
    glued, leader, number = page.lines[2].words[3:]  # "kvalitetssäkring", its dots to the last word, "105"
    assert glued.text == "kvalitetssäkring" and glued.box[2] == leader.box[0] and leader.box[2] == 39.0
    assert number.text == "105" and [w.text for w in page.lines[1].words][-1] == "10"


def test_list_dashes_and_raised_numbers_read_as_other_signs_are_given_back():
    """What Tesseract made of AFS 2023:4/2023:5's list dashes and footnote numbers (their scanned copies): a thin
    dash read "=" or "—-", or twice (the space after it read as a dash as tall as a letter); a raised 1 or 2
    read "!" or "?" where no sentence ends. A real question, an exclamation and a formula's "=" stay."""

    def at(text: str, x: float, height: float = 8.0) -> Word:
        return Word(text, (x, 100.0, x + 5.0 * len(text), 100.0 + height), 90.0)

    def read(*found: Word) -> OcrLine:
        return OcrLine(" ".join(w.text for w in found), (0, 0, 1, 1), False, list(found))

    lines = [
        read(at("=", 60, 0.7), at("fordon", 80), at("som", 115)),
        read(at("-", 60, 0.7), at("—", 72, 14.0), at("Maskinen", 80), at("får", 125)),
        read(at("—-", 60, 0.7), at("-", 72, 14.0), at("motorfordon", 80)),
        read(at("-", 60, 0.7), at("–", 72, 0.7), at("ett", 80)),  # a thin dash after a dash: a sign of its own
        read(at("Arbetsmiljöverket", 60), at("föreskriver!", 150), at("följande", 210)),
        read(at("!", 60), at("Jämför", 70), at("direktiv", 110)),
        read(at("av", 60), at("Re/t", 75), at("och", 100), at("!/3", 120), at("av", 140)),
        read(at("överstiger", 60), at("2,5", 115), at("m/s?", 135), at("ska", 160)),
        read(at("Gäller", 60), at("det?", 95), at("Ja.", 120), at("Achtung!", 140), at("Die", 185)),
        read(at("=", 60, 0.7), at("87", 70), at("V/m", 85)),
    ]
    page = OcrPage(lines, 80.0, "swe", 595, 842)
    tidy_marks([page])
    assert [ln.text for ln in page.lines] == [
        "– fordon som", "- Maskinen får", "– motorfordon", "- – ett", "Arbetsmiljöverket föreskriver1 följande",
        "1 Jämför direktiv", "av Re/t och 1/3 av", "överstiger 2,5 m/s2 ska", "Gäller det? Ja. Achtung! Die",
        "= 87 V/m",
    ]  # fmt: skip


def test_a_table_of_contents_entry_for_an_appendix_does_not_end_the_body():
    """A scan's table of contents without dot leaders names "Bilaga 1 …" at a block's start before the body's
    first paragraph: the paragraphs after it still become sections (they did not on AFS 2023:4's scan)."""
    items = [Block("Innehåll\nTillämpningsområde 7", 1, 2), Block("Bilaga 1 Grundläggande hälso- och\nkrav 17", 3, 4),
             Block("1 § Dessa föreskrifter gäller maskiner.", 5, 5), Block("2 § Föreskrifterna gäller inte fordon.", 6, 6),
             Block("Bilaga 1 Grundläggande hälso- och säkerhetskrav", 7, 7), Block("3 § Enligt bilagan.", 8, 8)]  # fmt: skip
    raw = legal_structure(RawDoc(title="AFS 2023:4", metadata={}, items=items))
    heads = [i.text for i in raw.items if isinstance(i, RawHeading)]
    assert heads == ["1 §", "2 §", "Bilaga 1 Grundläggande hälso- och säkerhetskrav"], heads  # no "3 §" in it


def test_paragraph_headings_set_larger_on_a_scan_stay_siblings():
    """OCR estimates font sizes: "§ 21a Übergangsmandat *)" read larger than "§ 22" became its parent, and every
    later paragraph nested under it (BetrVG's scan); a paragraph heading takes the level of the next one of its
    kind set deeper, from the last back, so none nests under another."""
    levels = [(1, "Gesetz"), (3, "§ 1 Grundsatz"), (2, "§ 2 Begriffe"), (2, "§ 3 Schutz"), (3, "§ 4 Antrag"),
              (2, "Zweiter Abschnitt"), (3, "§ 5 Verfahren")]  # fmt: skip
    items = [RawHeading(level, text, n) for n, (level, text) in enumerate(levels, start=1)]
    raw = legal_structure(RawDoc(title="Gesetz", metadata={}, items=items))
    assert [h.level for h in raw.items] == [1, 3, 3, 3, 3, 2, 3]


def test_a_quote_is_found_among_the_words_ocr_read():
    line = OcrLine("", (0, 0, 0, 0), True, [Word(t, (10.0 * i, 700.0, 10.0 * i + 8, 712.0), 95.0)
                                            for i, t in enumerate("Die Arbeit ist durch Ruhepausen von mindestens 30 Minuten zu unterbrechen.".split())])  # fmt: skip
    page = OcrPage([line], 95.0, "deu", 595.0, 842.0)
    boxes = find_words(page, "Ruhepausen von mindestens 30 Minuten")
    assert [b[0] for b in boxes] == [40.0, 50.0, 60.0, 70.0, 80.0]
    assert find_words(page, "nichts davon steht hier") == []
    page.rotated = 90
    assert find_words(page, "Ruhepausen von mindestens 30 Minuten") == []  # boxes of a turned page: not marked


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scans")
    text = write_pdf(Spec("Arbeitszeitgesetz", GESETZ_PAGES), root / "arbzg-text.pdf")
    folder = root / "docs"
    folder.mkdir()
    write_scan_of(text, folder / "arbzg-scan.pdf", dpi=200, skew=1.0, noise=0.002)
    return folder


@needs_ocr
def test_a_scanned_law_is_read_with_its_pages_confidence_and_paragraph_signs(scans, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "cache"))  # its own OCR cache
    raw = parse_pdf((scans / "arbzg-scan.pdf").read_bytes(), ocr.OcrSettings())
    assert set(raw.metadata["ocr_pages"]) == {"1", "2"} and "pages_without_text" not in raw.metadata
    assert all(60 <= c <= 100 for c in raw.metadata["ocr_pages"].values())
    text = " ".join(" ".join(item.text.split()) for item in raw.items if hasattr(item, "text"))
    for said in ("§ 3 Arbeitszeit der Arbeitnehmer", "acht Stunden nicht", "ununterbrochene Ruhezeit", "§ 5"):
        assert said in text, said
    assert raw.page_starts and len(raw.page_starts) == 2


@needs_ocr
def test_a_scan_is_indexed_searched_marked_and_never_read_twice(scans, tmp_path, index_with, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "cache"))  # its own OCR cache
    summary, ix = index_with(scans)
    assert summary.pages_ocr == 2 and summary.pages_without_text == 0 and summary.new == 1
    result = ix.query("Ruhepausen 30 Minuten", QueryConfig(k=3, strategy="lexical", log=False))
    top = result.passages[0]
    assert top.pages == [2, 2] and top.ocr is not None and 60 <= top.ocr <= 100
    from ragkit.render import result_dict

    shown = result_dict(result)["passages"][0]
    assert shown["ocr"] == {"confidence": top.ocr}
    png = ix.page_image(top.document_id, 2, mark="Ruhepausen von mindestens 30 Minuten")
    from PIL import Image

    marked = Image.open(io.BytesIO(png)).convert("RGB")
    plain = Image.open(io.BytesIO(ix.page_image(top.document_id, 2))).convert("RGB")

    def yellow(im) -> int:
        import numpy as np

        px = np.asarray(im).astype(int)
        return int(((px[..., 0] > 240) & (px[..., 1] > 200) & (px[..., 1] < 235) & (px[..., 2] < 200)).sum())

    assert yellow(marked) > yellow(plain) + 100  # the quote's words painted over on the scanned image

    def no_reading(*args, **kwargs):
        raise AssertionError("a page was read again")

    monkeypatch.setattr(ocr, "recognise", no_reading)
    again, _ = index_with(scans, full=True, name="idx2")  # every file parsed anew, every page from the cache
    assert again.pages_ocr == 2


@needs_ocr
def test_a_folder_of_scans_gets_the_model_of_its_language(scans, tmp_path, monkeypatch):
    """auto picks the embedding model by the documents' language: a folder of German scans is German once read
    (it had no text to sample, and got the English model)."""
    from ragkit.ingest.discover import SourceFile
    from ragkit.ingest.source import corpus_language

    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "cache"))  # its own OCR cache
    path = scans / "arbzg-scan.pdf"
    found = [(SourceFile(path, path.name, path.stat().st_size, 0), path.read_bytes())]
    assert corpus_language(found) == "en"  # unread: no words to tell
    assert corpus_language(found, ocr.OcrSettings()) == "de"


@needs_ocr
def test_a_page_scanned_on_its_side_or_upside_down_is_turned_and_read(scans):
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(scans / "arbzg-scan.pdf"))
    image = pdf[1].render(scale=200 / 72, grayscale=True).to_pil()
    pdf.close()
    for turn in (90, 180):
        page = ocr.read_image(image.rotate(turn, expand=True), ocr.OcrSettings(), "deu", 72 / 200)
        assert page.rotated and "Ruhepausen von mindestens 30 Minuten" in " ".join(ln.text for ln in page.lines)


def test_without_an_engine_or_with_no_ocr_the_run_goes_on_and_says_once_how_to_read_them(
    scans, tmp_path, index_with, monkeypatch
):
    (tmp_path / "notes.md").write_text("# Notizen\n\nDie Ruhepausen stehen in § 4 des Arbeitszeitgesetzes.\n")
    summary, ix = index_with(scans, tmp_path / "notes.md", cfg=IndexConfig(ocr=False))
    assert summary.pages_without_text == 2 and summary.pages_ocr == 0
    said = [w for w in summary.warnings if "scanned page" in w]
    assert len(said) == 1 and "2 scanned page(s) in 1 file(s) were not read" in said[0] and "--no-ocr" in said[0]
    assert ix.stats()["ocr"] == {"pages_read": 0, "pages_unread": 2, "unread_files": ["docs/arbzg-scan.pdf"]}
    if ocr.available() is None:  # the file is read again by the next run: an engine may be here now
        again, _ = index_with(scans, tmp_path / "notes.md")
        assert again.pages_ocr == 2 and again.changed == 1 and again.unchanged == 1

    def missing():
        raise ocr.OcrUnavailable(f"tesserocr is not installed: {ocr.FIX}")

    monkeypatch.setattr(ocr, "engine", missing)
    summary, _ = index_with(scans, tmp_path / "notes.md", name="idx2")
    said = [w for w in summary.warnings if "scanned page" in w]
    assert len(said) == 1 and 'pip install "ragkit[ocr]"' in said[0] and "tesseract-ocr-deu" in said[0]


def test_the_ocr_language_is_checked():
    from ragkit.errors import BadInput

    assert IndexConfig(ocr_lang="deu+eng").ocr_lang == "deu+eng"
    with pytest.raises(BadInput, match="ocr_lang"):
        IndexConfig(ocr_lang="deu; rm -rf /")


@needs_ocr
@pytest.mark.integration
def test_a_picture_given_directly_is_read_and_stats_count_the_pages(scans, tmp_path):
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(scans / "arbzg-scan.pdf"))
    picture = tmp_path / "seite.png"
    pdf[0].render(scale=200 / 72, grayscale=True).to_pil().save(picture, dpi=(200, 200))
    pdf.close()
    idx = str(tmp_path / "idx")
    run = [sys.executable, "-m", "ragkit"]
    done = subprocess.run([*run, "index", str(picture), "--index", idx, "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pages_ocr"] == 1
    asked = subprocess.run([*run, "query", "Wie lange darf ich werktäglich arbeiten?", "--index", idx, "--json",
                            "--strategy", "lexical"], capture_output=True, text=True, check=True)  # fmt: skip
    top = json.loads(asked.stdout)["passages"][0]
    assert top["document"]["path"].endswith("seite.png") and "ocr" in top
    stats = subprocess.run([*run, "stats", "--index", idx, "--json"], capture_output=True, text=True, check=True)
    assert json.loads(stats.stdout)["ocr"] == {"pages_read": 1, "pages_unread": 0, "unread_files": []}
    checked = subprocess.run([*run, "check", "--index", idx], capture_output=True, text=True, check=True)
    assert "scanned pages: 1 read by OCR" in checked.stdout
