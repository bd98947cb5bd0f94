"""What a document is made of, independent of its format: sections holding paragraphs, tables and charts.

The run report's sections are built once (:mod:`multimsd.report.sections`) and rendered twice, to HTML and to
Markdown (:mod:`multimsd.render.html`, :mod:`multimsd.render.markdown`), so the two files cannot disagree on
a number; the evaluation's ``table.md`` writes its tables with the same blocks and the same Markdown writer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from multimsd.metrics.best import best, order


@dataclass
class Cell:
    """One table cell: ``text`` as shown; ``ci`` an optional interval shown after it; ``num`` right-aligns it;
    ``marks``: spans ``(start, end, kind)`` of ``text`` to mark (``novel`` words, medical ``term``s); ``flag``:
    the cell shows something that failed a check (a safety flag)."""

    text: str
    num: bool = False
    bold: bool = False
    ci: str | None = None
    marks: tuple[tuple[int, int, str], ...] = ()
    flag: bool = False


def marked_pieces(text: str, marks) -> list[tuple[str, str | None]]:
    """``text`` cut into ``(piece, kind or None)`` by its marks: spans that overlap an earlier (or, at the same
    start, a longer) one are dropped, so every character is in at most one mark."""
    pieces, at = [], 0
    for start, end, kind in sorted(marks, key=lambda m: (m[0], -m[1])):
        if start < at or not 0 <= start < end <= len(text):
            continue
        if start > at:
            pieces.append((text[at:start], None))
        pieces.append((text[start:end], kind))
        at = end
    if at < len(text) or not pieces:
        pieces.append((text[at:], None))
    return pieces


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
    if not isinstance(x, float):  # an int (bool included), or a fact that is no number
        return str(x)
    return f"{x:.{digits}f}"


def interval(ci: list | tuple | None, digits: int = 2) -> str | None:
    if not ci or len(ci) != 2 or any(v is None for v in ci):
        return None
    return f"[{num(float(ci[0]), digits)}, {num(float(ci[1]), digits)}]"


def bold_best(
    rows: list[list[Cell]],
    values: list[list[float | None]],
    lower_better: list[bool],
    flagged: list[list[list[str]]] | None = None,
) -> None:
    """Bold the best value of every column where at least two rows have one, by the one rule for "best"
    (:mod:`multimsd.metrics.best`): ``flagged[row][col]`` says why a row cannot be best in that column
    (degenerate outputs). ``values[row][col]`` is the value of ``rows[row][col + 1]`` (after the name)."""
    for col, low in enumerate(lower_better):
        scores = {r: v[col] for r, v in enumerate(values) if v[col] is not None}
        if len(scores) < 2:
            continue
        flags = {r: flagged[r][col] for r in scores} if flagged else {}
        top = best(order(scores, flags, low))  # type: ignore[arg-type]  (rows stand in for systems)
        for r, v in scores.items():
            if top is not None and v == scores[top] and not flags.get(r):  # a tie is bold twice
                rows[r][col + 1].bold = True
