"""Answers you can trust: quotes from the sources with their places (English, German, Swedish), every written
sentence checked against what it cites, and "the documents do not say" in the question's language when they
do not. Unit tests with the fake embedder; the CLI through a subprocess with the bundled models."""

import json
import subprocess
import sys

import pytest

import ragkit
from ragkit.answer import ABSTAIN, NOTES, Answer, Citation, Evidence, idf_of, verify
from ragkit.answer.evidence import question_type, units
from ragkit.answer.extractive import alternatives
from ragkit.config import ANSWER_MODES, IndexConfig, QueryConfig
from ragkit.records import Passage, Plan, QueryResult
from ragkit.text import query_language, split_sentences
from tests.conftest import write
from tests.fakes import FakeGenerator

HANDBOOK = """
# Employee Handbook

## Overtime

Overtime must be approved by the team lead in advance.
Overtime is compensated either as time off (one hour of leave per hour worked)
or paid at 125% of the hourly rate.

## Remote work

Employees may work remotely up to three days per week.
"""
GERMAN = """
# Betriebsordnung

## § 3 Überstunden

(1) Überstunden sind vorher von der Teamleitung zu genehmigen.

(2) Überstunden werden mit einem Zuschlag von 25 Prozent vergütet oder durch Freizeit ausgeglichen.
Der Ausgleich nach Satz 1 erfolgt innerhalb von drei Monaten.

## § 4 Urlaub

(1) Der Urlaub beträgt 30 Arbeitstage im Kalenderjahr.
"""
SWEDISH = """
# Föreskrifter om arbetstid

## 2 kap. Övertid

5 § Övertid får tas ut med högst 200 timmar per kalenderår.

6 § Arbetsgivaren ska föra anteckningar om övertid. Anteckningarna ska sparas i minst tre år.
"""


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    """One index per language with the real bundled models (the answer scorer reads their similarities):
    MiniLM for the English handbook, multilingual-e5-small for the German and the Swedish rules."""
    out = {}
    for language, name, text in (
        ("en", "handbook.md", HANDBOOK),
        ("de", "betrieb.md", GERMAN),
        ("sv", "arbetstid.md", SWEDISH),
    ):
        root = tmp_path_factory.mktemp(f"docs-{language}")
        write(root, name, text)
        ragkit.index([root], root.parent / f"idx-{language}", cfg=IndexConfig())
        out[language] = ragkit.open(root.parent / f"idx-{language}")
    return out


@pytest.fixture
def ix(indexes):
    return Indexes(indexes)


class Indexes:
    """The per-language indexes as one index for ``ask``: a question goes to its language's index."""

    def __init__(self, indexes):
        self.indexes = indexes

    def __getitem__(self, language):
        return self.indexes[language]


def with_generator(ix, generator):
    """``ix`` again, its answers written by ``generator`` (its embedder kept)."""
    return ragkit.open(ix.path, embedder=ix.reader.embedder, generator=generator)


def ask(ix, question: str, generator=None, **cfg) -> tuple[QueryResult, Answer]:
    if isinstance(ix, Indexes):
        ix = ix[query_language(question)]
    if generator is not None:
        ix = with_generator(ix, generator)
    cfg = QueryConfig(**{"k": 3, "answer": True, "answer_mode": "extract", **cfg})
    result = ix.query(question, cfg)
    answered = ix.answer_for(result, cfg)
    if answered.error is not None:
        raise answered.error
    return result, answered.answer


# ---- extractive answers


def test_the_sentence_that_answers_is_quoted_verbatim_with_its_own_lines(ix):
    result, a = ask(ix, "How is overtime compensated?")
    assert a.mode == "extract" and not a.abstained and a.language == "en"
    quote = next(q for q in a.quotes if "125%" in q.text)
    assert quote.text == (
        "Overtime is compensated either as time off (one hour of leave per hour worked) "
        "or paid at 125% of the hourly rate."
    )
    assert quote.path.endswith("handbook.md") and quote.lines == (6, 7)  # the sentence's lines, not its chunk's
    passage = next(p for p in result.passages if p.rank == quote.rank)
    assert " ".join(passage.text[quote.start : quote.end].split()) == quote.text  # where it is highlighted
    assert f"“{quote.text}” [1]" in a.text and a.citations[0].rank == quote.rank


