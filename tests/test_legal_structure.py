"""Swedish regulations as published (issue 34): PDF text as a reader sees it (running headers and footers gone,
line-end hyphens joined, blank pages told apart from scans), the legal structure read from the text itself (PDF,
DOCX, HTML, plain text), and Swedish references resolved section-first."""

import pytest

from ragkit.config import QueryConfig
from ragkit.ingest.parse import parse_html, parse_text
from ragkit.ingest.pdf import parse_pdf
from ragkit.ingest.pdf_lines import dehyphenate
from ragkit.ingest.raw import RawDoc, RawHeading
from ragkit.ingest.sections import build_sections
from ragkit.ingest.structure import legal_structure
from ragkit.legal import find_legal_refs
from tests.documents import REGULATION, write_regulation_pdf


def tree(raw, title="doc") -> list[str]:
    sections, _ = build_sections(legal_structure(raw), "d", raw.title or title, lambda *a: "-".join(a))
    return [s.breadcrumb for s in sections]


def body(raw) -> str:
    return "\n".join(i.text for i in raw.items if not isinstance(i, RawHeading))


@pytest.fixture(scope="module")
def regulation(tmp_path_factory):
    return parse_pdf(write_regulation_pdf(tmp_path_factory.mktemp("reg") / "AFS-2099-1.pdf").read_bytes())


def test_running_headers_and_page_numbers_leave_the_text_and_the_designation_is_kept(regulation):
    text = body(regulation)
    assert REGULATION not in text.splitlines() and not any(line.strip().isdigit() for line in text.splitlines())
    assert regulation.metadata["designation"] == REGULATION
    assert regulation.title.startswith(REGULATION)


def test_a_title_that_only_spells_the_designation_gives_way_to_the_first_heading(tmp_path):
    """A scanner or a renderer names the PDF after its file ("AFS-2099-1"): that title says no more than the
    designation, so the title is the designation and the first heading, as reference questions name it."""
    for own in ("AFS-2099-1", "afs 2099 1", REGULATION):
        doc = parse_pdf(write_regulation_pdf(tmp_path / "AFS-2099-1.pdf", title=own).read_bytes())
        assert doc.title == f"{REGULATION} Arbetsmiljöverkets föreskrifter om läskfabriker", own
    doc = parse_pdf(write_regulation_pdf(tmp_path / "own.pdf", title="Läskfabriker, konsoliderad").read_bytes())
    assert doc.title == f"{REGULATION} Läskfabriker, konsoliderad"  # a title of its own is kept


def test_line_end_hyphens_are_joined_but_real_hyphens_stay(regulation):
    text = " ".join(body(regulation).split())
    assert "verksamheten planeras" in text  # one word over two lines
    assert "Hälso- och sjukvården" in text  # "hälso- och": the hyphen and its space stay
    assert "CE-märkning" in text  # after a capital the hyphen stays
    assert dehyphenate("icke\ufffejoniserande") == "icke-joniserande"
    assert dehyphenate("2\ufffeetylhexyl") == "2-etylhexyl"


def test_a_blank_page_is_not_a_scan(regulation):
    assert regulation.metadata["blank_pages"] == [2]
    assert "pages_without_text" not in regulation.metadata


def test_chapters_paragraphs_and_general_advice_become_the_section_tree(regulation):
    crumbs = tree(regulation)
    root = f"{REGULATION} Arbetsmiljöverkets föreskrifter om läskfabriker"
    assert f"{root} > Tillämpningsområde > 2 §" in crumbs
    assert f"{root} > 1 kap. Allmänna bestämmelser > 1 § > Allmänna råd" in crumbs
    assert f"{root} > 2 kap. Buller och ventilation > 2 a §" in crumbs
    assert f"{root} > Övergångsbestämmelser" in crumbs and f"{root} > Bilaga 1 Mätning av buller" in crumbs
    # "Enligt 6 §" at a line's start is a reference, not a paragraph: numbering never jumps from 1 to 6 here
    assert not any(c.endswith("> 6 §") for c in crumbs)
    assert not any("Page " in c for c in crumbs)


