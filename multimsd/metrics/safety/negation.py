"""The negations of a sentence, counted so that a faithful rewrite keeps the count and a flipped one does not.

A negation is counted once however it is said:

* a syntactic cue (not / nicht / no / pas / non / não / не / 不 / ない …, English ``n't``);
* a lexical one: a verb that means "do not" (avoid, vermeiden, evitar, éviter, evitare, избегать, 避免,
  避ける, contraindicated …) and "swallow whole" for "do not crush or chew";
* in languages with negative concord, one particle and the words that agree with it ("no … nunca", "non …
  mai", "не … никогда") are one negation; "neither … nor" / "ni … ni" is one.

"Only if" is two ("Never take it unless your doctor says so." = "Only take it if your doctor says so."), and
"unless" is one. Not counted: the "not" of a limit said of a quantity ("do not exceed 4 g" = "at most 4 g":
the numbers check compares the limit), litotes ("not uncommon" = common), "not only", obligations (しなければ
ならない = must), and in Chinese the words that merely contain a negation character (非常 very, 特别
especially, 是否 whether, 不良反应 adverse reaction).
"""

from __future__ import annotations

import re
from functools import cache

from multimsd.metrics.safety import lexicon as lx
from multimsd.metrics.safety.numbers import analyse, normalise
from multimsd.text import word_tokenize

_CLAUSE = re.compile(r"[,;:.!?、，。；：！？]")


@cache
def _patterns(lang: str) -> dict[str, re.Pattern | None]:
    def one(pats) -> re.Pattern | None:
        return re.compile("|".join(f"(?:{p})" for p in pats)) if pats else None

    return {
        "not": one(lx.NOT_NEGATIONS.get(lang, ())),
        "lexical": one(lx.LEXICAL.get(lang, ())),
        "only_if": one(lx.ONLY_IF.get(lang, ())),
    }


def _mask(text: str, spans) -> str:
    chars = list(text)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


def _token_cues(clause: str, lang: str) -> list[str]:
    """The cue tokens of one clause that count, concord and correlatives folded."""
    cues_of = lx.NEGATIONS.get(lang, frozenset())
    tokens = [t for t in (t.lower() for t in word_tokenize(clause, lang)) if t in cues_of]
    particles, concord = lx.PARTICLES.get(lang, frozenset()), lx.CONCORD.get(lang, frozenset())
    if any(t in particles for t in tokens):
        tokens = [t for t in tokens if t not in concord]
    correlative = lx.CORRELATIVE.get(lang, frozenset())
    corr = [t for t in tokens if t in correlative]
    return [t for t in tokens if t not in correlative] + corr[:1]


def negation_cues(text: str, lang: str, masks: list[tuple[int, int]] = ()) -> list[str]:
    """The negations of ``text``, one entry each, as written (an "only if" appears twice). ``masks``: spans of
    the NFKC text that say no negation (the limits :func:`~multimsd.metrics.safety.numbers.analyse` found)."""
    shown, low = normalise(text)
    low = _mask(low, masks)
    pats = _patterns(lang)
    cues: list[str] = []
    if pats["not"] is not None:
        low = _mask(low, [m.span() for m in pats["not"].finditer(low)])
    for name, weight in (("only_if", 2), ("lexical", 1)):
        if pats[name] is not None:
            spans = [m.span() for m in pats[name].finditer(low) if m.end() > m.start()]
            cues += [shown[s:e] for s, e in spans for _ in range(weight)]
            low = _mask(low, spans)
    if lang == "en":
        spans = [m.span() for m in re.finditer(r"n['’]t\b", low)]
        cues += ["n't"] * len(spans)
        low = _mask(low, spans)
    for clause in _CLAUSE.split(low):
        cues += _token_cues(clause, lang)
    return cues


def negations(text: str, lang: str) -> int:
    """How many negations ``text`` has (its limits found and left out, as :func:`check_sentence` does)."""
    return len(negation_cues(text, lang, analyse(text, lang)[1]))
