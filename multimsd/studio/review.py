"""The outputs view: a run's test outputs side by side, highlighted, and rated by people, blind if they like.

What is shown: every system of ``PATH/systems/<name>/`` that has ``predictions/test`` (its ``<lang>.txt``, one
output a line, and ``references.jsonl``, the same rows in the same order for every system, else the studio
does not start). Per test row (an *item*: a language and the row's index among that language's rows): the
input, the reference and each system's output; novel words (the project's novelty metric,
:func:`multimsd.metrics.novelty.novel_spans`, against the input) and medical terms (the evaluation's term
dictionary, :meth:`multimsd.metrics.terms.TermDictionary.find_spans`) come as character spans, computed here.

Blind protocol: with ``blind=1`` the systems are shown in an order shuffled per item by a RNG seeded from
:data:`STUDIO_SEED` and the item (language, index, input hash) — the same order on every reload and for every
annotator — and named by letters A, B, C…; the answer carries no system name. A rating names the letter (the
*slot*) and whether the view was blind; the server maps it back and records the system in the journal.

Ratings are kept like gold (:mod:`multimsd.studio.journal`'s mechanics): each rating is appended to
``PATH/studio/ratings-journal-NAME.jsonl``, fsync-ed before the answer (a torn last line, never acknowledged,
is dropped on the next start), then ``PATH/studio/ratings-NAME.jsonl`` (one line per rated item and system,
the format :mod:`multimsd.metrics.human` documents, which the report reads) is rebuilt atomically. A journal
whose input or output no longer matches the run (the run was made again) stops the studio with one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.fsutil import write_text_atomic
from multimsd.io import read_jsonl
from multimsd.metrics.human import CRITERIA, SCALE, input_hash, text_hash
from multimsd.studio.corpus import find_align_dir
from multimsd.studio.journal import append_durable, cut_torn_tail, read_lines
from multimsd.studio.registry import Studio, Unavailable, View, register_view

STUDIO_SEED = 25  # fixed: the blind order depends on the item only, never on who looks or when


@dataclass
class Row:
    complex: str
    reference: str | list[str]
    hash: str


def slot_name(k: int) -> str:
    return chr(ord("A") + k) if k < 26 else f"S{k + 1}"


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise MultimsdError(f"predictions not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise MultimsdError(f"cannot read {path}: {e}") from None


def load_outputs(root: Path) -> tuple[dict[str, list[Row]], dict[str, dict[str, list[str]]]] | None:
    """(rows per language, outputs per system and language) of the run at ``root``; None without predictions."""
    dirs = sorted(p for p in (root / "systems").glob("*/predictions/test") if p.is_dir())
    if not dirs:
        return None
    rows: dict[str, list[Row]] | None = None
    first = None
    outputs: dict[str, dict[str, list[str]]] = {}
    for d in dirs:
        refs = [rec for _, rec in read_jsonl(d / "references.jsonl")]
        per: dict[str, list[Row]] = {}
        for k, rec in enumerate(refs, 1):
            if not isinstance(rec, dict) or not isinstance(rec.get("complex"), str) or "simple" not in rec:
                raise MultimsdError(
                    f"{d / 'references.jsonl'}:{k}: not a reference row (complex, simple, lang)"
                )
            lang = str(rec.get("lang"))
            per.setdefault(lang, []).append(
                Row(rec["complex"], rec["simple"], input_hash(rec["complex"], rec["simple"]))
            )
        if rows is None:
            rows, first = per, d
        elif {lg: [r.hash for r in v] for lg, v in per.items()} != {
            lg: [r.hash for r in v] for lg, v in rows.items()
        }:
            raise MultimsdError(
                f"{d / 'references.jsonl'} has other test rows than {first / 'references.jsonl'}: the systems' "
                "outputs are not for the same inputs, so they cannot be reviewed side by side"
            )
        name = d.parent.parent.name
        outputs[name] = {}
        for lang, lang_rows in per.items():
            lines = _read_lines(d / f"{lang}.txt")
            if len(lines) != len(lang_rows):
                raise MultimsdError(
                    f"{d / f'{lang}.txt'} has {len(lines)} lines but references.jsonl {len(lang_rows)} {lang} rows"
                )
            outputs[name][lang] = lines
    order = {lang: k for k, lang in enumerate(LANGUAGES)}
    assert rows is not None
    return dict(sorted(rows.items(), key=lambda kv: order.get(kv[0], 99))), outputs


def highlighter(root: Path):
    """Novel-word and medical-term spans with the settings of the run's evaluation (lowercasing, tokenizers,
    term lists: :func:`multimsd.metrics.lookup.evaluation_settings`); a term list that is not there (or a
    damaged one) costs its language the term marks, silently."""
    from multimsd.metrics.lookup import TermLookup, evaluation_settings

    return TermLookup.of_evaluation(evaluation_settings(root), missing=None)


class Review:
    """The run's test outputs and one annotator's ratings (journal + ratings file)."""

    def __init__(self, root: Path, studio_dir: Path, annotator: str):
        loaded = load_outputs(root)
        if loaded is None:
            raise MultimsdError(f"{root}: no system has test predictions (systems/*/predictions/test)")
        self.rows, self.outputs = loaded
        self.systems = sorted(self.outputs)
        self.annotator = annotator
        self.journal_path = studio_dir / f"ratings-journal-{annotator}.jsonl"
        self.ratings_path = studio_dir / f"ratings-{annotator}.jsonl"
        self.highlight = highlighter(root)
        self.state: dict[tuple[str, int, str], dict] = {}
        self.lock = threading.Lock()
        self.seq = 0
        self.records, self._good = read_lines(self.journal_path, lambda r: r.get("action") == "rate")
        for k, rec in enumerate(self.records, 1):
            self._apply(rec, f"{self.journal_path}:{k}")

    # ---------------------------------------------------------------------------------------- items
    def order(self, lang: str, i: int, blind: bool) -> list[str]:
        """The systems in the order shown for item (lang, i): sorted by name, or shuffled (seeded) when blind."""
        names = list(self.systems)
        if blind:
            key = f"{STUDIO_SEED}|{lang}|{i}|{self.rows[lang][i].hash}".encode()
            random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big")).shuffle(names)
        return names

    def item(self, lang: str, raw_i: object) -> int:
        """The item index, checked (LookupError for an unknown language or index)."""
        if lang not in self.rows:
            raise LookupError(f"no language {lang!r} in the run's test outputs")
        try:
            i = int(str(raw_i))
        except ValueError:
            raise LookupError("i is an item index (an integer)") from None
        if not 0 <= i < len(self.rows[lang]):
            raise LookupError(f"item {i} out of range 0..{len(self.rows[lang]) - 1}")
        return i

    def complete(self, lang: str, i: int) -> bool:
        """Every system rated on every criterion by this annotator."""
        for s in self.systems:
            st = self.state.get((lang, i, s))
            if st is None or any(st.get(c) is None for c in CRITERIA):
                return False
        return True

    def progress(self) -> list[dict]:
        return [
            {
                "lang": lang,
                "items": len(rows),
                "rated": sum(self.complete(lang, i) for i in range(len(rows))),
                "started": len({i for (lg, i, _) in self.state if lg == lang}),
            }
            for lang, rows in self.rows.items()
        ]

    def view(self, lang: str, i: int, blind: bool) -> dict:
        """What the page draws for one item; no system name when ``blind``."""
        row = self.rows[lang][i]
        refs = [row.reference] if isinstance(row.reference, str) else list(row.reference)
        hl = self.highlight
        outs = []
        for k, s in enumerate(self.order(lang, i, blind)):
            text = self.outputs[s][lang][i]
            st = self.state.get((lang, i, s), {})
            o = {
                "slot": slot_name(k),
                "text": text,
                "novel": hl.novel_spans(lang, row.complex, text),
                "terms": hl.term_spans(lang, text),
                "ratings": {c: st.get(c) for c in CRITERIA},
            }
            if not blind:
                o["system"] = s
            outs.append(o)
        return {
            "lang": lang,
            "i": i,
            "n": len(self.rows[lang]),
            "blind": blind,
            "input": {"text": row.complex, "terms": hl.term_spans(lang, row.complex)},
            "references": [
                {"text": r, "novel": hl.novel_spans(lang, row.complex, r), "terms": hl.term_spans(lang, r)}
                for r in refs
            ],
            "outputs": outs,
            "complete": self.complete(lang, i),
            "progress": self.progress(),
        }

    # ---------------------------------------------------------------------------------------- ratings
    def _apply(self, rec: dict, where: str) -> None:
        self.seq = max(self.seq, int(rec.get("seq", 0)))
        lang, i, s = rec.get("lang"), rec.get("item"), rec.get("system")
        rows = self.rows.get(lang)  # type: ignore[arg-type]
        if rows is None or not isinstance(i, int) or not 0 <= i < len(rows) or s not in self.outputs:
            raise MultimsdError(
                f"{where}: item {i!r} ({lang}) of system {s!r} is not in this run's test outputs"
            )
        if rec.get("input") != rows[i].hash or rec.get("output") != text_hash(self.outputs[s][lang][i]):
            raise MultimsdError(
                f"{where}: item {i} ({lang}) of system {s!r} has another input or output now than when it was "
                "rated (the run was made again); start another --annotator or move the ratings journal"
            )
        values = rec.get("values")
        if not isinstance(values, dict) or any(
            c not in CRITERIA or v not in SCALE for c, v in values.items()
        ):
            raise MultimsdError(f"{where}: values must map {', '.join(CRITERIA)} to 1-5")
        st = self.state.setdefault((lang, i, s), {c: None for c in CRITERIA})
        st.update(values)
        st["blind"] = bool(rec.get("blind"))

    def start(self) -> None:
        """Before the first request: cut a torn last line, rebuild the ratings file where there are ratings."""
        if self.records or self.ratings_path.exists():
            cut_torn_tail(self.journal_path, self._good)
            self.write_ratings()

    def rate(self, lang: str, i: int, slot: str, blind: bool, values: dict[str, int]) -> dict:
        """Append one rating (checked by the caller) to the journal, fsync-ed, then rebuild the ratings file."""
        order = self.order(lang, i, blind)
        slots = [slot_name(k) for k in range(len(order))]
        system = order[slots.index(slot)]
        self.seq += 1
        rec = {
            "seq": self.seq,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "action": "rate",
            "lang": lang,
            "item": i,
            "input": self.rows[lang][i].hash,
            "system": system,
            "output": text_hash(self.outputs[system][lang][i]),
            "slot": slot,
            "blind": blind,
            "values": values,
            "annotator": self.annotator,
        }
        self.journal_path.parent.mkdir(parents=True, exist_ok=True)
        cut_torn_tail(self.journal_path, self._good)
        key, good, seq = (lang, i, system), self._good, self.seq - 1
        before = dict(self.state[key]) if key in self.state else None
        try:
            append_durable(self.journal_path, rec)
            self._good = self.journal_path.stat().st_size
            self.records.append(rec)
            self._apply(rec, str(self.journal_path))
            self.write_ratings()
        except Exception:
            # Not written whole (a full disk: the ratings file could not follow the journal): the rating is
            # taken back, from the journal and from memory, so the error the rater sees is the truth and the
            # same key press, once there is space, records it once.
            with contextlib.suppress(OSError):
                cut_torn_tail(self.journal_path, good)
            self._good, self.seq = good, seq
            if self.records and self.records[-1] is rec:
                self.records.pop()
            if before is None:
                self.state.pop(key, None)
            else:
                self.state[key] = before
            raise
        return rec

    def rating_records(self) -> list[dict]:
        """The ratings file's lines: one per rated (language, item, system), in language, item, system order."""
        order = {lang: k for k, lang in enumerate(LANGUAGES)}
        out = []
        for lang, i, s in sorted(self.state, key=lambda k: (order.get(k[0], 99), k[0], k[1], k[2])):
            st = self.state[(lang, i, s)]
            out.append(
                {
                    "lang": lang,
                    "item": i,
                    "input": self.rows[lang][i].hash,
                    "system": s,
                    "output": text_hash(self.outputs[s][lang][i]),
                    "annotator": self.annotator,
                    "blind": st["blind"],
                    **{c: st[c] for c in CRITERIA},
                }
            )
        return out

    def write_ratings(self) -> None:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rating_records())
        write_text_atomic(self.ratings_path, text, durable=True)

    def info(self) -> dict:
        with self.lock:  # not while a rating is being applied
            progress = self.progress()
        return {
            "systems": len(self.systems),
            "languages": progress,
            "ratings_file": str(self.ratings_path),
            "criteria": list(CRITERIA),
        }