def test_divisions_set_no_larger_than_their_paragraphs_are_over_them():
    """A scan's font sizes jitter by a point and a typesetter may set "Kapitel 1" as "§ 1": a division heading
    not above its paragraphs still holds them (by rank: Teil over Kapitel over Abschnitt), the paragraphs moving
    down where the title leaves no room; where the sizes say it already, nothing moves."""

    def levels(headings):
        items = [RawHeading(level, text, n) for n, (level, text) in enumerate(headings, start=1)]
        return [h.level for h in legal_structure(RawDoc(title="G", metadata={}, items=items)).items]

    kschg = [
        (1, "Kündigungsschutzgesetz (KSchG)"),
        (3, "Erster Abschnitt - Allgemeiner Kündigungsschutz"),
        (3, "§ 1 Sozial ungerechtfertigte Kündigungen"),
        (3, "§ 2 Änderungskündigung"),
        (4, "Zweiter Abschnitt - Kündigungsschutz im Rahmen der Betriebsverfassung"),
        (3, "§ 15 Unzulässigkeit"),
    ]
    assert levels(kschg) == [1, 2, 3, 3, 2, 3]
    bdsg = [
        (1, "Bundesdatenschutzgesetz (BDSG)"),
        (2, "Teil 1 - Gemeinsame Bestimmungen"),
        (3, "Kapitel 1 - Anwendungsbereich"),
        (3, "§ 1 Anwendungsbereich des Gesetzes"),
        (3, "§ 2 Begriffe"),
        (3, "Kapitel 2 - Rechtsgrundlagen"),
        (3, "§ 3 Verarbeitung"),
        (4, "Fußnote"),
    ]
    assert levels(bdsg) == [1, 2, 3, 4, 4, 3, 4, 5]
    gg = [(1, "Grundgesetz"), (2, "Präambel"), (3, "I. - Die Grundrechte"), (3, "Art 1"), (3, "Art 2")]
    assert levels(gg) == [1, 2, 2, 3, 3]
    markdown = [(1, "Gesetz"), (2, "Erster Abschnitt"), (3, "§ 1 Zweck"), (3, "§ 2 Begriffe"), (2, "Anlage 1")]
    assert levels(markdown) == [1, 2, 3, 3, 2]  # the sizes already say it


