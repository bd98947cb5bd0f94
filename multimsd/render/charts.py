"""Line and bar charts as inline SVG, generated here: no plotting package, no script, nothing fetched.

The SVG carries no ``xmlns`` attribute (HTML5 does not need one inside a page), so the page holds no
``http`` address at all.

Both kinds share their frame (title, y grid and ticks, y label: :func:`_frame`) and their legend under the
plot (:func:`_legend`). Why the legend measures its labels: the page cannot be asked how wide a text is
(there is no script), and a legend laid out in fixed thirds of the width let a long label ("SmolLM2-135M-Instruct
0-shot") run under the next one and past the chart's edge, so the systems could not be told apart. So a label's
width is estimated from DejaVu Sans's advance widths (:func:`text_width`; the widest of the page's fonts, the
one a Linux browser falls back to), the legend takes as many columns (at most 3) as its widest label allows,
and a chart too narrow for that label on a row of its own is made wider.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from html import escape

# colour-blind-safe palette (Okabe & Ito)
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]

FONT_SIZE = 11  # px: the page's ``svg.chart`` font size (multimsd.render.html)
LEFT, RIGHT, TOP = 56, 16, 30  # the plot's margins
SWATCH = 24  # a legend entry's line or box and the space after it
GAP = 16  # at least this much space between a legend label and the next entry
ROW = 18  # a legend row's height

# DejaVu Sans's advance widths of the characters " " to "~", in thousandths of an em (its hmtx table)
_ADVANCE_MILLI = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632,
    575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685,
    611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579,
    278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
)  # fmt: skip
_ADVANCE = {chr(32 + i): w / 1000 for i, w in enumerate(_ADVANCE_MILLI)}


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """An upper estimate of ``text``'s width in px at ``size``: DejaVu Sans's advance widths for ASCII, a
    full em for East Asian wide characters and 0.9 em for any other character, plus 5 %."""
    em = sum(_ADVANCE.get(c) or (1.0 if unicodedata.east_asian_width(c) in "WF" else 0.9) for c in text)
    return 1.05 * em * size


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    # optional (lo, hi) per point, drawn as error bars (confidence intervals)
    errors: list[tuple[float, float] | None] | None = None
    dashed: bool = False
    markers: bool = True
    # optional (lo, hi) per point along x, drawn as horizontal error bars (a scatter of two scores)
    x_errors: list[tuple[float, float] | None] | None = None


def _finite(s: Series) -> Series:
    keep = [
        i for i, (x, y) in enumerate(s.points) if x is not None and y is not None and math.isfinite(x + y)
    ]

    def kept(bars):
        if not bars:
            return None
        bars = [bars[i] if i < len(bars) else None for i in keep]
        return [e if e and all(v is not None and math.isfinite(v) for v in e) else None for e in bars]

    return Series(s.name, [s.points[i] for i in keep], kept(s.errors), s.dashed, s.markers, kept(s.x_errors))


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if hi <= lo:  # one value: centre it
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(t, 10))
    return ticks


def _label(v: float) -> str:
    return f"{v:g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


@dataclass
class _Layout:
    """Where a chart's parts go: the plot's size, and the legend's columns and rows under it."""

    width: int
    height: int
    pw: float
    ph: float
    columns: int
    rows: int

    def legend_at(self, i: int, below: float) -> tuple[float, float]:
        """The x of entry ``i``'s swatch and the y of its text's baseline, the first row ``below`` the plot."""
        return LEFT + (i % self.columns) * (self.pw / self.columns), TOP + self.ph + below + ROW * (
            i // self.columns
        )


