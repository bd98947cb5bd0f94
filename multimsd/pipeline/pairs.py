"""A sentence-pair corpus as the run's dataset (``pairs.path=…``), in place of aligning articles.

Many simplification corpora come already aligned (CLARA-MeD, Newsela, WikiLarge, …). With ``pairs.path`` the
pipeline skips alignment and builds the same DatasetDict align.py writes (``<run>/align``), from:

* a TSV file with a header row, or a JSONL file, one pair a row, with a document id, the complex and the
  simple sentence and the language; other column names are mapped with ``pairs.columns`` (e.g.
  ``{article_id: FILE_ID, complex: SOURCE, simple: TARGET}``), a corpus in one language names it with
  ``pairs.lang``;
* a directory saved with ``save_to_disk`` (a Dataset, or a DatasetDict whose splits are kept), or a Hub id.

Steps, top to bottom:

1. read the rows; a TSV row whose field count differs from the header's is an error naming its line, or,
   with ``pairs.bad_rows=skip``, left out and counted (with its line numbers in ``stats.json``); rows with an
   empty side are treated the same way;
2. split by **document id** (:func:`multimsd.split.split_article_ids` with ``pairs.split.*``, the rule and
   defaults of align.py's ``split.*``: the paper's 128 + 128 documents held out, at most 10 % each, seed 42),
   so no document has sentences in two splits; a ``split`` column in the data is used as it is;
3. optionally cap each split (``pairs.max_pairs.<split>``, a sample of the split's rows seeded by
   ``pairs.split.seed``) for a run at reduced scale; the cap draws rows, never moves them between splits;
4. write the DatasetDict and ``stats.json`` (Table 4's numbers + what was skipped) atomically.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from pathlib import Path

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.split import SPLITS, check_split_config, split_article_ids

log = logging.getLogger(__name__)

FIELDS = ("article_id", "complex", "simple", "lang")


def _read(cfg, bad_lines: list[int]) -> dict[str | None, list[dict]]:
    from multimsd.io import load_pair_records, read_tsv

    p = Path(str(cfg.path)).expanduser()
    if p.is_file() and p.suffix == ".tsv":
        return {None: [r for _, r in read_tsv(p, bad_lines if cfg.bad_rows == "skip" else None)]}
    return load_pair_records(str(cfg.path), what="pairs.path")


def check_pairs_config(cfg) -> None:
    """One-line errors for ``pairs.*``, before anything is read."""
    if cfg.bad_rows not in ("error", "skip"):
        raise MultimsdError(f"pairs.bad_rows={cfg.bad_rows!r}: choose error or skip")
    if cfg.lang is not None and cfg.lang not in LANGUAGES:
        raise MultimsdError(f"pairs.lang={cfg.lang!r}: not one of {', '.join(LANGUAGES)}")
    unknown = [k for k in cfg.columns if k not in FIELDS]
    if unknown:
        raise MultimsdError(f"pairs.columns: unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})")
    bad_caps = [s for s in cfg.max_pairs if s not in SPLITS]
    if bad_caps:
        raise MultimsdError(f"pairs.max_pairs: unknown split {bad_caps[0]!r} (splits: {', '.join(SPLITS)})")
    for split, n in cfg.max_pairs.items():
        if n is not None and int(n) < 1:
            raise MultimsdError(f"pairs.max_pairs.{split}={n}: must be >= 1 (or null for all)")
    check_split_config(cfg.split, "pairs.split")


def check_pairs_input(cfg) -> None:
    """Before any work: the corpus exists and, for a TSV / JSONL file, its first row has the columns needed."""
    from multimsd.io import looks_like_hub_id

    p = Path(str(cfg.path)).expanduser()
    if not p.exists():
        if looks_like_hub_id(str(cfg.path)):
            return  # a Hub dataset: checked when read
        raise MultimsdError(f"pairs.path not found: {p}")
    if not p.is_file():
        return
    with open(p, encoding="utf-8-sig", errors="replace") as f:
        head = [line.rstrip("\r\n") for line in (f.readline(), f.readline())]
    first = head[0]
    if not first.strip():
        raise MultimsdError(f"{p}: empty file (pairs.path needs sentence pairs)")
    if p.suffix == ".tsv" and not head[1].strip():
        raise MultimsdError(f"{p}: no rows after the header")
    if p.suffix == ".tsv":
        check_columns(first.split("\t"), cfg, str(p))
        return
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        record = None
    if not isinstance(record, dict):
        raise MultimsdError(f"{p}:1: not a JSON object (pairs.path takes .tsv, .jsonl or a saved dataset)")
    check_columns(list(record), cfg, str(p))


def input_fingerprint(path: str) -> str:
    """sha256 of the corpus file(s), so an edited corpus re-runs the run; a Hub id stands for itself."""
    p = Path(path).expanduser()
    h = hashlib.sha256()
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
    if not files:
        return hashlib.sha256(path.encode()).hexdigest()
    for f in files:
        h.update(f.relative_to(p).as_posix().encode() if p.is_dir() else b"")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def normalise_rows(records: list[dict], cfg, where: str, skipped: list[str]) -> list[dict]:
    """Rows with our field names; a row missing a field is an error, or skipped (``bad_rows=skip``)."""
    names = {f: cfg.columns.get(f, f) for f in FIELDS}
    if records:
        check_columns(list(records[0]), cfg, where)
    rows = []
    for k, r in enumerate(records, 1):
        row = {f: r.get(names[f]) for f in FIELDS}
        if cfg.lang is not None and names["lang"] not in r:
            row["lang"] = cfg.lang
        row["article_id"] = "" if row["article_id"] is None else str(row["article_id"])
        if "split" in r:
            row["split"] = r["split"]
        empty = [f for f in ("complex", "simple") if not isinstance(row[f], str) or not row[f].strip()]
        if empty:
            if cfg.bad_rows == "skip":
                skipped.append(f"row {k}: empty {'/'.join(empty)}")
                continue
            raise MultimsdError(
                f"{where}: row {k} has an empty {empty[0]} (pairs.bad_rows=skip leaves such rows out)"
            )
        if row["lang"] not in LANGUAGES:
            raise MultimsdError(
                f"{where}: row {k} has language {row['lang']!r} (supported: {', '.join(LANGUAGES)})"
            )
        rows.append(row)
    if not rows:
        raise MultimsdError(f"{where}: no usable pairs")
    return rows


def check_columns(columns: list[str], cfg, where: str) -> None:
    """The corpus's columns hold what a pair needs (after ``pairs.columns`` mapping), or one line says which not."""
    names = {f: cfg.columns.get(f, f) for f in FIELDS}
    needed = [names[f] for f in ("complex", "simple") if names[f] not in columns]
    if cfg.lang is None and names["lang"] not in columns:
        needed.append(f"{names['lang']} (or pairs.lang=<code>)")
    if names["article_id"] not in columns and "split" not in columns:
        needed.append(f"{names['article_id']} (the document id; or a split column)")
    if needed:
        have = ", ".join(map(str, columns))
        raise MultimsdError(f"{where}: no column {needed[0]} (columns: {have}); map them with pairs.columns")


