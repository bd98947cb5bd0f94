"""The configuration reference, generated from the dataclass schemas so that it cannot drift from the code.

Used as a MkDocs hook (``hooks:`` in mkdocs.yml): :func:`on_files` adds the pages ``reference/index.md`` and
``reference/<entry>.md`` to the site at build time. Nothing is hard-coded about the schemas:

* the **entry points** are the YAML files in ``conf/`` (and its sub-directories) whose defaults list names a
  node of Hydra's ConfigStore (``align_schema`` in ``conf/align.yaml`` -> ``align.py``, ``run_schema`` in
  ``conf/pipeline/run.yaml`` -> ``multimsd run``); the store is filled by the project's own registration
  (``multimsd.pipeline.run.register_schemas``) plus the import of every built-in aligner and model-kind module;
* every **key** is found by walking the dataclass behind a stored node, recursing into nested dataclasses (and
  into ``dict[str, <dataclass>]`` values); its type is the annotation, its default the schema's, and the value
  the entry point composes with no overrides (its YAML and default groups) is shown where it differs;
* the **description** of a key is the ``#`` comment block right above the field and any comment on the
  field's own lines, read from the source with :mod:`tokenize` / :mod:`ast`;
* **group entries** stored in the ConfigStore (``group="aligner", name="nm"``) become sections
  ``aligner=nm`` on the page of the entry point that uses the group, listing the keys they add;
* each config group's **YAML options** in ``conf/`` are listed with the first comment line of their file.

``python docs/gen_reference.py OUT_DIR`` writes the same pages into a directory (to read them without MkDocs).
"""

from __future__ import annotations

import ast
import dataclasses
import html
import importlib
import io
import pkgutil
import re
import sys
import tokenize
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
REFERENCE_DIR = "reference"
# Modules whose import registers built-ins (and, with them, any ConfigStore entries they declare).
REGISTRATION_PACKAGES = ("multimsd.alignment.aligners", "multimsd.training.kinds")
# "No value" (dataclasses.MISSING cannot be a dataclass default: it means "no default").
UNSET = type("Unset", (), {"__repr__": lambda self: "UNSET"})()


