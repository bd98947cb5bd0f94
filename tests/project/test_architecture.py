"""The package's shape, read from the source with ``ast``: no import circles, imports only point down, no
package imports another of its own layer, and long modules say why they are long.

Layers (low to high):

0. shared modules: ``multimsd`` itself, ``config``, ``errors``, ``paths``, ``fsutil``, ``buildcache``, ``io``,
   ``text``, ``split``, ``gold``, ``console``, ``interrupts``, ``outdir``, ``runlock``, ``early_stopping``,
   ``encoders`` (the offline sentence encoder: the aligner's and the meaning score's);
1. the metric library the stages share: ``metrics``;
2. over the metrics: the 🤗 ``evaluate`` metric scripts, ``hf_metrics`` (nothing of multimsd imports them:
   ``evaluate.load`` reads them by path), and ``render``, the tables and charts that the evaluation's
   ``table.md`` and the run's report are both written with;
3. the stages: ``alignment``, ``training``, ``evaluation``, ``report`` (the report reads the other stages'
   result files, not their code);
4. the commands layer: ``commands`` (composing a config and checking a command line, the stage-command
   factory, plugins, the ``evaluate`` name clash): what every command shares;
5. the commands: ``pipeline`` (``multimsd run``: the stages in order), ``studio`` (``multimsd studio``: the web
   app over a run's outputs), ``multimsd.align`` / ``multimsd.train`` / ``multimsd.evaluate``
   (``multimsd align|train|evaluate``);
6. the commands over a run: ``simplify`` (``multimsd simplify``: reads a run's plan, ``pipeline``, to load its
   best system);
7. the front door: ``multimsd.main`` / ``multimsd.__main__`` (``multimsd COMMAND``).

A module may import its own package and the layers below; never a higher layer, nor another package of its
own layer (two stages, two commands). Every import counts, also one inside a function (a lazy import still
ties the two modules together), and so does a dynamic one: ``importlib.import_module("multimsd.x")`` or
``__import__("multimsd.x")`` with a literal name is an import of ``multimsd.x``; one whose name is not a literal
(``import_module(f"multimsd.{name}")``) hides an arrow from this test and is refused, except in the functions
of :data:`RUN_TIME_IMPORTS`. The front door's registration of a command, ``Command("simplify",
"multimsd.simplify.cli", …)``, is an import of the module it names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "multimsd"
LAYERS = (  # layer number -> the top-level names of multimsd in it (layer 0: every other one)
    (1, ("metrics",)),
    (2, ("hf_metrics", "render")),
    (3, ("alignment", "training", "evaluation", "report")),
    (4, ("commands",)),
    (5, ("pipeline", "studio", "align", "train", "evaluate")),
    (6, ("simplify",)),
    (7, ("main", "__main__")),
)
FRONT_DOOR = ("main", "__main__")  # one package of two modules: __main__ runs main
# Where an import of a module named at run time is the point: the user's plugins (plugins=[pkg.mod], never a
# module of multimsd: those are imported by name, where the graph sees them).
RUN_TIME_IMPORTS = {
    ("multimsd.commands.plugins", "load_plugins"),
    (
        "multimsd.main",
        "command",
    ),  # the module of a registered Command: its arrow is read from the registration
}
MAX_LINES = 500
LONG_MARKER = "Why this module is long:"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def read_imports(source: str, name: str, is_package: bool = False) -> tuple[set[str], list[str]]:
    """The multimsd modules that module ``name`` imports (``from pkg import sub`` counts as importing
    ``pkg.sub``; ``importlib.import_module("pkg.sub")`` / ``__import__("pkg.sub")`` too), and its dynamic
    imports whose name is not a literal, as ``function: line`` (outside :data:`RUN_TIME_IMPORTS`)."""
    tree = ast.parse(source)
    package = name if is_package else name.rpartition(".")[0]
    loaders = {"import_module", "__import__"}  # and what `from importlib import import_module as x` binds
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "importlib":
            loaders |= {a.asname or a.name for a in node.names if a.name == "import_module"}
    targets: list[str] = []
    hidden: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            where = f"{where}.{node.name}" if where else node.name
        if isinstance(node, ast.Import):
            targets.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets.extend(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == "Command" and len(node.args) > 1:  # the front door's registration of a command
                arg = node.args[1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    targets.append(arg.value)
            if called in loaders and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    targets.append(arg.value)
                elif (name, where.split(".")[0]) not in RUN_TIME_IMPORTS:
                    hidden.append(f"{where or '<module>'}: line {node.lineno}")
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(tree, "")
    out = set()
    for t in targets:
        # "import multimsd.a.b" binds the deepest module that exists
        while t and t not in MODULES:
            t = t.rpartition(".")[0]
        if t and t != name:
            out.add(t)
    return out, hidden


def imports_of(name: str) -> tuple[set[str], list[str]]:
    path = MODULES[name]
    return read_imports(path.read_text(encoding="utf-8"), name, path.name == "__init__.py")


READ = {name: imports_of(name) for name in MODULES}
GRAPH = {name: deps for name, (deps, _) in READ.items()}


def layer(name: str) -> tuple[int, str]:
    """The module's layer and its package there (``""`` for the shared modules)."""
    parts = name.split(".")
    top = parts[1] if len(parts) > 1 else ""
    for number, tops in LAYERS:
        if top in tops:
            return number, "front door" if top in FRONT_DOOR else top
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
    assert layer("multimsd.main") == layer("multimsd.__main__") == (7, "front door")
    assert layer("multimsd.pipeline.run") == (5, "pipeline")
    assert layer("multimsd.simplify.run") == (6, "simplify")
    assert layer("multimsd.train") == (5, "train")
    assert layer("multimsd.studio.theta") == (5, "studio")
    assert layer("multimsd.commands.compose") == (4, "commands")
    assert layer("multimsd.report.html") == (3, "report")
    assert layer("multimsd.hf_metrics.sari.sari") == (2, "hf_metrics")
    assert layer("multimsd.metrics.sari") == (1, "metrics")
    assert layer("multimsd.errors") == (0, "")


