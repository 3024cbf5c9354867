"""Two workspaces on one index, for ``ragkit serve`` with tokens (tests/test_team.py, scripts/bench_query.py team).

Team A (collection ``team-a``) and team B (``team-b``) write about the same people, companies and project (Helena
Varga, Northwind Logistics, Project Orion, Oslo), so they share entities and their graphs meet; each has names,
identifiers and sentences of its own: its markers. A shared collection (``laws``) and documents indexed without
a collection (``default``) are readable by both. Token A must never receive a byte of B's markers (nor B's
document, section or chunk ids), whatever it asks; token B does receive them (the check has teeth).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

DOCS = {
    "alpha": {  # team A
        "orion-plan.md": """
            ---
            title: Project Orion at the Amberfield Depot
            ---
            # Project Orion at the Amberfield Depot

            ## Goals

            Helena Varga leads Project Orion for the Amberfield Depot. Helena Varga and Northwind Logistics agreed
            that the Amberfield Depot ships the first Orion crates from Oslo in March.
            Marcus Lindqvist of the Amberfield Depot signs every crate list with the code AMB-7731.

            ## People

            Marcus Lindqvist reports to Helena Varga. Northwind Logistics sends Greta Amberg to the Amberfield
            Depot each Monday. Greta Amberg and Marcus Lindqvist check the Orion crates together in Oslo.

            ## Decisions

            Helena Varga decided that Project Orion keeps two spare trucks at the Amberfield Depot. Northwind
            Logistics pays for the second truck; Marcus Lindqvist keeps its keys.
            """,
        "amberfield-shifts.md": """
            # Amberfield Shift Rules

            ## Night shifts

            At the Amberfield Depot a night shift lasts at most eight hours. Greta Amberg plans the night shifts
            with Marcus Lindqvist, and Helena Varga approves the plan every quarter.

            ## Overtime

            Overtime at the Amberfield Depot is paid at the amber rate of 130 percent. Marcus Lindqvist records
            overtime in the ledger AMB-7731; Northwind Logistics refunds half of it for Project Orion.
            """,
    },
    "bravo": {  # team B
        "orion-rollout.md": """
            ---
            title: Project Orion in the Zebraquill Foundry
            ---
            # Project Orion in the Zebraquill Foundry

            ## Goals

            Helena Varga leads Project Orion for the Zebraquill Foundry. Helena Varga and Northwind Logistics agreed
            that the Zebraquill Foundry casts the Orion frames in Oslo from June.
            Odalys Bluequartz of the Zebraquill Foundry approves every frame with the stamp ZQX-4409.

            ## People

            Odalys Bluequartz reports to Helena Varga. Northwind Logistics sends Tobias Kettlewire to the
            Zebraquill Foundry each Friday. Tobias Kettlewire and Odalys Bluequartz weigh the Orion frames in Oslo.

            ## Decisions

            Helena Varga decided that Project Orion melts the Zebraquill scrap on site. Northwind Logistics pays
            for the furnace; Odalys Bluequartz keeps the furnace log ZQX-4409.
            """,
        "zebraquill-budget.md": """
            # Zebraquill Budget

            ## Furnace costs

            The Zebraquill Foundry spends 41 quillcoins a week on the furnace. Tobias Kettlewire and Odalys
            Bluequartz review the furnace costs, and Helena Varga signs them for Project Orion.

            ## Frames

            Each Orion frame of the Zebraquill Foundry costs nine quillcoins. Odalys Bluequartz books the frames
            under ZQX-4409; Northwind Logistics carries them to Oslo.
            """,
        "zebraquill-charter.md": """
            # Zebraquill Charter (ZQC)

            ## § 5 Rest periods

            Foundry workers of the Zebraquill Foundry rest for twelve hours after a furnace shift.

            ## § 6 Furnace watch

            Odalys Bluequartz names the furnace watch of the Zebraquill Foundry every week.
            """,
    },
    "laws": {  # shared
        "working-hours-act.md": """
            # Working Hours Act (WHA)

            ## § 3 Daily working time

            The daily working time of employees shall not exceed eight hours. It may be extended to ten hours
            when the average over six months stays at eight hours.

            ## § 4 Rest breaks

            Work shall be interrupted by rest breaks of at least thirty minutes after six hours of work.
            """,
    },
    "handbook": {  # no collection: "default"
        "office.md": """
            # Office Handbook

            ## Visitors

            Helena Varga welcomes visitors of Northwind Logistics at the Oslo office. Visitors sign in at the desk.

            ## Keys

            Office keys are handed out by the front desk and returned on the last working day.
            """,
    },
}
COLLECTIONS = {"alpha": "team-a", "bravo": "team-b", "laws": "laws", "handbook": None}
MARKERS = {  # what only one team's documents say
    "team-a": ["Amberfield", "Lindqvist", "AMB-7731", "Amberg", "alpha/"],
    "team-b": ["Zebraquill", "Bluequartz", "ZQX-4409", "Kettlewire", "quillcoin", "bravo/", "ZQC"],
}
QUESTIONS = [  # token A's questions (B's are the same): shared names, an overview, a summary, a law
    "What did Helena Varga decide about Project Orion?",
    "Who does Northwind Logistics send to Oslo?",
    "Give an overview of the main themes",
    "Summarize the Project Orion plan",
    "How long may the daily working time be under § 3 WHA?",
]
STRATEGIES = ["naive", "lexical", "hybrid", "local", "global", "light", "hippo", "hierarchical", "auto"]


def write_corpus(root: Path) -> dict[str, Path]:
    """The four folders under ``root``; their paths by name."""
    out = {}
    for folder, files in DOCS.items():
        for name, text in files.items():
            path = root / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
        out[folder] = root / folder
    return out


def build_index(root: Path, index_dir: Path) -> Path:
    """The corpus indexed into one index, each folder with its collection (bundled models, rules entities)."""
    from dataclasses import replace

    import ragkit
    from ragkit.config import IndexConfig

    folders = write_corpus(root)
    for folder, collection in COLLECTIONS.items():
        cfg = IndexConfig() if collection is None else replace(IndexConfig(), collection=collection)
        ragkit.index([folders[folder]], index_dir, cfg=cfg)
    return index_dir


def ids_of(index_dir: Path, collection: str) -> list[str]:
    """The document, section and chunk ids of one collection (markers too: ids of B must not reach A)."""
    import duckdb

    manifest = json.loads((index_dir / "manifest.json").read_text())
    con = duckdb.connect(str(index_dir / f"store.{manifest['last_run']['id']}.duckdb"), read_only=True)
    try:
        docs = [r[0] for r in con.execute("SELECT id FROM documents WHERE collection = ?", [collection]).fetchall()]
        rest = []
        for table in ("sections", "chunks"):
            q = f"SELECT id FROM {table} WHERE document_id IN (SELECT id FROM documents WHERE collection = ?)"
            rest += [r[0] for r in con.execute(q, [collection]).fetchall()]
    finally:
        con.close()
    return docs + rest


def tokens_file(path: Path, limits: dict[str, int] | None = None) -> tuple[Path, dict[str, str]]:
    """A tokens file for teams A and B (and the environment holding their values)."""
    env = {"RAGKIT_TOKEN_A": secrets.token_urlsafe(24), "RAGKIT_TOKEN_B": secrets.token_urlsafe(24)}
    lines = ['shared = ["laws"]', ""]
    if limits:
        lines += ["[limits]", *(f"{k} = {v}" for k, v in limits.items()), ""]
    for team, var in (("a", "RAGKIT_TOKEN_A"), ("b", "RAGKIT_TOKEN_B")):
        lines += ["[[token]]", f'name = "team-{team}"', f'value_env = "{var}"', f'collections = ["team-{team}"]', ""]
    path.write_text("\n".join(lines))
    return path, env


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    def token(self, team: str) -> str:
        return self.env[f"RAGKIT_TOKEN_{team.upper()}"]

    def call(self, path: str, body=None, token: str | None = None, raw: bytes | None = None, method: str | None = None):
        """(status, JSON body) of one request (``raw``: these bytes as the body)."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def alive(self) -> bool:
        return self.proc.poll() is None and self.call("/healthz")[0] == 200


@contextmanager
def serve(index_dir: Path, log: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    """``ragkit serve --index INDEX --port 0 ARGS…`` until the block ends; its stderr in ``log``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    port_file = index_dir / "server.json"
    port_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "ragkit", "serve", "--index", str(index_dir), "--port", "0", *args]
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.time() + 300
        while not port_file.exists():
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the server did not start: {log.read_text()[-3000:]}")
            time.sleep(0.1)
        info = json.loads(port_file.read_text())
        yield Server(info["url"], proc, log, env)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def leaks(text: str, markers: list[str], asked: str = "") -> list[str]:
    """The markers ``text`` holds that the request (``asked``) did not name itself."""
    low, asked = text.lower(), asked.lower()
    return [m for m in markers if m.lower() in low and m.lower() not in asked]