def split_rows(rows: list[dict], cfg) -> tuple[list[dict], dict[str, int]]:
    """Every row gets a ``split``: its own column if all rows have one, else by document id (seeded)."""
    if all(r.get("split") in SPLITS for r in rows):
        docs = {s: len({r["article_id"] for r in rows if r["split"] == s}) for s in SPLITS}
        return rows, docs
    missing = sum(1 for r in rows if not r["article_id"])
    if missing:
        raise MultimsdError(f"pairs.path: {missing} row(s) have no document id to split by")
    assignment = split_article_ids((r["article_id"] for r in rows), cfg.split, key="pairs.split")
    for r in rows:
        r["split"] = assignment[r["article_id"]]
    return rows, {s: sum(1 for v in assignment.values() if v == s) for s in SPLITS}


def cap_splits(rows: list[dict], cfg) -> tuple[list[dict], dict[str, int]]:
    """A seeded sample of at most ``max_pairs[split]`` rows per split (document order kept)."""
    out, dropped = [], {}
    for split in SPLITS:
        part = [r for r in rows if r["split"] == split]
        cap = cfg.max_pairs.get(split)
        if cap is not None and len(part) > int(cap):
            keep = set(random.Random(f"{cfg.split.seed}:{split}").sample(range(len(part)), int(cap)))
            dropped[split] = len(part) - int(cap)
            part = [r for k, r in enumerate(part) if k in keep]
        out += part
    return out, dropped