def test_german_and_swedish_questions_get_one_short_quote_that_answers(ix):
    _, a = ask(ix, "Mit welchem Zuschlag werden Überstunden vergütet?")
    assert a.language == "de" and not a.abstained and len(a.quotes) == 1
    assert (
        a.quotes[0].text
        == "(2) Überstunden werden mit einem Zuschlag von 25 Prozent vergütet oder durch Freizeit ausgeglichen."
    )
    assert 0.0 < a.confidence <= 1.0
    _, a = ask(ix, "Wie lange habe ich Zeit, die Überstunden durch Freizeit auszugleichen?")
    assert not a.abstained and "innerhalb von drei Monaten" in a.text and len(a.text) < 200
    _, a = ask(ix, "Hur länge ska anteckningarna om övertid sparas?")
    assert a.language == "sv" and len(a.quotes) == 1 and "minst tre år" in a.quotes[0].text


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("What is the dress code for client visits?", "en"),
        ("Wie hoch ist das Elterngeld für Väter?", "de"),
        ("Hur mycket föräldrapenning får man?", "sv"),
    ],
)
def test_questions_the_documents_do_not_answer_get_an_honest_abstention(ix, question, language):
    result, a = ask(ix, question)
    assert a.abstained and a.text == ABSTAIN[language] and not a.quotes and not a.citations
    assert result.passages  # the closest passages are still shown
    assert a.note  # why: what the passages do not cover


def test_a_section_the_question_cites_is_quoted_and_one_no_passage_holds_is_not_answered(ix):
    _, a = ask(ix, "Vad säger 6 § i föreskrifterna om arbetstid?")
    assert not a.abstained and a.quotes[0].text.startswith("6 §")
    _, a = ask(ix, "Vad säger 9 § i föreskrifterna om arbetstid?")
    assert a.abstained and a.note == "no passage is 9 §"


def test_a_comparison_quotes_both_sides_and_a_second_hop_follows_the_name(tmp_path):
    root = tmp_path / "wiki"
    write(root, "haig.md", "# Sid Haig\n\nSid Haig (born July 14, 1939) was an American actor.\n")
    write(root, "darchinyan.md", "# Vic Darchinyan\n\nVic Darchinyan (born 7 January 1976) is a boxer.\n")
    write(root, "film.md", "# The Gauntlet\n\nThe Gauntlet is a 1977 film directed by Clint Eastwood.\n")
    write(root, "eastwood.md", "# Clint Eastwood\n\nClint Eastwood was born in San Francisco in 1930.\n")
    ragkit.index([root], tmp_path / "idx", cfg=IndexConfig())
    ix = ragkit.open(tmp_path / "idx")
    _, a = ask(ix, "Who is older, Sid Haig or Vic Darchinyan?", k=4)
    assert "1939" in a.text and "1976" in a.text and len(a.quotes) >= 2
    _, a = ask(ix, "Where was the director of The Gauntlet born?", k=4)
    assert "San Francisco" in a.text and "Clint Eastwood" in a.text


# ---- the parts: sentences, units, question kinds, comparisons


def test_sentences_do_not_end_at_ordinals_or_list_numbers():
    text = "Wer das 18. Lebensjahr vollendet hat, darf wählen. Am 1. Januar 2020 trat es in Kraft. Born in 1970. Left."
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "Wer das 18. Lebensjahr vollendet hat, darf wählen.",
        "Am 1. Januar 2020 trat es in Kraft.",
        "Born in 1970.",
        "Left.",
    ]


