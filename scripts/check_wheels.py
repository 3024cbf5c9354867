#!/usr/bin/env python
"""Which Pythons ragkit installs on (issue 53): every package ``pip install "ragkit[test,ocr]"`` resolves to on this
interpreter, checked to have a wheel for CPython 3.11, 3.12 and 3.13 on x86-64 Linux (manylinux), without
building anything. One table: per Python, the packages without a wheel.

    python scripts/check_wheels.py [--python 3.11 --python 3.12 --python 3.13] [--json]

The resolution is this interpreter's (``pip install --dry-run --report``, the pins and the machine's own wheel
folders included); each other Python is then asked for exactly those versions (``pip install --dry-run
--no-deps --only-binary=:all: --python-version X``), and a version without a wheel is retried alone to tell it
apart from the rest. llama-cpp-python is left out: it has no wheels and builds from source on every Python (the
README says how).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import JSON, print_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOURCE_BUILT = {"llama-cpp-python"}  # builds from source everywhere (no wheels on PyPI)
PLATFORMS = ["manylinux_2_17_x86_64", "manylinux_2_24_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64",
             "manylinux2014_x86_64", "linux_x86_64"]  # fmt: skip
MISSING = re.compile(r"(?:No matching distribution found for|Cannot install) ([A-Za-z0-9_.\-]+)==([^\s;]+)")

app = typer.Typer(add_completion=False, help=__doc__)


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def requirements(which: str = "test") -> list[str]:
    """ragkit's own requirements: the lean set, or with every extra and the test tools (``test``: the extras named
    by ``ragkit[...]`` unfolded), llama-cpp-python left out."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})

    def unfold(names: list[str]) -> list[str]:
        out = []
        for r in names:
            own = re.fullmatch(r"ragkit\[([\w,]+)\]", r.strip())
            out += unfold([x for e in own.group(1).split(",") for x in extras[e]]) if own else [r]
        return out

    wanted = [*project["dependencies"], *(unfold(extras.get("test", [])) if which == "test" else [])]
    return [r for r in wanted if re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() not in SOURCE_BUILT]


def resolved(wanted: list[str], work: Path) -> dict[str, str]:
    """``{name: version}`` of everything ``wanted`` installs on this interpreter."""
    reqs, report = work / "requirements.txt", work / "report.json"
    reqs.write_text("\n".join(wanted) + "\n")
    out = _pip("install", "--dry-run", "--quiet", "--ignore-installed", "--report", str(report), "-r", str(reqs))
    if out.returncode:
        raise SystemExit(f"pip could not resolve ragkit's requirements here:\n{out.stderr[-2000:]}")
    items = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in items}


def without_wheels(pins: dict[str, str], python: str, work: Path) -> list[str]:
    """The ``name==version`` of ``pins`` that have no wheel for CPython ``python`` on x86-64 Linux."""
    todo, missing = dict(pins), []
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    while todo:
        reqs = work / f"pins-{python}.txt"
        reqs.write_text("".join(f"{n}=={v}\n" for n, v in todo.items()))
        out = _pip("install", "--dry-run", "--quiet", "--no-deps", "--ignore-installed", "--only-binary=:all:",
                   "--python-version", python, "--implementation", "cp", *platforms,
                   "--target", str(work / f"target-{python}"), "-r", str(reqs))  # fmt: skip
        if out.returncode == 0:
            break
        found = MISSING.search(out.stderr)
        if not found:
            raise SystemExit(f"pip failed on Python {python} for another reason:\n{out.stderr[-2000:]}")
        name = next((n for n in todo if n.lower().replace("_", "-") == found.group(1).lower().replace("_", "-")), None)
        if name is None:
            raise SystemExit(f"pip named {found.group(0)!r}, which is not among the pins")
        missing.append(f"{name}=={todo.pop(name)}")
    return missing


@app.command()
def main(
    python: list[str] = typer.Option(["3.11", "3.12", "3.13"], help="the Pythons to check (repeat the option)"),
    sets: list[str] = typer.Option(["lean", "test"], "--set", help="lean (pip install ragkit) and/or test"),
    as_json: bool = typer.Option(False, "--json", help="print the table as one JSON object"),
) -> None:
    JSON["on"] = as_json
    rows = []
    for which in sets:
        with tempfile.TemporaryDirectory(prefix="wheels") as tmp:
            work = Path(tmp)
            pins = resolved(requirements(which), work)
            for version in python:
                missing = without_wheels(pins, version, work)
                rows.append([which, version, len(pins), len(pins) - len(missing), ", ".join(missing) or "–"])
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    print_table("wheels for ragkit's resolved requirements", ["set", "python", "packages", "with a wheel", "without"],
                rows, notes=[f"resolved on Python {here} (this interpreter), llama-cpp-python left out (built from "
                             "source: the llm extra)"])  # fmt: skip


if __name__ == "__main__":
    app()