def build_pairs(cfg, out_dir: Path) -> dict:
    """Read, split, cap and write the corpus into ``out_dir`` (a DatasetDict + stats.json); return the stats."""
    import datasets

    from multimsd.alignment.stats import pair_statistics
    from multimsd.fsutil import atomic_directory, check_replaceable

    check_pairs_config(cfg)
    where = str(cfg.path)
    bad_lines: list[int] = []
    by_split = _read(cfg, bad_lines)
    skipped = [f"line {n}: field count differs from the header's" for n in bad_lines]
    if None in by_split:
        rows = normalise_rows(by_split[None], cfg, where, skipped)
    else:  # a saved DatasetDict: its splits are the split
        rows = []
        for split, recs in by_split.items():
            if split not in SPLITS:
                raise MultimsdError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}")
            rows += [{**r, "split": split} for r in normalise_rows(recs, cfg, f"{where} ({split})", skipped)]
    if skipped:
        log.warning("pairs: skipped %d bad row(s) of %s: %s", len(skipped), where, "; ".join(skipped[:5]))
    rows, docs = split_rows(rows, cfg)
    leaked = _documents_in_two_splits(rows)
    if leaked:
        raise MultimsdError(f"{where}: document {leaked!r} has rows in two splits (its split column)")
    rows, capped = cap_splits(rows, cfg)
    langs = sorted({r["lang"] for r in rows}, key=LANGUAGES.index)
    per_lang = pair_statistics(rows, langs)
    for lang in langs:
        per_lang[lang]["article_pairs"] = len({r["article_id"] for r in rows if r["lang"] == lang})
    stats = {
        "source": "pairs",
        "path": where,
        "languages": langs,
        "per_language": per_lang,
        "article_split": docs,
        "total_sentence_pairs": len(rows),
        "dropped": {"bad rows": len(skipped), **{f"over max_pairs.{s}": n for s, n in capped.items()}},
        "skipped_rows": skipped,
    }
    features = datasets.Features({f: datasets.Value("string") for f in FIELDS})
    dsd = datasets.DatasetDict(
        {
            s: datasets.Dataset.from_dict(
                {f: [r[f] for r in rows if r["split"] == s] for f in FIELDS}, features=features
            )
            for s in SPLITS
        }
    )
    check_replaceable(out_dir, "dataset_dict.json", "a multimsd aligned dataset")
    datasets.disable_progress_bars()
    with atomic_directory(out_dir) as tmp:
        dsd.save_to_disk(str(tmp), num_shards=dict.fromkeys(dsd, 1))
        (tmp / "stats.json").write_text(
            json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    counts = ", ".join(f"{s} {len(dsd[s])}" for s in SPLITS)
    log.info("pairs: %d pairs from %s (%s); %d bad row(s) skipped", len(rows), where, counts, len(skipped))
    return stats


def _documents_in_two_splits(rows: list[dict]) -> str | None:
    seen: dict[str, str] = {}
    for r in rows:
        if r["article_id"] and seen.setdefault(r["article_id"], r["split"]) != r["split"]:
            return r["article_id"]
    return None
