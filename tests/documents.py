"""Generated PDF and DOCX files whose text, headings, pages and metadata are known (tests and
scripts/bench_ingest.py pdf). PDFs are written with fpdf2, DOCX files with python-docx."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

WORDS = (
    "Arbeitszeit Urlaub Kündigung Vertrag Pause Ruhezeit Überstunden Gehalt Schutz Frist Antrag Betrieb "
    "working time leave notice contract break rest overtime salary protection period request company "
    "semester uppsägning avtal lön skydd"
).split()


@dataclass
class Page:
    heading: str | None  # a heading at the top of the page (level 1 or 2), bigger and bold
    level: int
    paragraphs: list[str]


@dataclass
class Spec:
    title: str
    pages: list[Page]
    author: str = "Northwind Legal"
    outline: bool = True  # write bookmarks for the headings
    metadata: dict = field(default_factory=dict)

    def page_text(self, n: int) -> str:
        p = self.pages[n]
        return "\n".join(([p.heading] if p.heading else []) + p.paragraphs)


def sentences(seed: int, n: int, words: int = 14) -> list[str]:
    """Deterministic pseudo-prose in German, English and Swedish words."""
    out = []
    for i in range(n):
        ws = [WORDS[(seed * 31 + i * 7 + j * 13) % len(WORDS)] for j in range(words)]
        out.append(ws[0].capitalize() + " " + " ".join(ws[1:]) + ".")
    return out


def handbook_spec(pages: int = 6, outline: bool = True) -> Spec:
    """A German/English handbook: a chapter heading every other page, a section heading between."""
    out = []
    for n in range(pages):
        heading, level = (
            (f"Kapitel {n // 2 + 1}: Arbeitszeit und Urlaub", 1)
            if n % 2 == 0
            else (f"Abschnitt {n // 2 + 1}.1 Überstunden", 2)
        )
        out.append(Page(heading, level, [" ".join(sentences(n * 10 + k, 4)) for k in range(3)]))
    return Spec("Mitarbeiterhandbuch Northwind", out, outline=outline)


def write_pdf(spec: Spec, path: Path, password: str | None = None) -> Path:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_title(spec.title)
    pdf.set_author(spec.author)
    pdf.set_auto_page_break(False)
    for page in spec.pages:
        pdf.add_page()
        pdf.set_xy(20, 20)
        if page.heading:
            if spec.outline:
                pdf.start_section(page.heading, level=page.level - 1)
            pdf.set_font("Helvetica", "B", 20 if page.level == 1 else 15)
            pdf.multi_cell(170, 10, page.heading)
            pdf.ln(4)
        pdf.set_font("Helvetica", "", 11)
        for para in page.paragraphs:
            pdf.multi_cell(170, 6, para)
            pdf.ln(3)
    if password:
        pdf.set_encryption(owner_password=password, user_password=password)
    pdf.output(str(path))
    return path


def write_scanned_pdf(path: Path, pages: int = 2) -> Path:
    """Pages with only a drawn shape and no text layer (what a scan without OCR gives)."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    for _ in range(pages):
        pdf.add_page()
        pdf.rect(20, 20, 100, 60, style="F")
    pdf.output(str(path))
    return path


def write_docx(path: Path) -> Path:
    """A DOCX with a title, heading styles, a list, a table and core properties."""
    import datetime

    import docx

    d = docx.Document()
    d.core_properties.title = "Reiserichtlinie"
    d.core_properties.author = "Northwind HR"
    d.core_properties.created = datetime.datetime(2024, 3, 1, 9, 0, 0)
    d.core_properties.modified = datetime.datetime(2025, 1, 15, 12, 0, 0)
    d.add_heading("Reiserichtlinie", level=1)
    d.add_paragraph("Diese Richtlinie regelt Dienstreisen aller Mitarbeitenden.")
    d.add_heading("Genehmigung", level=2)
    d.add_paragraph("Jede Dienstreise wird vorher von der Teamleitung genehmigt.")
    d.add_paragraph("Flüge über 1000 Euro", style="List Bullet")
    d.add_paragraph("Reisen ins Ausland", style="List Bullet")
    d.add_heading("Erstattung", level=2)
    table = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate(
        [("Posten", "Satz"), ("Hotel", "120 Euro pro Nacht"), ("Verpflegung", "28 Euro pro Tag")]
    ):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    d.add_paragraph("Belege werden innerhalb von vier Wochen eingereicht.")
    d.save(str(path))
    return path
