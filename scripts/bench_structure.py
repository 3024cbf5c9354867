"""The shape of the code, counted (issue 64's figures), for this checkout and others side by side.

    python scripts/bench_structure.py                       # this checkout
    python scripts/bench_structure.py --before /tmp/old      # another checkout beside it (e.g. a git worktree)

Counted with ``ast`` from the files alone (no checkout is imported, so any commit can be counted):

- callers of ``ragkit.api``: files in ragkit/ and scripts/ (and, apart, tests/) that import ``ragkit.api`` or the
  library's private parts (``ragkit.library.asking`` …), outside ragkit/library.py and ragkit/library/;
- store imports of stages: import statements in ragkit/store/ of extract, embed, rerank, answer or generate;
- import circles: strongly connected components of the module graph, imports under ``if TYPE_CHECKING:`` and
  inside functions counted too;
- modules over 400 lines (DESIGN's limit);
- patches of ragkit's own names in tests: ``monkeypatch.setattr``/``setitem``/``delattr`` and ``mock.patch`` of a
  ragkit module's attribute (``"ragkit.x.name"``, or a module, class or function the test imported from ragkit).
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

import harness
import igraph

STAGES = ("ragkit.extract", "ragkit.embed", "ragkit.rerank", "ragkit.answer", "ragkit.generate")
LIBRARY_PARTS = tuple(f"ragkit.library.{p}" for p in ("asking", "answering", "writing", "learning", "engine"))


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in sorted((root / "ragkit").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(max(node.level - 1, 0)):
        base = base.rpartition(".")[0]
    prefix = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
    return [prefix] + [f"{prefix}.{a.name}" for a in node.names]


def _targets(node: ast.AST, module: str, is_package: bool, known: dict[str, Path]) -> list[str]:
    """What an import statement loads, as tests/test_layers.py reads it: ``from a import b`` is module ``a.b``
    when there is one, else ``a``."""
    names = _imported(node, module, is_package)
    if not isinstance(node, ast.ImportFrom):
        return names
    prefix, members = names[0], names[1:]
    return [m if m in known else prefix for m in members]


def _known(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def api_callers(root: Path, folders: tuple[str, ...]) -> int:
    count = 0
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == "ragkit/library.py" or rel.startswith("ragkit/library/") or rel == "ragkit/api.py":
                continue
            tree = ast.parse(path.read_text())
            names = {n for node in ast.walk(tree) for n in _imported(node, "", False)}
            names |= {  # `from ragkit import api`
                f"ragkit.{a.name}"
                for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module == "ragkit"
                for a in node.names
            }
            count += any(n == "ragkit.api" or n.startswith(("ragkit.api.", *LIBRARY_PARTS)) for n in names)
    return count


def store_imports_of_stages(root: Path) -> int:
    count = 0
    for path in sorted((root / "ragkit" / "store").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = _imported(node, "ragkit.store.x", False)
            count += any(n == s or n.startswith(s + ".") for n in names[:1] for s in STAGES)
    return count


def circles(root: Path) -> list[list[str]]:
    known = _modules(root)
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            for name in _targets(node, module, path.name == "__init__.py", known):
                target = _known(name, known)
                if target and target.startswith("ragkit") and target != module:
                    graph[module].add(target)
    names = sorted(known)
    number = {name: i for i, name in enumerate(names)}
    graph = igraph.Graph(n=len(names), edges=[(number[a], number[b]) for a in graph for b in graph[a]], directed=True)
    found = [sorted(names[v] for v in part) for part in graph.connected_components(mode="strong") if len(part) > 1]
    return sorted(found)


def long_modules(root: Path, limit: int = 400) -> list[tuple[str, int]]:
    found = [(p.relative_to(root).as_posix(), len(p.read_text().splitlines())) for p in _modules(root).values()]
    return sorted((f for f in found if f[1] > limit), key=lambda f: -f[1])


def _ragkit_names(tree: ast.AST) -> set[str]:
    """The names a test file binds to ragkit's modules, classes and functions (``from ragkit import generate``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ragkit"):
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names if a.name.startswith("ragkit")}
    return names


def internal_patches(root: Path) -> int:
    """Patches of ragkit's own names in tests (``monkeypatch.setattr("ragkit.x.y", …)``, ``(module, "name")``,
    ``mock.patch``): what a test reaches into because it cannot hand a part in."""
    count = 0
    for path in sorted((root / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text())
        ours = _ragkit_names(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                continue
            owner = ast.unparse(node.func.value)
            patching = (node.func.attr in ("setattr", "setitem", "delattr") and "monkeypatch" in owner) or (
                node.func.attr in ("patch", "object") and "patch" in f"{owner}.{node.func.attr}"
            )
            if not patching:
                continue
            target = node.args[0]
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                count += target.value.startswith("ragkit.")
            else:
                count += ast.unparse(target).partition(".")[0].partition("[")[0] in ours

    return count


def counts(root: Path) -> dict[str, object]:
    long = long_modules(root)
    return {
        "files outside the library importing ragkit.api (ragkit/, scripts/)": api_callers(root, ("ragkit", "scripts")),
        "test files importing ragkit.api": api_callers(root, ("tests",)),
        "store imports of stages": store_imports_of_stages(root),
        "import circles (TYPE_CHECKING ones included)": len(circles(root)),
        "modules over 400 lines": len(long),
        "patches of ragkit's own names in tests": internal_patches(root),
    }, long


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout, counted beside this one")
    parser.add_argument("--json", action="store_true", help="JSON objects instead of tables")
    args = parser.parse_args()
    harness.JSON["on"] = args.json
    after, long_after = counts(harness.REPO)
    if args.before:
        before, long_before = counts(args.before.resolve())
        rows = [[name, str(before[name]), str(value)] for name, value in after.items()]
        harness.print_table("the shape of the code", ("", "before", "after"), rows, notes=[str(args.before)])
    else:
        rows = [[name, str(value)] for name, value in after.items()]
        harness.print_table("the shape of the code", ("", "count"), rows)
    if long_after:
        harness.print_table("modules over 400 lines", ("module", "lines"), [[m, str(n)] for m, n in long_after])
    if args.before:
        for circle in circles(args.before.resolve()):
            print("before, circle:", " ↔ ".join(circle))
    for circle in circles(harness.REPO):
        print("circle:", " ↔ ".join(circle))


if __name__ == "__main__":
    main()
