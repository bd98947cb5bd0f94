"""The side-by-side view of ``multimsd simplify --format md|html``: OUT's documents as tables of source and
simplified sentences, rendered by the project's renderer (:mod:`multimsd.render`) like the run's report.

In each simplified sentence the words that are not in its source are marked (*novel*, the novelty metric's
tokens found back in the text, with the lowercasing and tokenizers of the evaluation of the run that
simplified, else the evaluation's defaults: :class:`multimsd.metrics.lookup.TermLookup`, as the studio marks
them), and the medical terms of the dictionary in both columns (*term*). A sentence whose output failed a
safety check (changed numbers or units, a dropped or added negation, a term of the source missing) has its row
flagged and the reasons beside it. The view is written from OUT after the command's work, so it always shows every
document OUT holds, also those of an earlier, interrupted run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.metrics.lookup import TermLookup
from multimsd.render.blocks import Cell, Paragraph, Section, Table

FORMATS = ("md", "html")


def term_marks(lookup: TermLookup, lang: str, text: str) -> list[tuple[int, int, str]]:
    return [(a, b, "term") for a, b, *_ in lookup.term_spans(lang, text)]


def novel_marks(lookup: TermLookup, lang: str, source: str, output: str) -> list[tuple[int, int, str]]:
    return [(a, b, "novel") for a, b in lookup.novel_spans(lang, source, output)]


def records(out: Path) -> Iterator[dict]:
    with open(out, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def document_section(rec: dict, lookup: TermLookup, number: int) -> Section:
    lang = rec["lang"]
    rows = []
    for s in rec["sentences"]:
        source, output, flags = s["source"], s["output"], s["flags"]
        rows.append(
            [
                Cell(source, marks=tuple(term_marks(lookup, lang, source))),
                Cell(
                    output or "(empty)",
                    marks=tuple(novel_marks(lookup, lang, source, output) + term_marks(lookup, lang, output))
                    if output
                    else (),
                    flag=bool(flags),
                ),
                Cell("; ".join(flags), flag=bool(flags)),
            ]
        )
    caption = f"{rec['flagged']} of {len(rec['sentences'])} sentence(s) flagged"
    table = Table(["source", "simplified", "safety flags"], rows, caption=caption, wide=True)
    return Section(f"{rec['id']} ({lang})", f"doc-{number}", [table])


def write_view(out: Path, fmt: str, lookup: TermLookup | None = None) -> Path:
    """OUT's documents as ``OUT`` with the suffix ``.md`` / ``.html``, written aside and renamed into place;
    ``lookup``: the term lists and the evaluation's settings the marks follow (default: the evaluation's
    defaults and the bundled lists)."""
    from multimsd.fsutil import write_text_atomic
    from multimsd.render.html import render_html
    from multimsd.render.markdown import render_markdown

    if fmt not in FORMATS:
        raise MultimsdError(f"--format {fmt}: choose {' or '.join(FORMATS)}")
    lookup = lookup if lookup is not None else TermLookup.of_evaluation()
    sections, systems, counts, langs = [], Counter(), Counter(), set()
    for number, rec in enumerate(records(out), 1):
        sections.append(document_section(rec, lookup, number))
        if rec["sentences"]:  # the languages whose term lists the view used
            langs.add(rec["lang"])
        systems[rec["system"]] += 1
        counts["documents"] += 1
        counts["sentences"] += len(rec["sentences"])
        counts["flagged"] += rec["flagged"]
    summary = Section(
        "Summary",
        "summary",
        [
            Paragraph(
                f"{counts['documents']} document(s), {counts['sentences']} sentence(s), {counts['flagged']} "
                f"flagged by the safety checks; simplified by {', '.join(systems) or '(none)'}. Marked: words "
                "of the output not in its source (novel) and medical terms of the dictionary (term). Term "
                f"lists: {'; '.join(lookup.notes(langs)) or 'none'}."
            )
        ],
    )
    title = f"multimsd simplify: {out.name}"
    footer = f"written from {out}"
    render = render_html if fmt == "html" else render_markdown
    view = out.with_suffix(f".{fmt}")
    write_text_atomic(view, render(title, [summary, *sections], footer))
    return view
