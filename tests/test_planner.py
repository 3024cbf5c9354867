"""Rule-based planner (constraints, dates, identifiers, doc-type routing) and the router."""

import pytest

import ragkit
from ragkit.config import QueryConfig
from ragkit.errors import BadQuery
from ragkit.retrieve.planner import plan_query
from ragkit.retrieve.router import route
from tests.conftest import write
from tests.fakes import FakeGenerator


def test_operators_phrases_and_negations_are_lifted_out():
    p = plan_query('doc_type:policy collection:hr path:"docs/*.md" "rest period" overtime -draft')
    c = p.constraints
    assert c.doc_types == ["policy"] and c.collections == ["hr"] and c.paths == ["docs/*.md"]
    assert c.must_include == ["rest period"] and c.must_exclude == ["draft"]
    assert p.text == "rest period overtime"
    assert c.filters() == {"doc_type": "policy", "collection": "hr", "path": "docs/*.md"}
    with pytest.raises(BadQuery):
        plan_query("doc_type:policy")


@pytest.mark.parametrize(
    "query, start, end",
    [
        ("changes since 2020", "2020-01-01", None),
        ("changes after 2020-05", "2020-05-01", None),
        ("changes before 2019-05-01", None, "2019-04-30"),
        ("changes before 2019", None, "2018-12-31"),
        ("changes until 2019-02", None, "2019-02-28"),
        ("changes between 2018 and 2020", "2018-01-01", "2020-12-31"),
        ("Änderungen seit 2021", "2021-01-01", None),
    ],
)
def test_dates(query, start, end):
    p = plan_query(query)
    assert (p.constraints.date_from, p.constraints.date_to) == (start, end)
    assert "20" not in p.text  # the date expression left the retrieval text


def test_bad_date_is_a_bad_query():
    with pytest.raises(BadQuery):
        plan_query("changes since 2020-13")


def test_identifiers_make_a_precision_plan():
    p = plan_query("error E1234 when flashing part XR-200")
    assert {"E1234", "XR-200"} <= set(p.identifiers) and p.retrieval_strategy == "precision"
    assert not plan_query("what happened in 1998 to the band").identifiers  # a year is not an identifier
    assert "§ reference" in plan_query("Was regelt § 3 ArbZG?").identifiers


def test_doc_type_routing_and_expansions_by_language():
    de = plan_query("Welche Regelung gilt für Überstunden?", available_doc_types={"policy", "notes"})
    assert de.language == "de" and de.doc_type_routing == ["policy"]
    assert de.expanded_queries[0].endswith("Regelung") and "Scope" in de.boost_sections
    en = plan_query("which rule covers overtime?", available_doc_types={"policy"})
    assert en.language == "en" and en.expanded_queries == [
        "which rule covers overtime? policy scope",
        "which rule covers overtime? rule",
    ]
    assert not plan_query("which rule covers overtime?", available_doc_types={"notes"}).doc_type_routing


def test_router_rules():
    def r(q, known=(), entities=True, communities=True, tree=True):
        return route(plan_query(q), list(known), entities, communities, has_tree=tree)

    assert r("what are the main themes of these papers").strategy == "global"
    assert r("what are the main themes of these papers", communities=False).strategy == "hierarchical"
    assert r("what are the main themes of these papers", communities=False, tree=False).strategy == "hybrid"
    summary = r("summarize the working time policy")
    assert summary.strategy == "hierarchical" and "summarize" in summary.reason
    assert r("give me an overview of chapter 4", tree=False).strategy == "global"
    assert r("XR-200").strategy == "lexical"
    rt = r("how do I reset part XR-200 safely")
    assert rt.strategy == "hybrid" and rt.alpha == 0.3
    assert (
        r("Were Scott Derrickson and Ed Wood of the same nationality?", ["ed wood", "scott derrickson"]).strategy
        == "hippo"
    )
    assert r("What is the relationship of Nirvana to Aberdeen?", ["nirvana"]).strategy == "hippo"
    assert (
        r(
            "Were Scott Derrickson and Ed Wood of the same nationality?",
            ["ed wood", "scott derrickson"],
            entities=False,
        ).strategy
        == "hybrid"
    )
    assert r("Scott Howell worked with the mayor of what city?", ["scott howell"]).strategy == "hippo"
    assert r("how are overtime hours limited?").strategy == "hybrid"


