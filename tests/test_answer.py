"""Written answers: prompt building within the context budget, citation parsing and mapping, streaming; through
the CLI with ``--answer generate`` (checked) and its degradation paths."""

import json

import pytest
from typer.testing import CliRunner

from ragkit.answer.generated import PROMPT, answer, build_prompt, cite
from ragkit.cli import answer_modes
from ragkit.cli.app import app
from ragkit.library import Models
from ragkit.records import Passage
from tests.fakes import FakeEmbedder, FakeGenerator


def _passage(rank: int, words: int, path: str = "a.md") -> Passage:
    text = " ".join(f"w{rank}_{i}" for i in range(words))
    return Passage(
        rank=rank,
        score=1.0 / rank,
        anchor_score=1.0,
        document_id=f"d{rank}",
        path=path,
        title="T",
        section=f"T > S{rank}",
        line_start=rank * 10,
        line_end=rank * 10 + 3,
        text=text,
        chunk_ids=[f"c{rank}"],
        token_count=words,
    )


def words(text: str) -> int:
    return len(text.split())


def test_prompt_numbers_sources_by_rank_and_stays_within_the_budget():
    passages = [_passage(2, 30), _passage(1, 30), _passage(3, 200), _passage(4, 10)]
    n_ctx, answer_tokens = 300, 40
    prompt, sources = build_prompt("why?", passages, words, n_ctx, answer_tokens)
    assert [s.passage.rank for s in sources] == [1, 2, 4]  # 3 is too long; the shorter 4 still fits
    assert [s.number for s in sources] == [1, 2, 3]
    assert words(prompt) <= n_ctx - answer_tokens
    assert prompt.endswith("Question: why?\nAnswer:") and "[3] T > S4 (a.md:40-43)" in prompt
    assert PROMPT.split("{language}")[0] in prompt and "in English using only the numbered sources" in prompt


def test_a_first_passage_too_long_for_the_window_is_cut_not_dropped():
    prompt, sources = build_prompt("q", [_passage(1, 500)], words, 250, 40)
    assert len(sources) == 1 and words(prompt) <= 210 and "…" in prompt


def test_citations_map_to_passages_and_bad_ones_are_dropped_and_counted():
    _, sources = build_prompt("q", [_passage(1, 5, "x.md"), _passage(2, 5, "y.md")], words, 500, 50)
    text, citations, dropped = cite("Overtime is capped [1]. Pay is higher [2, 7]. Rest is free [9].", sources)
    assert text == "Overtime is capped [1]. Pay is higher [2]. Rest is free."
    assert [(c.number, c.rank, c.path, c.lines) for c in citations] == [
        (1, 1, "x.md", (10, 13)),
        (2, 2, "y.md", (20, 23)),
    ]
    assert dropped == 2


def test_answer_streams_and_reports_tokens_and_citations():
    got = []
    gen = FakeGenerator(pieces=["1]", ", overtime", " is capped.", " See [5]."], n_ctx=400)
    a = answer(gen, "how is overtime limited?", [_passage(1, 20)], max_tokens=64, on_text=got.append)
    assert "".join(got) == "According to [1], overtime is capped. See [5]."  # the answer's first words stream too
    assert gen.prompts[0].endswith("Question: how is overtime limited?\nAnswer: According to [")
    assert a.text == "According to [1], overtime is capped. See." and a.dropped_citations == 1
    assert a.citations[0].rank == 1 and a.model == "fake.gguf"
    assert a.prompt_tokens == gen.prompt_tokens(gen.prompts[0])  # what the model read, the prefix included
    assert a.completion_tokens == 6 and a.first_token_seconds is not None and a.sources == [1]


def test_answer_without_sources_or_through_a_chat_template_gets_no_prefix():
    bare = FakeGenerator(pieces=[" I do not know."])
    assert answer(bare, "q?", []).text == "I do not know." and bare.prompts[0].endswith("Answer:")
    chat = FakeGenerator(pieces=[" Capped [1]."])
    chat.chat = object()  # an instruction model answers in its own turn: nothing to continue
    a = answer(chat, "q?", [_passage(1, 5)])
    assert chat.prompts[0].endswith("Answer:") and a.text == "Capped [1]." and a.citations[0].rank == 1


def test_real_answer_with_the_bundled_model_states_the_fact_it_was_given():
    """The bundled 270M base model at temperature 0: the generated part, after the forced "According to [",
    names the source and states the limit it was given ("10" is in neither the question nor the prefix).

    A fresh model instance: llama-cpp-python reuses the KV cache of the previous prompt's shared prefix,
    and the same prompt can then come out differently. What the 270M model can do sets the case: one
    source with one fact (given "10 hours per week and 40 hours per calendar month" it states the 40)."""
    from ragkit.generate import Generator, resolve_model

    p = _passage(1, 0)
    p.text = "Overtime is limited to 10 hours per week."
    got = []
    a = answer(
        Generator(resolve_model(None)),
        "What is the limit on overtime?",
        [p],
        max_tokens=40,
        temperature=0.0,
        on_text=got.append,
    )
    assert a.text.startswith("According to [")
    generated = a.text.removeprefix("According to [")
    assert generated.startswith("1], ") and "10 hours per week" in generated
    assert "".join(got).strip() == a.text  # what streamed is the answer
    assert [c.rank for c in a.citations] == [1] and a.dropped_citations == 0 and a.sources == [1]


# ---- --answer through the CLI: success and the degradation paths (passages always out)

runner = CliRunner()