def _layout(names: list[str], width: int, height: int) -> _Layout:
    """A legend of ``names`` under the plot, in as many columns (at most 3) as the widest name allows; a
    chart too narrow for that name alone is widened, and one whose legend takes more than two rows is made
    taller (the plot keeps the height it has with two)."""
    entry = SWATCH + max((text_width(n) for n in names), default=0.0) + GAP
    width = max(width, math.ceil(LEFT + RIGHT + entry))
    pw = width - LEFT - RIGHT
    columns = max(1, min(3, int(pw // entry)))
    rows = math.ceil(len(names) / columns)
    height += ROW * max(0, rows - 2)
    return _Layout(width, height, pw, height - TOP - 46 - ROW * rows, columns, rows)


def _frame(lay: _Layout, title: str, y_label: str, yt: list[float], sy) -> list[str]:
    """The chart's opening: the svg element, the title, the y grid with its tick labels, and the y label."""
    out = [
        f'<svg class="chart" viewBox="0 0 {lay.width} {lay.height}" width="{lay.width}" height="{lay.height}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{lay.width / 2:.0f}" y="18" text-anchor="middle" class="ct">{escape(title)}</text>',
    ]
    for t in yt:
        y = sy(t)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + lay.pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(t)}</text>')
    out.append(
        f'<text transform="translate(14,{TOP + lay.ph / 2:.0f}) rotate(-90)" text-anchor="middle" class="al">'
        f"{escape(y_label)}</text>"
    )
    return out


def _legend(lay: _Layout, i: int, name: str, below: int, dx: int, swatch) -> list[str]:
    """Legend entry ``i``: ``swatch(x, y)`` (its line or box, for the text's baseline at y) and its name,
    ``dx`` to the right of the swatch's start."""
    x, y = lay.legend_at(i, below)
    return [swatch(x, y), f'<text class="legend" x="{x + dx:.1f}" y="{y:.0f}">{escape(name)}</text>']


def line_chart(
    series: list[Series], title: str, x_label: str, y_label: str, width: int = 520, height: int = 300
) -> str:
    """An SVG line chart of ``series`` with axes, ticks, grid and a legend under the plot."""
    # a missing or non-finite score (NaN in a results file) is left out rather than breaking the axes
    series = [_finite(s) for s in series]
    series = [s for s in series if s.points]
    lay = _layout([s.name for s in series], width, height)
    pw, ph = lay.pw, lay.ph
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    for s in series:
        ys += [v for e in (s.errors or []) if e for v in e]
        xs += [v for e in (s.x_errors or []) if e for v in e]
    if not xs:
        xs, ys = [0.0, 1.0], [0.0, 1.0]
    xt, yt = _ticks(min(xs), max(xs)), _ticks(min(ys), max(ys))
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]

    def sx(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return TOP + ph - (y - y0) / (y1 - y0) * ph

    out = _frame(lay, title, y_label, yt, sy)
    for t in xt:
        x = sx(t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + ph}" y2="{TOP + ph + 4}" class="axis"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">{_label(t)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="frame"/>')
    out.append(
        f'<text x="{LEFT + pw / 2:.0f}" y="{TOP + ph + 32}" text-anchor="middle" class="al">'
        f"{escape(x_label)}</text>"
    )
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s.points)
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for j, (x, y) in enumerate(s.points):
            err = s.errors[j] if s.errors and j < len(s.errors) else None
            if err:
                cx = sx(x)
                out.append(
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{sy(err[0]):.1f}" y2="{sy(err[1]):.1f}" '
                    f'stroke="{colour}" stroke-width="1.5"/>'
                )
            xerr = s.x_errors[j] if s.x_errors and j < len(s.x_errors) else None
            if xerr:
                cy = sy(y)
                out.append(
                    f'<line x1="{sx(xerr[0]):.1f}" x2="{sx(xerr[1]):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" '
                    f'stroke="{colour}" stroke-width="1.5"/>'
                )
            if s.markers:
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>')

        def line(x: float, y: float, colour: str = colour, dash: str = dash) -> str:
            return (
                f'<line x1="{x:.1f}" x2="{x + 18:.1f}" y1="{y - 4:.0f}" y2="{y - 4:.0f}" stroke="{colour}" '
                f'stroke-width="2"{dash}/>'
            )

        out += _legend(lay, i, s.name, 48, 24, line)
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    groups: list[str],
    series: list[Series],
    title: str,
    y_label: str,
    width: int = 520,
    height: int = 300,
) -> str:
    """An SVG grouped bar chart: one group per entry of ``groups`` (e.g. languages), one bar per series in
    each (``Series.points[i] = (i, value)``), and each bar's ``Series.errors[i]`` interval as an error bar
    (``class="err"``), so a reader sees which differences the test set can tell apart."""
    series = [_finite(s) for s in series]
    lay = _layout([s.name for s in series], width, height)
    pw, ph = lay.pw, lay.ph
    ys = [0.0] + [y for s in series for _, y in s.points]
    for s in series:
        ys += [v for e in (s.errors or []) if e for v in e]
    yt = _ticks(min(ys), max(ys))
    y0, y1 = yt[0], yt[-1]

    def sy(y: float) -> float:
        return TOP + ph - (y - y0) / (y1 - y0) * ph

    n = max(len(series), 1)
    slot = pw / max(len(groups), 1)
    bar = 0.8 * slot / n
    out = _frame(lay, title, y_label, yt, sy)
    for i, g in enumerate(groups):
        x = LEFT + slot * (i + 0.5)
        out.append(f'<text x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">{escape(g)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="frame"/>')
    base = sy(max(y0, 0.0))
    for k, s in enumerate(series):
        colour = PALETTE[k % len(PALETTE)]
        for j, (gx, y) in enumerate(s.points):
            x = LEFT + slot * gx + 0.1 * slot + bar * k
            top_y = min(sy(y), base)
            out.append(
                f'<rect x="{x:.1f}" y="{top_y:.1f}" width="{bar:.1f}" height="{abs(base - sy(y)):.1f}" '
                f'fill="{colour}"><title>{escape(s.name)}: {y:.2f}</title></rect>'
            )
            err = s.errors[j] if s.errors and j < len(s.errors) else None
            if err:
                cx = x + bar / 2
                out.append(
                    f'<line class="err" x1="{cx:.1f}" x2="{cx:.1f}" y1="{sy(err[0]):.1f}" y2="{sy(err[1]):.1f}" '
                    f'stroke="#1d2327" stroke-width="1.5"><title>{escape(s.name)}: [{err[0]:.2f}, {err[1]:.2f}]'
                    "</title></line>"
                )
                for v in err:
                    out.append(
                        f'<line x1="{cx - 3:.1f}" x2="{cx + 3:.1f}" y1="{sy(v):.1f}" y2="{sy(v):.1f}" '
                        'stroke="#1d2327" stroke-width="1.5"/>'
                    )

        def box(x: float, y: float, colour: str = colour) -> str:
            return f'<rect x="{x:.1f}" y="{y - 9:.0f}" width="14" height="10" fill="{colour}"/>'

        out += _legend(lay, k, s.name, 36, 20, box)
    out.append("</svg>")
    return "\n".join(out)