@pytest.fixture
def dated(tmp_path):
    root = tmp_path / "d"
    write(root, "old.md", "---\ndate: 2018-03-01\ndoc_type: policy\n---\n# Old rule\n\nOvertime was unlimited.\n")
    write(root, "new.md", "---\ndate: 2022-03-01\ndoc_type: notes\n---\n# New notes\n\nOvertime is capped now.\n")
    return root


def test_constraints_filter_retrieval_and_show_in_the_plan(dated, index_with):
    _, ix = index_with(dated)
    r = ix.query("overtime since 2020", QueryConfig())
    assert [p.path.split("/")[-1] for p in r.passages] == ["new.md"]
    assert r.plan.constraints["date_from"] == "2020-01-01" and r.plan.strategy == "hybrid"
    assert r.plan.reason.startswith("auto: ")
    r = ix.query("overtime doc_type:policy", QueryConfig())
    assert [p.path.split("/")[-1] for p in r.passages] == ["old.md"]
    r = ix.query("overtime since 2030", QueryConfig())  # nothing is that new: ignored, said so
    assert len(r.passages) == 2 and "date constraint ignored" in r.plan.planner_notes[0]
    r = ix.query("which rule limits overtime?", QueryConfig(strategy="hybrid"))
    assert r.plan.doc_type_routing == ["policy"] and len(r.plan.expanded_queries) == 2
    assert r.plan.reason == "chosen by --strategy"
    from ragkit.render import result_dict

    d = result_dict(r)["plan"]
    assert {
        "original",
        "strategy",
        "reason",
        "doc_type_routing",
        "expanded_queries",
        "constraints",
        "retrieval_strategy",
        "identifiers",
        "sub_queries",
    } <= set(d)


def test_speller_corrects_only_unknown_words():
    from ragkit.retrieve.spelling import Speller, _one_edit

    sp = Speller({"overtime": 5, "overtone": 1, "hours": 9, "limited": 4, "limits": 3, "rest": 2})
    assert sp.correct_word("overtmie") == "overtime"  # transposition
    assert sp.correct_word("ovrtime") == "overtime"  # deletion
    assert sp.correct_word("overtime") is None and sp.correct_word("limts") == "limits"
    assert sp.correct_word("zebra") is None and sp.correct_word("hors") is None  # no candidate / too short
    assert sp.correct_word("overtome") == "overtime"  # the more frequent of two candidates one edit away
    text, changes = sp.correct("How are ovretime hours limted?")
    assert text == "How are overtime hours limited?" and changes == [
        {"from": "ovretime", "to": "overtime"},
        {"from": "limted", "to": "limited"},
    ]
    assert _one_edit("abcd", "abdc") and not _one_edit("abcd", "badc")


def test_speller_leaves_real_words_of_the_query_language_alone():
    """An index holds a small share of a language's word forms: a common word it lacks is no typo (German
    questions over the laws had "nachts" → "nichts", "wohne" → "ohne", "wehren" → "wahren")."""
    from ragkit.retrieve.spelling import Speller

    sp = Speller({"nichts": 40, "ohne": 90, "wahren": 5, "gegen": 60, "arbeitszeit": 30, "overtime": 5})
    text, changes = sp.correct("Darf ich nachts ohne Pause arbeiten, wenn ich in der Gegend wohne?", "de")
    assert changes == [] and "nachts" in text and "Gegend wohne" in text
    assert sp.correct_word("arbeitszet", "de") == "arbeitszeit"  # a typo is still corrected
    assert sp.correct_word("overtmie", "de") == "overtime"
    assert sp.correct_word("wehren", "de") is None and sp.correct_word("wehren", "en") == "wahren"
    assert sp.correct_word("others", "de") is None  # English words in a German query stay too


def test_word_lists_read_directly_equal_wordfreqs_own():
    import wordfreq

    from ragkit.text import _dictionary

    for language in ("de", "sv", "en"):
        assert _dictionary(language) == frozenset(wordfreq.get_frequency_dict(language, wordlist="small"))


def test_query_language_of_short_questions():
    from ragkit.text import query_language

    assert query_language("Wie lange muss meine Mittagspause sein?") == "de"
    assert query_language("Darf mein Chef das?") == "de"
    assert query_language("Hur många dagars semester får jag?") == "sv"
    assert query_language("Which country was the director from?") == "en"  # "was" is English too
    assert query_language("Scott Derrickson Ed Wood") == "en"  # no evidence: English


