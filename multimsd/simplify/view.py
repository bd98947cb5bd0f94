"""The side-by-side view of ``multimsd simplify --format md|html``: OUT's documents as tables of source and
simplified sentences, rendered by the project's renderer (:mod:`multimsd.render`) like the run's report.

In each simplified sentence the words that are not in its source are marked (*novel*, the novelty metric's
tokens found back in the text: :func:`multimsd.metrics.novelty.novel_spans`, as the studio marks them), and
the medical terms of the dictionary in both columns (*term*). A sentence whose output failed a safety check
(changed numbers or units, a dropped or added negation, a term of the source missing) has its row flagged and
the reasons beside it. The view is written from OUT after the command's work, so it always shows every
document OUT holds, also those of an earlier, interrupted run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.render.blocks import Cell, Paragraph, Section, Table

FORMATS = ("md", "html")


class Marker:
    """Novel-word and term spans per language (the tokenizer and dictionary of each loaded once)."""

    def __init__(self, terms_dir: str | None, use_terms: bool = True):
        self.terms_dir, self.use_terms = terms_dir, use_terms
        self._dicts: dict = {}

    def dictionary(self, lang: str):
        from multimsd.metrics.terms import dictionary_for

        if lang not in self._dicts:
            self._dicts[lang] = dictionary_for(lang, self.terms_dir) if self.use_terms else (None, None)
        return self._dicts[lang][0]

    def notes(self) -> list[str]:
        """What the term lists of the languages seen are (the bundled ones say they are a demo)."""
        from multimsd.metrics.terms import dictionary_note

        return [dictionary_note(lang, *found) for lang, found in sorted(self._dicts.items())]

    def terms(self, lang: str, text: str) -> list[tuple[int, int, str]]:
        d = self.dictionary(lang)
        return [] if d is None else [(a, b, "term") for a, b, *_ in d.find_spans(text)]

    def novel(self, lang: str, source: str, output: str) -> list[tuple[int, int, str]]:
        from multimsd.metrics.novelty import novel_spans
        from multimsd.metrics.tokenize import resolve_tokenizer

        spans = novel_spans(source, output, tokenizer=resolve_tokenizer(lang, None))
        return [(a, b, "novel") for a, b in spans]


def records(out: Path) -> Iterator[dict]:
    with open(out, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def document_section(rec: dict, marker: Marker, number: int) -> Section:
    lang = rec["lang"]
    rows = []
    for s in rec["sentences"]:
        source, output, flags = s["source"], s["output"], s["flags"]
        rows.append(
            [
                Cell(source, marks=tuple(marker.terms(lang, source))),
                Cell(
                    output or "(empty)",
                    marks=tuple(marker.novel(lang, source, output) + marker.terms(lang, output))
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


def write_view(out: Path, fmt: str, terms_dir: str | None = None, use_terms: bool = True) -> Path:
    """OUT's documents as ``OUT`` with the suffix ``.md`` / ``.html``, written aside and renamed into place."""
    from multimsd.fsutil import write_text_atomic
    from multimsd.render.html import render_html
    from multimsd.render.markdown import render_markdown

    if fmt not in FORMATS:
        raise MultimsdError(f"--format {fmt}: choose {' or '.join(FORMATS)}")
    marker = Marker(terms_dir, use_terms)
    sections, systems, counts = [], Counter(), Counter()
    for number, rec in enumerate(records(out), 1):
        sections.append(document_section(rec, marker, number))
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
                f"lists: {'; '.join(marker.notes()) or 'none'}."
            )
        ],
    )
    title = f"multimsd simplify: {out.name}"
    footer = f"written from {out}"
    render = render_html if fmt == "html" else render_markdown
    view = out.with_suffix(f".{fmt}")
    write_text_atomic(view, render(title, [summary, *sections], footer))
    return view
