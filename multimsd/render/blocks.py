"""What a report is made of, independent of its format: sections holding paragraphs, tables and charts.

The sections are built once (:mod:`multimsd.report.sections`) and rendered twice, to HTML and to Markdown,
so the two files cannot disagree on a number.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Cell:
    """One table cell: ``text`` as shown; ``ci`` an optional interval shown after it; ``num`` right-aligns it."""

    text: str
    num: bool = False
    bold: bool = False
    ci: str | None = None


@dataclass
class Table:
    header: list[str]
    rows: list[list[Cell]]
    caption: str = ""
    # the first column names the row (system, language, ...): rendered as a row header
    wide: bool = False  # long text cells (examples): wrap instead of keeping numbers on one line
    inline: bool = False  # small table: consecutive inline tables sit side by side in HTML
    # HTML shows the table folded under this summary (<details>, opened by a click; no script); Markdown in full
    collapsed: str | None = None


@dataclass
class Paragraph:
    text: str
    note: bool = False  # a warning the reader should not miss (e.g. a test set too small to separate systems)


@dataclass
class Chart:
    """An inline SVG chart (HTML) and the sentence that stands for it in Markdown."""

    title: str
    svg: str
    alt: str


@dataclass
class Preformatted:
    text: str
    summary: str  # HTML shows it folded under this summary


Block = Paragraph | Table | Chart | Preformatted


@dataclass
class Section:
    title: str
    anchor: str
    blocks: list[Block] = field(default_factory=list)


def num(x: float | int | None, digits: int = 2) -> str:
    """A number as the report prints it: fixed decimals for floats, "–" for a missing value."""
    if x is None:
        return "–"
    if isinstance(x, int):  # bool included
        return str(x)
    return f"{x:.{digits}f}"


def interval(ci: list | tuple | None, digits: int = 2) -> str | None:
    if not ci or len(ci) != 2 or any(v is None for v in ci):
        return None
    return f"[{num(float(ci[0]), digits)}, {num(float(ci[1]), digits)}]"


def bold_best(rows: list[list[Cell]], values: list[list[float | None]], lower_better: list[bool]) -> None:
    """Bold the best value of every column (per ``lower_better[col]``) when at least two rows compete."""
    for col, low in enumerate(lower_better):
        vals = [(r, v[col]) for r, v in enumerate(values) if v[col] is not None]
        if len(vals) < 2:
            continue
        best = min(v for _, v in vals) if low else max(v for _, v in vals)
        for r, v in vals:
            if v == best:
                rows[r][col + 1].bold = True
