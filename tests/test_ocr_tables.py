"""Tables on a scanned page read cell by cell (ragkit/ingest/ocr_tables.py). The pages are laid out as Tesseract
read real ones: the words' places modelled on those it gave for a page of KIFS 2017:7's appendix and of SSMFS
2018:3's (the shared Swedish regulations' scanned copies, ``scripts/bench_ocr.py``); what it makes of them on
all 1,140 pages is measured by ``scripts/bench_ocr.py cer``."""

from __future__ import annotations

from ragkit.ingest.ocr import OcrLine, OcrPage, Word
from ragkit.ingest.ocr_finish import finish


def line(top: float, *cells: tuple[float, str], height: float = 10.0, pitch: float = 5.0) -> OcrLine:
    """A line read at ``top`` (points, y upwards): each cell (its left x, its words) laid out word by word."""
    words = []
    for left, text in cells:
        x = left
        for t in text.split():
            words.append(Word(t, (x, top - height, x + pitch * len(t), top), 90.0))
            x += pitch * len(t) + 4.0
    box = (words[0].box[0], top - height, words[-1].box[2], top)
    return OcrLine(" ".join(w.text for w in words), box, False, words, 10.0)


def page(*lines: OcrLine) -> OcrPage:
    return OcrPage(list(lines), 90.0, "swe", 420.0, 595.0)


def text(p: OcrPage) -> list[str]:
    return [ln.text for ln in p.lines]


def test_a_ruled_tables_cells_of_several_lines_are_read_one_after_another():
    # rows parted by the space around their rules, the column rule read as "|" on most lines; its lines from the
    # top down whatever order Tesseract gave its blocks in
    p = page(
        line(540, (23, "KIFS 2017:7")),
        line(500, (130, "Undantag"), (265, "Tillämpning")),
        line(470, (95, "39"), (130, "Kadmium i nano-"), (258, "|"), (268, "Undantaget upphör att")),
        line(458, (130, "kristallina kvantprickar"), (258, "|"), (268, "gälla för alla kategorier")),
        line(446, (130, "av halvledarmaterial"), (258, "|"), (268, "den 21 november 2025.")),
        line(434, (130, "för displayer.")),
        line(400, (95, "40"), (130, "Kadmium i foto-"), (258, "|"), (268, "Undantaget löper ut")),
        line(388, (130, "resistorer för koppl."), (258, "|"), (268, "den 31 december 2013.")),
        line(350, (23, "Denna bilaga gäller från och med den 1 januari 2026 för alla produkter.")),
        line(434, (268, "(KIFS 2024:2)")),  # a cell's last line Tesseract read as a block of its own, after the rest
    )
    finish([p])
    assert text(p) == [
        "KIFS 2017:7",
        "Undantag", "Tillämpning",
        "39 Kadmium i nano-", "kristallina kvantprickar", "av halvledarmaterial", "för displayer.",
        "Undantaget upphör att", "gälla för alla kategorier", "den 21 november 2025.", "(KIFS 2024:2)",
        "40 Kadmium i foto-", "resistorer för koppl.",
        "Undantaget löper ut", "den 31 december 2013.",
        "Denna bilaga gäller från och med den 1 januari 2026 för alla produkter.",
    ]  # fmt: skip
    assert all("|" not in ln.text for ln in p.lines)
    assert [ln.paragraph for ln in p.lines[3:11]] == [True, False, False, False, True, False, False, False]


def test_rows_not_set_apart_stay_as_read():
    # a ruled table whose rows sit as close as their lines: which lines make a row is not seen
    rows = [line(500 - 12 * n, (116, f"Undersökning{n}"), (184, "|"), (191, "Tc-99m"), (265, "Läkemedel"))
            for n in range(6)]  # fmt: skip
    p = page(*rows)
    finish([p])
    assert text(p) == [f"Undersökning{n} Tc-99m Läkemedel" for n in range(6)]


