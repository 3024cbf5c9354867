#!/usr/bin/env python
"""The bad-input matrix: each odd file indexed on its own (beside one ordinary document), outcome and seconds.

    python scripts/bench_hostile.py [--work DIR]

Every case is a fresh index of a folder holding ``policy.md`` and the odd file, with the bundled model and the
default settings (``--max-file-size`` 50 MB: the oversized case writes a 51 MB file). Outcome: what the run
said of the odd file (skipped and why, indexed and how many chunks), and whether ``policy.md`` was indexed too.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.events import Reporter  # noqa: E402


def cases(rng: random.Random) -> dict[str, callable]:
    def write(name: str, data: bytes | str):
        return lambda root: (root / name).write_bytes(data if isinstance(data, bytes) else data.encode())

    def deep(root: Path):
        folder = root.joinpath(*(f"d{i}" for i in range(60)))
        folder.mkdir(parents=True)
        (folder / "deep.md").write_text("# Deep\n\nA file sixty folders down.\n")

    def loop(root: Path):
        os.symlink(root, root / "loop")

    def outside(root: Path):
        os.symlink("/etc/hostname", root / "hostname.txt")

    def unreadable(root: Path):
        (root / "secret.md").write_text("# Secret\n\nNot for the index.\n")
        (root / "secret.md").chmod(0)

    return {
        "base64 blob, 400 KB .txt": write("blob.txt", base64.b64encode(rng.randbytes(300_000))),
        "hex dump .txt": write(
            "dump.txt", "\n".join(" ".join(f"{rng.randrange(256):02x}" for _ in range(16)) for _ in range(4000))
        ),
        "minified code .txt": write("app.txt", "var a=function(b){return b*2},c=[1,2].map(a);" * 4000),
        "random bytes .txt": write("random.txt", rng.randbytes(100_000)),
        "NUL bytes in text": write("nul.txt", b"some text\x00with a NUL byte " * 100),
        "Latin-1 / Windows-1252 text": write("latin1.txt", "Überstunden müssen genehmigt werden.".encode("cp1252")),
        "invalid UTF-8 sequence": write("mixed.txt", b"Valid start \xff\xfe then more text about overtime."),
        "malformed HTML": write("broken.html", "<html><body><h1>Broken<p>unclosed <b>html text"),
        "invalid YAML front matter": write("front.md", "---\ntitle: [unclosed\n---\n# Parking\n\nBadges.\n"),
        "empty file": write("empty.md", ""),
        "whitespace only": write("blank.txt", "  \n\n\t \n"),
        "1 MB single line": write("line.txt", "word " * 200_000),
        "51 MB file": write("huge.txt", "Large text file. " * 3_000_000),
        "60-deep nesting": deep,
        "symlink loop": loop,
        "symlink out of the tree": outside,
        "no read permission (chmod 000)": unreadable,
        "encrypted PDF": lambda root: _pdf(root / "secret.pdf", password="x"),
        "broken PDF": write("broken.pdf", b"%PDF-1.4 not really"),
        "broken DOCX": write("broken.docx", b"PK not a zip"),
    }


def _pdf(path: Path, password: str | None = None) -> None:
    from tests.documents import handbook_spec, write_pdf

    write_pdf(handbook_spec(1), path, password=password)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ragkit-hostile-"))
    tab = Table(title="bad-input matrix (each case: a fresh index of policy.md + the odd file)")
    for col in ("case", "outcome", "policy.md indexed", "seconds"):
        tab.add_column(col, justify="right" if col == "seconds" else "left")
    for label, make in cases(random.Random(1)).items():
        root = work / "docs"
        shutil.rmtree(work, ignore_errors=True)
        root.mkdir(parents=True)
        (root / "policy.md").write_text("# Overtime\n\nOvertime is limited to ten hours per week.\n")
        make(root)
        t = time.perf_counter()
        summary = api.index([root], work / "idx", reporter=Reporter())
        secs = time.perf_counter() - t
        said = [w.replace(f"{root.name}/", "") for w in summary.warnings if "policy.md" not in w]
        odd_docs = summary.documents - 1
        outcome = "; ".join(said) if said else "no warning"
        if odd_docs > 0:
            outcome = f"indexed ({odd_docs} document(s), {summary.chunks} chunks in all)" + (
                f"; {outcome}" if said else ""
            )
        reader = api.open_index(work / "idx")
        with reader.duck() as store:
            policy = bool(store.value("SELECT count(*) FROM documents WHERE path LIKE '%policy.md'"))
        tab.add_row(label, outcome, "yes" if policy else "NO", f"{secs:.2f}")
    Console(width=200).print(tab)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
