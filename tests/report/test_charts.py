"""Chart legends that never overlap and are never cut, with long labels: the evaluation's ``scores.png``
(matplotlib: the legend texts' extents measured after drawing) and the report's SVG charts (the legend texts
measured with DejaVu Sans, the font a Linux browser draws them in; tests/report/test_report_browser.py measures
them in Chromium). The issue's case: "SmolLM2-135M-Instruct 0-shot" overwritten and θ = 1's label cut to
"SmolLM2-135M-Instruct +", so the systems of the main figure could not be told apart."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from multimsd.evaluation.report import plot_scores
from multimsd.render.charts import FONT_SIZE, Series, bar_chart, line_chart

# five systems with 45-character labels, alike up to their last characters (as the demo's are)
LABELS = [
    "SmolLM2-135M-Instruct 0-shot, greedy decoding",
    *(f"SmolLM2-135M-Instruct + LoRA θ = {t}, lr = {lr}" for t, lr in ((1, "1e-4"), (2, "1e-4"), (4, "1e-4"), (4, "3e-4"))),
]  # fmt: skip


def test_labels_are_long():
    assert len(set(LABELS)) == 5 and all(len(x) == 45 for x in LABELS)


def results(labels: list[str]) -> dict:
    """An evaluation's results.json, by hand: SARI per language with intervals for every system."""
    systems = {
        name: {g: {"sari": 30.0 + k + j, "ci": {"sari": [28.0 + k, 33.0 + k + j]}} for j, g in enumerate(("de", "en"))}
        for k, name in enumerate(labels)
    }  # fmt: skip
    return {
        "settings": {"metrics": {"include": ["sari", "bleu"]}},
        "ranking": {"metrics": ["sari"]},
        "references": {"n_sentences": 12},
        "languages": ["de", "en"],
        "bootstrap": {"confidence": 0.95},
        "systems": systems,
    }


def assert_apart_and_inside(
    boxes: list[tuple[float, float, float, float]], width: float, height: float
) -> None:
    """No two (x0, y0, x1, y1) boxes overlap, and each lies inside a width x height figure."""
    for a, b in itertools.combinations(boxes, 2):
        apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
        assert apart, f"legend labels overlap: {a} and {b}"
    for x0, y0, x1, y1 in boxes:
        assert x0 >= 0 and x1 <= width and y0 >= 0 and y1 <= height, (
            f"label cut by the edge: {(x0, y0, x1, y1)}"
        )


@pytest.mark.integration
def test_png_legend_of_long_labels(tmp_path):
    fig = plot_scores(results(LABELS), tmp_path / "scores.png")
    assert (tmp_path / "scores.png").stat().st_size > 1000
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    texts = [t for legend in legends for t in legend.get_texts()]
    assert [t.get_text() for t in texts] == LABELS  # every label whole, once
    boxes = [tuple(t.get_window_extent(renderer).extents) for t in texts]
    assert_apart_and_inside(boxes, fig.bbox.width, fig.bbox.height)
    # short labels still share rows: the legend is no taller than it must be
    fig = plot_scores(results(["a", "b", "c"]), tmp_path / "short.png")
    fig.draw_without_rendering()
    ys = {round(t.get_window_extent(renderer).y0) for legend in fig.legends for t in legend.get_texts()}
    assert len(ys) == 1


def font():
    from matplotlib import font_manager
    from PIL import ImageFont

    return ImageFont.truetype(font_manager.findfont("DejaVu Sans"), FONT_SIZE)


def legend_boxes(svg: str, labels: list[str]) -> tuple[list[tuple[float, float, float, float]], float, float]:
    """The boxes of the SVG's texts that are legend labels (width measured in DejaVu Sans), and its size."""
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    f = font()
    boxes = []
    for t in root.iter("text"):
        if t.text in labels:
            x, y = float(t.get("x")), float(t.get("y"))
            boxes.append(
                (x, y - FONT_SIZE, x + f.getlength(t.text), y + 3)
            )  # baseline: ascent above, descent below
    assert sorted(t.text for t in root.iter("text") if t.text in labels) == sorted(labels)
    return boxes, width, height


@pytest.mark.parametrize("kind", ["bar", "line"])
def test_svg_legend_of_long_labels(kind):
    if kind == "bar":
        series = [Series(name, [(0.0, 30.0 + k), (1.0, 31.0 + k)]) for k, name in enumerate(LABELS)]
        svg = bar_chart(["de", "en"], series, "SARI per language", "SARI")
    else:
        series = [Series(name, [(1.0, 30.0 + k), (4.0, 31.0 + k)]) for k, name in enumerate(LABELS)]
        svg = line_chart(series, "SARI vs θ", "θ", "SARI")
    boxes, width, height = legend_boxes(svg, LABELS)
    assert len(boxes) == 5
    assert_apart_and_inside(boxes, width, height)


def test_svg_short_labels_keep_three_columns():
    series = [Series(name, [(0.0, 1.0)]) for name in ("copy", "θ = 1", "θ = 4", "θ = 8")]
    boxes, width, height = legend_boxes(bar_chart(["en"], series, "t", "SARI"), [s.name for s in series])
    assert (width, height) == (520, 300) and len({b[1] for b in boxes}) == 2  # 3 + 1 on two rows
    assert_apart_and_inside(boxes, width, height)
