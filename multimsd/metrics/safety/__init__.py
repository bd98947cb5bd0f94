"""Safety checks of a simplified sentence against its source: the errors that matter most in medicine and that
SARI does not see. One function decides, :func:`check_sentences` (one sentence: :func:`check_sentence`), for
``multimsd simplify``, the studio's views, the report and the ``safety`` metric.

* **numbers** — every quantity of the source is in the output with the same value, unit and limit, and the
  output has none the source lacks (:mod:`.numbers`): ``5 mg`` = ``5 milligrams``, ``twice daily`` = ``two
  times a day`` = ``2-mal täglich``, ``一日三回`` = ``1日3回``, ``do not exceed 4 g`` = ``at most 4 g`` = ``≤ 4 g``;
  a number whose unit went missing (``5 mg`` → ``5``) is a change, and so is a limit that became an
  instruction (``do not exceed 4 g`` → ``take 4 g``).
* **negation** — the output has as many negations as the source (:mod:`.negation`): a dropped "not" turns
  advice into its opposite, and so does an added one. "Avoid" is a negation, "only if" two, the "not" of a
  limit none.
* **meaning** — the output is not far in meaning from its source (:mod:`multimsd.metrics.meaning`: the cosine
  under the offline multilingual encoder, a threshold per language): an echoed instruction, an unrelated or a
  generic sentence is flagged with its score.
* **degenerate** — the output is empty, was cut at ``max_new_tokens`` (``cut=True``: only the decoding knows),
  or repeats a phrase three times in a row that the source does not.
* **terms** — the medical terms of the source (a :class:`~multimsd.metrics.terms.TermDictionary`) are in the
  output. A simplifier that explains a term keeps it and adds the explanation; one that replaces it by a lay
  word is flagged for a human to look at. Only with a dictionary.

A sentence is *flagged* when a check fails; the reasons quote the text as written ("6 Stunden of the source is
not in the output"). The ``safety`` metric (:mod:`multimsd.metrics.scoring`) is the percentage of output
sentences flagged by :data:`SAFETY_CHECKS` (numbers, negation, meaning, degenerate; not terms, which depend
on the dictionary), with a bootstrap interval: lower is better. These are flags for a reader, not proofs of an
error: a restructured sentence ("do not take it with food" → "take it on an empty stomach") is flagged
although it is faithful, and a changed number written in words outside the lists of :mod:`.lexicon` is not
seen. ``benchmarks/safety_bench.py`` measures both, per language and per check.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from multimsd.metrics.safety.negation import negation_cues, negations
from multimsd.metrics.safety.numbers import Quantity, analyse
from multimsd.text import word_tokenize

if TYPE_CHECKING:
    from multimsd.metrics.terms import TermDictionary

__all__ = [
    "CHECKS",
    "SAFETY_CHECKS",
    "Flag",
    "check_sentence",
    "check_sentences",
    "flagged",
    "negations",
    "quantities",
    "safety_from_totals",
    "safety_statistics",
]

CHECKS = ("numbers", "negation", "meaning", "degenerate", "terms")
SAFETY_CHECKS = ("numbers", "negation", "meaning", "degenerate")
"""The checks on by default, and the ones the ``safety`` metric counts."""
REPEATS = 3  # a phrase said this many times in a row is a loop ("Take the tablet. Take the tablet. Take …")
LONGEST_LOOP = 12  # tokens


@dataclass(frozen=True)
class Flag:
    check: str  # one of CHECKS
    reason: str


def quantities(text: str, lang: str) -> Counter[str]:
    """The quantities of ``text`` by key (``"5 mg"``, ``"≤4 g"``, ``"2 times"``, ``"3-4 day"``, ``"2"``)."""
    return Counter(q.key for q in analyse(text, lang)[0])


def _number_flags(src: list[Quantity], out: list[Quantity]) -> list[Flag]:
    flags = []
    for side, this, other in (("source", src, out), ("output", out, src)):
        missing = Counter(q.key for q in this) - Counter(q.key for q in other)
        other_units = {q.unit for q in other}
        for key in sorted(missing):
            same = [q for q in this if q.key == key]
            # a soft quantity ("one", "una", "ein") is missing only where the other side gives its unit another
            # value; a soft count without a unit ("un vaso", "a glass") never on its own
            if all(q.soft for q in same) and (not same[0].unit or same[0].unit not in other_units):
                continue
            for _ in range(missing[key]):
                where = (
                    "of the source is not in the output"
                    if side == "source"
                    else "is in the output but not in the source"
                )
                flags.append(Flag("numbers", f"{same[0].text} {where}"))
    return flags


def _cue_list(cues: list[str]) -> str:
    return f" ({', '.join(dict.fromkeys(cues))})" if cues else ""


def _loop(text: str, lang: str) -> tuple[str, int] | None:
    """The first phrase of ``text`` said :data:`REPEATS` times or more in a row, and how many times."""
    tokens = [t.lower() for t in word_tokenize(text, lang)]
    for n in range(1, LONGEST_LOOP + 1):
        for i in range(len(tokens) - REPEATS * n + 1):
            gram = tokens[i : i + n]
            if not any(t.isalnum() for t in gram):
                continue
            k = 1
            while tokens[i + k * n : i + (k + 1) * n] == gram:
                k += 1
            if k >= REPEATS:
                joiner = "" if lang in ("ja", "zh") else " "
                return joiner.join(gram), k
    return None


def _degenerate(source: str, output: str, lang: str, cut: bool) -> list[Flag]:
    flags = [Flag("degenerate", "the output is empty")] if not output.strip() else []
    if cut:
        flags.append(Flag("degenerate", "the output was cut at the length cap"))
    loop = _loop(output, lang) if output.strip() else None
    if loop is not None and _loop(source, lang) is None:
        flags.append(Flag("degenerate", f"the output repeats {loop[0]!r} {loop[1]} times"))
    return flags


def check_sentences(
    sources: list[str],
    outputs: list[str],
    lang: str,
    terms: TermDictionary | None = None,
    *,
    checks: tuple[str, ...] | list[str] = SAFETY_CHECKS,
    cut: list[bool] | None = None,
    encoder=None,
) -> list[list[Flag]]:
    """Per pair, the checks ``outputs[i]`` fails against ``sources[i]`` (empty: none), in the order of
    :data:`CHECKS`. ``checks``: which to run (the term check runs when a dictionary is given); ``cut``: per
    output, whether the decoding stopped at ``max_new_tokens``; ``encoder``: the meaning check's (default: the
    offline encoder, loaded once per process). The meaning check encodes all pairs in one call."""
    if unknown := sorted(set(checks) - set(CHECKS)):
        raise ValueError(f"unknown safety checks {unknown}; choose from {', '.join(CHECKS)}")
    if len(sources) != len(outputs):
        raise ValueError(f"{len(sources)} sources but {len(outputs)} outputs")
    cut = list(cut) if cut is not None else [False] * len(outputs)
    sims = None
    if "meaning" in checks:
        from multimsd.metrics.meaning import similarities, threshold

        sims, limit = similarities(list(sources), list(outputs), encoder), threshold(lang)
    result = []
    for k, (source, output) in enumerate(zip(sources, outputs)):
        flags: list[Flag] = []
        # the quantities (and the limits the negation check leaves out) only where a check reads them
        lexical = "numbers" in checks or "negation" in checks
        (src_q, src_masks), (out_q, out_masks) = (
            (analyse(source, lang), analyse(output, lang)) if lexical else (([], []), ([], []))
        )
        if "numbers" in checks:
            flags += _number_flags(src_q, out_q)
        if "negation" in checks:
            src_n, out_n = negation_cues(source, lang, src_masks), negation_cues(output, lang, out_masks)
            if len(src_n) != len(out_n):
                what = "dropped" if len(out_n) < len(src_n) else "added"
                flags.append(
                    Flag(
                        "negation",
                        f"negation {what}: {len(src_n)} in the source{_cue_list(src_n)}, "
                        f"{len(out_n)} in the output{_cue_list(out_n)}",
                    )
                )
        if sims is not None and output.strip() and sims[k] < limit:
            flags.append(
                Flag("meaning", f"far in meaning from the source (similarity {sims[k]:.2f} < {limit:.2f})")
            )
        if "degenerate" in checks:
            flags += _degenerate(source, output, lang, bool(cut[k]))
        if terms is not None:
            kept = set(terms.find(output))
            for term in dict.fromkeys(terms.find(source)):
                if term not in kept:
                    flags.append(Flag("terms", f"medical term {term!r} of the source is not in the output"))
        result.append(flags)
    return result


def check_sentence(
    source: str,
    output: str,
    lang: str,
    terms: TermDictionary | None = None,
    *,
    checks: tuple[str, ...] | list[str] = SAFETY_CHECKS,
    cut: bool = False,
    encoder=None,
) -> list[Flag]:
    """The checks ``output`` fails against ``source`` (empty: none); see :func:`check_sentences`."""
    return check_sentences([source], [output], lang, terms, checks=checks, cut=[cut], encoder=encoder)[0]


def flagged(sources: list[str], outputs: list[str], lang: str, checks=SAFETY_CHECKS) -> list[bool]:
    """Per sentence pair: whether one of ``checks`` fails (the ``safety`` metric's rows)."""
    return [bool(f) for f in check_sentences(list(sources), list(outputs), lang, checks=checks)]


def safety_statistics(sources: list[str], outputs: list[str], lang: str, checks=SAFETY_CHECKS):
    """Per sentence ``[flagged, 1]`` (int64 ``[n, 2]``): the bootstrap's sufficient statistics."""
    import numpy as np

    if len(sources) != len(outputs):
        raise ValueError(f"{len(sources)} sources but {len(outputs)} outputs")
    rows = [(int(f), 1) for f in flagged(list(sources), list(outputs), lang, checks)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2)


def safety_from_totals(totals):
    """``100 * flagged / sentences`` of summed :func:`safety_statistics`; 0 where there are no sentences."""
    import numpy as np

    t = np.asarray(totals, dtype=np.float64)
    return np.where(t[..., 1] > 0, 100.0 * t[..., 0] / np.where(t[..., 1] > 0, t[..., 1], 1.0), 0.0)
