"""Post-filters on aligned pairs (MultiMSD section 3.4)."""

from __future__ import annotations

from collections import Counter

from multimsd.config import FilterConfig


def filter_pairs(rows: list[dict], cfg: FilterConfig) -> tuple[list[dict], Counter]:
    """Drop pairs with a side shorter than ``min_chars``, identical sides, and duplicates.

    ``rows`` are dicts with at least ``lang``, ``complex``, ``simple``. Duplicates are judged per language on
    the (complex, simple) texts; the first occurrence is kept. Returns the kept rows and the drop counts.
    """
    kept, dropped, seen = [], Counter(), set()
    for row in rows:
        c, s = row["complex"].strip(), row["simple"].strip()
        if len(c) < cfg.min_chars or len(s) < cfg.min_chars:
            dropped["too_short"] += 1
            continue
        if cfg.drop_identical and c == s:
            dropped["identical"] += 1
            continue
        key = (row["lang"], c, s)
        if cfg.drop_duplicates and key in seen:
            dropped["duplicate"] += 1
            continue
        seen.add(key)
        kept.append(row)
    return kept, dropped
