"""Gold written as you go: one annotator's actions in a journal, and the gold file rebuilt from it.

The journal (JSON lines, ``<PATH>/studio/journal-<annotator>.jsonl``) is the truth. Each action is appended,
flushed and ``fsync``-ed before the server answers, so an acknowledged action survives a SIGKILL or a power
cut. After each action the gold file (``<PATH>/studio/gold-<annotator>.jsonl``) is rebuilt from the journal
into a temporary file that is fsync-ed and renamed over the old one: a reader sees the old file or the new
one, never half of one. A kill between the two leaves the gold file one action behind; the next start
rebuilds it.

Gold items are ``(complex members, simple members)``, sorted index tuples, as :mod:`multimsd.gold` reads them.
An action names the items it touches; ``accept`` / ``link`` add them to the article's gold, ``reject`` takes
them out and remembers the decision, ``accept_above`` is an accept of the items that were above θ when it was
made (listed in the record, so replaying never depends on the current corpus), and ``undo`` takes back the
article's last action. A gold file given with ``--gold`` becomes the journal's first record (``base``), so a
restart never applies it twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.fsutil import fsync_dir, write_text_atomic, writing
from multimsd.gold import GoldPair

Key = tuple[str, str]  # (lang, article_id)
EDITS = ("accept", "link", "reject", "accept_above")
ACTIONS = (*EDITS, "undo")


def item_to_json(item: GoldPair) -> list:
    """``((3,), (5,))`` -> ``[3, 5]``; an n:m side stays a list: ``((3, 4), (5,))`` -> ``[[3, 4], 5]``."""
    return [side[0] if len(side) == 1 else list(side) for side in item]


def item_label(item: GoldPair) -> str:
    """An item as people read it: sentences numbered from 1, ``((1,), (2, 3))`` -> ``"2 ↔ 3+4"``. Positions
    (in the gold file, the journal and the API) count from 0; everything the studio says counts from 1."""
    return " ↔ ".join("+".join(str(k + 1) for k in side) for side in item)


def item_from_json(raw: object, n_complex: int, n_simple: int, where: str) -> GoldPair:
    """The inverse of :func:`item_to_json`, checked against the article's sentence counts."""
    if not isinstance(raw, list) or len(raw) != 2:
        raise MultimsdError(f"{where}: item {raw!r} is not a [complex, simple] pair")
    sides = []
    for v, n in zip(raw, (n_complex, n_simple)):
        idx = v if isinstance(v, list) else [v]
        if not idx or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < n for k in idx):
            raise MultimsdError(
                f"{where}: sentence position {v!r} out of range 0..{n - 1} (positions count from 0)"
            )
        sides.append(tuple(sorted(set(idx))))
    return sides[0], sides[1]


@dataclass
class ArticleState:
    """One article's annotation: the base gold (from ``--gold``) and the actions on top, undo-able."""

    base: set[GoldPair] = field(default_factory=set)
    actions: list[dict] = field(default_factory=list)
    from_base: bool = False  # the gold file given with --gold had this article

    def gold_and_rejected(self) -> tuple[set[GoldPair], set[GoldPair]]:
        gold, rejected = set(self.base), set()
        for a in self.actions:
            items = {tuple(tuple(side) for side in it) for it in a["_items"]}
            if a["action"] == "reject":
                gold -= items
                rejected |= items
            else:
                gold |= items
                rejected -= items
        return gold, rejected

    @property
    def touched(self) -> bool:
        return self.from_base or bool(self.actions)


def read_lines(path: Path, check) -> tuple[list[dict], int]:
    """The JSON-lines records of an append-only journal and the byte length of its complete lines.

    A last line without its newline is an append that was killed half-way: it was never acknowledged, so it is
    dropped (:func:`cut_torn_tail` cuts it off before the next append). Any other damage is an error, as is a
    record ``check(record)`` refuses. Shared by the gold journal here and the ratings journal
    (:mod:`multimsd.studio.review`).
    """
    if not path.is_file():
        return [], 0
    data = path.read_bytes()
    good = data.rfind(b"\n") + 1
    records = []
    for lineno, line in enumerate(data[:good].splitlines(), 1):
        try:
            rec = json.loads(line)
        except ValueError:
            raise MultimsdError(f"{path}:{lineno}: not a JSON line (the journal is damaged)") from None
        if not isinstance(rec, dict) or not check(rec):
            raise MultimsdError(f"{path}:{lineno}: not a studio journal record")
        records.append(rec)
    return records, good


