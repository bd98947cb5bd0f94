"""Rendering the sections as Markdown: the same tables as the HTML page; a chart becomes one line.

:func:`table_lines` is also how the evaluation writes the tables of its ``table.md``."""

from __future__ import annotations

import re

from multimsd.render.blocks import Cell, Chart, Paragraph, Preformatted, Section, Table, marked_pieces


def _text(s: str) -> str:
    """Text that cannot break a table or turn into HTML (Markdown renders raw HTML): one line, and
    backslash escapes for the pipe and angle brackets."""
    s = " ".join(s.split())
    return re.sub(r"([\\|<>])", r"\\\1", s)


MARKS = {"novel": "**", "term": "_"}  # how Markdown marks a span of each kind (HTML: <mark class=kind>)


def _cell(c: Cell) -> str:
    if c.marks:  # each piece escaped apart, its mark around it, then the whitespace made one line
        pieces = []
        for text, kind in marked_pieces(c.text, c.marks):
            piece = re.sub(r"([\\|<>*_])", r"\\\1", text)
            pieces.append(
                f"{MARKS.get(kind, '')}{piece}{MARKS.get(kind, '')}" if kind and text.strip() else piece
            )
        t = " ".join("".join(pieces).split())
    else:
        t = _text(c.text)
    if c.flag and t:
        t = f"⚠ {t}"
    if c.bold and t:
        t = f"**{t}**"
    if c.ci:
        t += f" {c.ci}"
    return t


def table_lines(t: Table) -> list[str]:
    """A table in Markdown: its caption in bold, the header, the rows (numeric columns right-aligned) and an
    empty line."""
    out = []
    if t.caption:
        out += [f"**{_text(t.caption)}**", ""]
    header = [_text(h) for h in t.header] if any(t.header) else ["" for _ in t.rows[0]]
    numeric = [bool(t.rows) and all(r[i].num for r in t.rows if i < len(r)) for i in range(len(header))]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "".join("---:|" if n else "---|" for n in numeric))
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows]
    return [*out, ""]


def render_markdown(title: str, sections: list[Section], footer: str) -> str:
    out = [f"# {_text(title)}", ""]
    for s in sections:
        out += [f"## {_text(s.title)}", ""]
        for b in s.blocks:
            if isinstance(b, Paragraph):
                out += [("> **Note.** " if b.note else "") + _text(b.text), ""]
            elif isinstance(b, Table):
                out += table_lines(b)
            elif isinstance(b, Chart):
                out += [f"*Chart: {b.alt} (see report.html).*", ""]
            elif isinstance(b, Preformatted):
                fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", b.text)), default=0))
                out += [f"<details><summary>{_text(b.summary)}</summary>", "", fence + "json", b.text, fence]
                out += ["", "</details>", ""]
            else:
                raise TypeError(f"unknown report block {type(b).__name__}")
    out += ["---", "", footer, ""]
    return "\n".join(out)