def test_query_plan_shows_spelling_corrections(dated, index_with):
    _, ix = index_with(dated)
    r = ix.query("Overtimme capped", QueryConfig())
    assert r.plan.corrections == [{"from": "Overtimme", "to": "overtime"}]
    assert r.plan.query_text == "overtime capped" and r.passages[0].path.endswith("new.md")
    assert ix.query("Overtimme capped", QueryConfig(spelling=False)).plan.corrections == []


def test_decomposition_of_comparisons_and_multiple_questions():
    from ragkit.retrieve.planner import decompose

    assert decompose("Were Scott Derrickson and Ed Wood of the same nationality?") == [
        "Were Scott Derrickson of the same nationality?",
        "Were Ed Wood of the same nationality?",
    ]
    assert decompose("Which is older, Nirvana or Pearl Jam?") == [
        "Which is older, Nirvana?",
        "Which is older, Pearl Jam?",
    ]
    assert decompose("How long is the notice period? Who approves overtime?") == [
        "How long is the notice period?",
        "Who approves overtime?",
    ]
    assert decompose("What is the capital of France?") == []
    assert decompose("Lester Smith designed Demon Dice with Tim Brown") == []  # no comparison cue


def test_sub_queries_are_retrieved_and_fused(tmp_path, index_with):
    root = tmp_path / "d"
    write(
        root,
        "corpus.jsonl",
        "\n".join(
            [
                '{"_id": "a", "title": "Scott Derrickson", "text": "Scott Derrickson is an American film director."}',
                '{"_id": "b", "title": "Ed Wood", "text": "Ed Wood was an American filmmaker and actor."}',
                '{"_id": "c", "title": "Filler", "text": "Nationality of film people is a frequent quiz question."}',
            ]
        )
        + "\n",
    )
    _, ix = index_with(root)
    q = "Were Scott Derrickson and Ed Wood of the same nationality?"
    r = ix.query(q, QueryConfig(strategy="hybrid", k=3, decompose=True))
    assert len(r.plan.sub_queries) == 2 and any(k.startswith("sub_query_") for k in r.timings_ms)
    assert {p.path.split("#")[-1] for p in r.passages[:2]} == {"a", "b"}
    off = ix.query(q, QueryConfig(strategy="hybrid", k=3))  # off by default: planned, not retrieved
    assert off.plan.sub_queries and not any(k.startswith("sub_query_") for k in off.timings_ms)


def test_retry_decision_and_record(dated, index_with):
    from ragkit.records import Hit
    from ragkit.retrieve import corrective

    def hit(text, ranks):
        return Hit(
            chunk_id=text[:5],
            document_id="d",
            section_id="s",
            chunk_index=0,
            text=text,
            header="",
            path="p",
            title="t",
            doc_type="x",
            collection="c",
            line_start=1,
            line_end=1,
            token_count=5,
            external_id=None,
            score=1.0,
            boundary_confidence=1.0,
            ranks=ranks,
        )

    good = [hit("overtime hours are limited", {"dense": 1, "lexical": 1})]
    check = corrective.assess(good, "how are overtime hours limited?")
    assert check["coverage"] == 1.0 and check["agreement"] == 1.0 and corrective.retry_reason(check) is None
    poor = corrective.assess([hit("the canteen opens at noon", {"dense": 1})], "overtime hours limited")
    assert poor["coverage"] == 0.0 and "cover 0%" in corrective.retry_reason(poor)
    assert corrective.retry_reason(corrective.assess([], "x")) == "no candidates"
    assert corrective.fallback_strategy("hybrid", True) == "hippo"
    assert corrective.fallback_strategy("naive", True) == "hybrid"  # BM25 adds the words; the dense list is reused
    assert corrective.fallback_strategy("hybrid", False) == "lexical"
    assert corrective.fallback_strategy("hippo", True) == "hybrid"
    _, ix = index_with(dated)
    calls, chunks = [], ix.reader.chunks
    for name in ("vector_search", "fts_search"):  # count the searches (the instance attribute shadows the method)
        setattr(chunks, name, lambda *a, _f=getattr(chunks, name), _n=name: calls.append(_n) or _f(*a))
    r = ix.query("zebra giraffe", QueryConfig(strategy="hybrid"))
    assert sorted(calls) == ["fts_search", "vector_search"]  # the retry reused the first run's two lists
    retry = r.plan.retry
    assert retry["retried"] and retry["reason"] == "top results cover 0% of the query's words"
    assert retry["strategy"] == "hippo" and retry["mode"] == "recall" and "retry" in r.timings_ms
    assert retry["retry_check"]["coverage"] == 0.0 and retry["kept"] == "first"  # no better: the first is kept
    r = ix.query("overtime capped", QueryConfig(strategy="hybrid"))
    assert r.plan.retry == {"check": r.plan.retry["check"], "retried": False, "reason": None}
    assert ix.query("zebra giraffe", QueryConfig(strategy="hybrid", retry=False)).plan.retry is None


