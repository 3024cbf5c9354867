"""``ragkit query`` without a question on a terminal: an interactive session.

The index, the embedder and (on the first answer) the GGUF model are loaded
once, so every query after the first is warm. Input comes from a
prompt_toolkit prompt with history kept in the index folder
(``.query_history``). Ctrl-C cancels the running query or answer, not the
session; Ctrl-D or ``:quit`` ends it.
"""

from __future__ import annotations

from dataclasses import replace

from ragkit.cli import output
from ragkit.config import ANSWER_MODES, STRATEGY_NAMES, parse_filters
from ragkit.errors import BadQuery, RagkitError
from ragkit.render import print_result, result_dict

HELP = f"""Commands:
  :strategy NAME        {", ".join(STRATEGY_NAMES)}
  :k N                  passages per query
  :answer on|off|MODE   answer too: auto (on), extract (quotes from the passages), generate (the model's, checked)
  :explain on|off       show the plan and scoring details
  :filter KEY=VALUE     add a filter (doc_type, collection, path=GLOB, front-matter keys); :filter clear
  :open N               the full section of passage N of the last result (counts as a click on it)
  :good N, :bad N       passage N of the last result answered the question, or did not
  :grade N G            passage N graded 0 (wrong) … 3 (exactly right)
  :answer good|bad      the last answer was right, or was not
  :json                 the last result as JSON
  :help, :quit          this help; leave (Ctrl-D works too)
Anything else is a query. Ctrl-C cancels a running query or answer."""


class Session:
    def __init__(self, ix, cfg, console, explain: bool = False):
        self.ix, self.cfg, self.console, self.explain = ix, cfg, console, explain
        self.last = None

    # ------------------------------------------------------------ commands

    def command(self, line: str) -> bool:
        """Run a ``:command``; False when the session should end."""
        name, _, arg = line[1:].strip().partition(" ")
        arg = arg.strip()
        if name in ("quit", "q", "exit"):
            return False
        if name == "help":
            self.console.print(HELP, highlight=False)
        elif name == "strategy" and arg:
            self.cfg = replace(self.cfg, strategy=arg)  # (a config checks itself: an unknown name is BadQuery)
        elif name == "k" and arg.isdigit() and int(arg) > 0:
            self.cfg = replace(self.cfg, k=int(arg))
        elif name in ("good", "bad") and arg.isdigit():
            self.rate(int(arg), name)
        elif name == "grade" and len(arg.split()) == 2 and all(x.isdigit() for x in arg.split()):
            rank, grade = (int(x) for x in arg.split())
            self.rate(rank, grade)
        elif name == "answer" and arg in ("good", "bad"):
            self.rate(None, arg)
        elif name == "answer" and arg in ("on", "off", *ANSWER_MODES):
            mode = arg if arg in ANSWER_MODES else self.cfg.answer_mode
            self.cfg = replace(self.cfg, answer=arg != "off", answer_mode=mode)
        elif name == "explain" and arg in ("on", "off"):
            self.explain = arg == "on"
        elif name == "filter" and arg == "clear":
            self.cfg = replace(self.cfg, filters={})
        elif name == "filter" and arg:
            self.cfg = replace(self.cfg, filters={**self.cfg.filters, **parse_filters([arg])})
        elif name == "open" and arg.isdigit():
            self.open(int(arg))
        elif name == "json":
            if self.last is not None:
                self.console.print_json(data=result_dict(self.last, self.explain))
        else:
            raise BadQuery(f"unknown or incomplete command {line!r}", hint="Type :help for the commands")
        self.console.print(
            f"[dim]strategy {self.cfg.strategy} · k {self.cfg.k} · answer "
            f"{self.cfg.answer_mode if self.cfg.answer else 'off'} · filters {self.cfg.filters or 'none'}[/]"
        )
        return True

    def open(self, rank: int) -> None:
        """Print the whole section passage ``rank`` of the last result comes from."""
        passage = next((p for p in self.last.passages if p.rank == rank), None) if self.last else None
        if passage is None:
            self.console.print(f"[yellow]no passage {rank} in the last result[/]")
            return
        section = self.ix.section(passage.section_id)
        self.console.rule(f"{passage.path} · {passage.section}")
        self.console.print(section["text"], highlight=False)
        self._feedback(rank, 1, kind="open")

    def rate(self, rank: int | None, grade: int | str) -> None:
        """Feedback on passage ``rank`` of the last result (its answer when None)."""
        if self.last is None:
            self.console.print("[yellow]no result to rate yet: ask a question first[/]")
            return
        if rank is None and self.last.answer is None:
            self.console.print("[yellow]the last result has no answer (:answer on asks for one)[/]")
            return
        event = self._feedback(rank, grade)
        if event is not None:
            what = "the answer" if rank is None else f"passage {rank}"
            self.console.print(f"[green]noted:[/] {what} graded {event['grade']} (query {self.last.query_id})")

    def _feedback(self, rank: int | None, grade: int | str, kind: str = "explicit"):
        try:
            return self.ix.feedback(self.last.query_id, rank=rank, grade=grade, kind=kind, source="session")
        except RagkitError as exc:
            if kind == "explicit":
                raise
            self.console.print(f"[dim]not kept as a click: {exc}[/]")
            return None

    # ------------------------------------------------------------ queries

    def ask(self, text: str) -> None:
        result, error = output.run_query(self.ix, text, self.cfg, None, "session", con=self.console)
        if error is not None:
            self.console.print(f"[red]no answer:[/] {error}")
        self.last = result
        if self.explain:
            self.console.print_json(data=result.plan.to_dict())
        print_result(self.console, result, self.explain)

    def handle(self, line: str) -> bool:
        """One input line; False when the session should end. Errors are shown, never fatal."""
        line = line.strip()
        if not line:
            return True
        try:
            if line.startswith(":"):
                return self.command(line)
            self.ask(line)
        except KeyboardInterrupt:
            self.console.print("[yellow]cancelled[/]")
        except RagkitError as exc:
            self.console.print(f"[red]error:[/] {exc}" + (f"\n[dim]hint: {exc.hint}[/]" if exc.hint else ""))
        return True


def run(ix, cfg, console, explain: bool = False, input=None, output=None) -> None:
    """The prompt loop (``input``/``output``: prompt_toolkit pipes for tests)."""
    from prompt_toolkit import PromptSession  # (loaded when a session starts, not with the CLI)
    from prompt_toolkit.history import FileHistory

    session = Session(ix, cfg, console, explain)
    prompt = PromptSession(history=FileHistory(str(ix.path / ".query_history")), input=input, output=output)
    console.print(
        f"[bold]ragkit[/] · {ix.path} · {ix.reader.manifest.counts.documents} documents · "
        "type a question, :help for commands, Ctrl-D to leave"
    )
    while True:
        try:
            line = prompt.prompt("ragkit> ")
        except KeyboardInterrupt:
            continue  # Ctrl-C on an empty prompt clears the line
        except EOFError:
            break
        if not session.handle(line):
            break