def test_imports_point_down():
    bad = []
    for name, deps in GRAPH.items():
        lvl, package = layer(name)
        for dep in deps:
            dlvl, dpackage = layer(dep)
            if dlvl > lvl:
                bad.append(f"{name} -> {dep} (layer {lvl} imports layer {dlvl})")
            elif dlvl == lvl > 0 and dpackage != package:
                bad.append(f"{name} -> {dep} (two packages of layer {lvl}: {package} imports {dpackage})")
    assert not bad, "\n".join(bad)


def test_dynamic_imports_are_read():
    # A dynamic import with a literal name is an arrow like any other; one without is refused.
    deps, hidden = read_imports(
        "import importlib\n"
        "from importlib import import_module as load\n"
        "def f():\n"
        "    importlib.import_module('multimsd.errors')\n"
        "    load('multimsd.paths')\n"
        "    __import__('multimsd.io')\n",
        "multimsd.x",
    )
    assert deps == {"multimsd.errors", "multimsd.paths", "multimsd.io"} and hidden == []


def test_the_reader_refuses_a_dynamic_import_without_a_literal_name():
    source = (
        "import importlib\n"
        "def run_stage_command(name):\n"
        "    importlib.import_module(f'multimsd.{name}').main()\n"
        "class C:\n"
        "    def m(self, n):\n"
        "        return __import__(n)\n"
    )
    deps, hidden = read_imports(source, "multimsd.pipeline.cli")
    assert deps == set() and hidden == ["run_stage_command: line 3", "C.m: line 6"]
    # the user's plugins are imported by their names, in load_plugins alone
    _, hidden = read_imports(source.replace("run_stage_command", "load_plugins"), "multimsd.commands.plugins")
    assert hidden == ["C.m: line 6"]


def test_no_dynamic_import_hides_an_arrow():
    hidden = [f"{name}.{where}" for name, (_, found) in READ.items() for where in found]
    assert not hidden, f"dynamic imports without a literal name: {hidden}"


def test_package_inits_import_nothing_heavy():
    # Importing a sub-package (e.g. for a registry) must not pull in torch or a stage's entry point.
    for name in (
        "multimsd",
        "multimsd.alignment",
        "multimsd.training",
        "multimsd.evaluation",
        "multimsd.commands",
    ):
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


def test_every_registered_command_is_an_arrow_of_the_front_door():
    from multimsd.main import COMMANDS

    modules = {c.module for c in COMMANDS}
    assert modules <= set(MODULES) and modules <= GRAPH["multimsd.main"], modules - GRAPH["multimsd.main"]
    deps, hidden = read_imports("Command('x', 'multimsd.errors', 'summary')\n", "multimsd.main")
    assert deps == {"multimsd.errors"} and hidden == []
