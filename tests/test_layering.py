"""Layers import downward only: every import in memlab/ (module level or inside a function,
absolute or relative) names a module in the same layer or one below, and no module reaches
itself through imports (inside a layer too). No exception list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memlab"

#: Bottom to top. A module belongs to the first layer whose prefix matches its dotted name
#: (longest prefix wins); a package's __init__ belongs to the package.
LAYERS: list[tuple[str, ...]] = [
    ("memlab", "memlab._compat", "memlab._lazy", "memlab.atomic", "memlab.base", "memlab.records", "memlab.tokens",
     "memlab.text", "memlab.filters", "memlab.strategy", "memlab.context", "memlab.sqlite",
     "memlab.capabilities", "memlab.classpath", "memlab.httpserve"),
    ("memlab.storage", "memlab.embeddings"),
    ("memlab.retrieval", "memlab.decay", "memlab.llm", "memlab.extraction", "memlab.summarizers"),
    ("memlab.blocks", "memlab.offline"),  # offline stand-ins sit above what they imitate
    ("memlab.memories",),
    ("memlab.strategies", "memlab.adapters"),
    ("memlab.eval",),
    ("memlab.cli", "memlab.__main__", "memlab.testing"),  # __main__: `python -m memlab`, the command
]


def layer_of(module: str) -> int:
    best, level = -1, None
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    if level is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return level


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) for every memlab import in ``path`` (or in ``source``, read
    as if it were that file); ``from . import x`` counts as importing ``package.x`` when
    ``x`` is a submodule."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    text = path.read_text(encoding="utf-8") if source is None else source
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                as_module = PACKAGE.parent / Path(*sub.split("."))
                out.append((node.lineno, sub if as_module.with_suffix(".py").exists() or as_module.is_dir()
                            else target))
    return [(line, m) for line, m in out if m == "memlab" or m.startswith("memlab.")]


def test_imports_run_downward_only() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        for line, target in imports(path):
            if layer_of(target) > layer_of(here):
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {here} (layer {layer_of(here)}) "
                              f"imports {target} (layer {layer_of(target)})")
    assert upward == []


def test_the_checker_sees_relative_and_nested_imports() -> None:
    source = ("from ..base import Component\n"
              "def f():\n    from ..eval.replay import replay\n"
              "class C:\n    def g(self):\n        import memlab.cli\n        from . import vector\n")
    found = imports(PACKAGE / "storage" / "kv.py", source)
    assert found == [(1, "memlab.base"), (3, "memlab.eval.replay"), (6, "memlab.cli"),
                     (7, "memlab.storage.vector")]
    assert [layer_of(m) for _, m in found] == [0, 6, 7, 1]


@pytest.mark.parametrize("module,layer", [("memlab.storage.vector", 1), ("memlab.retrieval.filters", 2),
                                          ("memlab.filters", 0), ("memlab.memories.layered.working", 4)])
def test_layer_of(module: str, layer: int) -> None:
    assert layer_of(module) == layer


def import_graph() -> dict[str, set[str]]:
    """Module -> the memlab modules it imports (anywhere in the file). Importing
    ``a.b.c`` runs the packages ``a.b`` and ``a`` first, so those count too, except the
    importer's own enclosing packages (already running when it is imported)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        own = {".".join(here.split(".")[:n]) for n in range(1, here.count(".") + 2)}
        if path.name == "__init__.py":
            own.discard(here)
        targets = graph.setdefault(here, set())
        for _, target in imports(path):
            parts = target.split(".")
            for n in range(1, len(parts) + 1):
                name = ".".join(parts[:n])
                if name != here and name not in own:
                    targets.add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycle_between_modules() -> None:
    """No module reaches itself through imports, inside a layer too (so the modules of a
    layer are ordered as well: none imports one that imports it back)."""
    assert cycles(import_graph()) == []


def test_the_cycle_finder_sees_a_cycle_through_a_package_and_a_function() -> None:
    graph = {"memlab.a.x": {"memlab.b"}, "memlab.b": {"memlab.b.y"}, "memlab.b.y": {"memlab.a.x"},
             "memlab.c": {"memlab.a.x"}}
    assert cycles(graph) == [["memlab.a.x", "memlab.b", "memlab.b.y"]]
    assert cycles({"memlab.a": {"memlab.b"}, "memlab.b": set()}) == []