# ----------------------------------------------------------------------------------------- comments
@cache
def _source_facts(path: str) -> tuple[ast.Module, dict[int, str], frozenset[int]]:
    """The parsed module, its comments by line and the lines that hold code (anything but comments)."""
    text = Path(path).read_text(encoding="utf-8")
    comments: dict[int, str] = {}
    code: set[int] = set()
    skip = {
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string
        elif tok.type not in skip:
            code.update(range(tok.start[0], tok.end[0] + 1))
    return ast.parse(text), comments, frozenset(code)


def _comment_text(raw: str) -> str:
    text = raw[1:]
    return text[1:] if text.startswith(" ") else text


def _class_def(cls: type) -> tuple[ast.ClassDef, dict[int, str], frozenset[int]] | None:
    import inspect

    try:
        path = inspect.getsourcefile(cls)
    except TypeError:
        return None
    if not path or not Path(path).is_file():
        return None
    tree, comments, code = _source_facts(path)
    try:  # the line inspect finds the class on (its first decorator's), also for classes defined in functions
        first = inspect.findsource(cls)[1] + 1
    except (OSError, TypeError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            lines = {node.lineno} | {d.lineno for d in node.decorator_list}
            if first in lines:
                return node, comments, code
    return None


def field_comments(cls: type) -> dict[str, str]:
    """Field name -> its comment: the ``#`` lines right above it (no blank line between) and the comments on
    the lines of its own statement (trailing, or inside a multi-line default), joined with spaces."""
    found = _class_def(cls)
    if found is None:
        return {}
    node, comments, code = found
    out: dict[str, str] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        above: list[str] = []
        line = stmt.lineno - 1
        while line in comments and line not in code:
            above.insert(0, _comment_text(comments[line]))
            line -= 1
        inside = [
            _comment_text(comments[n])
            for n in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)
            if n in comments
        ]
        text = " ".join(part.strip() for part in above + inside if part.strip())
        if text:
            out[stmt.target.id] = text
    return out


# -------------------------------------------------------------------------------------------- keys
@dataclass
class Key:
    key: str  # dotted, relative to the page's root (a group entry's: with its package in front)
    type: str
    default: Any
    comment: str = ""
    composed: Any = UNSET  # the value the entry point composes, where it differs


@dataclass
class Section:
    path: str  # dotted path of the dataclass node ("" = top level)
    cls: type
    intro: str = ""  # the comment on the field that holds this node, and the class docstring
    keys: list[Key] = field(default_factory=list)


def _type_name(tp: Any, raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _dataclass_of(tp: Any) -> type | None:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return tp
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if len(args) == 1 and typing.get_origin(tp) is not dict:
        return _dataclass_of(args[0])
    return None


def _dict_value_dataclass(tp: Any) -> type | None:
    if typing.get_origin(tp) is dict:
        args = typing.get_args(tp)
        if len(args) == 2:
            return _dataclass_of(args[1])
    return None


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that cannot be evaluated here: fall back to the written text
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _docstring(cls: type) -> str:
    doc = cls.__doc__ or ""
    # dataclasses invent "Name(field: type = ...)" when a class has none: that is no description.
    if not doc or doc.startswith(f"{cls.__name__}("):
        return ""
    return " ".join(doc.split())


def walk(cls: type, defaults: Any, prefix: str = "", intro: str = "") -> list[Section]:
    """The sections (one per dataclass node, depth first, parents first) under ``cls``."""
    section = Section(prefix, cls, " ".join(p for p in (intro, _docstring(cls)) if p))
    sections = [section]
    comments = field_comments(cls)
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.name.startswith("_"):
            continue
        key = f"{prefix}.{f.name}" if prefix else f.name
        tp = hints.get(f.name, f.type)
        value = defaults.get(f.name) if isinstance(defaults, dict) else None
        nested = _dataclass_of(tp)
        if (
            nested is not None
            and (value is None or isinstance(value, dict))
            and typing.get_origin(tp) is not dict
        ):
            if value is None and _field_default_is_none(f):
                section.keys.append(Key(key, _type_name(tp, f.type), None, comments.get(f.name, "")))
            sections += walk(nested, value or {}, key, comments.get(f.name, ""))
            continue
        section.keys.append(Key(key, _type_name(tp, f.type), value, comments.get(f.name, "")))
        element = _dict_value_dataclass(tp)
        if element is not None:
            sections += walk(element, _schema_defaults(element), f"{key}.<name>", comments.get(f.name, ""))
    return sections


def _field_default_is_none(f: dataclasses.Field) -> bool:
    return f.default is None


def _schema_defaults(cls: type) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.structured(cls), resolve=False)


def leaf_keys(sections: Iterable[Section]) -> list[str]:
    return [k.key for s in sections for k in s.keys]


# ------------------------------------------------------------------------------------- the store
def register_all() -> None:
    """Fill Hydra's ConfigStore the way the entry points do, with every built-in aligner and model kind."""
    from multimsd.pipeline.run import register_schemas

    register_schemas()
    for name in REGISTRATION_PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__, prefix=f"{name}."):
            importlib.import_module(info.name)


@dataclass
class StoredNode:
    group: str | None  # "aligner", "hydra/launcher", None for a primary config
    name: str  # without .yaml
    node: Any  # DictConfig
    package: str | None

    @property
    def option(self) -> str:
        return f"{self.group}={self.name}" if self.group else self.name

    @property
    def dataclass(self) -> type | None:
        from omegaconf import OmegaConf

        tp = OmegaConf.get_type(self.node)
        return tp if dataclasses.is_dataclass(tp) else None

    @property
    def target_path(self) -> str:
        """Where the node lands in the composed config (a group entry's default package is its group)."""
        pkg = self.package
        if pkg in (None, "_group_"):
            return (self.group or "").replace("/", ".")
        if pkg == "_global_":
            return ""
        return pkg.replace("_group_", (self.group or "").replace("/", "."))


def stored_nodes() -> list[StoredNode]:
    """Every node in Hydra's ConfigStore, except Hydra's own (group ``hydra``) and its placeholders."""
    from hydra.core.config_store import ConfigStore

    out: list[StoredNode] = []

    def visit(tree: dict, group: str | None) -> None:
        for name, item in sorted(tree.items()):
            if isinstance(item, dict):
                sub = f"{group}/{name}" if group else name
                if sub.split("/")[0] != "hydra":
                    visit(item, sub)
            elif not name.startswith("_") and name.endswith(".yaml"):
                out.append(StoredNode(group, name[: -len(".yaml")], item.node, item.package))

    visit(ConfigStore.instance().repo, None)
    return out


