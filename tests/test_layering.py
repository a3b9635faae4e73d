"""Layers import downward only: every import in memlab/ (module level or inside a function,
absolute or relative, or by string: ``importlib.import_module``, ``__import__``, a
``"memlab.x.y"`` or ``"memlab.x:name"`` literal for a lazy lookup, a package's
``lazy_exports`` table) names a module in the same layer or one below, and no module reaches
itself through static imports (inside a layer too). One exemption, by design: ``memlab._compat``
names the old import paths and their new homes by string."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memlab"

#: Bottom to top. A module belongs to the first layer whose prefix matches its dotted name
#: (longest prefix wins); a package's __init__ belongs to the package.
LAYERS: list[tuple[str, ...]] = [
    ("memlab", "memlab._compat", "memlab._lazy", "memlab.atomic", "memlab.base", "memlab.registry", "memlab.records", "memlab.tokens",
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


#: Modules whose strings name other layers' modules by design (and are not imports by them).
STRING_EXEMPT = {"memlab._compat"}
#: The package whose lazy table is the public facade: ``memlab.X`` for classes of every layer,
#: looked up on attribute access only. Its table is not read as imports (its other strings are).
FACADE = "memlab"
#: A string naming a memlab module, or a name in one ("memlab.adapters.recipes:camel_longterm").
MODULE_STRING = re.compile(r"memlab(?:\.[A-Za-z_]\w*)+(?=:|$)")
IMPORT_CALLS = {"import_module", "__import__"}


def existing_module(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a module or package in memlab/."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        path = PACKAGE.parent / Path(*parts[:n])
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            return ".".join(parts[:n])
    return None


def string_imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, module) for every memlab module ``path`` imports by string: a constant passed to
    ``import_module`` / ``__import__`` (relative ones resolved against their package
    argument, ``__name__`` or ``__package__`` meaning the file's own package), any other
    ``"memlab.x.y"`` literal (the start of an f-string too), and the values of a table passed
    to ``lazy_exports(__name__, table)`` (submodules of the package)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source, str(path))
    tables = {target.id: node.value for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
              for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
              if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            args = node.args
            if called in IMPORT_CALLS and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                target = args[0].value
                if target.startswith("."):
                    anchor = package
                    if len(args) > 1 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
                        anchor = args[1].value
                    level = len(target) - len(target.lstrip("."))
                    base = anchor.split(".")
                    target = ".".join(base[:len(base) - (level - 1)] + [target.lstrip(".")])
                found.append((node.lineno, target))
            if called == "lazy_exports" and name != FACADE and len(args) > 1 and isinstance(args[1], ast.Name) and args[1].id in tables:
                found += [(v.lineno, f"{name}.{v.value}") for v in tables[args[1].id].values
                          if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = MODULE_STRING.match(node.value)
            if match:
                found.append((node.lineno, match.group(0)))
    out = []
    for line, target in found:
        module = existing_module(target)
        if module is not None:
            out.append((line, module))
    return sorted(set(out))


def test_imports_run_downward_only() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        by_string = [] if here in STRING_EXEMPT else string_imports(path)
        for line, target in imports(path) + by_string:
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


def test_the_checker_sees_imports_by_string() -> None:
    source = ("import importlib\n"
              "def f():\n    return importlib.import_module('memlab.eval.replay')\n"
              "def g():\n    return __import__('memlab.cli')\n"
              "def h():\n    return importlib.import_module('.vector', __name__)\n"
              "LAZY = {'x': f'memlab.adapters.recipes:{1}', 'y': 'memlab.nosuchmodule', 'z': 'memlab is nice'}\n"
              "_EXPORTS = {'KeyValueStore': 'kv'}\n"
              "__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)\n")
    found = string_imports(PACKAGE / "storage" / "__init__.py", source)
    assert found == [(3, "memlab.eval.replay"), (5, "memlab.cli"), (7, "memlab.storage.vector"),
                     (8, "memlab"), (8, "memlab.adapters.recipes"), (9, "memlab.storage.kv")]


def test_only_compat_is_exempt_from_the_string_check() -> None:
    assert STRING_EXEMPT == {"memlab._compat"}
    assert string_imports(PACKAGE / "_compat.py"), "the exemption still matters"


@pytest.mark.parametrize("module,layer", [("memlab.storage.vector", 1), ("memlab.retrieval.llm_filter", 2),
                                          ("memlab.filters", 0), ("memlab.memories.layered.steps.load", 4)])
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


# -- one home per name: a module imports what it uses, it does not re-export ---------------------

def unused_imports(source: str) -> list[tuple[int, str]]:
    """Names a module imports at its top level and never uses: (line, name). A use is a
    ``Name`` anywhere in the module or a word of a string (``__all__``, an annotation in
    quotes). A package's ``__init__`` is its public face and is not checked with this."""
    tree = ast.parse(source)
    imported: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported[(alias.asname or alias.name).split(".")[0]] = node.lineno
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.update(re.findall(r"\w+", node.value))
    return sorted((line, name) for name, line in imported.items() if name not in used)


def test_no_module_re_exports_a_name() -> None:
    """An old path is kept in ``memlab._compat`` (with a warning), never by importing a name a
    module does not use: that is a second home for it."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name not in ("__init__.py", "_compat.py")
             for line, name in unused_imports(path.read_text(encoding="utf-8"))]
    assert not found, "imported but unused (re-exported?); import it from its home instead:\n" + "\n".join(found)


def test_the_re_export_check_sees_one() -> None:
    assert unused_imports("from .a import b as b, c\nimport d\nx = c() + d.e\n") == [(1, "b")]
    assert unused_imports("from .a import b\n__all__ = ['b']\n") == []


def test_a_module_over_400_lines_says_why():
    """One job per file: a module past ~400 lines states in its docstring why it is that long."""
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if source.count("\n") > 400 and "over 400 lines" not in (ast.get_docstring(ast.parse(source)) or ""):
            unexplained.append(f"{path.relative_to(PACKAGE.parent)} ({source.count(chr(10))} lines)")
    assert not unexplained, "split these, or say in the docstring why they are over 400 lines: " + ", ".join(unexplained)


def test_test_folders_mirror_the_package():
    """A module's tests are found by its path: tests/eval/loaders/ holds memlab/eval/loaders/'s."""
    tests = PACKAGE.parent / "tests"
    folders = [p for p in tests.rglob("*") if p.is_dir() and p.name not in ("__pycache__", "data")
               and "data" not in p.relative_to(tests).parts]
    strays = [str(p.relative_to(tests)) for p in folders if not (PACKAGE / p.relative_to(tests)).is_dir()]
    assert not strays, f"test folders with no memlab package of the same path: {strays}"
