"""The wheel a user installs (issue 61): built from this checkout with ``python -m build``, installed with its
dependencies into a fresh virtual environment, it indexes and queries the bundled sample, and it brought no
torch, transformers, sentence-transformers, llama.cpp or compiler step with it. Each file it ships is at most
40 MB (a package index's and a reviewer's limit)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import REPO
from tests.without import HEAVY

pytestmark = pytest.mark.integration

SKIP = shutil.ignore_patterns(".git", ".venv", "indexes", "__pycache__", "build", "dist", "*.egg-info", ".pytest_cache")


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, **kwargs)
    assert out.returncode == 0, f"{cmd}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


def test_the_wheel_installs_lean_and_runs_the_sample(tmp_path):
    source = tmp_path / "source"  # a copy: building writes ragkit.egg-info beside the sources
    shutil.copytree(REPO, source, ignore=SKIP)
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(source)])
    (wheel,) = (tmp_path / "dist").glob("ragkit-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        sizes = {i.filename: i.file_size for i in zf.infolist()}
    assert (
        "ragkit/embed/minilm/model-int8r.onnx" in sizes and "ragkit/samples/handbook/policies/working-time.md" in sizes
    )
    assert max(sizes.values()) <= 40 * 1024 * 1024, max(sizes, key=sizes.get)

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python, ragkit = venv / "bin" / "python", venv / "bin" / "ragkit"
    run([str(python), "-m", "pip", "install", "-q", str(wheel)])
    found = run([str(python), "-c", f"import importlib.util as u; print([m for m in {HEAVY!r} if u.find_spec(m)])"])
    assert found.stdout.strip() == "[]"  # nothing heavy came with it

    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "RAGKIT_CACHE": str(tmp_path / "cache")}
    sample = run([str(python), "-c", "import ragkit, pathlib; print(pathlib.Path(ragkit.__file__).parent)"], env=env)
    handbook = f"{sample.stdout.strip()}/samples/handbook"
    indexed = run([str(ragkit), "index", handbook], env=env, cwd=tmp_path)
    assert indexed.stderr == "" and "Indexed 5 document(s)" in indexed.stdout
    asked = run([str(ragkit), "query", "--json", "how are overtime hours limited?"], env=env, cwd=tmp_path)
    assert asked.stderr == ""
    assert json.loads(asked.stdout)["passages"][0]["section"] == "Working Time Policy > Overtime > Limits on overtime"
