from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import ragkit
from ragkit.config import IndexConfig
from tests.fakes import FakeEmbedder
from tests.quality import REPO, SHARED_DATA  # noqa: F401 (the paths live with the quality gate)
from tests.s3 import s3  # noqa: F401 (the fixture, for every test module)

SAMPLES = REPO / "ragkit" / "samples" / "handbook"

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return p


@pytest.fixture
def fake():
    return FakeEmbedder()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(
        root,
        "policies/overtime.md",
        """
        ---
        title: Overtime Policy
        doc_type: policy
        owner: HR
        tags: [time, pay]
        ---

        # Overtime Policy

        ## Limits

        Overtime is limited to ten hours per week. Managers approve overtime in advance.

        ## Pay

        Overtime is paid at one and a quarter times the hourly rate.
        """,
    )
    write(
        root,
        "tech/deploy.rst",
        """
        Deployment
        ==========

        Rollbacks
        ---------

        A rollback redeploys the previous container image.

        Migrations
        ----------

        Database migrations must stay backwards compatible.
        """,
    )
    write(
        root,
        "notes/meeting.txt",
        """
        Meeting notes

        The team moved the planning meeting to Tuesday.
        """,
    )
    return root


@pytest.fixture
def unloaded():
    """No generator loaded when the test starts, and none kept after it (``ragkit.generate.unload``): a test that
    loads a model gets a fresh instance, and leaves none behind."""
    from ragkit import generate

    generate.unload()
    yield
    generate.unload()


@pytest.fixture
def index_with(tmp_path: Path, fake: FakeEmbedder):
    """Index folders with the fake embedder; returns (summary, the open ``Index``)."""

    def run(*paths, full=False, cfg=None, name="idx"):
        idx = tmp_path / name
        summary = ragkit.index(list(paths), idx, cfg=cfg or IndexConfig(), full=full, embedder_factory=lambda c: fake)
        return summary, ragkit.open(idx, embedder=fake)

    return run


def shared_marks(name: str) -> list:
    """The marks of a test (or a parameter) that needs ``../shared/data/NAME``: ``data``, and a skip saying why
    when it is absent."""
    path = SHARED_DATA / name
    return [
        pytest.mark.data,
        pytest.mark.skipif(not path.exists(), reason=f"{path} is absent (shared evaluation data)"),
    ]


def needs_shared(name: str):
    """Marks a test ``data`` and skips it, saying why, when ``../shared/data/NAME`` is absent."""
    data, skip = shared_marks(name)
    return lambda test: data(skip(test))