def test_llm_planner_output_is_checked_before_use():
    from ragkit.retrieve.llm_planner import parse

    out = (
        "Which nationality did Scott Derrickson and Ed Wood have?\nSub-questions:\n"
        "- What nationality was Scott Derrickson?\n- What nationality was Ed Wood?\n- Who won the cup?\n"
    )
    rewrite, subs = parse(out, "scott derrickson ed wood nationality")
    assert rewrite.startswith("Which nationality") and subs == [
        "What nationality was Scott Derrickson?",
        "What nationality was Ed Wood?",
    ]
    assert parse("How do I sort a list in Python?\n", "sort tickets by priority") == (None, [])  # example copied
    assert parse("The weather is nice today.\n", "overtime limits") == (None, [])  # off the query
    assert parse("Overtime limits?\n- overtime limits per week\n", "overtime limits")[1] == []  # one part: no split


def test_llm_planner_adds_rewrite_and_sub_queries_and_falls_back_to_rules(tmp_path, index_with, fake):
    from ragkit.errors import ModelUnavailable

    root = tmp_path / "d"
    write(
        root,
        "corpus.jsonl",
        "\n".join(
            [
                '{"_id": "a", "title": "Scott Derrickson", "text": "Scott Derrickson is an American film director."}',
                '{"_id": "b", "title": "Ed Wood", "text": "Ed Wood was an American filmmaker and actor."}',
            ]
        )
        + "\n",
    )
    _, ix = index_with(root)
    q = "derrickson wood nationality"
    gen = FakeGenerator(
        "What nationality were Scott Derrickson and Ed Wood?\nSub-questions:\n"
        "- What nationality was Scott Derrickson?\n- What nationality was Ed Wood?"
    )
    ix = ragkit.open(ix.path, embedder=fake, generator=gen)  # the planner writes with the generator handed in
    r = ix.query(q, QueryConfig(strategy="hybrid", planner="llm", decompose=True))
    assert r.plan.planner == "llm" and r.plan.rewritten.startswith("What nationality were")
    assert r.plan.rewritten in r.plan.expanded_queries and len(r.plan.sub_queries) == 2
    assert any(k.startswith("sub_query_") for k in r.timings_ms)  # with --decompose the sub-questions are retrieved
    assert "Query: derrickson wood nationality\nRewritten:" in gen.prompts[0]
    for broken in (FakeGenerator(error=ModelUnavailable("no model")), FakeGenerator("Nothing to say.")):
        ix = ragkit.open(ix.path, embedder=fake, generator=broken)
        r = ix.query(q, QueryConfig(strategy="hybrid", planner="llm"))
        assert r.plan.planner == "rules" and "rule plan used" in r.plan.planner_notes[-1] and r.passages
    with pytest.raises(BadQuery):
        ix.query(q, QueryConfig(planner="oracle"))


def test_llm_planner_with_the_bundled_model(tmp_path, index_with, unloaded):
    """The bundled 270M model at temperature 0 (a fresh instance: a reused KV-cache prefix can change the
    output) writes a rewrite that passes the checks; no sub-questions for a single question."""
    root = tmp_path / "d"
    write(root, "a.md", "# Overtime\n\nOvertime is limited to ten hours per week.\n")
    _, ix = index_with(root)
    q = "overtime limit per week for remote workers"
    r = ix.query(q, QueryConfig(planner="llm"))
    rewritten = r.plan.rewritten
    assert r.plan.planner == "llm" and r.plan.planner_notes == [] and r.passages
    assert rewritten and "\n" not in rewritten and rewritten != q and r.plan.expanded_queries == [rewritten]
    kept = [w for w in ("overtime", "limit", "week", "remote", "workers") if w in rewritten.lower()]
    assert len(kept) >= 3 and r.plan.sub_queries == []  # the rewrite keeps 60 % of the query's words