def test_units_are_sentences_a_short_numbered_paragraph_whole_and_each_list_item():
    law = "(1) Die Beobachtung ist nur zulässig, soweit sie\n\n1.  zur Aufgabenerfüllung,\n\n2.  zum Hausrecht\n\nerforderlich ist. Das gilt.\n(2) Kurz."
    found = {(law[a:b], kind) for a, b, kind in units(law)}
    first = law[: law.index("\n(2)")]
    assert (first, "paragraph") in found and ("(2) Kurz.", "sentence") in found
    assert ("1.  zur Aufgabenerfüllung,", "item") in found and ("2.  zum Hausrecht", "item") in found
    assert ("Das gilt.", "sentence") in found
    long = "(1) " + " ".join(f"Satz Nummer {i} steht hier." for i in range(60))
    kinds = [kind for _, _, kind in units(long)]
    assert kinds.count("sentence") == 60 and "paragraph" not in kinds  # too long to be quoted whole
    assert kinds.count("pair") == 59  # two sentences in a row, each pair a unit of its own
    prose = "First sentence here. Second one there.\n\nA new paragraph."
    assert [kind for _, _, kind in units(prose)] == ["sentence", "pair", "sentence", "sentence"]


@pytest.mark.parametrize(
    ("question", "language", "kind"),
    [
        ("Which city was the band formed in 1981 in when Hetfield answered an ad?", "en", "place"),
        ("What was the profession of Amy Johnson, whom the film was about?", "en", None),
        ("In what year was the club founded?", "en", "time"),
        ("Are both magazines British?", "en", "yesno"),
        ("Was kostet die Anmeldung?", "de", None),
        ("Wie viele Tage Urlaub stehen mir zu?", "de", "quantity"),
        ("Bis wann muss ich widersprechen?", "de", "time"),
        ("Hur många dagar får man?", "sv", "quantity"),
        ("Vem ansvarar för tillsynen?", "sv", "person"),
    ],
)
def test_the_first_question_phrase_says_what_kind_of_answer_is_wanted(question, language, kind):
    assert question_type(question, language) == kind


def test_the_two_sides_of_a_comparison_are_found():
    assert alternatives("Who is the oldest, Sid Haig or Vic Darchinyan?", "en") == ["Sid Haig", "Vic Darchinyan"]
    assert alternatives("Between Iain Banks and Irwin Shaw, which writer wrote more?", "en") == [
        "Iain Banks",
        "Irwin Shaw",
    ]
    assert alternatives("Wer ist älter, Angela Merkel oder Olaf Scholz?", "de") == ["Angela Merkel", "Olaf Scholz"]
    assert alternatives("How is overtime paid?", "en") == []


# ---- written answers, checked


def _result(*texts: str) -> QueryResult:
    passages = [
        Passage(
            rank=i,
            score=1.0 / i,
            anchor_score=1.0,
            document_id=f"d{i}",
            path=f"p{i}.md",
            title=f"P{i}",
            section=f"P{i}",
            line_start=1,
            line_end=3,
            text=text,
            chunk_ids=[f"c{i}"],
            token_count=len(text.split()),
        )
        for i, text in enumerate(texts, start=1)
    ]
    q = "How is overtime paid and how often can I work remotely?"
    return QueryResult(q, "hybrid", Plan("hybrid", "", q, q), passages, [], {})


def _written(text: str, ranks: list[int]) -> Answer:
    citations = [Citation(n, rank, f"p{rank}.md", (1, 3)) for n, rank in enumerate(ranks, start=1)]
    return Answer(text, citations, 0, "fake.gguf", 10, 10, 0.1, 0.01, sources=ranks)


PASSAGES = (
    "Employees may work remotely up to three days per week.",
    "Overtime is paid at 125% of the hourly rate.",
)


