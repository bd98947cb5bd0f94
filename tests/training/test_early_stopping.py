"""multimsd.early_stopping: the rule the generator's training loop and the paraphrase identifier's loop share."""

from __future__ import annotations

import math

from multimsd.early_stopping import Verdict, early_stopping


def run(values, patience, higher_is_better=False):
    """The loop's use of the rule: (verdicts, index of the epoch that stopped or None)."""
    best, bad, out = None, 0, []
    for k, v in enumerate(values):
        verdict = early_stopping(v, best, bad, patience=patience, higher_is_better=higher_is_better)
        best, bad = verdict.best, verdict.bad_epochs
        out.append(verdict)
        if verdict.stop:
            return out, k
    return out, None


def test_lower_is_better_with_patience():
    verdicts, stopped = run([3.0, 2.0, 2.5, 2.0, 1.0, 1.5, 1.2, 1.1], patience=3)
    assert [v.better for v in verdicts] == [True, True, False, False, True, False, False, False]
    assert [v.bad_epochs for v in verdicts] == [0, 0, 1, 2, 0, 1, 2, 3]
    assert stopped == 7 and verdicts[-1] == Verdict(False, 1.0, 3, True)
    # an equal value is no improvement (2.0 after 2.0): the first best epoch's weights are kept


def test_higher_is_better_for_sari():
    verdicts, stopped = run([30.0, 35.0, 34.0, 36.0], patience=1, higher_is_better=True)
    assert [v.better for v in verdicts] == [True, True, False]
    assert stopped == 2 and verdicts[-1].best == 35.0


def test_no_value_keeps_the_latest_and_never_stops():
    verdicts, stopped = run([None, None, None], patience=1)
    assert stopped is None and all(v == Verdict(True, None, 0, False) for v in verdicts)
    # after a real value, a missing one resets the count and leaves the best value alone
    assert early_stopping(None, 2.0, 4, patience=5) == Verdict(True, 2.0, 0, False)


def test_nan_never_improves_on_a_number():
    v = early_stopping(math.nan, 1.0, 0, patience=1)
    assert not v.better and v.best == 1.0 and v.stop
