"""Human gold sentence alignments: the document readers shared by every stage (scoring is in
:mod:`multimsd.alignment.goldscore`, the ``align.py mode=gold`` report in :mod:`multimsd.alignment.goldmode`).

Gold format (JSONL, one article pair a line; the bundled sample's ``articles.jsonl`` is one)::

    {"article_id": "dvt", "lang": "en", "complex": ["...", ...], "simple": ["...", ...],
     "gold": [[0, 0], [2, 1], [[3, 4], 5], ...]}

Each gold item is ``[complex_idx, simple_idx]`` with 0-based sentence indices; an index may be a list for an
n:m alignment. Scoring follows the DEplain authors and the MultiMSD paper: a predicted pair is correct iff it
is exactly a gold pair; precision = correct / predicted, recall = correct / gold. An argmax aligner only ever
predicts 1:1 pairs, so n:m gold items count as misses unless ``only_1to1`` restricts the gold to 1:1.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.io import read_jsonl, record_to_pair
from multimsd.paths import sample_data_dir

GoldPair = tuple[tuple[int, ...], tuple[int, ...]]


@dataclass
class GoldDoc:
    article_id: str
    lang: str
    complex: list[str]
    simple: list[str]
    gold: set[GoldPair]


def _as_idx(v, n: int, where: str) -> tuple[int, ...]:
    idx = tuple(v) if isinstance(v, list | tuple) else (v,)
    if not idx or not all(isinstance(k, int) and 0 <= k < n for k in idx):
        raise MultimsdError(f"{where}: gold index {v!r} out of range 0..{n - 1}")
    return tuple(sorted(idx))


def parse_gold_record(rec: dict, where: str) -> GoldDoc:
    pair = record_to_pair(rec, where)
    if not isinstance(pair.complex, list) or not isinstance(pair.simple, list):
        raise MultimsdError(f"{where}: gold records need complex and simple as lists of sentences")
    if not isinstance(rec.get("gold"), list):
        raise MultimsdError(f"{where}: missing 'gold' list of [complex_idx, simple_idx] pairs")
    gold = set()
    for item in rec["gold"]:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise MultimsdError(f"{where}: gold item {item!r} is not a [complex_idx, simple_idx] pair")
        gold.add((_as_idx(item[0], len(pair.complex), where), _as_idx(item[1], len(pair.simple), where)))
    return GoldDoc(pair.article_id, pair.lang, list(pair.complex), list(pair.simple), gold)


def load_gold(path: str | Path) -> list[GoldDoc]:
    """Read a gold JSONL file (format in the module docstring)."""
    docs = [parse_gold_record(rec, f"{path}:{lineno}") for lineno, rec in read_jsonl(path)]
    seen = set()
    for d in docs:
        if (d.article_id, d.lang) in seen:
            raise MultimsdError(f"{path}: article {d.article_id!r} ({d.lang}) appears twice")
        seen.add((d.article_id, d.lang))
    return docs


def read_deplain(directory: str | Path) -> list[GoldDoc]:
    """Read the DEplain-web gold release layout (documents.jsonl + gold.tsv) as German gold documents."""
    directory = Path(directory)
    docs: dict[str, GoldDoc] = {}
    for _lineno, rec in read_jsonl(directory / "documents.jsonl"):
        pid = str(rec["pair_id"])
        docs[pid] = GoldDoc(pid, "de", list(rec["complex_sentences"]), list(rec["simple_sentences"]), set())
    with open(directory / "gold.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            doc = docs[str(row["pair_id"])]
            c = tuple(sorted(int(x) for x in row["complex_idx"].split(",")))
            s = tuple(sorted(int(x) for x in row["simple_idx"].split(",")))
            doc.gold.add((c, s))
    return list(docs.values())


def load_gold_docs(path: str | None) -> list[GoldDoc]:
    """Our gold JSONL, or a DEplain-style directory (documents.jsonl + gold.tsv); None = the bundled sample."""
    if path is None:
        return load_gold(sample_data_dir() / "articles.jsonl")
    p = Path(path).expanduser()
    if p.is_dir():
        if not (p / "documents.jsonl").is_file() or not (p / "gold.tsv").is_file():
            raise MultimsdError(f"{p}: a gold directory needs documents.jsonl and gold.tsv (DEplain layout)")
        return read_deplain(p)
    return load_gold(p)
