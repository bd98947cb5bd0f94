"""Tables read by their column headers, so a test names the column it checks (``row["state"]``), not its
position (``row[7]``): a column added, removed or moved fails as a missing header, not as a silent check of
another column. Markdown tables (what a command prints or writes) and the report's
:class:`multimsd.render.blocks.Table` alike."""

from __future__ import annotations

import re

_SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def header_keys(header: list[str]) -> list[str]:
    """The keys of the columns: each header, a header that repeats numbered from its second column on
    (``p``, ``p [2]``). A column without a header is keyed ``""``."""
    seen: dict[str, int] = {}
    keys = []
    for h in header:
        seen[h] = seen.get(h, 0) + 1
        keys.append(h if seen[h] == 1 else f"{h} [{seen[h]}]")
    return keys


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_table(text: str, *, column: str | None = None) -> list[dict[str, str]]:
    """The rows of the first Markdown table in ``text`` (with ``column``: the first one having a column of
    that header), each as ``{header: cell}`` (keys: :func:`header_keys`). Fails on a row with another number of
    cells than the header, and where there is no such table."""
    lines = text.splitlines()
    for k in range(len(lines) - 1):
        if not lines[k].lstrip().startswith("|") or not _SEPARATOR.match(lines[k + 1].strip()):
            continue
        head = _cells(lines[k])
        if column is not None and column not in head:
            continue
        keys = header_keys(head)
        rows = []
        for line in lines[k + 2 :]:
            if not line.lstrip().startswith("|"):
                break
            cells = _cells(line)
            if len(cells) != len(head):
                raise AssertionError(f"{len(cells)} cells under {len(head)} headers {head}: {line!r}")
            rows.append(dict(zip(keys, cells)))
        return rows
    raise AssertionError(f"no Markdown table{f' with a column {column!r}' if column else ''} in:\n{text}")


def rows_by(text: str, key: str, *, convert=str) -> dict:
    """The rows of the first Markdown table with a ``key`` column, by that column's cell (``convert``-ed)."""
    rows = markdown_table(text, column=key)
    out = {convert(r[key]): r for r in rows}
    if len(out) != len(rows):
        raise AssertionError(f"column {key!r} repeats a value: {[r[key] for r in rows]}")
    return out


def table_rows(table) -> list[dict]:
    """The rows of a report :class:`~multimsd.render.blocks.Table`, each as ``{header: Cell}`` (keys:
    :func:`header_keys`)."""
    keys = header_keys(table.header)
    for row in table.rows:
        if len(row) != len(keys):
            raise AssertionError(f"{len(row)} cells under {len(keys)} headers {table.header}")
    return [dict(zip(keys, row)) for row in table.rows]
