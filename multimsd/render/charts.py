"""Line charts as inline SVG, generated here: no plotting package, no script, nothing fetched.

The SVG carries no ``xmlns`` attribute (HTML5 does not need one inside a page), so the page holds no
``http`` address at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# colour-blind-safe palette (Okabe & Ito)
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    # optional (lo, hi) per point, drawn as error bars (confidence intervals)
    errors: list[tuple[float, float] | None] | None = None
    dashed: bool = False
    markers: bool = True


def _finite(s: Series) -> Series:
    keep = [
        i for i, (x, y) in enumerate(s.points) if x is not None and y is not None and math.isfinite(x + y)
    ]
    errors = None
    if s.errors:
        errors = [s.errors[i] if i < len(s.errors) else None for i in keep]
        errors = [e if e and all(v is not None and math.isfinite(v) for v in e) else None for e in errors]
    return Series(s.name, [s.points[i] for i in keep], errors, s.dashed, s.markers)


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


def line_chart(
    series: list[Series], title: str, x_label: str, y_label: str, width: int = 520, height: int = 300
) -> str:
    """An SVG line chart of ``series`` with axes, ticks, grid and a legend under the plot."""
    # a missing or non-finite score (NaN in a results file) is left out rather than breaking the axes
    series = [_finite(s) for s in series]
    series = [s for s in series if s.points]
    left, right, top = 56, 16, 30
    legend_rows = math.ceil(len(series) / 3)
    bottom = 46 + 18 * legend_rows
    pw, ph = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    for s in series:
        ys += [v for e in (s.errors or []) if e for v in e]
    if not xs:
        xs, ys = [0.0, 1.0], [0.0, 1.0]
    xt, yt = _ticks(min(xs), max(xs)), _ticks(min(ys), max(ys))
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" class="ct">{escape(title)}</text>',
    ]
    for t in yt:
        y = sy(t)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(t)}</text>')
    for t in xt:
        x = sx(t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + ph}" y2="{top + ph + 4}" class="axis"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{_label(t)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>')
    out.append(
        f'<text x="{left + pw / 2:.0f}" y="{top + ph + 32}" text-anchor="middle" class="al">'
        f"{escape(x_label)}</text>"
    )
    out.append(
        f'<text transform="translate(14,{top + ph / 2:.0f}) rotate(-90)" text-anchor="middle" class="al">'
        f"{escape(y_label)}</text>"
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
            if s.markers:
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>')
        lx = left + (i % 3) * (pw / 3)
        ly = top + ph + 48 + 18 * (i // 3)
        out.append(
            f'<line x1="{lx:.1f}" x2="{lx + 18:.1f}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" '
            f'stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{lx + 24:.1f}" y="{ly}">{escape(s.name)}</text>')
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
    left, right, top = 56, 16, 30
    legend_rows = math.ceil(len(series) / 3)
    bottom = 46 + 18 * legend_rows
    pw, ph = width - left - right, height - top - bottom
    ys = [0.0] + [y for s in series for _, y in s.points]
    for s in series:
        ys += [v for e in (s.errors or []) if e for v in e]
    yt = _ticks(min(ys), max(ys))
    y0, y1 = yt[0], yt[-1]

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    n = max(len(series), 1)
    slot = pw / max(len(groups), 1)
    bar = 0.8 * slot / n
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" class="ct">{escape(title)}</text>',
    ]
    for t in yt:
        y = sy(t)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(t)}</text>')
    for i, g in enumerate(groups):
        x = left + slot * (i + 0.5)
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{escape(g)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>')
    out.append(
        f'<text transform="translate(14,{top + ph / 2:.0f}) rotate(-90)" text-anchor="middle" class="al">'
        f"{escape(y_label)}</text>"
    )
    base = sy(max(y0, 0.0))
    for k, s in enumerate(series):
        colour = PALETTE[k % len(PALETTE)]
        for j, (gx, y) in enumerate(s.points):
            x = left + slot * gx + 0.1 * slot + bar * k
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
        lx = left + (k % 3) * (pw / 3)
        ly = top + ph + 36 + 18 * (k // 3)
        out.append(f'<rect x="{lx:.1f}" y="{ly - 9}" width="14" height="10" fill="{colour}"/>')
        out.append(f'<text x="{lx + 20:.1f}" y="{ly}">{escape(s.name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
