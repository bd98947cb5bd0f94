"""Early stopping on a validation number: the rule both training loops of the project follow.

The generator's loop (:mod:`multimsd.training.loop`, on the validation loss or SARI) and the paraphrase
identifier's (:mod:`multimsd.alignment.aligners.paraphrase`, on its validation loss) keep the best epoch's weights
and stop after ``patience`` epochs without improvement. The two stages may not import each other, so the rule lives
here, below both. It is a pure function of the epoch's value and the loop's counters (not an object with state),
because the generator's loop saves those counters in every checkpoint and a resumed run must go on with them.
"""

from __future__ import annotations

from typing import NamedTuple


class Verdict(NamedTuple):
    """What an epoch's validation value means for the loop."""

    better: bool  # the best epoch so far: keep its weights
    best: float | None  # the best value so far
    bad_epochs: int  # epochs since the best one
    stop: bool  # ``patience`` epochs without improvement: stop training


def early_stopping(
    value: float | None,
    best: float | None,
    bad_epochs: int,
    *,
    patience: int,
    higher_is_better: bool = False,
) -> Verdict:
    """Judge one epoch's ``value`` against the ``best`` so far (None before the first) and the ``bad_epochs`` since.

    ``value`` None (nothing to validate on) counts as an improvement that leaves ``best`` as it is: the latest
    weights are kept and training never stops early. A NaN value never improves on a number.
    """
    if value is None:
        return Verdict(True, best, 0, False)
    better = best is None or (value > best if higher_is_better else value < best)
    if better:
        return Verdict(True, value, 0, False)
    return Verdict(False, best, bad_epochs + 1, bad_epochs + 1 >= patience)
