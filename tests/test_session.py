"""The interactive session, driven through prompt_toolkit's pipe input (fake embedder, fake generator)."""

import io

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from ragkit.cli import session
from ragkit.config import QueryConfig
from tests.fakes import FakeGenerator


def _run(ix, lines: str, cfg=None) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=120, force_terminal=False, color_system=None)
    with create_pipe_input() as inp:
        inp.send_text(lines)
        session.run(ix, cfg or QueryConfig(strategy="hybrid", k=2), console, input=inp, output=DummyOutput())
    return buf.getvalue()


def test_session_queries_commands_and_history(corpus, index_with):
    _, ix = index_with(corpus)
    out = _run(
        ix,
        "rollback container\n:k 1\n:strategy lexical\n:filter doc_type=policy\novertime\n"
        ":open 1\n:json\n:filter clear\n:strategy nonsense\n:help\n:quit\n",
    )
    assert "deploy.rst" in out and "Deployment > Rollbacks" in out  # the first query, k 2
    assert "strategy lexical · k 1" in out and "filters {'doc_type': 'policy'}" in out
    assert "Overtime is limited to ten hours per week" in out  # :open 1 prints the whole section
    assert '"strategy": "lexical"' in out  # :json of the last result
    assert "unknown strategy 'nonsense'" in out and ":answer on|off" in out  # errors do not end the session
    history = (ix.path / ".query_history").read_text()
    assert "rollback container" in history and ":open 1" in history


def test_session_ends_on_ctrl_d_and_answers_when_asked(corpus, index_with, monkeypatch):
    _, ix = index_with(corpus)

    gen = FakeGenerator(pieces=["1], ten hours", " a week."])
    # the session loads the generate model itself on the first answer that writes (as `ragkit query` does)
    monkeypatch.setattr("ragkit.library.answering.load_generator", lambda spec=None, n_ctx=2048, keys=None: gen)
    out = _run(ix, ":answer on\nhow is overtime limited?\n:answer generate\nhow is overtime limited?\n\x04")
    quoted, written = out.split("answer generate", 1)
    assert "answer auto" in quoted and "“Overtime is limited to ten hours per week.” [1]" in quoted  # no model: quotes
    assert len(gen.prompts) == 1 and "According to [1], ten hours a week." in written and "fake.gguf" in written


def test_session_survives_a_cancelled_query(corpus, index_with, monkeypatch):
    _, ix = index_with(corpus)
    calls = []

    def interrupted(*a, **k):
        calls.append(1)
        raise KeyboardInterrupt

    out = io.StringIO()
    s = session.Session(ix, QueryConfig(k=1), Console(file=out))
    monkeypatch.setattr(ix, "ask", interrupted)
    assert s.handle("overtime") is True and calls == [1]  # Ctrl-C cancels the query, the session goes on
    assert out.getvalue().strip() == "cancelled"
    assert s.handle(":quit") is False