def test_a_heading_line_that_opens_a_unit_does_not_continue_the_one_before(tmp_path):
    """ "Kapitel 7 - Haftung und Sanktionen" and "§ 83 Schadensersatz" set alike, one under the other, are two
    headings (read as one wrapped heading, § 83 had no section of its own); a heading that wraps stays one."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    body = [("Hat ein Verantwortlicher einer betroffenen Person durch eine Verarbeitung einen Schaden", 10.5)] * 6
    lines = [("Bundesdatenschutzgesetz", 17), ("Kapitel 7 - Haftung und Sanktionen", 13),
             ("§ 83 Schadensersatz und Entschädigung", 13), *body,
             ("Kapitel 8 - Rechtsbehelfe gegen Entscheidungen der Aufsichtsbehörde und", 13),
             ("gegen Verantwortliche", 13), ("§ 84 Strafvorschriften", 13), *body]  # fmt: skip
    for text, size in lines:
        pdf.set_font("Helvetica", "B" if size > 11 else "", size)
        pdf.cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "bdsg.pdf"))
    crumbs = tree(parse_pdf((tmp_path / "bdsg.pdf").read_bytes()))
    assert (
        "Bundesdatenschutzgesetz > Kapitel 7 - Haftung und Sanktionen > § 83 Schadensersatz und Entschädigung" in crumbs
    )
    assert (
        "Bundesdatenschutzgesetz > Kapitel 8 - Rechtsbehelfe gegen Entscheidungen der Aufsichtsbehörde und gegen "
        "Verantwortliche > § 84 Strafvorschriften"
    ) in crumbs


def test_structure_only_in_the_wording_of_html_and_plain_text():
    html = (
        "<html><body><h1>Föreskrifter om kontor</h1><p>1 kap. Allmänt</p><p>1 § Kontor ska vara ljusa.</p>"
        "<p>2 § Fönster ska gå att öppna.</p><p>2 kap. Buller</p><p>1 § Bullret får inte störa.</p></body></html>"
    )
    assert "Föreskrifter om kontor > 2 kap. Buller > 1 §" in tree(parse_html(html))
    german = "Arbeitsschutz im Büro\n\n§ 1 Geltungsbereich\n\nDieses Gesetz gilt für Büros.\n\n§ 2 Pausen\n\n(1) Pausen sind zu gewähren.\n"
    crumbs = tree(parse_text(german), "Büro")
    assert "Büro > Arbeitsschutz im Büro > § 1 Geltungsbereich" in crumbs  # its first line titles what follows
    assert "Büro > Arbeitsschutz im Büro > § 2 Pausen" in crumbs


def test_docx_with_the_structure_only_in_its_text(tmp_path):
    import docx

    from ragkit.ingest.word import parse_docx

    d = docx.Document()
    d.add_heading("Policy om distansarbete", level=1)
    for text in (
        "1 kap. Omfattning",
        "1 § Policyn gäller alla anställda.",
        "2 § Chefen beslutar.",
        "2 kap. Utrustning",
    ):
        d.add_paragraph(text)
    d.add_paragraph("1 § Arbetsgivaren lånar ut en dator.")
    d.save(tmp_path / "p.docx")
    assert "Policy om distansarbete > 2 kap. Utrustning > 1 §" in tree(parse_docx((tmp_path / "p.docx").read_bytes()))


def test_markdown_laws_keep_their_own_headings():
    from ragkit.ingest.parse import parse_markdown

    raw = parse_markdown("# ArbZG\n\n## § 1 Zweck\n\nText.\n\n## § 2 Begriffe\n\n§ 3 gilt entsprechend.\n")
    assert [h.text for h in legal_structure(raw).items if isinstance(h, RawHeading)] == [
        "ArbZG",
        "§ 1 Zweck",
        "§ 2 Begriffe",
    ]


@pytest.mark.parametrize(
    "text, target, chapter, number",
    [
        ("Vad kräver 2 kap. 6 § AFS 2023:2?", "AFS 2023:2", "2", "6"),
        ("Vad säger AFS 2023:2 2 kap. 6 §?", "AFS 2023:2", "2", "6"),
        ("Vad gäller enligt 6 § i 2 kap. AFS 2023:2?", "AFS 2023:2", "2", "6"),
        ("AFS 2023:2 2:6", "AFS 2023:2", "2", "6"),
        ("enligt 3 kap. 2 a § arbetsmiljölagen", "name:arbetsmiljölagen", "3", "2a"),
        (
            "Vad gäller enligt 14 § i föreskrifterna om radon på arbetsplatser?",
            "about:radon på arbetsplatser",
            None,
            "14",
        ),
        ("Vad kräver 2 kap. 17 § i solarieföreskrifterna?", "about:solarie", "2", "17"),
    ],
)
def test_swedish_reference_forms(text, target, chapter, number):
    [ref] = find_legal_refs(text)
    assert (ref.target, ref.chapter, ref.numbers) == (target, chapter, [number])


def test_statutes_and_regulations_by_number():
    assert [r.target for r in find_legal_refs("lagen (1977:1160) och SFS 1982:80 och SSMFS 2018:2")] == [
        "1977:1160",
        "1982:80",
        "SSMFS 2018:2",
    ]


def test_a_swedish_reference_finds_its_paragraph_first(tmp_path, index_with):
    """In a real index, "2 a § i 2 kap. AFS 2099:1" puts that paragraph first, though another regulation has the
    same numbers and the words of the question are elsewhere."""
    root = tmp_path / "docs"
    root.mkdir()
    write_regulation_pdf(root / "AFS-2099-1.pdf")
    write_regulation_pdf(root / "AFS-2099-2.pdf", header="AFS 2099:2")
    _, ix = index_with(root)
    for question in ("Vad säger 2 a § i 2 kap. AFS 2099:1?", "Vad säger AFS 2099:1 2:2 a om luften?"):
        result = ix.query(question, QueryConfig(k=3, strategy="hybrid"))
        first = result.passages[0]
        assert first.path.endswith("AFS-2099-1.pdf") and first.section.endswith("2 kap. Buller och ventilation > 2 a §")
        assert result.plan.references and result.plan.references[0]["section_ids"]


def test_a_law_named_in_the_text_resolves_among_many_laws_by_its_title():
    """ "§ 5 des Arbeitszeitgesetzes" finds the law with that title (not "Kraftfahrer-Arbeitszeitgesetz") and the
    section by its number; the same name asked again gets the same answer."""
    from ragkit.extract.resolve import RefRow, Resolver
    from ragkit.legal import find_legal_refs

    titles = ["Arbeitsschutzgesetz", "Arbeitszeitgesetz", "Kraftfahrer-Arbeitszeitgesetz", "Zeitgesetz"]
    titles += [f"Verordnung Nr. {i}" for i in range(200)]
    docs = [
        {
            "id": f"d{i}",
            "path": f"{i}.md",
            "source_path": f"/x/{i}.md",
            "external_id": None,
            "title": t,
            "metadata": {},
            "supersedes": None,
        }
        for i, t in enumerate(titles)
    ]
    sections = [
        {"id": f"s{i}-{n}", "document_id": f"d{i}", "parent_id": None, "heading": f"§ {n} Regel", "level": 2, "ord": n}
        for i in range(4)
        for n in range(1, 8)
    ]
    resolver = Resolver(docs, sections)
    ref = next(r for r in find_legal_refs("nach § 5 des Arbeitszeitgesetzes gilt") if r.numbers)
    row = RefRow("r", "c", "d0", ref.kind, ref.raw, ref.target, ref.unit, list(ref.numbers), ref.chapter, None)
    assert resolver.resolve(row) == ("d1", "s1-5")
    assert resolver.resolve(row) == ("d1", "s1-5")  # answered from what the first look-up found
    assert resolver.law_document("name:des Zeitg") is None  # a stem under six letters names no law


# real titles and abbreviations of bundestag/gesetze: the laws a name in the text means, and those it might be
# taken for (before: a title word sharing the name's first eight letters), each decoy first by path
FEDERAL = [
    ("aeg", "Allgemeines Eisenbahngesetz", "AEG"),  # the old law: "AEG 1994" is the current one
    ("aeg_1994", "Allgemeines Eisenbahngesetz", "AEG 1994"),
    ("amwarnv", "Arzneimittel-Warnhinweisverordnung", "AMWarnV"),
    ("bgbabest_1898", "Bekanntmachung betreffend Ausführungsbestimmungen zu den §§ 980, 981, 983 des Bürgerlichen Gesetzbuchs", "BGBABest 1898"),
    ("bgb", "Bürgerliches Gesetzbuch", "BGB"),
    ("baeckmstrv", "Verordnung über das Berufsbild und über die Prüfungsanforderungen im praktischen und im fachtheoretischen Teil der Meisterprüfung für das Bäcker-Handwerk", "BäckMstrV"),
    ("bbig_2005", "Berufsbildungsgesetz", "BBiG 2005"),
    ("kredwg", "Gesetz über das Kreditwesen", "KredWG"),
    ("lfgb", "Lebensmittel-, Bedarfsgegenstände- und Futtermittelgesetzbuch", "LFGB"),
    ("algiiv_2008", "Verordnung zur Berechnung von Einkommen sowie zur Nichtberücksichtigung von Einkommen und Vermögen beim Arbeitslosengeld II/Sozialgeld", "AlgIIV 2008"),
    ("sgb_5", "Sozialgesetzbuch (SGB) Fünftes Buch (V) - Gesetzliche Krankenversicherung - (Artikel 1 des Gesetzes v. 20. Dezember 1988, BGBl. I S. 2477)", "SGB 5"),
    ("hwwahlo", "Wahlordnung für die Wahlen der Mitglieder der Vollversammlung der Handwerkskammern (Anlage C zu dem Gesetz zur Ordnung des Handwerks (Handwerksordnung))", "HwWahlO"),
    ("hwo", "Gesetz zur Ordnung des Handwerks", "HwO"),
    ("seg", "Gesetz über die Entschädigung der Soldatinnen und Soldaten", "SEG"),
    ("sg", "Gesetz über die Rechtsstellung der Soldaten", "SG"),
    ("bvg", "Gesetz über die Versorgung der Opfer des Krieges", "BVG"),
    ("beamtvg", "Gesetz über die Versorgung der Beamten und Richter des Bundes", "BeamtVG"),
    ("energiestg", "Energiesteuergesetz", "EnergieStG"),
    ("enwg_2005", "Gesetz über die Elektrizitäts- und Gasversorgung", "EnWG 2005"),
    ("sgb9uaaendg", "Sozialgesetzbuch - Neuntes Buch - (SGB IX) Rehabilitation und Teilhabe behinderter Menschen", "SGB9uaÄndG"),
    ("sgb_9_2018", "Sozialgesetzbuch Neuntes Buch – Rehabilitation und Teilhabe von Menschen mit Behinderungen – (Artikel 1 des Gesetzes v. 23. Dezember 2016, BGBl. I S. 3234)", "SGB 9 2018"),
    ("asg", "Gesetz zur Sicherstellung von Arbeitsleistungen für Zwecke der Verteidigung einschließlich des Schutzes der Zivilbevölkerung", "ASG"),
    ("arbschg", "Gesetz über die Durchführung von Maßnahmen des Arbeitsschutzes zur Verbesserung der Sicherheit und des Gesundheitsschutzes der Beschäftigten bei der Arbeit", "ArbSchG"),
    ("vgv_2016", "Verordnung über die Vergabe öffentlicher Aufträge", "VgV 2016"),
    ("sag", "Gesetz zur Sanierung und Abwicklung von Instituten und Finanzgruppen", "SAG"),
    ("zag_2018", "Gesetz über die Beaufsichtigung von Zahlungsdiensten", "ZAG 2018"),
    ("zkg", "Gesetz über die Vergleichbarkeit von Zahlungskontoentgelten, den Wechsel von Zahlungskonten sowie den Zugang zu Zahlungskonten mit grundlegenden Funktionen", "ZKG"),
    ("vsvgv", "Vergabeverordnung für die Bereiche Verteidigung und Sicherheit zur Umsetzung der Richtlinie 2009/81/EG", "VSVgV"),
]  # fmt: skip


@pytest.mark.parametrize(
    "text, law",
    [
        ("nach § 5 des Berufsbildungsgesetzes", "bbig_2005"),  # its title, not a title word's first letters
        ("nach § 2 des Bürgerlichen\nGesetzbuchs", "bgb"),  # case endings and a line break
        ("nach § 1 Abs. 1 des Kreditwesengesetzes", "kredwg"),  # "KredWG" spells it, the long title says it
        ("nach § 1 des Fünften Buches Sozialgesetzbuch", "sgb_5"),  # the book by its number
        ("nach § 2 SGB IX", "sgb_9_2018"),  # its own "SGB 9 2018", not "(SGB IX)" in an amending law's title
        ("nach § 1 der Handwerksordnung", "hwo"),  # not the law naming it within brackets in brackets
        ("nach § 1 des Soldatengesetzes", "sg"),  # of two titles saying "Soldaten", the one saying least else
        ("nach § 1 des Beamtenversorgungsgesetzes", "beamtvg"),
        ("nach § 1 des Bundesversorgungsgesetzes", "bvg"),
        ("nach § 1 des Arbeitsschutzgesetzes", "arbschg"),
        ("nach § 2 des Zahlungskontengesetzes", "zkg"),  # its title says most of the name, though more else
        ("nach § 1 des Allgemeinen Eisenbahngesetzes", "aeg_1994"),  # one title, two laws: the current one
        ("nach § 2 der Vergabeverordnung", "vgv_2016"),  # "Vergabeverordnung für …" is a narrower one
        ("nach § 2 des Lebensmittel-\nund Futtermittelgesetzbuches", "lfgb"),  # cited short: "Lebensmittel-, …"
        ("nach § 2 des Sanierungs- und Abwicklungsgesetzes", "sag"),  # coordinated, its abbreviation spells it
        ("nach § 2 der Arzneimittel-\nverordnung", None),  # cut, and no title going on with "," or "und"
        ("nach § 1 der Verordnung", None),  # which one, the text said before
        ("nach § 5 des Energiewirtschaftsgesetzes", None),  # no title says it; "Energiesteuergesetz" is another law
    ],
)
def test_a_law_named_in_the_text_resolves_among_federal_titles(text, law):
    """Each decoy comes first by path (the resolver before took the first title sharing a word's beginning)."""
    from ragkit.extract.resolve import Resolver
    from ragkit.legal import find_legal_refs

    docs = [
        {"id": slug, "path": f"{n:02d}/index.md", "source_path": f"/g/{n:02d}/index.md", "external_id": None,
         "title": title, "metadata": {"jurabk": abbr}, "supersedes": None}
        for n, (slug, title, abbr) in enumerate(FEDERAL)
    ]  # fmt: skip
    ref = next(r for r in find_legal_refs(text) if r.numbers)
    assert Resolver(docs, []).law_document(ref.target) == law


def test_a_swedish_law_in_two_versions_resolves_to_the_current_one():
    """ "arbetsmiljölagen" names the law titled "Arbetsmiljölag (1977:1160)"; of two documents with that title,
    the one the other does not supersede; a name several laws begin with stays unresolved."""
    from ragkit.extract.resolve import Resolver

    titles = [("a", "Arbetsmiljölag (1977:1160)", "b"), ("b", "Arbetsmiljölag (1977:1160)", None)]
    titles += [("c", "Miljöbalk (1998:808)", None), ("d", "Miljöbalksförordning", None)]
    titles += [("e", "Lag om ändring i miljöbalken", None)]
    docs = [
        {"id": i, "path": f"{i}.pdf", "source_path": f"/s/{i}.pdf", "external_id": None, "title": t,
         "metadata": {}, "supersedes": old}
        for i, t, old in titles
    ]  # fmt: skip
    resolver = Resolver(docs, [])
    assert resolver.law_document("name:arbetsmiljölagen") == "a"  # b is the older version
    assert resolver.law_document("name:miljöbalken") == "c"
    assert resolver.law_document("name:lagen") is None


def test_a_coordinated_law_name_is_read_whole():
    """ "des Mess- und Eichgesetzes" names one law, not "Mess-"; across a line break too."""
    from ragkit.legal import find_legal_refs

    for text, name in [
        ("nach § 37 des Mess- und Eichgesetzes", "Mess- und Eichgesetzes"),
        ("nach § 2 des Lebensmittel-, Bedarfsgegenstände- und\nFuttermittelgesetzbuches", "Lebensmittel-, Bedarfsgegenstände- und\nFuttermittelgesetzbuches"),
        ("§ 4 des Arbeitszeitgesetzes und § 3 BGB", "Arbeitszeitgesetzes"),
    ]:  # fmt: skip
        assert find_legal_refs(text)[0].target == "name:" + name


def test_a_law_target_keeps_its_kind_through_the_string_an_index_stores():
    from ragkit.legal import LawTarget

    for law in (
        LawTarget("code", "ArbZG"),
        LawTarget("code", "AFS 2023:2"),
        LawTarget("code", "1977:1160"),
        LawTarget("name", "Arbeitszeitgesetzes"),
        LawTarget("about", "radon på arbetsplatser"),
    ):
        assert LawTarget.parse(str(law)) == law
    assert str(LawTarget("name", "arbetsmiljölagen")) == find_legal_refs("enligt 3 kap. 2 § arbetsmiljölagen")[0].target


def test_a_question_citing_a_law_by_code_cites_only_that_laws_passages():
    from ragkit.answer.extractive import _names

    assert _names("ArbZG", "Arbeitszeitgesetz laws/a/arbzg/index.md § 5 Ruhezeit", "5")
    assert _names("BDSG", "Bundesdatenschutzgesetz laws/b/bdsg_2018/index.md", "2018")
    assert _names("GG", "Grundgesetz laws/g/gg/index.md Art 3", "3")
    assert not _names("GG", "Allgemeines Gleichbehandlungsgesetz laws/a/agg/index.md § 3", "3")
    assert _names("AFS 2023:2", "AFS 2023:2 Planering och organisering", "2023 2")
    assert not _names("AFS 2023:2", "AFS 2023:3 Risker", "2023 3")
