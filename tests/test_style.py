"""The code is linted and formatted by ruff (its settings in pyproject.toml): a change that breaks either fails
the suite, with ruff's own report in the failure."""

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize("command", [["check"], ["format", "--check", "--diff"]], ids=["lint", "format"])
def test_ruff_passes(command):
    proc = subprocess.run([sys.executable, "-m", "ruff", *command, "."], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
