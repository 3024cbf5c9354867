"""The import rule, kept by walking every module's imports with ``ast``.

ragkit's packages stand in layers; a module imports only from its own layer or the layers below, and never
round in a circle:

    cli → serve → measure → library → contents → config → retrieve | ingest | learn | reader
        → extract | embed | rerank | assemble | answer | generate | legal | render | evaluate → store
        → records | errors | text | events | validate | cache

The store is the bottom of the house: it imports no stage. What composes the store with the stages (the
``IndexReader`` with its embedders and rankers, a run's commit with reference resolution, the summary tree and
community detection) stands above the stages, in ``ragkit.reader`` and ``ragkit.ingest.commit``.

The CLI reaches the library through ``Index`` (``ragkit.library``) and reads settings through ``config``: it
imports nothing from the stages or the store. Internal imports sit at module top; the few that are made inside a function are
listed in ``LAZY`` with their reason (a heavy library behind them, or the CLI's start-up budget).
Imports under ``if TYPE_CHECKING:`` name types only: they must point down too, and they count in a circle as
any other import does (a circle of types is a circle of modules that need each other).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "ragkit"

LAYERS = [  # top to bottom; a name covers the module and everything below it
    ["ragkit.cli", "ragkit.__main__"],
    ["ragkit.serve"],
    ["ragkit.measure"],
    ["ragkit.library"],
    ["ragkit.contents"],
    ["ragkit.config"],
    ["ragkit.retrieve", "ragkit.ingest", "ragkit.learn", "ragkit.reader"],
    [
        "ragkit.extract",
        "ragkit.embed",
        "ragkit.rerank",
        "ragkit.assemble",
        "ragkit.answer",
        "ragkit.generate",
        "ragkit.legal",
        "ragkit.render",
        "ragkit.evaluate",
        "ragkit.gguf",
    ],
    ["ragkit.store"],
    [
        "ragkit.records",
        "ragkit.errors",
        "ragkit.text",
        "ragkit.events",
        "ragkit.validate",
        "ragkit.cache",
        "ragkit.modelspec",
        "ragkit.httpjson",
        "ragkit.fitted",
        "ragkit.names",
        "ragkit.extras",
        "ragkit",
    ],
]

CLI_MAY_IMPORT = (
    "ragkit.cli",
    "ragkit.measure",
    "ragkit.library",
    "ragkit.config",
    "ragkit.serve",
    "ragkit.render",
    "ragkit.errors",
    "ragkit.events",
    "ragkit.records",
    "ragkit.extras",
)

# (importing module, imported module) made inside a function, and why
LAZY = {
    # a CLI command loads the library when it runs: `ragkit --help` stays under 0.3 s
    **{
        (f"ragkit.cli.{cmd}", "ragkit.library"): "start-up"
        for cmd in ("index_cmd", "check_cmd", "common")  # common.models(): every other command through it
    },
    ("ragkit.cli", "ragkit.cli.app"): "start-up: `query --json` through a running server skips typer and rich",
    ("ragkit.cli.fast", "ragkit.config"): "start-up: only a `query --json` line reads the settings",
    ("ragkit.cli.fast", "ragkit.render"): "start-up: only a `query --json` line answered by a server prints JSON",
    ("ragkit.cli.output", "ragkit.serve.client"): "start-up: `ragkit --help` does not load http.client",
    ("ragkit.cli.fast", "ragkit.serve.client"): "start-up: only a `query --json` line asks a server",
    ("ragkit.cli.serve_cmd", "ragkit.serve.http"): "FastAPI and uvicorn (0.5 s)",
    ("ragkit.cli.serve_cmd", "ragkit.serve.mcp_tools"): "the MCP SDK",
    ("ragkit.cli.models_cmd", "ragkit.measure"): "start-up",
    ("ragkit.cli.stats_cmd", "ragkit.config"): "start-up",
    ("ragkit", "ragkit.library"): "the front door (FRONT_DOOR): `import ragkit` stays light",
    ("ragkit", "ragkit.measure"): "the front door (FRONT_DOOR): `ragkit.evaluate`",
    ("ragkit.cli.eval_cmd", "ragkit.measure"): "start-up",
    ("ragkit.cli.models_cmd", "ragkit.serve.models_http"): "FastAPI and uvicorn (0.5 s)",
    ("ragkit.extras", "ragkit.errors"): "scripts/llm_build_flags.py runs extras.py before ragkit is installed",
}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    in_function: bool
    type_only: bool


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: dict) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        prefix = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
    out = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name.startswith("ragkit") and name != module:
            out.append(name)
    return sorted(set(out))


def imports() -> list[Import]:
    known = modules()
    found = []
    for module, path in known.items():
        tree = ast.parse(path.read_text())

        def visit(node, in_function: bool, type_only: bool, module=module, path=path):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(child, module, path.name == "__init__.py", known):
                        found.append(Import(module, target, child.lineno, in_function, type_only))
                guarded = isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
                visit(
                    child,
                    in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)),
                    type_only or guarded,
                )

        visit(tree, False, False)
    return found


def layer_of(module: str) -> int:
    best, depth = None, -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > depth:
                best, depth = i, len(name)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS in tests/test_layers.py"
    return best


# the package's front door: ``ragkit.open()`` and its kin load the library on first use (ragkit/__init__.py's
# ``__getattr__``), the one import allowed to point up
FRONT_DOOR = {("ragkit", "ragkit.library"), ("ragkit", "ragkit.measure")}


def upward(found: list[Import]) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target} (layer {layer_of(i.target)} above {layer_of(i.source)})"
        for i in found
        if layer_of(i.target) < layer_of(i.source) and (i.source, i.target) not in FRONT_DOOR
    ]


def cycles(found: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (type-only imports included)."""
    graph = defaultdict(set)
    for i in found:
        graph[i.source].add(i.target)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(modules()):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    for module in modules():
        layer_of(module)


