"""The package's shape, read from the source with ``ast``: no import circles, imports only point down, no
stage reaches into another, and long modules say why they are long.

Layers (low to high):

0. shared modules: ``multimsd`` itself, ``config``, ``errors``, ``paths``, ``fsutil``, ``buildcache``, ``io``,
   ``text``, ``split``, ``gold``, ``cli``;
1. libraries the stages share: ``metrics`` (and the 🤗 ``evaluate`` module in ``hf_metrics``);
2. the stages: ``alignment``, ``training``, ``evaluation``, ``report`` (each may use layers 0-1 and itself,
   never another stage: the report reads the other stages' result files, not their code);
3. the commands: ``pipeline`` (the one command that runs the stages in order), ``studio`` (the web app over a
   run's outputs) and the stage entry points
   ``multimsd.align`` / ``multimsd.train`` / ``multimsd.evaluate`` (``multimsd align|train|evaluate``); they may
   use everything below them.

Every import counts, also one inside a function: a lazy import still ties the two modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "multimsd"
STAGES = ("alignment", "training", "evaluation", "report")
ORCHESTRATION = ("pipeline", "studio")
ENTRY_POINTS = ("multimsd.align", "multimsd.train", "multimsd.evaluate")
LIBRARIES = ("metrics", "hf_metrics", "render")
MAX_LINES = 500
LONG_MARKER = "Why this module is long:"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The multimsd modules that ``name`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            # "import multimsd.a.b" binds the deepest module that exists
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


GRAPH = {name: imports_of(name) for name in MODULES}


def layer(name: str) -> tuple[int, str]:
    parts = name.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if name in ENTRY_POINTS:
        return 3, top
    if top in ORCHESTRATION:
        return 3, top
    if top in STAGES:
        return 2, top
    if top in LIBRARIES:
        return 1, top
    return 0, ""


def test_graph_is_read():
    # The reader must see the real edges, or every check below passes vacuously.
    assert "multimsd.alignment.stage" in MODULES and "multimsd.training.loop" in MODULES
    assert "multimsd.errors" in GRAPH["multimsd.alignment.stage"]
    assert sum(len(v) for v in GRAPH.values()) > 100


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm; components of more than one module are import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_strongly_connected_finds_a_circle():
    comps = strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert sorted(c for c in comps if len(c) > 1) == [["a", "b", "c"]]


def test_no_import_circles():
    circles = [c for c in strongly_connected(GRAPH) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def test_layers_are_read():
    assert layer("multimsd.pipeline.run") == (3, "pipeline")
    assert layer("multimsd.report.html") == (2, "report")
    assert layer("multimsd.metrics.sari") == (1, "metrics")
    assert layer("multimsd.errors") == (0, "")
    assert layer("multimsd.train") == (3, "train")


def test_imports_point_down():
    bad = []
    for name, deps in GRAPH.items():
        lvl, stage = layer(name)
        for dep in deps:
            dlvl, dstage = layer(dep)
            if dlvl > lvl:
                bad.append(f"{name} -> {dep} (layer {lvl} imports layer {dlvl})")
            elif dlvl == lvl == 2 and dstage != stage:
                bad.append(f"{name} -> {dep} (one stage imports another)")
    assert not bad, "\n".join(bad)


def test_package_inits_import_nothing_heavy():
    # Importing a sub-package (e.g. for a registry) must not pull in torch or a stage's entry point.
    for name in ("multimsd", "multimsd.alignment", "multimsd.training", "multimsd.evaluation"):
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        assert (
            all(
                (n.module or "") == "__future__"
                for n in top
                if isinstance(n, ast.ImportFrom) and n.level == 0
            )
            or name == "multimsd"
        ), name


@pytest.mark.parametrize("name", sorted(MODULES))
def test_long_modules_say_why(name):
    path = MODULES[name]
    n = len(path.read_text(encoding="utf-8").splitlines())
    if n <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert LONG_MARKER in doc, (
        f"{path.relative_to(PKG.parent)}: {n} lines and no '{LONG_MARKER}' in its docstring"
    )