def node_sections(stored: StoredNode, prefix: str = "") -> list[Section]:
    """A stored node's sections: its dataclass walked (defaults from the stored node itself)."""
    from omegaconf import OmegaConf

    defaults = OmegaConf.to_container(stored.node, resolve=False)
    cls = stored.dataclass
    if cls is not None:
        return walk(cls, defaults, prefix)
    # A plain (untyped) node: its leaves, typed by their values.
    section = Section(prefix, type(stored.node))
    for key, value in _flatten(defaults, prefix):
        section.keys.append(Key(key, type(value).__name__, value))
    return [section]


def _flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value


# ------------------------------------------------------------------------------------- conf/ YAML
def _yaml_defaults(path: Path) -> list[tuple[str | None, str | None]]:
    """(group, option) pairs of a YAML file's defaults list; (None, name) for a plain config name."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out: list[tuple[str | None, str | None]] = []
    for item in data.get("defaults") or []:
        if isinstance(item, str):
            out.append((None, item))
        elif isinstance(item, dict):
            for k, v in item.items():
                group = re.sub(r"^(optional|override)\s+", "", str(k)).strip()
                group = re.sub(r"^(optional|override)\s+", "", group)
                out.append((group, None if v is None else str(v)))
    return out


def first_comment(path: Path) -> str:
    """The first comment line of a YAML file (skipping Hydra's ``# @package`` directive); a line that stops
    mid-sentence is continued by the comment lines after it (at most three in all)."""
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if not s.startswith("#"):
            if lines or s:
                break
            continue
        text = s.lstrip("#").strip()
        if text.startswith("@package") or (not text and not lines):
            continue
        if not text:
            break
        lines.append(text)
        if text[-1] in ".:!?)" or len(lines) == 3:
            break
    return " ".join(lines)


def leading_comments(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        out.append(line.lstrip("#").strip())
    return out


def yaml_groups(config_dir: Path, exclude: Iterable[Path] = ()) -> dict[str, list[Path]]:
    """Group path (``aligner``, ``hydra/launcher``) -> its YAML options, for every directory under ``config_dir``
    (except those under ``exclude``: the config directories of other entry points)."""
    skip = [p.resolve() for p in exclude if p.resolve() != config_dir.resolve()]
    groups: dict[str, list[Path]] = {}
    for path in sorted(config_dir.rglob("*.yaml")):
        if path.parent == config_dir or any(d in path.resolve().parents for d in skip):
            continue
        groups.setdefault(path.parent.relative_to(config_dir).as_posix(), []).append(path)
    return groups


@dataclass
class EntryPoint:
    slug: str  # page name: reference/<slug>.md
    title: str  # the command
    config: Path  # the primary YAML
    schema: StoredNode
    groups: list[str]  # the config groups its defaults list names (relative to its config directory)


def entry_points(nodes: list[StoredNode]) -> list[EntryPoint]:
    """Each YAML in conf/ whose defaults list starts from a stored schema is an entry point."""
    primary = {n.name: n for n in nodes if n.group is None}
    out = []
    for path in sorted(CONF.rglob("*.yaml")):
        if "hydra" in path.relative_to(CONF).parts:
            continue
        defaults = _yaml_defaults(path)
        schema = next((primary[o] for g, o in defaults if g is None and o in primary), None)
        if schema is None:
            continue
        stem = path.stem
        title = f"{stem}.py" if (ROOT / f"{stem}.py").is_file() else f"multimsd {stem}"
        groups = [g for g, _ in defaults if g and not g.startswith("hydra")]
        out.append(EntryPoint(stem, title, path, schema, groups))
    return out


def compose_defaults(entry: EntryPoint) -> dict | None:
    """The entry point's config composed with no overrides (what a bare command runs with)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(version_base="1.3", config_dir=str(entry.config.parent), job_name="docs"):
            cfg = compose(config_name=entry.config.stem)
        return OmegaConf.to_container(cfg, resolve=False)
    finally:
        GlobalHydra.instance().clear()


def _lookup(tree: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return UNSET
        tree = tree[part]
    return tree


# ---------------------------------------------------------------------------------------- rendering
def fmt(value: Any) -> str:
    """A value as it would be written on the command line / in YAML (flow style)."""
    if value is UNSET or value == "???":
        return "???"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"' if value != value.strip() or not value else value
    if isinstance(value, list | tuple):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def code(value: str) -> str:
    return "<code>" + html.escape(value).replace("|", "&#124;") + "</code>"


_MD_SPECIAL = re.compile(r"([\\*_\[\]])")


def prose(text: str) -> str:
    """Comment text made safe for a Markdown table cell (backquoted spans are kept as code)."""
    parts = re.split(r"(``.+?``|`[^`]+`)", text)  # RST ``code`` (docstrings) and Markdown `code`
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(code(part.strip("`")))
        else:
            part = html.escape(part, quote=False)
            out.append(_MD_SPECIAL.sub(r"\\\1", part).replace("|", "\\|"))
    return "".join(out)


def render_sections(sections: list[Section], heading: str = "##", title_prefix: str = "") -> list[str]:
    lines: list[str] = []
    for s in sections:
        if not s.keys:
            continue
        name = s.path or "top-level keys"
        title = f"{title_prefix}{name}" if s.path else (title_prefix.rstrip(" :") or name)
        lines += [f"{heading} {_heading_code(title)}", ""]
        cls = f"`{s.cls.__module__}.{s.cls.__qualname__}`" if dataclasses.is_dataclass(s.cls) else ""
        if s.intro or cls:
            lines += [" ".join(p for p in (prose(s.intro), f"(schema {cls})" if cls else "") if p), ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for k in s.keys:
            default = code(fmt(k.default))
            if k.composed is not UNSET:
                default = f"{code(fmt(k.composed))}<br><small>schema: {code(fmt(k.default))}</small>"
            lines.append(f"| {code(k.key)} | {code(k.type)} | {default} | {prose(k.comment)} |")
        lines.append("")
    return lines


def _heading_code(title: str) -> str:
    return title if " " in title and "=" not in title else f"`{title}`"


def options_table(
    groups: dict[str, list[Path]], names: Iterable[str], known: set[str] | None = None
) -> list[str]:
    """One row per YAML option; a directory that is no config group of any entry point (``known``) is listed
    by file, not as ``group=option``."""
    lines = ["| option | file | what it is (first comment line) |", "|---|---|---|"]
    for group in names:
        for path in groups.get(group, []):
            rel = path.relative_to(ROOT).as_posix()
            is_group = known is None or group in known or group.split("/")[0] == "hydra"
            option = code(f"{group}={path.stem}") if is_group else f"{code(path.name)} (not a config group)"
            lines.append(f"| {option} | {code(rel)} | {prose(first_comment(path))} |")
    return lines + [""]


def entry_page(entry: EntryPoint, nodes: list[StoredNode], composed: dict | None) -> str:
    rel = entry.config.relative_to(ROOT).as_posix()
    sections = node_sections(entry.schema)
    if composed is not None:
        for s in sections:
            for k in s.keys:
                value = _lookup(composed, k.key)
                if value is not UNSET and value != k.default:
                    k.composed = value
    lines = [
        f"# `{entry.title}` configuration",
        "",
        "*Generated from the dataclasses at build time (`docs/gen_reference.py`); do not edit.*",
        "",
    ]
    header = [c for c in leading_comments(entry.config) if c and not c.startswith("@package")]
    if header:
        lines += ["> " + "<br>\n> ".join(prose(c) for c in header), ""]
    lines += [
        f"Primary config `{rel}`, schema `{entry.schema.name}`. Every key below can be set on the command line "
        "(`key=value`); a key that is not listed fails at start-up. **default** is the value the command runs "
        f"with when nothing is overridden (`{rel}` and its default groups applied); where that differs from the "
        "dataclass default, the schema's value is shown under it.",
        "",
    ]
    lines += render_sections(sections)
    # Group entries stored in the ConfigStore for the groups this entry point uses.
    own = {s.path for s in sections}
    entries = [n for n in nodes if n.group and (n.group in entry.groups or n.target_path in own)]
    if entries:
        lines += ["## Group entries in the ConfigStore", ""]
        lines += [
            "Options of a config group that come with their own schema (registered in Hydra's ConfigStore); "
            "each lists the keys it adds to the ones above and the ones whose default it changes.",
            "",
        ]
        base = {k.key: k.default for s in sections for k in s.keys}  # the schema's own defaults
        for n in entries:
            extra = node_sections(n, n.target_path)
            for s in extra:
                s.keys = [k for k in s.keys if k.key not in base or k.default != base[k.key]]
            where = (
                f"`{n.dataclass.__module__}.{n.dataclass.__qualname__}`" if n.dataclass else "an untyped node"
            )
            body = render_sections(extra, heading="####")
            lines += [f"### `{n.option}`", "", f"Schema {where}.", ""]
            lines += body or ["No keys beyond the ones above.", ""]
    groups = yaml_groups(entry.config.parent)
    used = list(dict.fromkeys(g for g in entry.groups if g in groups))
    if used:
        lines += [
            "## Config groups",
            "",
            f"The YAML options of the groups `{rel}` composes (`group=option` on the command line).",
            "",
        ]
        lines += options_table(groups, used)
    return "\n".join(lines).rstrip() + "\n"


def index_page(entries: list[EntryPoint], nodes: list[StoredNode]) -> str:
    lines = [
        "# Configuration reference",
        "",
        "*Generated from the dataclasses at build time (`docs/gen_reference.py`); do not edit.*",
        "",
        "Every entry point merges its YAML into a typed schema (a dataclass registered in Hydra's ConfigStore), "
        "so a misspelt key or a value of the wrong type fails at start-up. These pages list every key of each "
        "schema: dotted key, type, default and the comment written next to the field in the source.",
        "",
        "| command | primary config | schema | page |",
        "|---|---|---|---|",
    ]
    for e in entries:
        cls = e.schema.dataclass
        schema = f"`{cls.__module__}.{cls.__qualname__}`" if cls else f"`{e.schema.name}`"
        rel = e.config.relative_to(ROOT).as_posix()
        lines.append(f"| `{e.title}` | `{rel}` | {schema} | [{e.title}]({e.slug}.md) |")
    lines.append("")
    claimed = {e.schema.name for e in entries}
    others = [n for n in nodes if n.group is None and n.name not in claimed]
    if others:
        lines += ["## Other stored schemas", ""]
        for n in others:
            lines += render_sections(node_sections(n), heading="###", title_prefix=f"{n.name}: ")
    lines += [
        "## Every YAML option in `conf/`",
        "",
        "Each directory under an entry point's config directory is a config group, chosen with `group=option` "
        "(`hydra/launcher` is Hydra's launcher group, for `-m` sweeps). A directory that no entry point's "
        "defaults list names is listed by file.",
        "",
    ]
    config_dirs = list(dict.fromkeys(e.config.parent for e in entries))
    for config_dir in config_dirs:
        users = [e for e in entries if e.config.parent == config_dir]
        known = {g for e in users for g in e.groups}
        groups = yaml_groups(config_dir, exclude=config_dirs)
        rel = config_dir.relative_to(ROOT).as_posix()
        commands = ", ".join(f"`{e.title}`" for e in users)
        lines += [f"### `{rel}/`: {commands}", ""]
        lines += options_table(groups, sorted(groups), known)
    return "\n".join(lines).rstrip() + "\n"


def generate() -> dict[str, str]:
    """Page path (relative to docs/) -> Markdown."""
    register_all()
    nodes = stored_nodes()
    entries = entry_points(nodes)
    pages = {f"{REFERENCE_DIR}/index.md": index_page(entries, nodes)}
    for e in entries:
        pages[f"{REFERENCE_DIR}/{e.slug}.md"] = entry_page(e, nodes, compose_defaults(e))
    return pages


# ------------------------------------------------------------------------------------- MkDocs hook
def on_files(files, config):  # noqa: ANN001 - MkDocs' hook signature
    from mkdocs.structure.files import File

    for path, text in generate().items():
        files.append(File.generated(config, path, content=text))
    return files


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "reference-out")
    for rel, text in generate().items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(target)
