"""The quantities of a sentence: every number with its unit and, where one is said, its limit.

A quantity is a value (digits, a number word, a Chinese / Japanese numeral, a range ``3-4``), the unit right
after it compared by meaning (``5 milligrams`` = ``5 mg``; ``2 Tage`` = ``2 days``; ``twice`` = ``2 times`` =
``2-mal`` = ``两次``), and a bound: ``≤`` for an upper limit however it is said ("at most", "do not exceed",
"no more than", höchstens, como máximo, 不超过, 以下 …), ``≥`` for a lower one. Two quantities are the same when
value, unit and bound are. A quantity also keeps its text as written, so that a reason about a German sentence
reads "6 Stunden".

Words that are an article as often as a number ("one", "ein", "una", "un", "один") make *soft* quantities:
they match their digit on the other side ("one tablet" = "1 tablet"), but their absence is a change only where
the other side gives the same unit another value ("una vez" → "dos veces").

In Chinese and Japanese, "per day" is written with a 1 (``1日3回``, ``一天三次`` = three times a day = ``毎日3回``):
a 1 of a period right before a count of times is read as "per", not as a quantity.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

from multimsd.metrics.safety import lexicon as lx

CJK = ("ja", "zh")
DECIMAL_COMMA = ("de", "es", "fr", "it", "pt", "ru")


@dataclass(frozen=True)
class Quantity:
    value: str  # "5", "1.5", "3-4"
    unit: str  # a name of lexicon.UNITS, or "" (a count: tablets, drops, people)
    bound: str  # "" | "≤" | "≥"
    text: str  # as written (NFKC), the limit's words included
    start: int
    end: int
    soft: bool = False

    @property
    def key(self) -> str:
        """What two quantities must share to be the same: ``"≤4 g"``, ``"2 times"``, ``"3-4 day"``, ``"5"``."""
        return f"{self.bound}{self.value} {self.unit}".strip()


def normalise(text: str) -> tuple[str, str]:
    """(NFKC text, the same lowercased character by character): the two have the same length, so a span found
    in the lowercased text quotes the text as written."""
    text = unicodedata.normalize("NFKC", text)
    return text, "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _cjk_value(numeral: str) -> str:
    """一 → 1, 十二 → 12, 二十五 → 25, 三百 → 300, 一万 → 10000; two digits in a row are a range (三四天:
    three or four days, 一两周: a week or two), more are digits (二〇二〇 → 2020)."""
    if len(numeral) == 2 and all(c in lx.CJK_DIGITS and lx.CJK_DIGITS[c] for c in numeral):
        return f"{lx.CJK_DIGITS[numeral[0]]}-{lx.CJK_DIGITS[numeral[1]]}"
    total, section, digit = 0, 0, None
    for ch in numeral:
        if ch in lx.CJK_DIGITS:
            if digit is not None:  # 一二 is not a number (digits in a row are written with 〇: 二〇二〇)
                digit = digit * 10 + lx.CJK_DIGITS[ch]
            else:
                digit = lx.CJK_DIGITS[ch]
        elif ch == "万":
            total += (section + (digit or 0)) * 10000 if (section or digit) else 10000
            section, digit = 0, None
        else:
            section += (digit if digit is not None else 1) * lx.CJK_POWERS[ch]
            digit = None
    return str(total + section + (digit or 0))


def _value(number: str, lang: str) -> str:
    """One spelling per number: ``1,000`` (en) = ``1.000`` (de) = ``1 000`` (fr) = ``1000``; ``1,5`` (de) =
    ``1.5``. The thousands separator is the language's (``,`` in en / ja / zh, ``.`` or a space where the
    decimal mark is a comma)."""
    thousands = "." if lang in DECIMAL_COMMA else ","
    p = number.replace(" ", "")
    if re.fullmatch(rf"\d{{1,3}}(?:{re.escape(thousands)}\d{{3}})+", p):
        p = p.replace(thousands, "")
    try:
        return str(float(p.replace(",", "."))).removesuffix(".0")
    except ValueError:  # 1.2.3: no number, keep it as written
        return p


@dataclass
class _Number:
    value: str
    start: int
    end: int
    kind: str  # digits | word | one | times (a frequency word: the unit is in it)


@cache
def _patterns(lang: str) -> dict[str, re.Pattern]:
    words = {**lx.NUMBER_WORDS.get(lang, {}), **lx.ONE_WORDS.get(lang, {}), **lx.TIMES_WORDS.get(lang, {})}
    alternatives = [r"\d+(?:[.,]\d+)*"]
    if lang in DECIMAL_COMMA:  # "1 000" (fr, ru; also written in the others): groups of exactly three digits
        alternatives.insert(0, r"\d{1,3}(?: \d{3})+(?![\d]|[.,]\d)")
    if words:
        alternatives.append(
            r"\b(?:" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + r")\b"
        )
    # Not inside a name (COVID19, β2) nor a number (the 5 of 1.5); a comma is a separator only after a digit
    # ("，3次": NFKC makes the Chinese comma a ",")
    before = r"(?<![\d.])(?<!\d,)" if lang in CJK else r"(?<![\w.])(?<!\d,)"
    units = sorted(lx.UNITS, key=len, reverse=True)
    if lang in CJK:
        units = sorted([*units, *lx.CJK_COUNTERS], key=len, reverse=True)
    unit_re = "|".join(map(re.escape, units))
    # A unit must end where a word ends ("5 days" -> day, "5 dayz" -> ""); in ja / zh it follows directly.
    unit = rf"(?:{unit_re})" if lang in CJK else rf"(?:{unit_re})(?![^\W\d_])"
    gap = r"\s*" if lang in CJK else r"(?:\s|-)?"
    ranges = [rf"\s*(?:-|–|—|{'|'.join(re.escape(b) for _, b in lx.RANGES.get(lang, ()) if b)})\s*"]
    prefixes = [re.escape(a) for a, _ in lx.RANGES.get(lang, ()) if a]
    return {
        "number": re.compile(before + "(?:" + "|".join(alternatives) + ")"),
        "cjk": re.compile(r"(?<!第)[〇零一二两兩三四五六七八九十百千万]+"),
        "unit": re.compile(gap + f"({unit})"),
        "range": re.compile("|".join(ranges) + "$"),
        "prefix": re.compile(r"(?:^|(?<=\W))(" + "|".join(prefixes) + r")\s+$") if prefixes else None,
        "limits": {
            # a phrase ends where a word ends ("от" is not the start of "отдыхайте"), but in ja / zh
            kind: re.compile(
                "|".join(f"(?:{p})" for p in pats) if lang in CJK else f"(?:{'|'.join(pats)})(?!\\w)"
            )
            for kind, pats in lx.LIMITS.get(lang, {}).items()
        },
        "times_phrases": [(re.compile(p), v) for p, v in lx.TIMES_PHRASES.get(lang, {}).items()],
    }


def _numbers(low: str, lang: str) -> list[_Number]:
    pats = _patterns(lang)
    words = lx.NUMBER_WORDS.get(lang, {})
    ones, times = lx.ONE_WORDS.get(lang, {}), lx.TIMES_WORDS.get(lang, {})
    found = []
    for m in pats["number"].finditer(low):
        raw = m.group(0)
        if raw in times:
            found.append(_Number(times[raw], m.start(), m.end(), "times"))
        elif raw in ones:
            found.append(_Number(ones[raw], m.start(), m.end(), "one"))
        elif raw in words:
            found.append(_Number(words[raw], m.start(), m.end(), "word"))
        else:
            found.append(_Number(_value(raw, lang), m.start(), m.end(), "digits"))
    if lang in CJK:
        for m in pats["cjk"].finditer(low):
            # 十分 is "enough" / "very" (ja, zh) unless it is ten minutes (十分钟, 十分間)
            if (
                low.startswith("十分", m.start())
                and m.end() == m.start() + 1
                and not re.match(r"分(?:钟|間)", low[m.end() :])
            ):
                continue
            if u := pats["unit"].match(low, m.end()):  # a numeral counts only before a counter or a unit
                value = _cjk_value(m.group(0))
                # 一种 / 一个 (a kind of, an): an article as often as a number
                kind = "one" if value == "1" and lx.UNITS.get(u.group(1).strip(), "") == "" else "word"
                found.append(_Number(value, m.start(), m.end(), kind))
        found.sort(key=lambda n: n.start)
    return found


def _merge_ranges(nums: list[_Number], low: str, lang: str) -> list[tuple[int, int, str, str, tuple | None]]:
    """(start, end, value, kind, the span of the range's first word or None) per number or range: "3-4",
    "3 to 4", "von 6 bis 12", "once or twice"."""
    pats = _patterns(lang)
    out: list[tuple[int, int, str, str, tuple | None]] = []
    i = 0
    while i < len(nums):
        a = nums[i]
        if i + 1 < len(nums) and pats["range"].fullmatch(low[a.end : nums[i + 1].start]):
            b = nums[i + 1]
            prefix = None
            if pats["prefix"] is not None and (p := pats["prefix"].search(low[: a.start])):
                prefix = p.span(1)
            kind = (
                "times" if "times" in (a.kind, b.kind) else ("one" if a.kind == b.kind == "one" else "word")
            )
            out.append((a.start, b.end, f"{a.value}-{b.value}", kind, prefix))
            i += 2
        else:
            out.append((a.start, a.end, a.value, a.kind, None))
            i += 1
    return out


def _limits(low: str, lang: str) -> list[tuple[int, int, str, str]]:
    """(start, end, "pre"|"post", bound) of the limit phrases, the longest where two overlap."""
    found = []
    for kind, pat in _patterns(lang)["limits"].items():
        for m in pat.finditer(low):
            if m.end() > m.start():
                found.append((m.start(), m.end(), kind[:-1], kind[-1]))
    found.sort(key=lambda f: (-(f[1] - f[0]), f[0]))
    kept: list[tuple[int, int, str, str]] = []
    for f in found:
        if not any(k[0] < f[1] and f[0] < k[1] for k in kept):
            kept.append(f)
    return sorted(kept)


_STOP = re.compile(r"[\d;!?,。；！？，、]|\.(?:\s|$)")  # another number or the end of a clause between them


def _close(between: str, lang: str, most: int) -> bool:
    """Whether a limit phrase and a quantity ``between`` apart belong together: nothing but ``most`` words."""
    if _STOP.search(between):
        return False
    if lang in CJK:
        return len(between.strip()) <= (6 if most > 1 else 2)
    return len(between.split()) <= most


def _per(items: list, k: int, low: str) -> bool:
    """Whether quantity ``k`` of a ja / zh sentence says "per", not a quantity: the 1 of a period before a
    count of times (1日3回, 一天三次, 1週間に1回: three times *a* day), or a 1 time before a dose (1回2錠, 一次两片:
    two tablets *each* time)."""
    start, end, value, unit, _ = items[k]
    if value != "1" or k + 1 >= len(items):
        return False
    nxt, gap = items[k + 1], low[end : items[k + 1][0]]
    if unit in lx.TIME_UNITS:
        return nxt[3] == "times" and len(gap.strip()) <= 2 and not _STOP.search(gap)
    return unit == "times" and nxt[3] != "times" and len(gap.strip()) <= 1 and not _STOP.search(gap)


def analyse(text: str, lang: str) -> tuple[list[Quantity], list[tuple[int, int]]]:
    """The quantities of ``text`` and the spans of the limit phrases said of them (which the negation check
    leaves out: the "not" of "do not exceed 4 g" is the limit's)."""
    shown, low = normalise(text)
    pats = _patterns(lang)
    limits = _limits(low, lang)
    items = []  # [start, end, value, unit, soft]
    prefixes = []  # spans of a range's first word ("от" of "от 2 до 3" is the range's, not a limit)
    for start, end, value, kind, prefix in _merge_ranges(_numbers(low, lang), low, lang):
        if kind == "one" and any(ls <= start < le for ls, le, *_ in limits):
            continue  # "un" of "un máximo de": an article in a limit
        unit = ""
        if kind == "times":
            unit = "times"
        elif m := pats["unit"].match(low, end):
            unit, end = lx.UNITS.get(m.group(1), ""), m.end()
        items.append([start, end, value, unit, kind == "one"])
        prefixes += [prefix] if prefix else []
    taken = [(s, e) for s, e, *_ in items]
    for pat, value in pats["times_phrases"]:
        for m in pat.finditer(low):
            if not any(s < m.end() and m.start() < e for s, e in taken):
                items.append([m.start(), m.end(), value, "times", False])
    items.sort()
    if lang in CJK:
        items = [it for k, it in enumerate(items) if not _per(items, k, low)]
    taken = [(s, e) for s, e, *_ in items]
    limits = [
        lim
        for lim in limits
        if not any(s < lim[1] and lim[0] < e for s, e in taken)
        and not any(ps <= lim[0] and lim[1] <= pe for ps, pe in prefixes)
    ]
    bounds: dict[int, tuple[str, int, int]] = {}
    used: set[int] = set()
    for k, (start, end, *_) in enumerate(items):
        # the nearest limit phrase before the quantity (nothing but a few words between), else right after it
        before = [j for j, (ls, le, where, _) in enumerate(limits) if where == "pre" and le <= start]
        after = [j for j, (ls, le, where, _) in enumerate(limits) if where == "post" and ls >= end]
        if before and before[-1] not in used and _close(low[limits[before[-1]][1] : start], lang, 4):
            j = before[-1]
        elif after and after[0] not in used and _close(low[end : limits[after[0]][0]], lang, 1):
            j = after[0]
        else:
            continue
        used.add(j)
        bounds[k] = (limits[j][3], limits[j][0], limits[j][1])
    quantities, masks = [], []
    for k, (start, end, value, unit, soft) in enumerate(items):
        bound = ""
        if k in bounds:
            bound, ls, le = bounds[k]
            masks.append((ls, le))
            start, end = min(start, ls), max(end, le)
        quantities.append(Quantity(value, unit, bound, shown[start:end].strip(), start, end, soft))
    return quantities, masks