@pytest.fixture
def indexed(corpus, tmp_path):
    idx = str(tmp_path / "idx")
    assert runner.invoke(app, ["index", str(corpus), "--index", idx], obj=_use()).exit_code == 0
    return idx


def _use(gen=None) -> Models:
    """The models handed to the CLI (the context object): the fake embedder, and ``gen`` writing the answers
    (None: the CLI loads the model the settings or ``--model`` name)."""
    return Models(embedder=FakeEmbedder(), generator=gen)


def test_cli_answer_streams_then_sources(indexed):
    models = _use(FakeGenerator(pieces=["1], overtime is limited", " to ten hours", " [4]."]))
    args = answer_modes(["query", "how is overtime limited?", "--index", indexed, "--answer", "generate", "-k", "2"])
    r = runner.invoke(app, args, obj=models)
    assert r.exit_code == 0, r.output
    out = r.output
    assert out.index("Answer") < out.index("According to [1], overtime is limited to ten hours") < out.index("[1] ")
    assert "1 citation(s) named no source" in out and "fake.gguf" in out
    r = runner.invoke(app, [*args, "--json"], obj=models)
    a = json.loads(r.output)["answer"]
    assert a["text"] == "According to [1], overtime is limited to ten hours." and a["dropped_citations"] == 1
    assert a["mode"] == "generate" and a["grounded"] == 1.0 and not a["abstained"] and not a["replaced"]
    assert a["sentences"][0]["supported"] and a["sentences"][0]["cited"] == [1]
    assert a["citations"][0]["rank"] == 1 and a["citations"][0]["path"].endswith(".md")
    assert {"prompt_tokens", "completion_tokens", "seconds", "tokens_per_second", "model"} <= set(a)
    meta = json.loads(r.output)["metadata"]
    assert meta["llm_calls"] == 1 and meta["context_count"] == 2 and meta["tokens"]["completion"] == 8
    assert meta["strategy"] and "dense" in meta["timings_ms"]


def test_cli_answer_degrades_with_passages_kept(indexed, monkeypatch, tmp_path, unloaded):
    missing = ["--answer", "--answer-mode", "generate", "--model", str(tmp_path / "no.gguf")]
    r = runner.invoke(app, ["query", "overtime", "--index", indexed, *missing], obj=_use())
    assert r.exit_code == 5 and "Overtime Policy" in r.output and "GGUF model not found" in r.output
    r = runner.invoke(app, ["query", "overtime", "--index", indexed, *missing, "--json"], obj=_use())
    d = json.loads(r.stdout if hasattr(r, "stdout") else r.output.split("\nerror")[0])
    assert r.exit_code == 5 and d["passages"] and "GGUF model not found" in d["answer_error"]

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(__import__("sys").modules, "llama_cpp", None)  # llama-cpp-python not installed
    r = runner.invoke(
        app,
        ["query", "overtime", "--index", indexed, "--answer-mode", "generate", "--answer", "--model", str(model)],
        obj=_use(),  # nothing loaded yet (the unloaded fixture): the CLI loads the model, and cannot
    )
    assert r.exit_code == 5 and "needs the llm extra, which is not installed" in r.output
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in r.output and 'pip install "ragkit[llm]"' in r.output
    assert "Overtime Policy" in r.output

    broken = _use(FakeGenerator(error=RuntimeError("llama_decode returned -3")))
    r = runner.invoke(app, answer_modes(["query", "overtime", "--index", indexed, "--answer", "generate"]), obj=broken)
    assert r.exit_code == 11 and "failed while answering" in r.output and "Overtime Policy" in r.output


def test_global_answer_maps_reports_then_reduces():
    from ragkit.answer.generated import map_reduce

    def model(prompt: str) -> str:
        if prompt.endswith("According to ["):  # the reduce step
            return "1], overtime is capped."
        if "Northwind" in prompt:
            return "- Northwind caps overtime at ten hours a week.\n- Leave is granted instead of pay."
        return " no relevant information"

    gen = FakeGenerator(model)
    a = map_reduce(
        gen,
        "how is overtime handled?",
        [_passage(1, 10)],
        ["Community: Northwind, overtime", "Community: Mercury, planets"],
        max_tokens=64,
    )
    *maps, reduce = gen.prompts
    assert len(maps) == 2 and all("Question: how is overtime handled?" in c for c in maps)
    assert a.llm_calls == 3 and a.map_notes == 2
    assert "Notes from the community reports:\n- Northwind caps overtime" in reduce
    assert "planets" not in reduce and a.text == "According to [1], overtime is capped."


def test_api_answer_uses_map_reduce_for_global(tmp_path, index_with, fake):
    import ragkit
    from ragkit.config import QueryConfig
    from tests.conftest import write

    root = tmp_path / "band"
    write(
        root,
        "a.md",
        "# Nirvana\n\nKurt Cobain, Dave Grohl and Krist Novoselic formed Nirvana in Aberdeen.\n\n"
        "Kurt Cobain wrote most songs of Nirvana in Aberdeen and Olympia.\n",
    )
    _, ix = index_with(root)
    r = ix.query("main themes of the band", QueryConfig(strategy="global", k=2))
    assert any(i["type"] == "community" for i in r.context_items)

    gen = FakeGenerator("- Nirvana was formed in Aberdeen.")
    answered = ragkit.open(ix.path, embedder=fake, generator=gen).answer_for(
        r, QueryConfig(answer=True, answer_mode="generate")
    )
    assert answered.error is None
    a = answered.answer
    reports = sum(i["type"] == "community" for i in r.context_items)
    assert a.llm_calls == len(gen.prompts) == reports + 1  # one map call per report, one reduce
    assert a.map_notes == reports  # every report gave a point