def test_imports_only_point_down():
    assert upward(imports()) == []


def test_no_module_imports_itself_round_a_circle():
    assert cycles(imports()) == []


def test_the_cli_goes_through_index():
    wrong = [
        f"{i.source}:{i.line} imports {i.target}"
        for i in imports()
        if i.source.startswith("ragkit.cli") and i.target != "ragkit" and not i.target.startswith(CLI_MAY_IMPORT)
    ]
    assert wrong == []


def test_internal_imports_sit_at_module_top():
    inside = {(i.source, i.target): i.line for i in imports() if i.in_function}
    unlisted = [f"{s}:{line} imports {t} inside a function" for (s, t), line in inside.items() if (s, t) not in LAZY]
    assert unlisted == [], "move the import to the module's top, or list it in LAZY with its reason"
    stale = [pair for pair in LAZY if pair not in inside]
    assert stale == [], "LAZY names imports that are no longer made inside a function"


@pytest.mark.parametrize(
    "source, target", [("ragkit.store.duck", "ragkit.retrieve.pipeline"), ("ragkit.records", "ragkit.library")]
)
def test_an_upward_import_fails(source, target):
    """The rule has teeth: an import of a higher layer is reported, wherever it is written."""
    added = imports() + [Import(source, target, 1, in_function=True, type_only=False)]
    assert any(line.startswith(f"{source}:1 imports {target}") for line in upward(added))


def test_a_circle_fails():
    added = imports() + [
        Import("ragkit.text", "ragkit.records", 1, False, False),
        Import("ragkit.records", "ragkit.text", 1, False, False),
    ]
    assert ["ragkit.records", "ragkit.text"] in cycles(added)


LIBRARY_PARTS = ("asking", "answering", "writing", "learning", "engine")


def _outside_imports_of_library_parts() -> list[str]:
    """Imports of the library's private modules (``ragkit.library.asking`` …) from outside ``ragkit/library``,
    in the package, the scripts and the tests: every caller goes through ``Index`` (``ragkit.library``)."""
    wrong = []
    for folder in ("ragkit", "scripts", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.is_relative_to(PACKAGE / "library"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                if any(n == "ragkit.api" or n.startswith("ragkit.api.") for n in names) or any(
                    n in {f"ragkit.library.{p}" for p in LIBRARY_PARTS} for n in names
                ):
                    wrong.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return wrong


def test_callers_go_through_index():
    """The CLI, the server, MCP, ``measure``, the scripts and the tests import ``ragkit.library`` (``Index``,
    ``open``, ``index``), never its private parts: there is no second way in (issue 64)."""
    assert _outside_imports_of_library_parts() == []
