"""The bar chart of :func:`multimsd.render.charts.bar_chart` as a PNG file, drawn with matplotlib (the
evaluation's ``scores.png``): the same :class:`~multimsd.render.charts.Series` (built by
:func:`multimsd.render.scores.score_series`), so the picture and the report's chart show the same bars.

Why the legend is laid out after drawing: a legend of long labels in a fixed number of columns ran past the
figure's edges, where the labels were cut. Here it sits under the plot (constrained layout keeps room for it),
in as many columns (at most 4) as fit the figure's width once drawn; a label too long for one column widens
the figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from multimsd.render.charts import Series

__all__ = ["bar_figure"]

MAX_COLUMNS = 4
MARGIN_PX = 4  # space left between the legend and the figure's edges


def bar_figure(
    groups: list[str],
    series: list[Series],
    title: str,
    y_label: str,
    path: Path | None = None,
    dpi: int = 120,
) -> Any:
    """Grouped bars: one group per entry of ``groups``, one bar per series (``points[i] = (i, value)``) with its
    value on top and ``errors[i]`` as an error bar; written to ``path`` when given; returns the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    width = 0.8 / max(len(series), 1)
    fig = Figure(
        figsize=(max(5.0, 1.0 + 0.9 * len(groups) * max(1, len(series) / 2)), 3.6), layout="constrained"
    )
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for k, s in enumerate(series):
        xs = [x - 0.4 + width * (k + 0.5) for x, _ in s.points]
        vals = [y for _, y in s.points]
        bars = ax.bar(xs, vals, width, label=s.name)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
        shown = [(x, v, e) for x, v, e in zip(xs, vals, s.errors or [None] * len(vals)) if e]
        if shown:
            ax.errorbar(
                [x for x, _, _ in shown],
                [v for _, v, _ in shown],
                yerr=[[v - e[0] for _, v, e in shown], [e[1] - v for _, v, e in shown]],
                fmt="none",
                ecolor="black",
                elinewidth=1,
                capsize=2,
                label="_ci",
            )
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(y_label)
    ax.set_title(title, fontsize=10)
    ax.margins(y=0.15)
    legend_below(fig, ax)
    if path is not None:
        fig.savefig(path, dpi=dpi)
    return fig


def legend_below(fig: Any, ax: Any, fontsize: float = 8) -> Any:
    """The legend of ``ax``'s labelled artists under the plot, in the most columns that fit the figure's width
    (measured after drawing), the figure widened where one column does not fit; returns the legend."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    for columns in range(min(len(handles), MAX_COLUMNS), 0, -1):
        legend = fig.legend(handles, labels, loc="outside lower center", ncols=columns, fontsize=fontsize)
        fig.draw_without_rendering()
        needed = legend.get_window_extent().width + 2 * MARGIN_PX
        if needed <= fig.bbox.width or columns == 1:
            break
        legend.remove()
    if needed > fig.bbox.width:
        fig.set_figwidth(needed / fig.dpi)
        fig.draw_without_rendering()
    return legend
