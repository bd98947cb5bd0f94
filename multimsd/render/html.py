"""Rendering the sections as one self-contained HTML page: inline CSS and inline SVG, no script, no font,
no image file, no address of anything outside the page, so it opens offline and the same everywhere."""

from __future__ import annotations

from html import escape

from multimsd.render.blocks import Cell, Chart, Paragraph, Preformatted, Section, Table, marked_pieces

CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d2327;
       background: #fff; margin: 0 auto; max-width: 1200px; padding: 24px 32px 64px; line-height: 1.45; }
h1 { font-size: 1.7em; margin: 0 0 4px; }
h2 { font-size: 1.3em; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid #d0d7de; }
nav { font-size: 0.92em; margin: 8px 0 16px; }
nav a { margin-right: 14px; color: #0b5cad; text-decoration: none; }
p { margin: 8px 0; max-width: 75em; }
p.note { background: #fff4e0; border-left: 4px solid #d98a00; padding: 8px 12px; }
.tablewrap { overflow-x: auto; margin: 10px 0 18px; }
table { border-collapse: collapse; font-size: 0.92em; }
caption { text-align: left; font-weight: 600; padding: 4px 0 6px; color: #394249; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e3e7eb; vertical-align: top; }
thead th { border-bottom: 2px solid #9aa5b1; text-align: left; background: #f5f7f9; }
thead th.num { text-align: right; }
tbody th { text-align: left; font-weight: 500; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td .ci { color: #5c6770; font-size: 0.85em; margin-left: 4px; }
table.wide td { min-width: 12em; max-width: 30em; }
table.wide td.num { min-width: 0; width: 2em; }
b { font-weight: 700; }
.tables { display: flex; flex-wrap: wrap; gap: 0 36px; align-items: flex-start; }
caption { white-space: nowrap; }
.charts { display: flex; flex-wrap: wrap; gap: 12px 24px; margin: 8px 0 16px; }
svg.chart { font-size: 11px; fill: #1d2327; background: #fff; }
svg.chart .ct { font-size: 13px; font-weight: 600; }
svg.chart .al { font-size: 12px; }
svg.chart .grid { stroke: #e3e7eb; }
svg.chart .axis { stroke: #6b7680; }
svg.chart .frame { fill: none; stroke: #9aa5b1; }
details.fold { margin: 6px 0; }
details.fold > summary { cursor: pointer; font-weight: 600; color: #394249; padding: 4px 0; }
details pre { background: #f5f7f9; padding: 10px; overflow-x: auto; font-size: 0.85em; }
footer { margin-top: 40px; color: #6b7680; font-size: 0.85em; }
mark.novel { background: #fff1a8; }
mark.term { background: #d6ecff; }
td.flag { background: #fde8e8; border-left: 3px solid #c62828; }
"""


def _cell(c: Cell, tag: str = "td") -> str:
    if c.marks:
        text = "".join(
            escape(t) if kind is None else f'<mark class="{escape(kind)}">{escape(t)}</mark>'
            for t, kind in marked_pieces(c.text, c.marks)
        )
    else:
        text = escape(c.text)
    if c.bold:
        text = f"<b>{text}</b>"
    if c.ci:
        text += f'<span class="ci">{escape(c.ci)}</span>'
    classes = [name for name, on in (("num", c.num), ("flag", c.flag)) if on]
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<{tag}{cls}>{text}</{tag}>"


def _table(t: Table) -> str:
    cls = ' class="wide"' if t.wide else ""
    out = [f'<div class="tablewrap"><table{cls}>']
    if t.collapsed is not None:  # folded: a click on the summary opens it (HTML's own <details>, no script)
        out.insert(0, f'<details class="fold"><summary>{escape(t.collapsed)}</summary>')
    if t.caption:
        out.append(f"<caption>{escape(t.caption)}</caption>")
    if any(t.header):
        # a column is numeric when its cells are: its header is right-aligned with them
        numeric = [bool(t.rows) and all(r[i].num for r in t.rows if i < len(r)) for i in range(len(t.header))]
        ths = "".join(
            f"<th{' class=num' if n else ''}>{escape(h)}</th>" for h, n in zip(t.header, numeric, strict=True)
        )
        out.append(f"<thead><tr>{ths}</tr></thead>")
    out.append("<tbody>")
    for row in t.rows:
        first = _cell(row[0], "td" if row[0].num else "th")
        out.append("<tr>" + first + "".join(_cell(c) for c in row[1:]) + "</tr>")
    out.append("</tbody></table></div>")
    if t.collapsed is not None:
        out.append("</details>")
    return "\n".join(out)


def _blocks(blocks: list) -> list[str]:
    out, charts, tables = [], [], []

    def flush() -> None:
        if charts:
            out.append('<div class="charts">' + "\n".join(charts) + "</div>")
            charts.clear()
        if tables:
            out.append('<div class="tables">' + "\n".join(tables) + "</div>")
            tables.clear()

    for b in blocks:
        # consecutive charts, and consecutive small tables, sit side by side
        if isinstance(b, Chart) and not tables:
            charts.append(b.svg)
            continue
        if isinstance(b, Table) and b.inline and not charts:
            tables.append(_table(b))
            continue
        flush()
        if isinstance(b, Chart):
            charts.append(b.svg)
            continue
        if isinstance(b, Paragraph):
            out.append(f"<p{' class=note' if b.note else ''}>{escape(b.text)}</p>")
        elif isinstance(b, Table):
            out.append(_table(b))
        elif isinstance(b, Preformatted):
            out.append(
                f"<details><summary>{escape(b.summary)}</summary><pre>{escape(b.text)}</pre></details>"
            )
        else:
            raise TypeError(f"unknown report block {type(b).__name__}")
    flush()
    return out


def render_html(title: str, sections: list[Section], footer: str) -> str:
    body = [f"<h1>{escape(title)}</h1>"]
    body.append(
        "<nav>" + "".join(f'<a href="#{s.anchor}">{escape(s.title)}</a>' for s in sections) + "</nav>"
    )
    for s in sections:
        body.append(f'<section id="{s.anchor}">')
        body.append(f"<h2>{escape(s.title)}</h2>")
        body.extend(_blocks(s.blocks))
        body.append("</section>")
    body.append(f"<footer>{escape(footer)}</footer>")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
