"""A Python that lacks some of ragkit's extras: ``without(tmp_path, "llm", "torch")`` gives the environment of a
child process in which the extras' modules (ragkit/extras.py) cannot be imported, as after a plain ``pip install
ragkit``, although the test venv has them all. A ``sitecustomize`` on the child's path puts a finder first on
``sys.meta_path`` that refuses them."""

from __future__ import annotations

import os
from pathlib import Path

from ragkit.extras import EXTRAS

BLOCKER = """
import os, sys

_BLOCKED = set(os.environ["RAGKIT_TEST_BLOCKED"].split(","))


class _Without:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, _Without())
"""

HEAVY = ("torch", "transformers", "sentence_transformers", "llama_cpp", "boto3", "ray", "tesserocr")


def without(tmp: Path, *extras: str, modules: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of a child process without ``extras`` (all of them when none are named) and ``modules``."""
    folder = tmp / "without"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(BLOCKER)
    names = {m for e in (extras or EXTRAS) for m in EXTRAS[e].modules} | set(modules)
    if not extras:
        names |= set(HEAVY)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "RAGKIT_TEST_BLOCKED": ",".join(sorted(names))}
