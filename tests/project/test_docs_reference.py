"""The generated configuration reference (docs/gen_reference.py) and the README's links into docs/."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
import textwrap
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_generator():
    name = "multimsd_docs_gen_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "gen_reference.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


gen = _load_generator()

TOY_SOURCE = '''
from __future__ import annotations

from dataclasses import dataclass, field


# A section comment, separated from the class: no field's comment.
@dataclass
class Inner:
    """The inner node (``depth`` levels)."""

    depth: int = 3  # how deep


@dataclass
class Toy:
    # The name.
    # Two lines of it.
    name: str = "x"
    size: int = 2  # trailing comment
    # Not attached: a blank line follows.

    plain: float = 0.5
    items: list[str] = field(
        # inside the default
        default_factory=lambda: ["a", "b|c"]
    )
    inner: Inner = field(default_factory=Inner)  # the nested node
    by_name: dict[str, Inner] = field(default_factory=dict)
    maybe: str | None = None  # may be <null>, or *starred* | piped
'''


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    path = tmp_path / "docs_toy_config.py"
    path.write_text(textwrap.dedent(TOY_SOURCE), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("docs_toy_config", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "docs_toy_config", module)
    spec.loader.exec_module(module)
    return module


def test_field_comments_above_trailing_and_inside(toy):
    comments = gen.field_comments(toy.Toy)
    assert comments["name"] == "The name. Two lines of it."
    assert comments["size"] == "trailing comment"
    assert "plain" not in comments  # a comment separated by a blank line belongs to no field
    assert comments["items"] == "inside the default"
    assert comments["inner"] == "the nested node"
    assert gen.field_comments(toy.Inner) == {"depth": "how deep"}


def test_walk_and_render_toy(toy):
    sections = gen.walk(toy.Toy, gen._schema_defaults(toy.Toy))
    by_path = {s.path: s for s in sections}
    assert set(by_path) == {"", "inner", "by_name.<name>"}
    assert gen.leaf_keys(sections) == [
        "name",
        "size",
        "plain",
        "items",
        "by_name",
        "maybe",
        "inner.depth",
        "by_name.<name>.depth",
    ]
    keys = {k.key: k for s in sections for k in s.keys}
    assert keys["items"].default == ["a", "b|c"]
    assert keys["items"].type == "list[str]"
    assert keys["maybe"].type == "str | None"
    assert keys["inner.depth"].default == 3
    assert by_path["inner"].intro == "the nested node The inner node (``depth`` levels)."
    page = "\n".join(gen.render_sections(sections))
    assert "## `inner`" in page and "## `by_name.<name>`" in page
    assert "<code>[a, b&#124;c]</code>" in page  # a pipe never splits a table cell
    assert "The inner node (<code>depth</code> levels)." in page  # RST and Markdown code spans
    assert "may be &lt;null&gt;, or \\*starred\\* \\| piped" in page
    assert "| <code>name</code> | <code>str</code> | <code>x</code> | The name. Two lines of it. |" in page
    # Every row of every table has four cells.
    for line in page.splitlines():
        if line.startswith("| <code>"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 5, line


def _dataclass_leaves(cls: type, prefix: str = "") -> list[str]:
    """Every leaf key of a schema, computed here without the generator."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out += _dataclass_leaves(tp, key + ".")
        else:
            out.append(key)
    return out


@pytest.fixture(scope="module")
def pages():
    return gen.generate()


@pytest.mark.integration
def test_pages_per_entry_point(pages):
    assert set(pages) >= {
        "reference/index.md",
        "reference/align.md",
        "reference/train.md",
        "reference/evaluate.md",
        "reference/run.md",
    }
    assert "[align.py](align.md)" in pages["reference/index.md"]
    assert "`multimsd run`" in pages["reference/index.md"]
    # YAML options of the config groups, with their first comment line.
    assert "<code>embedder=labse</code>" in pages["reference/align.md"]
    assert "MultiMSD's chosen encoder: LaBSE" in pages["reference/align.md"]
    assert "<code>model=mbart50</code>" in pages["reference/train.md"]
    assert "<code>experiment=weighted_loss</code>" in pages["reference/run.md"]
    assert "<code>hydra/launcher=slurm_gpu</code>" in pages["reference/index.md"]


@pytest.mark.parametrize(
    ("page", "schema"),
    [
        ("align", "multimsd.config:AlignConfig"),
        ("train", "multimsd.training.config:TrainConfig"),
        ("evaluate", "multimsd.config:EvaluateConfig"),
        ("run", "multimsd.pipeline.config:RunConfig"),
    ],
)
def test_every_leaf_key_documented(pages, page, schema):
    module, name = schema.split(":")
    cls = getattr(importlib.import_module(module), name)
    text = pages[f"reference/{page}.md"]
    missing = [k for k in _dataclass_leaves(cls) if f"| <code>{k}</code> |" not in text]
    assert not missing, f"reference/{page}.md lacks {missing}"


def test_comments_and_composed_defaults_on_pages(pages):
    train = pages["reference/train.md"]
    # The comment next to the field, and the value conf/train.yaml gives beside the schema's.
    assert "novel-token weight; 1 = plain cross-entropy (paper: 2, 4, 8)" in train
    assert (
        "| <code>optim.lr</code> | <code>float</code> | <code>0.001</code><br><small>schema: <code>0.0001</code>"
        in train
    )


@pytest.mark.integration
def test_group_entries_of_the_config_store_are_documented():
    """A dataclass stored as a group entry (as aligners / model kinds register their options) gets a section
    ``aligner=<name>`` with the keys it adds or whose default it changes."""
    from hydra.core.config_store import ConfigStore

    @dataclasses.dataclass
    class DocsToyAligner:
        method: str = "docs_toy"
        # How far the toy aligner looks.
        reach: int = 7

    gen.register_all()
    cs = ConfigStore.instance()
    had_group = "aligner" in cs.repo
    cs.store(group="aligner", name="docs_toy", node=DocsToyAligner)
    try:
        pages = gen.generate()
    finally:
        del cs.repo["aligner"]["docs_toy.yaml"]
        if not had_group and not cs.repo["aligner"]:
            del cs.repo["aligner"]
    align = pages["reference/align.md"]
    assert "### `aligner=docs_toy`" in align
    section = align.split("### `aligner=docs_toy`", 1)[1]
    assert (
        "| <code>aligner.reach</code> | <code>int</code> | <code>7</code> | How far the toy aligner looks. |"
        in section
    )
    assert "<code>aligner.method</code>" not in section.split("###")[0]  # already a key of the schema


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def test_readme_links_point_at_existing_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:|^#", t)]
    assert any(t.startswith("docs/") for t in targets), "the README links into docs/"
    missing = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_readmes_make_commands_work_from_a_fresh_clone():
    """Every ``make TARGET`` the README shows is a target of the Makefile, and the wheel's (issue #49 item 7b)
    starts with the set-up: a fresh clone has no .venv until then."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = dict(re.findall(r"^([\w-]+):(.*)$", makefile, re.M))
    shown = set(re.findall(r"(?:^|`)make ([a-z][\w-]*)", readme, re.M))  # a command, not the verb
    assert "wheel" in shown and shown <= set(targets), shown - set(targets)
    assert targets["wheel"].split("##")[0].split() == ["setup"]
    assert ".venv/bin/python -m build" not in readme
