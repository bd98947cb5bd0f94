"""Safety checks of a simplified sentence against its source: the errors that matter most in medicine and that
SARI does not see (issue #39).

* **numbers** — every quantity of the source (a number in digits or words, with the unit right after it:
  ``5 mg``, ``twice daily``, ``3–4 days``, ``1日3回``) is in the output with the same value and unit, and the
  output has none the source lacks. Units are compared by meaning (``5 milligrams`` = ``5 mg``; ``2 Tage`` =
  ``2 days``), values by number (``1,000`` = ``1000``; ``1,5`` = ``1.5``); a number whose unit went missing
  (``5 mg`` → ``5``) is a change too.
* **negation** — the output has as many negation cues as the source (per language: not / nicht / no / pas /
  non / não / не / 不 / ない …): a dropped "not" turns advice into its opposite, and so does an added one.
* **terms** — the medical terms of the source (a :class:`~multimsd.metrics.terms.TermDictionary`) are in the
  output. A simplifier that explains a term keeps it and adds the explanation; one that replaces it by a lay
  word is flagged for a human to look at. Only with a dictionary (``check_sentence(..., terms=...)``).

A sentence is *flagged* when a check fails; :func:`check_sentence` says which and why. The ``safety`` metric
(:mod:`multimsd.metrics.scoring`) is the percentage of output sentences flagged by the numbers or the negation
check, with a bootstrap interval: lower is better. These are flags for a reader, not proofs of an error: a
restructured sentence ("do not take it with food" → "take it on an empty stomach") is flagged although it is
faithful, and a wrong number written in words outside the lists below is not seen.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from multimsd.text import word_tokenize

if TYPE_CHECKING:
    from multimsd.metrics.terms import TermDictionary

# ------------------------------------------------------------------------------------------------ numbers
# A number: digits with decimal or thousands separators, optionally a range (3-4, 3–4, 3 to 4 is two numbers).
_NUMBER = r"\d+(?:[.,]\d+)*(?:\s*[-–—]\s*\d+(?:[.,]\d+)*)?"
# Number words (the ones that name doses and frequencies); "one"-like words that are also articles (un, una,
# ein) are left out.
NUMBER_WORDS: dict[str, dict[str, str]] = {
    "en": {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
           "eight": "8", "nine": "9", "ten": "10", "once": "1", "twice": "2", "thrice": "3"},
    "de": {"zwei": "2", "drei": "3", "vier": "4", "fünf": "5", "sechs": "6", "sieben": "7", "acht": "8",
           "neun": "9", "zehn": "10", "einmal": "1", "zweimal": "2", "dreimal": "3", "viermal": "4"},
    "es": {"dos": "2", "tres": "3", "cuatro": "4", "cinco": "5", "seis": "6", "siete": "7", "ocho": "8",
           "nueve": "9", "diez": "10"},
    "fr": {"deux": "2", "trois": "3", "quatre": "4", "cinq": "5", "six": "6", "sept": "7", "huit": "8",
           "neuf": "9", "dix": "10"},
    "it": {"due": "2", "tre": "3", "quattro": "4", "cinque": "5", "sei": "6", "sette": "7", "otto": "8",
           "nove": "9", "dieci": "10"},
    "pt": {"dois": "2", "duas": "2", "três": "3", "quatro": "4", "cinco": "5", "seis": "6", "sete": "7",
           "oito": "8", "nove": "9", "dez": "10"},
    "ru": {"два": "2", "две": "2", "три": "3", "четыре": "4", "пять": "5", "шесть": "6", "семь": "7",
           "восемь": "8", "девять": "9", "десять": "10", "дважды": "2", "трижды": "3"},
}  # fmt: skip
# Units by meaning: every spelling (lowercased, NFKC) -> one name.
_UNITS: dict[str, tuple[str, ...]] = {
    "mg": ("mg", "milligram", "milligrams", "milligramm", "milligramme", "milligrammes", "miligramo",
           "miligramos", "milligrammo", "milligrammi", "miligrama", "miligramas", "мг", "ミリグラム", "毫克"),
    "g": ("g", "gram", "grams", "gramm", "gramme", "grammes", "gramo", "gramos", "grammo", "grammi", "grama",
          "gramas", "г", "グラム", "克"),
    "kg": ("kg", "kilogram", "kilograms", "kilogramm", "kilo", "kilos", "кг", "キログラム", "公斤"),
    "µg": ("µg", "μg", "mcg", "microgram", "micrograms", "mikrogramm", "microgramo", "microgramos", "мкг"),
    "ml": ("ml", "milliliter", "milliliters", "millilitre", "millilitres", "mililitro", "mililitros",
           "millilitro", "millilitri", "мл", "ミリリットル", "毫升"),
    "l": ("l", "liter", "liters", "litre", "litres", "litro", "litros", "litri", "л", "リットル", "升"),
    "iu": ("iu", "ie", "ui", "units", "einheiten", "unidades", "unités", "unità", "ед", "単位", "单位"),
    "%": ("%", "percent", "per cent", "prozent", "por ciento", "pour cent", "per cento", "por cento",
          "процент", "процента", "процентов", "パーセント"),
    "mmhg": ("mmhg",),
    "mmol": ("mmol", "mmol/l"),
    "hour": ("h", "hour", "hours", "hr", "hrs", "stunde", "stunden", "std", "hora", "horas", "heure", "heures",
             "ora", "ore", "час", "часа", "часов", "時間", "小时", "小時"),
    "minute": ("min", "minute", "minutes", "minuten", "minuto", "minutos", "minuti", "минута", "минуты",
               "минут", "分", "分钟", "分間"),
    "day": ("day", "days", "tag", "tage", "tagen", "día", "días", "jour", "jours", "giorno", "giorni", "dia",
            "dias", "день", "дня", "дней", "日", "天", "日間"),
    "week": ("week", "weeks", "woche", "wochen", "semana", "semanas", "semaine", "semaines", "settimana",
             "settimane", "неделя", "недели", "недель", "週", "週間", "周"),
    "month": ("month", "months", "monat", "monate", "monaten", "mes", "meses", "mois", "mese", "mesi",
              "месяц", "месяца", "месяцев", "か月", "ヶ月", "カ月", "个月", "月"),
    "year": ("year", "years", "jahr", "jahre", "jahren", "año", "años", "an", "ans", "année", "années", "anno",
             "anni", "ano", "anos", "год", "года", "лет", "年"),
    "times": ("回", "次"),
}  # fmt: skip
UNITS = {spelling: name for name, spellings in _UNITS.items() for spelling in spellings}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
_CJK = ("ja", "zh")


_DECIMAL_COMMA = ("de", "es", "fr", "it", "pt", "ru")


def _value(number: str, lang: str) -> str:
    """One spelling per number: ``1,000`` (en) = ``1.000`` (de) = ``1000``; ``1,5`` (de) = ``1.5``;
    ``3–4`` = ``3-4``. The thousands separator is the language's (``,`` in en / ja / zh, ``.`` where the
    decimal mark is a comma)."""
    thousands = "." if lang in _DECIMAL_COMMA else ","
    out = []
    for p in re.split(r"\s*[-–—]\s*", number):
        if re.fullmatch(rf"\d{{1,3}}(?:{re.escape(thousands)}\d{{3}})+", p):
            p = p.replace(thousands, "")
        out.append(str(float(p.replace(",", "."))).removesuffix(".0"))
    return "-".join(out)


def quantities(text: str, lang: str) -> Counter[tuple[str, str]]:
    """The (value, unit) pairs of ``text``; the unit is ``""`` where none follows the number."""
    text = unicodedata.normalize("NFKC", text).lower()
    words = NUMBER_WORDS.get(lang, {})
    word_re = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    number = f"{_NUMBER}|\\b(?:{word_re})\\b" if word_re else _NUMBER
    gap = r"\s*" if lang in _CJK else r"\s?"
    # A unit must end where a word ends (or is a CJK unit): "5 days" -> day, "5 dayz" -> "".
    unit = rf"(?:{_UNIT_RE})(?![^\W\d_])" if lang not in _CJK else rf"(?:{_UNIT_RE})"
    found: Counter[tuple[str, str]] = Counter()
    # Not inside a word ("COVID19") in alphabetic languages; in ja / zh a number follows any character.
    before = r"(?<![\d.,])" if lang in _CJK else r"(?<![\w.,])"
    for m in re.finditer(rf"{before}({number})(?:{gap}({unit}))?", text):
        raw, u = m.group(1), m.group(2)
        value = words.get(raw) or _value(raw, lang)
        found[(value, UNITS.get(u, "") if u else "")] += 1
    return found


def _shown(q: tuple[str, str]) -> str:
    return f"{q[0]} {q[1]}".strip()


# ----------------------------------------------------------------------------------------------- negation
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


NEGATIONS: dict[str, frozenset[str]] = {
    "en": _words("not no never none nothing nobody neither nor without cannot"),
    "de": _words("nicht kein keine keinen keinem keiner keines nie niemals nichts niemand ohne weder"),
    "es": _words("no nunca jamás sin ni ningún ninguna ninguno nada nadie tampoco"),
    "fr": _words("pas jamais rien aucun aucune aucuns sans ni nullement non"),
    "it": _words("non mai senza né nessun nessuno nessuna niente nulla"),
    "pt": _words("não nunca jamais sem nem nenhum nenhuma nada ninguém"),
    "ru": _words("не нет никогда без ни ничего никто нельзя"),
    "ja": _words("ない ず ぬ なし 無し 無い ん"),
    "zh": _words("不 没 無 无 非 别 勿 未 莫 否"),
}


def negations(text: str, lang: str) -> int:
    """How many negation cues ``text`` has (tokens of :data:`NEGATIONS`, and English ``n't``)."""
    text = unicodedata.normalize("NFKC", text)
    tokens = [t.lower() for t in word_tokenize(text, lang)]
    cues = NEGATIONS.get(lang, frozenset())
    n = sum(t in cues for t in tokens)
    if lang == "en":
        n += len(re.findall(r"n['’]t\b", text, flags=re.I))
    return n


# ------------------------------------------------------------------------------------------------ checks
@dataclass(frozen=True)
class Flag:
    check: str  # numbers | negation | terms
    reason: str


def check_sentence(source: str, output: str, lang: str, terms: TermDictionary | None = None) -> list[Flag]:
    """The checks ``output`` fails against ``source`` (empty: none)."""
    flags = []
    src, out = quantities(source, lang), quantities(output, lang)
    for q in sorted((src - out).elements()):
        flags.append(Flag("numbers", f"{_shown(q)} of the source is not in the output"))
    for q in sorted((out - src).elements()):
        flags.append(Flag("numbers", f"{_shown(q)} is in the output but not in the source"))
    n_src, n_out = negations(source, lang), negations(output, lang)
    if n_src != n_out:
        what = "dropped" if n_out < n_src else "added"
        flags.append(Flag("negation", f"negation {what} ({n_src} in the source, {n_out} in the output)"))
    if terms is not None:
        kept = set(terms.find(output))
        for term in dict.fromkeys(terms.find(source)):
            if term not in kept:
                flags.append(Flag("terms", f"medical term {term!r} of the source is not in the output"))
    return flags


def flagged(sources: list[str], outputs: list[str], lang: str) -> list[bool]:
    """Per sentence pair: whether the numbers or the negation check fails (the ``safety`` metric's rows)."""
    return [any(f.check != "terms" for f in check_sentence(s, o, lang)) for s, o in zip(sources, outputs)]


def safety_statistics(sources: list[str], outputs: list[str], lang: str):
    """Per sentence ``[flagged, 1]`` (int64 ``[n, 2]``): the bootstrap's sufficient statistics."""
    import numpy as np

    if len(sources) != len(outputs):
        raise ValueError(f"{len(sources)} sources but {len(outputs)} outputs")
    rows = [(int(f), 1) for f in flagged(list(sources), list(outputs), lang)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2)


def safety_from_totals(totals):
    """``100 * flagged / sentences`` of summed :func:`safety_statistics`; 0 where there are no sentences."""
    import numpy as np

    t = np.asarray(totals, dtype=np.float64)
    return np.where(t[..., 1] > 0, 100.0 * t[..., 0] / np.where(t[..., 1] > 0, t[..., 1], 1.0), 0.0)
