"""Everything a user can name is documented: every command, strategy and file format in ``--help`` and in
README.md, every setting (``[index]``, ``[query]``, ``[query.STRATEGY]``) in README.md."""

import dataclasses
import re

import pytest
import typer
from typer.testing import CliRunner

from ragkit.cli.app import app
from ragkit.config import FILE_FORMATS, STRATEGY_NAMES, IndexConfig, QueryConfig
from ragkit.retrieve.strategies import STRATEGIES
from tests.conftest import REPO

README = (REPO / "README.md").read_text()
runner = CliRunner()


def help_of(*args: str) -> str:
    out = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "300", "TERMINAL_WIDTH": "300"})
    assert out.exit_code == 0, out.output
    return re.sub(r"\s+", " ", out.output)


def commands() -> list[tuple[str, ...]]:
    """Every command as its words: ("index",), ("graph", "stats"), …"""
    root = typer.main.get_command(app)
    out = []
    for name, cmd in root.commands.items():
        subs = getattr(cmd, "commands", None)
        out.extend([(name, sub) for sub in subs] if subs else [(name,)])
    return out


@pytest.mark.parametrize("words", commands(), ids=" ".join)
def test_every_command_is_in_help_and_readme(words):
    assert words[-1] in help_of(*words[:-1])
    assert f"ragkit {' '.join(words)}" in README


def test_every_strategy_is_in_query_help_and_readme():
    shown = help_of("query")
    for name in STRATEGY_NAMES:
        assert name in shown
        assert f"`{name}`" in README, name


def test_every_file_format_is_in_index_help_and_readme():
    shown = help_of("index")
    for suffix, name in FILE_FORMATS.items():
        assert suffix in shown and name in shown
        assert f"`{suffix}`" in README and name in README, suffix


def test_every_setting_is_in_the_readme():
    keys = [f.name for cls in (IndexConfig, QueryConfig) for f in dataclasses.fields(cls) if f.name != "settings"]
    for name, strategy in STRATEGIES.items():
        if strategy.settings:
            assert f"[query.{name}]" in README
            keys += [f.name for f in dataclasses.fields(strategy.settings)]
    missing = [k for k in keys if f"`{k}`" not in README]
    assert missing == []