def test_two_tables_side_by_side_are_read_one_after_the_other():
    left = [
        ("Eu-154", "0,1"),
        ("Eu-155", "1"),
        ("Gd-153", "10"),
        ("Gd-159", "100"),
        ("Tb-160", "1"),
        ("Dy-165", "1 000"),
    ]
    right = [("Bi-206", "1"), ("Bi-207", "0,1"), ("Bi-210", "10"), ("Po-203", "10"), ("Po-205", "10"), ("Po-207", "10")]
    # the left table's numbers, set flush right, reach into the space between the two headers (as on the page)
    rows = [line(580 - 12 * n, (105, a), (238 - 5 * len(b), b), (272, c), (395, d))
            for n, ((a, b), (c, d)) in enumerate(zip(left, right))]  # fmt: skip
    p = page(
        line(620, (29, "SSMFS 2018:3")),
        line(602, (104, "Radionuklid"), (176, "Niva"), (271, "Radionuklid"), (343, "Niva")),
        *rows,
        line(480, (29, "Nivåerna gäller för material som friklassas från verksamheten med joniserande strålning.")),
    )  # fmt: skip
    finish([p])
    assert text(p) == [
        "SSMFS 2018:3",
        "Radionuklid Niva",
        *(f"{a} {b}" for a, b in left),
        "Radionuklid Niva",
        *(f"{c} {d}" for c, d in right),
        "Nivåerna gäller för material som friklassas från verksamheten med joniserande strålning.",
    ]


def test_one_unit_over_two_columns_or_running_text_is_no_pair_of_tables():
    numbers = [line(580 - 12 * n, (105, f"Cs-13{n}"), (230, "1 000"), (330, "100 000")) for n in range(7)]
    units = page(line(600, (230, "(kBq/m2)"), (330, "(kBq/m2)")), *numbers)
    said = "Strålskyddet gäller för alla som arbetar med strålkällor i verksamheten och för allmänheten."
    prose = page(line(600, (60, "så vidare så vidare")), *(line(588 - 12 * n, (60, said)) for n in range(8)))
    before = text(units), text(prose)
    finish([units, prose])
    assert (text(units), text(prose)) == before


def test_a_bar_outside_a_tables_rule_stays_a_word():
    # Tesseract reads the "I" of "BGBl. I" as "|": in running text it is no rule
    cited = [("Neugefasst durch Bek. v. 25.9.2001 BGBl.", "| S. 2518;"), ("geändert durch G v. 23.7.2001 BGBl.", "| S. 1852"),
             ("Verordnung vom 16. Januar 1972 BGBl.", "| S. 2029")]  # fmt: skip
    p = page(
        *(line(600 - 12 * n, (60, a), (60 + 5 * len(a) + 4 * a.count(" ") + 9, b)) for n, (a, b) in enumerate(cited))
    )
    before = text(p)
    finish([p])
    assert text(p) == before and sum(t.count("| S.") for t in before) == 3


def test_a_lists_hanging_numbers_read_as_a_block_of_their_own_go_back_to_their_items():
    # AFS 2023:4's appendix 5: the numbers "1." to "17." came as one block, then the items
    numbers = [line(560 - 24 * n, (142, f"{n + 1}.")) for n in range(3)]
    items = [
        line(560, (160, "Skydd för avtagbara mekaniska")),
        line(548, (160, "kraftöverföringsanordningar.")),
        line(536, (160, "Skyddsanordningar för detektering av personer.")),
        line(512, (160, "Motordrivna förreglande öppningsbara skydd.")),
    ]
    p = page(line(600, (124, "Bilaga 5")), *numbers, *items, line(480, (124, "b)")))
    finish([p])
    assert text(p) == [
        "Bilaga 5", "1. Skydd för avtagbara mekaniska", "kraftöverföringsanordningar.",
        "2. Skyddsanordningar för detektering av personer.", "3. Motordrivna förreglande öppningsbara skydd.", "b)",
    ]  # fmt: skip