def load_review(root: Path, studio_dir: Path, annotator: str) -> Review | None:
    """The review of a run directory, or None when it has no test predictions (then there is no outputs view)."""
    if not any((root / "systems").glob("*/predictions/test")):
        return None
    return Review(root, studio_dir, annotator)


def routes(review: Review) -> list[Route]:
    """``GET /api/review?lang=&i=&blind=`` and ``POST /api/rate``."""

    def get(request: Request) -> JSONResponse:
        qp = request.query_params
        lang = qp.get("lang") or next(iter(review.rows))
        try:
            i = review.item(lang, qp.get("i", "0"))
        except LookupError as e:
            return JSONResponse({"error": str(e)}, 404)
        with review.lock:  # a rating being applied in another thread changes the state read here
            return JSONResponse(review.view(lang, i, qp.get("blind", "0") in ("1", "true")))

    async def rate(request: Request) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send the rating as application/json"}, 415)
        try:
            body = await request.json()
            lang, blind, slot = str(body.get("lang", "")), body.get("blind"), body.get("slot")
            i = review.item(lang, body.get("i"))
        except (ValueError, AttributeError):
            return JSONResponse({"error": "a JSON object"}, 400)
        except LookupError as e:
            return JSONResponse({"error": str(e)}, 404)
        values = body.get("values")
        if not isinstance(blind, bool):
            return JSONResponse({"error": "blind: true or false (how the item was shown)"}, 400)
        if slot not in [slot_name(k) for k in range(len(review.systems))]:
            return JSONResponse({"error": f"no output {slot!r} for this item"}, 400)
        if (
            not isinstance(values, dict)
            or not values
            or any(c not in CRITERIA or isinstance(v, bool) or v not in SCALE for c, v in values.items())
        ):
            return JSONResponse({"error": f"values: {{criterion: 1-5}}, criteria {', '.join(CRITERIA)}"}, 400)

        def commit() -> dict:
            with review.lock:  # fsync-ed and the ratings file rebuilt before the answer goes out
                rec = review.rate(lang, i, slot, blind, values)
                return {"seq": rec["seq"], "item": review.view(lang, i, blind)}

        try:
            return JSONResponse(await run_in_threadpool(commit))
        except MultimsdError as e:  # not written (a full disk): taken back whole; the rater reads why
            return JSONResponse({"error": str(e)}, 507)

    return [Route("/api/review", get), Route("/api/rate", rate, methods=["POST"])]


def prepare(studio: Studio) -> Review | Unavailable:
    """The outputs view's :class:`Review` of a run directory with test predictions, else why not (an ``align``
    output has no system outputs); every check done (references the same for every system, ratings journal
    readable), nothing written."""
    root = studio.root
    if find_align_dir(root) == root:
        return Unavailable(
            "a `multimsd align` output has no systems' outputs (open a `multimsd run` directory)"
        )
    review = load_review(root, root / "studio", studio.args.annotator)
    if review is None:
        return Unavailable("no system of this run has test outputs yet (systems/<name>/predictions/test)")
    return review


def start(review: Review) -> str:
    review.start()
    return f"outputs of {len(review.systems)} systems; ratings file {review.ratings_path}"


register_view(
    View(
        name="review",
        title="outputs",
        order=30,
        script="review.js",
        routes=routes,
        info=lambda review: review.info(),
        prepare=prepare,
        start=start,
    )
)

__all__ = ["Review", "STUDIO_SEED", "load_review", "prepare", "routes"]
