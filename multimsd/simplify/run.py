"""The loop of ``multimsd simplify``: documents → sentences → the system's outputs → safety flags → OUT.

Order of work, so that a mistake costs a second and leaves nothing behind: MODEL is resolved
(:mod:`.source`) and INPUT read through once (:mod:`.documents`) before OUT is locked
(:func:`multimsd.runlock.hold`: one writer per OUT) and before the model is loaded.

OUT is JSONL, one whole record per document, in input order::

    {"id", "lang", "text": the simplified document, "sentences": [{"source", "output", "flags": [...]}],
     "flagged": n, "system": name, "model": path}

Each record is appended, flushed and fsynced before the next document's is written, so a killed command
leaves whole records and at most one partial last line. Run again with the same OUT, it resumes: a last line
that is not whole JSON is cut away, the ids already in OUT are skipped (counted in one line). OUT is opened
only for the first record: a command that fails before it creates no OUT.

Decoding is the evaluation's (:func:`multimsd.training.predict.generate`, the system's ``eval.*`` settings,
batched by ``eval.max_batch_tokens``), over the sentences of whole documents at a time: documents are added to a
call until it holds :data:`SENTENCES_PER_CALL` sentences (or :data:`DOCS_PER_CALL` documents), so short
documents still fill the large batches a GPU wants, and a kill redoes at most one call's documents.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from multimsd import interrupts, runlock
from multimsd.errors import MultimsdError
from multimsd.simplify.documents import Document, Input
from multimsd.training.system import System

log = logging.getLogger("multimsd.simplify")

SENTENCES_PER_CALL = (
    512  # sentences of whole documents that go to one generate call (eval.max_batch_tokens batches them)
)
DOCS_PER_CALL = 256  # at most this many documents a call (records are written after each call)


@dataclass
class Totals:
    documents: int = 0
    sentences: int = 0
    flagged: int = 0
    by_check: Counter = field(default_factory=Counter)  # flagged sentences per check (numbers, negation, …)
    skipped: int = 0
    seconds: float = 0.0
    tokens: int = 0  # of the outputs, as the model's tokenizer counts them


# ------------------------------------------------------------------------------------------- OUT
def done_ids(out: Path) -> set[str]:
    """The ids of the whole records in OUT; a last line that is not whole JSON (a kill mid-write) is cut
    away first. Any other line that is not a record means OUT is not ours: one error line."""
    if not out.exists():
        return set()
    if not out.is_file():
        raise MultimsdError(f"--out {out}: not a file")
    ids: set[str] = set()
    keep = 0  # bytes of whole records
    with open(out, "rb") as f:
        for n, raw in enumerate(f, 1):
            rec_id = _record_id(raw)
            if not raw.endswith(b"\n"):  # the last line, cut by a kill (or just its newline missing)
                if rec_id is not None:
                    ids.add(rec_id)
                    keep += len(raw)
                break
            if rec_id is None:
                raise MultimsdError(
                    f"--out {out} line {n}: not a record of multimsd simplify; choose another --out"
                )
            ids.add(rec_id)
            keep += len(raw)
    size = out.stat().st_size
    if keep != size or (size and not raw.endswith(b"\n")):
        with open(out, "r+b") as f:
            if keep == size:  # a whole record without its newline
                f.seek(size)
                f.write(b"\n")
            else:
                log.info("--out %s: its last line was cut short (a killed run): it is written again", out)
                f.truncate(keep)
            _sync(f)
    return ids


def _record_id(raw: bytes) -> str | None:
    """The id of a line that is one of our records; None for anything else."""
    try:
        rec = json.loads(raw)
    except ValueError:
        return None
    return rec["id"] if isinstance(rec, dict) and isinstance(rec.get("id"), str) else None


def _sync(f) -> None:
    f.flush()
    os.fsync(f.fileno())


class Writer:
    """Appends one record at a time to OUT; OUT is created by the first one."""

    def __init__(self, out: Path) -> None:
        self.out, self.f = out, None

    def write(self, record: dict) -> None:
        from multimsd.fsutil import writing

        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with writing(self.out), interrupts.deferred():  # a record is whole or not there
            if self.f is None:
                self.f = open(self.out, "ab")  # noqa: SIM115 (held across records, closed by close())
            size = self.f.tell()
            try:
                self.f.write(data)
                _sync(self.f)
            except BaseException:
                self.f.truncate(size)
                raise

    def close(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None


# ------------------------------------------------------------------------------------------- the loop
def batches(
    docs: Iterator[Document], skip: set[str], max_docs: int, max_sentences: int = SENTENCES_PER_CALL
) -> Iterator[list[tuple[Document, list[str]]]]:
    """The documents not in ``skip`` with their sentences, whole documents at a time: a batch closes when it
    holds ``max_sentences`` sentences or ``max_docs`` documents."""
    from multimsd.alignment.segment import segment_document

    batch: list[tuple[Document, list[str]]] = []
    sentences = 0
    for doc in docs:
        if doc.id in skip:
            continue
        batch.append((doc, segment_document(doc.text, doc.lang)))
        sentences += len(batch[-1][1])
        if len(batch) >= max_docs or sentences >= max_sentences:
            yield batch
            batch, sentences = [], 0
    if batch:
        yield batch


def record(doc: Document, rows: list[dict], source: System) -> dict:
    """OUT's record of one document from its checked sentences
    (:func:`multimsd.training.system.simplify_sentences`)."""
    from multimsd.training.system import joined

    return {
        "id": doc.id,
        "lang": doc.lang,
        "text": joined(doc.lang, rows),
        "sentences": rows,
        "flagged": sum(1 for r in rows if r["flags"]),
        "system": source.name,
        "model": str(source.path),
    }


def simplify(
    source: System, inp: Input, out: Path, ids: set[str], docs_per_call: int = DOCS_PER_CALL, terms=None
) -> Totals:
    """Simplify every document of ``inp`` not yet in ``out`` (``ids``: those of ``inp``, :meth:`Input.check`);
    ``terms(lang)``: the dictionary whose terms the checks look for (None: no term check)."""
    from multimsd.training.system import load, simplify_sentences

    t = Totals()
    out = Path(out).expanduser().resolve()
    with runlock.hold(out, "multimsd simplify", key="--out"):
        done = done_ids(out) & ids
        t.skipped = len(done)
        if done:
            log.info("resuming: %d of %d documents are already in %s, skipped", len(done), len(ids), out)
        todo = len(ids) - t.skipped
        if not todo:
            log.info("nothing to do: every document is in %s", out)
            return t
        loaded = load(source)
        tokenizer = loaded[1]
        writer = Writer(out)
        t0 = time.perf_counter()
        with interrupts.note(
            where=lambda: f"after {t.documents} of {todo} documents",
            state=lambda: f"{t.skipped + t.documents} documents are in {out}",
            advice="run the same command to continue (documents already in --out are skipped)",
        ):
            try:
                for batch in batches(inp.documents(), done, docs_per_call):
                    checked = simplify_sentences(source, loaded, [(d.lang, ss) for d, ss in batch], terms)
                    for (d, ss), rows in zip(batch, checked):
                        t.tokens += sum(
                            len(tokenizer(r["output"], add_special_tokens=False)["input_ids"]) for r in rows
                        )
                        rec = record(d, rows, source)
                        writer.write(rec)
                        t.documents += 1
                        t.sentences += len(ss)
                        t.flagged += rec["flagged"]
                        for r in rows:
                            t.by_check.update({f.split(":", 1)[0] for f in r["flags"]})
                    log.info("%d / %d documents", t.documents, todo)
            finally:
                writer.close()
        t.seconds = time.perf_counter() - t0
    return t