def test_a_sentence_is_repointed_to_the_passage_that_supports_it_and_an_invented_one_is_removed():
    result = _result(*PASSAGES)
    idf = idf_of(None, 10)
    written = _written(
        "Overtime is paid at 125% of the hourly rate [1]. Remote work is allowed five days a week [2].", [1, 2]
    )
    a = verify(written, Evidence.of(result), idf, "en")
    first, second = a.claims
    assert first.supported and first.repointed and first.cited == [2]  # it cited [1]; passage 2 says it
    assert not second.supported and "five" not in a.text and a.grounded == 0.5
    assert a.text == "Overtime is paid at 125% of the hourly rate [2]."  # source 2 of the prompt is passage 2
    assert [(c.number, c.rank) for c in a.citations] == [(2, 2)]
    made_up = _written("Overtime is paid at 150% of the hourly rate [2].", [1, 2])
    c = verify(made_up, Evidence.of(result), idf, "en").claims[0]
    assert not c.supported and c.missing == ["150"]  # a number the source does not hold is never supported
    negated = _written("Overtime is not paid [2].", [1, 2])
    assert verify(negated, Evidence.of(result), idf, "en").claims[0].missing == ["not"]


def test_an_answer_mostly_unsupported_is_replaced_by_the_quotes_and_says_so(ix):
    gen = FakeGenerator(pieces=["1], overtime is paid", " at 300% on Sundays", " and Mars pays more."])
    en = with_generator(ix["en"], gen)
    cfg = QueryConfig(k=3, answer=True, answer_mode="generate")
    result = en.query("How is overtime compensated?", cfg)
    answered = en.answer_for(result, cfg)
    assert answered.error is None
    a = answered.answer
    assert a.replaced and a.mode == "extract" and a.note == NOTES["en"] and a.grounded == 0.0
    assert any("125%" in q.text for q in a.quotes) and a.claims and not a.claims[0].supported
    assert "300%" not in a.text


def test_auto_quotes_without_a_model_and_writes_with_one(ix, monkeypatch):
    gen = FakeGenerator(pieces=["1], overtime is paid at 125% of the hourly rate."])
    # auto decides by the model the settings name, so the model is loaded (here: gen), not handed in
    monkeypatch.setattr("ragkit.library.answering.load_generator", lambda spec=None, n_ctx=2048, keys=None: gen)
    _, a = ask(ix, "How is overtime compensated?", answer_mode="auto")
    assert a.mode == "extract" and not gen.prompts  # the bundled model (no --model) is not asked
    _, a = ask(ix, "How is overtime compensated?", answer_mode="auto", model="http://127.0.0.1:9/v1#m")
    assert a.mode == "generate" and len(gen.prompts) == 1 and a.grounded == 1.0
    assert a.text == "According to [1], overtime is paid at 125% of the hourly rate."


def test_a_written_answer_to_what_the_documents_do_not_say_ends_in_the_abstention(ix):
    gen = FakeGenerator(pieces=["1], Väter bekommen 1.800 Euro Elterngeld."])
    _, a = ask(ix, "Wie hoch ist das Elterngeld für Väter?", gen, answer_mode="generate")
    assert gen.prompts[0].count("German") and a.abstained and a.replaced and a.text == ABSTAIN["de"]


def test_the_cli_knows_the_answer_modes_the_config_does():
    from ragkit import cli

    assert cli.ANSWER_MODES == ANSWER_MODES


# ---- the CLI, with the bundled models


@pytest.mark.integration
def test_cli_answer_modes_quote_and_abstain_through_the_real_command(tmp_path):
    root = tmp_path / "docs"
    write(root, "handbook.md", HANDBOOK)
    idx = str(tmp_path / "idx")
    run = [sys.executable, "-m", "ragkit"]
    subprocess.run([*run, "index", str(root), "--index", idx], check=True, capture_output=True)
    out = subprocess.run(
        [*run, "query", "--answer", "extract", "How is overtime compensated?", "--index", idx, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    a = json.loads(out.stdout)["answer"]
    assert a["mode"] == "extract" and a["abstained"] is False
    assert any("125%" in q["text"] and q["lines"] == [6, 7] for q in a["quotes"])
    assert {"rank", "lines", "pages", "text", "path"} <= set(a["quotes"][0])
    out = subprocess.run(
        [*run, "query", "--answer", "What is the dress code for client visits?", "--index", idx],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ABSTAIN["en"] in out.stdout and "Remote work" in out.stdout  # the closest passages follow