def cut_torn_tail(path: Path, good_bytes: int) -> None:
    """Cut a journal back to its complete lines (a torn last line, see :func:`read_lines`)."""
    if path.is_file() and path.stat().st_size != good_bytes:
        with open(path, "r+b") as f:
            f.truncate(good_bytes)
            os.fsync(f.fileno())


def append_durable(path: Path, rec: dict) -> None:
    """Append one record as a JSON line, flushed and fsync-ed (and a new file's name too) before returning.

    An append that fails (a full disk: :func:`multimsd.fsutil.writing`'s one line) is cut off again, so the
    journal never holds a torn line of an action that was not acknowledged; a new, empty journal goes."""
    new = not path.exists()
    size = 0 if new else path.stat().st_size
    try:
        with writing(path), open(path, "ab") as f:
            f.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())  # durable before the server answers
            if new:
                fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            if new:
                path.unlink(missing_ok=True)
            else:
                cut_torn_tail(path, size)
        raise


def read_journal(path: Path) -> tuple[list[dict], int]:
    """The gold journal's records and the byte length of its complete lines (see :func:`read_lines`)."""
    return read_lines(path, lambda rec: rec.get("action") in (*ACTIONS, "base"))


class Journal:
    """One annotator's journal and the gold state it holds; :meth:`act` is the only way to change it."""

    def __init__(
        self, path: Path, gold_path: Path, annotator: str, texts: dict[Key, tuple[list[str], list[str]]]
    ):
        self.path, self.gold_path, self.annotator = path, gold_path, annotator
        self.texts = texts  # every article's sentences: (complex, simple)
        self.sentences = {k: (len(c), len(s)) for k, (c, s) in texts.items()}
        # Each action records which sentences its indices point at: replayed over an article whose sentences
        # have changed since (the run's input edited, aligned again), it is an error, not a silent misfit.
        self.doc_ids = {
            k: hashlib.sha1(json.dumps([c, s], ensure_ascii=False).encode()).hexdigest()[:16]
            for k, (c, s) in texts.items()
        }
        self._load()

    def _load(self) -> None:
        """The state of the journal on disk, replayed from its records."""
        self.states: dict[Key, ArticleState] = {}
        self.passthrough: list[dict] = []  # --gold records of articles outside this corpus, kept as they are
        self.records, self._good_bytes = read_journal(self.path)
        self.seq = 0
        for k, rec in enumerate(self.records):
            self._apply(rec, f"{self.path}:{k + 1}")

    def reread(self) -> Journal:
        """The same journal read again from disk (after its lock is taken: what another studio wrote)."""
        return Journal(self.path, self.gold_path, self.annotator, self.texts)

    # ------------------------------------------------------------------------------------------ state
    def state(self, lang: str, article_id: str) -> ArticleState:
        return self.states.setdefault((lang, article_id), ArticleState())

    @property
    def has_base(self) -> bool:
        return any(r["action"] == "base" for r in self.records)

    def _apply(self, rec: dict, where: str) -> None:
        self.seq = max(self.seq, int(rec.get("seq", 0)))
        if rec["action"] == "base":
            for g in rec["articles"]:
                key = (g["lang"], g["article_id"])
                if key not in self.sentences:
                    self.passthrough.append(g)
                    continue
                st = self.state(*key)
                st.from_base = True
                n_c, n_s = self.sentences[key]
                st.base = {item_from_json(it, n_c, n_s, where) for it in g["gold"]}
            return
        key = (rec.get("lang"), rec.get("article_id"))
        if key not in self.sentences:
            raise MultimsdError(f"{where}: article {key[1]!r} ({key[0]}) is not in this corpus")
        if rec.get("doc", self.doc_ids[key]) != self.doc_ids[key]:
            raise MultimsdError(
                f"{where}: article {key[1]!r} ({key[0]}) has other sentences now than when it was annotated "
                "(the run was aligned again from changed input); start another --annotator or move the journal"
            )
        st = self.state(*key)
        if rec["action"] == "undo":
            if st.actions:
                st.actions.pop()
            return
        n_c, n_s = self.sentences[key]
        items = [item_from_json(it, n_c, n_s, where) for it in rec.get("items", [])]
        st.actions.append({**rec, "_items": items})

    # ------------------------------------------------------------------------------------------ writing
    def start(self, base_records: list[dict] | None) -> None:
        """Before the first request: cut a torn last line, record ``--gold`` as the base, write the gold file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut_torn_tail(self.path, self._good_bytes)
        if base_records and not self.has_base:
            self._append({"action": "base", "articles": base_records})
        self.write_gold()

    def _append(self, rec: dict) -> dict:
        self.seq += 1
        rec = {"seq": self.seq, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **rec}
        rec["annotator"] = self.annotator
        append_durable(self.path, rec)
        self.records.append(rec)
        self._apply(rec, str(self.path))
        return rec

    def act(self, action: str, lang: str, article_id: str, items: list[GoldPair], **extra) -> dict:
        """Append one action (already checked by the caller), then rebuild the gold file."""
        if action not in ACTIONS:
            raise MultimsdError(f"unknown action {action!r} (choose {', '.join(ACTIONS)})")
        rec = {"action": action, "lang": lang, "article_id": article_id, **extra}
        rec["doc"] = self.doc_ids[(lang, article_id)]
        if action != "undo":
            rec["items"] = [item_to_json(it) for it in sorted(items)]
        size = self.path.stat().st_size if self.path.exists() else 0
        try:
            rec = self._append(rec)
            self.write_gold()
        except Exception:
            # Not written whole (a full disk: the gold file could not follow the journal): the action is taken
            # back, from the journal and from memory, so that the error the annotator sees is the truth and
            # the same click, once there is space, applies it once (an undo twice would take back two).
            with contextlib.suppress(OSError):
                cut_torn_tail(self.path, size)
            self._load()
            raise
        return rec

    def gold_records(self) -> list[dict]:
        """Every annotated article (any action, or in ``--gold``) as a gold record, languages in the project's
        order, then article id; items sorted. Articles outside the corpus from ``--gold`` come last, as given."""
        order = {lang: k for k, lang in enumerate(LANGUAGES)}
        out = []
        for key in sorted(self.states, key=lambda k: (order.get(k[0], 99), k[1])):
            st = self.states[key]
            if not st.touched:
                continue
            complex_, simple = self.texts[key]
            gold, _ = st.gold_and_rejected()
            out.append(
                {
                    "article_id": key[1],
                    "lang": key[0],
                    "complex": complex_,
                    "simple": simple,
                    "gold": [item_to_json(it) for it in sorted(gold)],
                }
            )
        return out + self.passthrough

    def write_gold(self) -> None:
        recs = self.gold_records()
        self.gold_path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
        write_text_atomic(self.gold_path, text, durable=True)


def read_base_gold(path: Path, texts: dict[Key, tuple[list[str], list[str]]]) -> list[dict]:
    """Read ``--gold FILE`` with the project's own gold reader; its articles of this corpus must have the
    sentences the corpus has (else indices would point at other sentences)."""
    from multimsd.gold import load_gold_docs

    if not path.exists():
        raise MultimsdError(f"--gold {path}: no such file")
    docs = load_gold_docs(str(path))
    out = []
    for d in docs:
        key = (d.lang, d.article_id)
        if key in texts and (list(d.complex), list(d.simple)) != (texts[key][0], texts[key][1]):
            raise MultimsdError(
                f"--gold {path}: article {d.article_id!r} ({d.lang}) has other sentences than the run's "
                "segmentation of it, so its indices would point at other sentences"
            )
        out.append(
            {
                "article_id": d.article_id,
                "lang": d.lang,
                "complex": list(d.complex),
                "simple": list(d.simple),
                "gold": [item_to_json(it) for it in sorted(d.gold)],
            }
        )
    return out


__all__ = [
    "Journal",
    "append_durable",
    "cut_torn_tail",
    "item_from_json",
    "item_label",
    "item_to_json",
    "read_base_gold",
    "read_lines",
]
