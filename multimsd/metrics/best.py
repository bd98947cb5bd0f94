"""The one rule for "best": the order of the systems and the best of them, from their scores and their
degenerate-output flags (:mod:`multimsd.metrics.degenerate`).

Every place that says which system is best uses :func:`order` and :func:`best`: the evaluation's ranking
(``results.json`` → ``ranking``, the ranking line of ``table.md``, which the command prints), the bold of the
best score in every column of ``table.md`` and of the run's report, and the report's sweep table. Before it,
the ranking ignored the flags while the tables' bold honoured them, so the console could call one system
best and the report another.

The rule:

1. a system that is *flagged* in the column (:func:`multimsd.metrics.degenerate.demotions`: above
   ``degenerate.max_share`` empty, cut or input-identical outputs in that language, in any language for an
   average or a pooled column; or outputs that are all empty, whatever the threshold) is never the best and
   is listed after every system that is not flagged, with its flags. So a system whose outputs are all empty
   never ranks above the copy baseline, however well its empty outputs score (FKGL 0.00, SARI ~30). A system
   whose share of safety-flagged sentences is significantly above ``select.max_safety`` is flagged the same
   way (``unsafe``, :func:`multimsd.metrics.degenerate.mark_unsafe`);
2. within each of the two groups: by score (higher first, or lower first where lower is better), a missing
   score last, ties by name;
3. the best is the first system of the order, when it has a score and is not flagged; there is no best when
   every system is flagged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Placed", "best", "order"]


@dataclass(frozen=True)
class Placed:
    """One system in the order: its score (None: none) and why it cannot be best (empty: it can)."""

    system: str
    score: float | None
    flagged: tuple[str, ...] = ()


def order(
    scores: dict[str, float | None],
    flagged: dict[str, Iterable[str]] | None = None,
    lower_better: bool = False,
) -> list[Placed]:
    """The systems of ``scores`` in the rule's order (module docstring); ``flagged``: a system's flags."""
    flagged = flagged or {}

    def key(system: str) -> tuple:
        v = scores[system]
        value = 0.0 if v is None else (v if lower_better else -v)
        return (bool(tuple(flagged.get(system) or ())), v is None, value, system)

    return [Placed(s, scores[s], tuple(flagged.get(s) or ())) for s in sorted(scores, key=key)]


def best(placed: list[Placed]) -> str | None:
    """The best system of an :func:`order`: its first, when it has a score and no flag; else None."""
    if placed and placed[0].score is not None and not placed[0].flagged:
        return placed[0].system
    return None
