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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from multimsd import interrupts, runlock
from multimsd.errors import MultimsdError
from multimsd.simplify.documents import Document, Input
from multimsd.simplify.source import Source

log = logging.getLogger("multimsd.simplify")

SENTENCES_PER_CALL = (
    512  # sentences of whole documents that go to one generate call (eval.max_batch_tokens batches them)
)
DOCS_PER_CALL = 256  # at most this many documents a call (records are written after each call)
NO_SPACE = ("ja", "zh")  # sentences joined without a space


@dataclass
class Totals:
    documents: int = 0
    sentences: int = 0
    flagged: int = 0
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


def record(doc: Document, sentences: list[str], outputs: list[str], source: Source, terms=None) -> dict:
    """OUT's record of one document; per sentence the safety checks' reasons (numbers, negation, and the
    source's medical terms when ``terms``, the language's dictionary, is given)."""
    from multimsd.metrics.safety import check_sentence

    rows = []
    for s, o in zip(sentences, outputs):
        row = {
            "source": s,
            "output": str(o),
            "flags": [f"{f.check}: {f.reason}" for f in check_sentence(s, o, doc.lang, terms)],
        }
        if getattr(o, "cut", None):  # generation stopped at eval.max_new_tokens, not at an end token
            row["cut"] = True
        rows.append(row)
    joiner = "" if doc.lang in NO_SPACE else " "
    return {
        "id": doc.id,
        "lang": doc.lang,
        "text": joiner.join(o for o in (r["output"].strip() for r in rows) if o),
        "sentences": rows,
        "flagged": sum(1 for r in rows if r["flags"]),
        "system": source.system,
        "model": str(source.path),
    }


def load(source: Source):
    """(model, tokenizer, accelerator) of the source: the base model as the training built it, then its best
    weights (:func:`multimsd.training.results.load_best`, which checks the manifest)."""
    from accelerate import Accelerator

    from multimsd.training.kinds import get_kind
    from multimsd.training.modeling import load_model_and_tokenizer, model_path
    from multimsd.training.results import load_best

    cfg = source.config
    kind = get_kind(cfg.model.kind)
    if cfg.model.kind == "lstm" and source.weights is not None:
        # a scratch LSTM builds its vocabularies from the training split: its best/ holds them, load that
        cfg.model.pretrained = str(source.weights)
    model_path(cfg.model)  # a local model is built before Accelerator() (multimsd.training.modeling)
    accelerator = Accelerator()
    model, tokenizer = load_model_and_tokenizer(cfg.model)
    if source.weights is not None:
        model = load_best(cfg, kind, source.weights, accelerator, model)
    model = model.to(accelerator.device)
    model.eval()
    return model, tokenizer, accelerator


def simplify(
    source: Source, inp: Input, out: Path, ids: set[str], docs_per_call: int = DOCS_PER_CALL, terms=None
) -> Totals:
    """Simplify every document of ``inp`` not yet in ``out`` (``ids``: those of ``inp``, :meth:`Input.check`);
    ``terms(lang)``: the dictionary whose terms the checks look for (None: no term check)."""
    from multimsd.training.predict import generate

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
        model, tokenizer, accelerator = load(source)
        writer = Writer(out)
        t0 = time.perf_counter()
        with interrupts.note(
            where=lambda: f"after {t.documents} of {todo} documents",
            state=lambda: f"{t.skipped + t.documents} documents are in {out}",
            advice="run the same command to continue (documents already in --out are skipped)",
        ):
            try:
                for batch in batches(inp.documents(), done, docs_per_call):
                    rows = [{"complex": s, "lang": d.lang} for d, ss in batch for s in ss]
                    outputs = (
                        generate(source.config, model, tokenizer, rows, accelerator, final=True)
                        if rows
                        else []
                    )
                    t.tokens += sum(
                        len(tokenizer(str(o), add_special_tokens=False)["input_ids"]) for o in outputs
                    )
                    k = 0
                    for d, ss in batch:
                        rec = record(
                            d, ss, outputs[k : k + len(ss)], source, terms(d.lang) if terms else None
                        )
                        k += len(ss)
                        writer.write(rec)
                        t.documents += 1
                        t.sentences += len(ss)
                        t.flagged += rec["flagged"]
                    log.info("%d / %d documents", t.documents, todo)
            finally:
                writer.close()
        t.seconds = time.perf_counter() - t0
    return t
