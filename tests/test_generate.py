"""The GGUF generator: chat templates from the model file, one shared instance per model, unreadable files."""

import json

import pytest
from typer.testing import CliRunner

from ragkit import generate
from ragkit.cli.app import app
from ragkit.errors import ModelUnavailable
from ragkit.library import Models

# a Gemma-style chat template, as instruction-tuned GGUF files carry it under tokenizer.chat_template
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' "
    "else m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def test_a_model_with_a_chat_template_gets_prompts_as_a_user_turn(monkeypatch):
    import llama_cpp

    real = llama_cpp.Llama

    def templated(*args, **kwargs):  # the bundled model, as if its GGUF carried a chat template
        llm = real(*args, **kwargs)
        llm.metadata["tokenizer.chat_template"] = TEMPLATE
        return llm

    monkeypatch.setattr(llama_cpp, "Llama", templated)
    gen = generate.Generator(generate.resolve_model(None), n_ctx=1024)
    tokens, stop = gen.encode("Name a colour.")
    assert (
        gen.llm.detokenize(tokens, special=True).decode()
        == "<bos><start_of_turn>user\nName a colour.<end_of_turn>\n<start_of_turn>model\n"
    )
    assert stop == ["<eos>"] and gen.prompt_tokens("Name a colour.") > gen.count_tokens("Name a colour.") + 5
    out = "".join(gen.stream("Name a colour.", max_tokens=8, temperature=0.0))
    assert out.strip() and "<start_of_turn>" not in out  # the model wrote on after the rendered turn

    gen.use_template(None)  # a base model: the prompt is completed as it is
    tokens, stop = gen.encode("Name a colour.")
    assert gen.llm.detokenize(tokens, special=True).decode() == "<bos>Name a colour." and stop == []


def test_one_model_instance_serves_every_context_size_up_to_its_own(monkeypatch, tmp_path, unloaded):
    made = []

    class Loaded:
        def __init__(self, path, n_ctx):
            self.n_ctx = n_ctx
            made.append(n_ctx)

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(generate, "Generator", Loaded)
    answer_model = generate.load_generator(str(model), n_ctx=4096)
    assert generate.load_generator(str(model), n_ctx=2048) is answer_model  # the planner shares it
    bigger = generate.load_generator(str(model), n_ctx=8192)
    assert bigger is not answer_model and generate.load_generator(str(model), n_ctx=4096) is bigger
    assert made == [4096, 8192]


def test_an_unreadable_model_file_is_named_and_the_passages_stay(tmp_path, corpus, index_with, fake, unloaded):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelUnavailable, match="cannot load the GGUF model .*broken.gguf"):
        generate.Generator(bad)

    _, ix = index_with(corpus)
    models = Models(embedder=fake)  # handed to the CLI (the context object); the CLI loads the generator
    query = ["query", "how is overtime limited?", "--index", str(ix.path), "--model", str(bad)]
    r = CliRunner().invoke(app, [*query, "--answer", "--answer-mode", "generate"], obj=models)
    assert r.exit_code == 5 and "broken.gguf" in r.output and "Overtime Policy" in r.output
    r = CliRunner().invoke(app, [*query, "--answer", "--json"], obj=models)  # auto: the quotes, and why
    a = json.loads(r.output)["answer"]
    assert r.exit_code == 0 and a["mode"] == "extract" and a["quotes"] and "broken.gguf" in a["note"]


def test_the_base_writes_complete_stream_and_timed_once():
    """``BaseGenerator``: ``complete`` and ``stream`` with their defaults, a stream's empty pieces left out,
    ``prompt_tokens`` as ``count_tokens``, ``timed``; a backend writes only how it completes and streams."""
    calls = []

    class Echo(generate.BaseGenerator):
        kind, n_ctx, name = "echo", 64, "echo"

        def count_tokens(self, text):
            return len(text.split())

        def _complete(self, prompt, max_tokens, stop, temperature, repeat_penalty):
            calls.append((max_tokens, stop, temperature, repeat_penalty))
            return prompt.upper()

        def _pieces(self, prompt, max_tokens, stop, temperature, repeat_penalty):
            calls.append((max_tokens, stop, temperature, repeat_penalty))
            yield from ["a", "", None, "b"]

    gen = Echo()
    assert gen.complete("hi there") == "HI THERE" and list(gen.stream("x", stop=["\n"])) == ["a", "b"]
    assert calls == [(256, None, 0.0, 1.0), (512, ["\n"], 0.3, 1.0)]
    assert gen.prompt_tokens("one two three") == 3 and gen.timed(["p", "q"], 8) >= 0.0
    for backend in (generate.Generator, generate.HttpGenerator):
        assert issubclass(backend, generate.BaseGenerator)
        assert not {"complete", "stream", "timed"} & set(vars(backend)), backend
