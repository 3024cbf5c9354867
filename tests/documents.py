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
    """Pages with only an image and no text layer (what a scan without OCR gives)."""
    from fpdf import FPDF
    from PIL import Image  # fpdf2's own dependency

    pdf = FPDF(format="A4")
    for n in range(pages):
        pdf.add_page()
        pdf.image(Image.new("L", (60, 80), 200 - n), x=10, y=10, w=190)
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


REGULATION = "AFS 2099:1"
REGULATION_PAGES = [  # a Swedish agency regulation as published: page texts (lines), headings in bold
    [
        "Arbetsmiljöverkets föreskrifter om läskfabriker",
        "",
        "Tillämpningsområde",
        "1 § Dessa föreskrifter gäller i läskfabriker där arbetstagare tappar drycker på flaskor.",
        "2 § Föreskrifterna gäller inte för bryggerier som enbart tillverkar öl.",
    ],
    [],  # the empty back of the title page
    [
        "1 kap. Allmänna bestämmelser",
        "",
        "1 § Arbetsgivaren ska se till att verk-",
        "samheten planeras så att",
        "arbetstagarna inte skadas. Hälso-",
        "och sjukvården ska vara ordnad. Enligt 6 §",
        "ska detta dokumenteras.",
        "Allmänna råd",
        "Arbetsgivaren bör anlita en sakkunnig CE-",
        "märkning av tappmaskinen.",
        "2 § Tappmaskiner ska ha ett nödstopp som är lätt att nå.",
    ],
    [
        "2 kap. Buller och ventilation",
        "",
        "1 § Bullret vid tappningslinjen får inte överstiga 80 dB.",
        "2 a § Luften i tapphallen ska bytas minst fem gånger per timme.",
        "Övergångsbestämmelser",
        "1. Denna författning träder i kraft den 1 juli 2099.",
    ],
    ["Bilaga 1 Mätning av buller", "", "Bullret mäts vid operatörens arbetsplats under en hel arbetsdag."],
]


def write_regulation_pdf(path: Path, header: str = REGULATION, title: str | None = None) -> Path:
    """A regulation PDF with a running header ("AFS 2099:1" over every page with text) and page numbers in the
    footer, chapters, numbered paragraphs, "Allmänna råd", a line-end hyphen of one word, one before "och" and
    one after a capital, an empty back page, transitional provisions and an appendix, and no bookmarks;
    ``title``: the PDF's own title (none by default)."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    if title:
        pdf.set_title(title)
    pdf.set_auto_page_break(False)
    for n, lines in enumerate(REGULATION_PAGES, start=1):
        pdf.add_page()
        if not lines:
            continue
        pdf.set_font("Helvetica", "", 9)
        pdf.set_xy(20, 10)
        pdf.cell(170, 5, header)
        pdf.set_xy(20, 285)
        pdf.cell(170, 5, str(n))
        pdf.set_xy(20, 30)
        for line in lines:
            heading = line and (
                line == lines[0] or line in ("Tillämpningsområde", "Allmänna råd", "Övergångsbestämmelser")
            )
            pdf.set_font("Helvetica", "B" if heading else "", 14 if line == lines[0] else 11)
            pdf.set_x(20)
            pdf.cell(170, 7 if line else 4, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def write_scan_of(source: Path, path: Path, dpi: int = 200, skew: float = 0.0, noise: float = 0.0, seed: int = 0
                  ) -> Path:  # fmt: skip
    """A scanned copy of the PDF at ``source``: every page an image at ``dpi`` in grey and nothing else (no
    text layer), turned by ``skew`` degrees and with ``noise`` (the share of pixels flipped to black or
    white) as a sheet through a worn scanner gives."""
    import numpy as np
    import pypdfium2 as pdfium
    from PIL import Image

    rng = np.random.default_rng(seed)
    pdf = pdfium.PdfDocument(str(source))
    images = []
    try:
        for page in pdf:
            image = page.render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
            if skew:
                image = image.rotate(skew, resample=Image.BICUBIC, expand=False, fillcolor=255)
            if noise:
                pixels = np.asarray(image).copy()
                flip = rng.random(pixels.shape) < noise
                pixels[flip] = np.where(rng.random(int(flip.sum())) < 0.5, 0, 255)
                image = Image.fromarray(pixels)
            images.append(image)
    finally:
        pdf.close()
    images[0].save(path, "PDF", save_all=True, append_images=images[1:], resolution=dpi)
    return path


GESETZ_PAGES = [
    Page("Arbeitszeitgesetz", 1, [
        "§ 1 Zweck des Gesetzes. Zweck des Gesetzes ist es, die Sicherheit und den Gesundheitsschutz der "
        "Arbeitnehmer bei der Gestaltung der Arbeitszeit zu gewährleisten.",
        "§ 3 Arbeitszeit der Arbeitnehmer. Die werktägliche Arbeitszeit der Arbeitnehmer darf acht Stunden nicht "
        "überschreiten. Sie kann auf bis zu zehn Stunden nur verlängert werden, wenn innerhalb von sechs "
        "Kalendermonaten im Durchschnitt acht Stunden werktäglich nicht überschritten werden.",
    ]),
    Page("Ruhepausen und Ruhezeit", 2, [
        "§ 4 Ruhepausen. Die Arbeit ist durch im Voraus feststehende Ruhepausen von mindestens 30 Minuten bei "
        "einer Arbeitszeit von mehr als sechs bis zu neun Stunden und 45 Minuten bei einer Arbeitszeit von mehr "
        "als neun Stunden insgesamt zu unterbrechen.",
        "§ 5 Ruhezeit. Die Arbeitnehmer müssen nach Beendigung der täglichen Arbeitszeit eine ununterbrochene "
        "Ruhezeit von mindestens elf Stunden haben.",
    ]),
]  # fmt: skip
