"""Crash and concurrency harness for ``ragkit index`` (issue 16), with the real CLI and the bundled model.

Kills (``--kills``, default 20; ``--commit-kills``, default 10): the folder (the Rust book and two German laws, copied to ``--work``) changes
before every run: Rust chapters edited, a note added and an older one removed, a paragraph of a law edited.
Each run of ``ragkit index`` is killed with SIGKILL at a time drawn uniformly from [0, T), T the duration of
the last completed run (so kills land in start-up, parsing, embedding, writing and the commit; then
``--commit-kills`` more, drawn from that run's LanceDB write and commit, the window a uniform kill rarely hits). After each
kill: ``ragkit check`` must pass, ``ragkit query --json`` must answer from the last committed run (its
``metadata.run`` is the manifest's and every passage is a chunk of that run), and the next ``ragkit index`` must
complete. At the end the index must equal a clean ``--full`` build of the final folder and a twin index that
went through the same folder states without kills: same documents and chunks (ids and counts); the top 10 of 20
queries is reported (as sets and in order).

Loop (``--loop``): a reader that follows the index asks questions without pause (hybrid, auto, hippo, local,
global in turn) while three ``ragkit index`` runs on the changing folder commit, in other processes. Every
answer must come from a committed run (its passages are chunks of the run it names); failures must be 0.

    python scripts/crash_test.py --work /tmp/crash [--kills 20] [--commit-kills 10] [--loop] [--seed 16]

(Shares scripts/harness.py with the benchmark entry points; run it from anywhere.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Annotated

import typer
from harness import SHARED, open_index, print_table, query_config, run_seconds
from harness import ragkit_cmd as ragkit
from rich.console import Console

from ragkit.store.chunks import open_chunks
from ragkit.store.layout import LANCE_DIR

LAWS = ["t/tzbfg/index.md", "a/arbzg/index.md"]  # two of the German laws (edited in turn)
QUERIES = [
    "How do I read a file into a string?",
    "What is ownership in Rust?",
    "How do I handle errors with Result?",
    "What does the borrow checker check?",
    "How do I spawn a thread?",
    "What is a trait object?",
    "How are closures captured?",
    "What is the difference between Box and Rc?",
    "How do I write tests?",
    "What are lifetimes?",
    "Wie lange darf die tägliche Arbeitszeit sein?",
    "Ruhepausen bei sechs Stunden Arbeit",
    "Sonntagsarbeit Ausnahmen",
    "Nachtarbeitnehmer Gesundheitsuntersuchung",
    "Wie viel Urlaub im Tarifvertrag?",
    "Anspruch auf Verringerung der Arbeitszeit",
    "befristeter Arbeitsvertrag ohne Sachgrund",
    "Diskriminierungsverbot Teilzeit",
    "crash safety of the parking note",
    "pattern matching with match",
]
console = Console()


def build_folder(work: Path) -> Path:
    folder = work / "folder"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(SHARED / "rust-book" / "src", folder / "book")
    for rel in LAWS:
        (folder / "laws" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SHARED / "german-laws" / "laws" / rel, folder / "laws" / rel)
    return folder


def change(folder: Path, step: int, rng: random.Random) -> None:
    """Edit two chapters, add a note and remove an older one, edit a paragraph of one law."""
    chapters = sorted((folder / "book").glob("ch*.md"))
    for path in rng.sample(chapters, 2):
        with path.open("a") as fh:
            fh.write(f"\n\nEdit {step}: a paragraph added to this chapter between two indexing runs.\n")
    notes = folder / "notes"
    notes.mkdir(exist_ok=True)
    (notes / f"note{step}.md").write_text(
        f"# Note {step}\n\nThe parking note of step {step} is about crash "
        "safety: a killed run leaves the last committed run whole.\n"
    )
    old = notes / f"note{step - 3}.md"
    if old.exists():
        old.unlink()
    law = folder / "laws" / LAWS[step % len(LAWS)]
    text = law.read_text()
    at = text.find("\n\n", rng.randrange(len(text) // 2))
    law.write_text(
        text[:at] + f"\n\nÄnderung {step}: Dieser Absatz wurde zwischen zwei Läufen eingefügt.\n" + text[at:]
    )


def committed(idx: Path) -> tuple[int, set[str]]:
    """The committed run and its chunk ids."""
    manifest = json.loads((idx / "manifest.json").read_text())
    run = manifest["last_run"]
    table = open_chunks(idx / LANCE_DIR, run["lance_table"], run["lance_version"])
    return run["id"], {r["id"] for r in table.rows("true", limit=1 << 30)}


def where(idx: Path, run_before: int, run_now: int, check: dict) -> str:
    """Which part of the run a kill landed in, from what it left."""
    import lance

    if run_now != run_before:
        return "the commit's clean-up (run committed)"
    if any(name.startswith("store.") for name in check.get("leftovers", [])):
        return "the commit (store / graphs written)"
    manifest = json.loads((idx / "manifest.json").read_text())["last_run"]
    latest = lance.dataset(str(idx / LANCE_DIR / f"{manifest['lance_table']}.lance")).version
    if latest > manifest["lance_version"]:
        return "writing LanceDB"
    return "start-up, parse, embed"


def index(folder: Path, idx: Path, *extra: str) -> float:
    return run_seconds(ragkit("index", folder, "--index", idx, *extra))


def kills(args, folder: Path, idx: Path, rng: random.Random) -> bool:
    twin = Path(args.work) / "twin"  # the same folder states, indexed run by run without kills
    shutil.rmtree(twin, ignore_errors=True)
    console.print(f"initial index: {index(folder, idx):.1f} s")
    change(folder, 0, rng)
    last, window = index(folder, idx), (0.0, 1.0)
    index(folder, twin)
    rows, ok, n = [], 0, args.kills + args.commit_kills
    for step in range(1, n + 1):
        run_before, _ = committed(idx)
        change(folder, step, rng)
        in_commit = step > args.kills
        lo, hi = window if in_commit else (0.0, last)
        at = rng.uniform(lo, hi)
        proc = subprocess.Popen(
            ragkit("index", str(folder), "--index", str(idx)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            proc.wait(timeout=at)
            killed = False
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed = True
        check = subprocess.run(ragkit("check", "--index", str(idx), "--json"), capture_output=True, text=True)
        run_now, chunks = committed(idx)
        landed = where(idx, run_before, run_now, json.loads(check.stdout or "{}")) if killed else "finished first"
        q = subprocess.run(
            ragkit("query", "--json", "--index", str(idx), QUERIES[step % len(QUERIES)]),
            capture_output=True,
            text=True,
        )
        answer = json.loads(q.stdout) if q.returncode == 0 else {}
        passages = {c for p in answer.get("passages", []) for c in p["chunk_ids"]}
        from_run = answer.get("metadata", {}).get("run") == run_now and passages <= chunks and bool(passages)
        t0 = time.perf_counter()
        nxt = subprocess.run(
            ragkit("index", str(folder), "--index", str(idx), "--json"), capture_output=True, text=True
        )
        wall = time.perf_counter() - t0
        if nxt.returncode == 0:
            summary = json.loads(nxt.stdout)
            if summary["new"] + summary["changed"] + summary["removed"]:  # the same changes as the killed run's
                secs = summary["seconds"]
                last = wall
                window = (max(0.0, wall - secs.get("write_lance", 0) - secs.get("commit", 0) - 0.1), wall)
        index(folder, twin)
        good = check.returncode == 0 and from_run and nxt.returncode == 0 and run_now in (run_before, run_before + 1)
        ok += good
        rows.append(
            (
                step,
                f"{at:.2f} of {lo:.2f}–{hi:.2f}",
                landed,
                "ok" if check.returncode == 0 else f"exit {check.returncode}: {check.stdout[-200:]}",
                f"run {answer.get('metadata', {}).get('run')} {'ok' if from_run else 'WRONG'}",
                "ok" if nxt.returncode == 0 else f"exit {nxt.returncode}",
                "✓" if good else "✗",
            )
        )
    title = f"kill -9 during ragkit index: {ok}/{n} whole ({args.kills} uniform over the run, "
    cols = ("#", "kill at s (drawn from)", "landed in", "check", "query answers from", "next index", "whole")
    print_table(title + f"{args.commit_kills} uniform over its write + commit)", cols, rows, left=cols, width=150)
    landed = {}
    for r in rows:
        landed[r[2]] = landed.get(r[2], 0) + 1
    console.print("kills landed in: " + ", ".join(f"{k} {v}" for k, v in landed.items()))

    clean = Path(args.work) / "clean"
    shutil.rmtree(clean, ignore_errors=True)
    index(folder, clean, "--full")
    good = ok == n
    for name, other in (("the same runs without kills", twin), ("a clean --full build", clean)):
        same_chunks = committed(idx)[1] == committed(other)[1]
        counts = [json.loads((d / "manifest.json").read_text())["counts"] for d in (idx, other)]
        a, b = open_index(idx), open_index(other)
        sets = order = 0
        for q in QUERIES:
            ta, tb = (
                [h.chunk_id for h in ix.query(q, query_config(k=10, strategy="hybrid")).hits[:10]] for ix in (a, b)
            )
            sets += set(ta) == set(tb)
            order += ta == tb
        console.print(
            f"final index vs {name}: same chunk ids {same_chunks}, same counts "
            f"{counts[0] == counts[1]} ({counts[0]['documents']} documents, {counts[0]['chunks']} chunks); "
            f"top-10 equal as sets {sets}/{len(QUERIES)}, in order {order}/{len(QUERIES)}"
        )
        good &= same_chunks and counts[0] == counts[1]
    return good


def loop(args, folder: Path, idx: Path, rng: random.Random) -> bool:
    index(folder, idx)
    runs = {committed(idx)[0]: committed(idx)[1]}
    answers: list[tuple[int, set[str], float]] = []
    failures: list[str] = []
    stop = threading.Event()
    strategies = ("hybrid", "auto", "hippo", "local", "global")

    def ask() -> None:
        ix = open_index(idx)
        n = 0
        while not stop.is_set():
            t = time.perf_counter()
            try:
                r = ix.query(QUERIES[n % len(QUERIES)], query_config(k=5, strategy=strategies[n % 5]))
                answers.append((r.run, {c for p in r.passages for c in p.chunk_ids}, time.perf_counter() - t))
            except Exception as exc:  # noqa: BLE001 (every failure counts)
                failures.append(f"{type(exc).__name__}: {exc}")
            n += 1

    asking = threading.Thread(target=ask)
    asking.start()
    seconds = []
    try:
        for step in range(1, 4):
            change(folder, 100 + step, rng)
            seconds.append(index(folder, idx))
            run, ids = committed(idx)
            runs[run] = ids
    finally:
        stop.set()
        asking.join()
    wrong = [run for run, ids, _ in answers if run not in runs or not ids <= runs[run]]
    by_run = {run: sum(1 for r, _, _ in answers if r == run) for run in sorted(runs)}
    slow = sorted(s for _, _, s in answers)
    console.print(
        f"queries while 3 runs committed ({', '.join(f'{s:.1f}' for s in seconds)} s): {len(answers)} "
        f"answered, failures {len(failures)}, not from a committed run {len(wrong)}; answers per run "
        f"{by_run}; p50 {slow[len(slow) // 2] * 1000:.1f} ms, max {slow[-1] * 1000:.0f} ms"
    )
    for f in failures[:5]:
        console.print(f"  failure: {f}")
    return not failures and not wrong and len(answers) >= 500


def main(
    work: Annotated[Path, typer.Option(help="the folder, the index and the runs' logs")],
    kills_: Annotated[int, typer.Option("--kills", help="kills at a uniform time over the run")] = 20,
    commit_kills: Annotated[int, typer.Option(help="kills at a uniform time over the run's write and commit")] = 10,
    loop_: Annotated[bool, typer.Option("--loop", help="also run the query loop during three indexing runs")] = False,
    seed: Annotated[int, typer.Option()] = 16,
) -> None:
    """Kill indexing runs at random moments and check that every index stays whole (see the module docstring)."""
    args = argparse.Namespace(work=work, kills=kills_, commit_kills=commit_kills, loop=loop_, seed=seed)
    os.environ["HF_HUB_OFFLINE"] = "1"
    rng = random.Random(args.seed)
    args.work.mkdir(parents=True, exist_ok=True)
    folder, idx = build_folder(args.work), args.work / "idx"
    shutil.rmtree(idx, ignore_errors=True)
    good = True
    if args.kills:
        good &= kills(args, folder, idx, rng)
    if args.loop:
        good &= loop(args, folder, idx, rng)
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    typer.run(main)
