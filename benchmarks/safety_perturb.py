"""The perturbations of benchmarks/safety_bench.py: from a real sentence, outputs that must be flagged (a number,
a unit, a range or a number word changed; a number dropped or added; a negation dropped or added; a term
removed; the instruction echoed; an unrelated sentence; a loop) and faithful rewrites that must not (a number
as a word or the reverse, a unit spelled out, a limit said another way, a lexical negation for a syntactic one,
a clause moved, a thousands separator written another way).

The word lists here are the benchmark's own, written apart from multimsd.metrics.safety.lexicon: a rewrite
the checker's lists do not know shows up as a false alarm or a miss, as it would on a model's output.
Each generator returns (kind, output) pairs, or (kind, source, output) where it rewrites the source too
(a limit is put into the sentence, then said another way).
"""

from __future__ import annotations

import random
import re

# -------------------------------------------------------------------------------------------- number words
WORDS = {  # 2..10, as the benchmark writes them
    "en": "two three four five six seven eight nine ten",
    "de": "zwei drei vier fünf sechs sieben acht neun zehn",
    "es": "dos tres cuatro cinco seis siete ocho nueve diez",
    "fr": "deux trois quatre cinq six sept huit neuf dix",
    "it": "due tre quattro cinque sei sette otto nove dieci",
    "pt": "dois três quatro cinco seis sete oito nove dez",
    "ru": "два три четыре пять шесть семь восемь девять десять",
    "zh": "两 三 四 五 六 七 八 九 十",
    "ja": "二 三 四 五 六 七 八 九 十",
}
NUMBER_WORDS = {lang: dict(zip(ws.split(), range(2, 11))) for lang, ws in WORDS.items()}
# "once" / "twice" said as one word or as "N times", per language: (once, twice, N-times template)
FREQUENCY = {
    "en": ("once", "twice", "{n} times"),
    "de": ("einmal", "zweimal", "{n}-mal"),
    "es": ("una vez", "dos veces", "{n} veces"),
    "fr": ("une fois", "deux fois", "{n} fois"),
    "it": ("una volta", "due volte", "{n} volte"),
    "pt": ("uma vez", "duas vezes", "{n} vezes"),
    "ru": ("один раз", "дважды", "{n} раза"),
    "zh": ("一次", "两次", "{n}次"),
    "ja": ("一回", "二回", "{n}回"),
}
# Units: (abbreviation, spelled out, another unit to swap in)
UNITS = {
    "en": [("mg", "milligrams", "g"), ("ml", "millilitres", "l"), ("hours", "hours", "days"), ("%", "percent", "mg")],
    "de": [("mg", "Milligramm", "g"), ("ml", "Milliliter", "l"), ("Stunden", "Stunden", "Tage"), ("%", "Prozent", "mg")],
    "es": [("mg", "miligramos", "g"), ("ml", "mililitros", "l"), ("horas", "horas", "días"), ("%", "por ciento", "mg")],
    "fr": [("mg", "milligrammes", "g"), ("ml", "millilitres", "l"), ("heures", "heures", "jours"), ("%", "pour cent", "mg")],
    "it": [("mg", "milligrammi", "g"), ("ml", "millilitri", "l"), ("ore", "ore", "giorni"), ("%", "per cento", "mg")],
    "pt": [("mg", "miligramas", "g"), ("ml", "mililitros", "l"), ("horas", "horas", "dias"), ("%", "por cento", "mg")],
    "ru": [("мг", "миллиграммов", "г"), ("мл", "миллилитров", "л"), ("часов", "часов", "дней"), ("%", "процентов", "мг")],
    "zh": [("mg", "毫克", "g"), ("ml", "毫升", "l"), ("小时", "小时", "天"), ("%", "%", "mg")],
    "ja": [("mg", "ミリグラム", "g"), ("ml", "ミリリットル", "l"), ("時間", "時間", "日"), ("%", "パーセント", "mg")],
}  # fmt: skip
# A quantity put into a sentence that had none (a number added), per language.
ADDED = {
    "en": " for 3 days", "de": " 3 Tage lang", "es": " durante 3 días", "fr": " pendant 3 jours",
    "it": " per 3 giorni", "pt": " por 3 dias", "ru": " в течение 3 дней", "zh": "3天", "ja": "3日間",
}  # fmt: skip
# Upper limits said several ways (before the quantity; ja after it).
LIMITS = {
    "en": ["at most", "no more than", "up to", "a maximum of", "not more than"],
    "de": ["höchstens", "maximal", "nicht mehr als", "bis zu"],
    "es": ["como máximo", "no más de", "hasta", "un máximo de"],
    "fr": ["au maximum", "pas plus de", "au plus", "jusqu'à"],
    "it": ["al massimo", "non più di", "fino a", "massimo"],
    "pt": ["no máximo", "não mais de", "até", "um máximo de"],
    "ru": ["не более", "не больше", "максимум", "до"],
    "zh": ["最多", "不超过", "至多"],
    "ja": ["まで", "以下", "以内"],
}
LOWER = {
    "en": ["at least", "no less than", "a minimum of"],
    "de": ["mindestens", "wenigstens", "nicht weniger als"],
    "es": ["al menos", "como mínimo", "por lo menos"],
    "fr": ["au moins", "au minimum", "pas moins de"],
    "it": ["almeno", "come minimo", "non meno di"],
    "pt": ["pelo menos", "no mínimo", "não menos de"],
    "ru": ["не менее", "не меньше", "как минимум"],
    "zh": ["至少", "不少于", "最少"],
    "ja": ["以上"],
}

# ----------------------------------------------------------------------------------------------- negation
# (a pattern of a negation, what the sentence reads with it dropped)
DROP_NEGATION = {
    "en": [(r"\b(do|does|did|should|must|can|could|may|will|would|is|are|was|were|has|have) not\b", r"\1"),
           (r"\b(do|does|did|is|are|was|were|has|have|should|must)n't\b", r"\1"), (r"\bcannot\b", "can"),
           (r"\bnever\b ?", ""), (r"\bno\b", "some")],
    "de": [(r" nicht\b", ""), (r"\bkeine\b", "eine"), (r"\bkein\b", "ein"), (r"\bkeinen\b", "einen"),
           (r"\bnie\b ?", ""), (r"\bniemals\b ?", "")],
    "es": [(r"\bno ", ""), (r"\bnunca\b ?", "")],
    "fr": [(r"\bn'(\w+) (pas|jamais|plus)\b", r"\1"), (r"\bne (\w+) (pas|jamais)\b", r"\1")],
    "it": [(r"\bnon ", ""), (r"\bmai\b ?", "")],
    "pt": [(r"\bnão ", ""), (r"\bnunca\b ?", "")],
    "ru": [(r"\bне ", ""), (r"\bнельзя\b", "можно"), (r"\bникогда\b ?", "")],
    "zh": [(r"不(要|能|会|是|可|应|宜|得|用|需)", r"\1"), (r"没有", "有"), (r"无需", "需要"), (r"未(经|被)", r"\1")],
    "ja": [(r"しないでください", "してください"), (r"ません", "ます"), (r"ではない", "である"), (r"がない", "がある"),
           (r"できない", "できる"), (r"しない", "する")],
}  # fmt: skip
ADD_NEGATION = {
    "en": [(r"\b(is|are|can|may|should|must|will)\b", r"\1 not")],
    "de": [(r"\b(ist|sind|kann|können|sollte|sollten|wird|werden)\b", r"\1 nicht")],
    "es": [(r"\b(es|son|puede|pueden|debe|deben)\b", r"no \1")],
    "fr": [(r"\b(est|sont|peut|peuvent|doit|doivent)\b", r"ne \1 pas")],
    "it": [(r"\b(è|sono|può|possono|deve|devono)(?=\s)", r"non \1")],
    "pt": [(r"\b(é|são|pode|podem|deve|devem)(?=\s)", r"não \1")],
    "ru": [(r"\b(может|могут|следует|является|нужно|можно)\b", r"не \1")],
    "zh": [(r"(是|可以|会|能|应)", r"不\1")],
    "ja": [(r"ます。", "ません。"), (r"です。", "ではありません。"), (r"できる", "できない")],
}
# A syntactic negation said with a lexical one (do not X → avoid X-ing): (pattern, replacement)
LEXICAL = {
    "en": [(r"\b(?:do not|don't|should not|must not) (take|use|drink|eat|drive|give|apply)\b",
            lambda m: "avoid " + {"take": "taking", "use": "using", "drink": "drinking", "eat": "eating",
                                  "drive": "driving", "give": "giving", "apply": "applying"}[m.group(1)])],
    "de": [(r"\b(?:nicht|keinen?) (Alkohol|Grapefruitsaft)\b", r"auf \1 verzichten")],
    "es": [(r"\bno (tome|use|beba|conduzca)\b", lambda m: "evite " + {"tome": "tomar", "use": "usar",
                                                                       "beba": "beber", "conduzca": "conducir"}[m.group(1)])],
    "fr": [(r"\bne (prenez|buvez|utilisez) pas\b", lambda m: "évitez de " + {"prenez": "prendre", "buvez": "boire",
                                                                            "utilisez": "utiliser"}[m.group(1)])],
    "it": [(r"\bnon (prenda|beva|usi)\b", lambda m: "eviti di " + {"prenda": "prendere", "beva": "bere",
                                                                  "usi": "usare"}[m.group(1)])],
    "pt": [(r"\bnão (tome|use|beba)\b", lambda m: "evite " + {"tome": "tomar", "use": "usar", "beba": "beber"}[m.group(1)])],
    "ru": [(r"\bне (принимайте|пейте|используйте)\b", "избегайте")],
    "zh": [(r"不要", "避免")],
    "ja": [(r"しないでください", "することは避けてください")],
}  # fmt: skip
ECHO = {  # what a chat model writes instead of an answer
    "en": "Here is the simplified sentence:", "de": "Hier ist der vereinfachte Satz:",
    "es": "Aquí está la oración simplificada:", "fr": "Voici la phrase simplifiée :",
    "it": "Ecco la frase semplificata:", "pt": "Aqui está a frase simplificada:",
    "ru": "Вот упрощённое предложение:", "zh": "以下是简化后的句子：", "ja": "以下が簡単にした文です：",
}  # fmt: skip
PRONOUN = {"en": "it", "de": "es", "es": "ello", "fr": "cela", "it": "ciò", "pt": "isso", "ru": "это",
           "zh": "它", "ja": "それ"}  # fmt: skip
CJK = ("ja", "zh")
COUNTERS = r"[錠片粒次回日天周週个ヵヶか個种年つ剤歳岁人]"  # what a numeral is written before in ja / zh
# A number of its own: not part of a name (H2, FEV1, SpO2, Typ-2-Diabetes, COVID-19); in ja / zh a number
# follows a Han character directly (每日3次), so there only Latin letters and digits count as "part of a name".
DIGITS = re.compile(r"(?<![\w.,/–-])\d+(?![\w/–-]|[.,]\d)")
DIGITS_CJK = re.compile(r"(?<![A-Za-z0-9.,/–-])\d+(?![A-Za-z0-9/–-]|[.,]\d)")


def _numbers(s: str, lang: str):
    return (DIGITS_CJK if lang in CJK else DIGITS).finditer(s)


def _sub_once(pattern, repl, text: str) -> str | None:
    new = re.sub(pattern, repl, text, count=1)
    return new if new != text else None


# ------------------------------------------------------------------------------------------------ flagged
def must_flag(s: str, lang: str, rng: random.Random) -> list[tuple[str, str, str]]:
    """(check, kind, output) that must be flagged by ``check``."""
    out = []
    numbers = list(_numbers(s, lang))
    if numbers:
        m = rng.choice(numbers)
        n = int(m.group(0))
        out.append(
            ("numbers", "number changed", s[: m.start()] + str(n + 1 if n < 10 else n * 2) + s[m.end() :])
        )
        tail = s[m.end() :]
        for abbr, _, other in UNITS[lang]:
            um = re.match(r"(\s?)" + re.escape(abbr) + (r"(?!\w)" if lang not in CJK else ""), tail)
            if um:
                out.append(("numbers", "unit changed", s[: m.end()] + um.group(1) + other + tail[um.end() :]))
                break
        drop = re.match(r"\s?(\w+|%)?", tail)
        out.append(("numbers", "number dropped", (s[: m.start()] + tail[drop.end() :]).replace("  ", " ")))
        r = re.search(r"(\d+)\s?[-–]\s?(\d+)", s)
        if r:
            out.append(
                ("numbers", "range changed", s[: r.start(2)] + str(int(r.group(2)) + 1) + s[r.end(2) :])
            )
    else:
        end = re.search(r"[.。!?！？]?\s*$", s).start()
        out.append(("numbers", "number added", s[:end] + ADDED[lang] + s[end:]))
    words = [(m, NUMBER_WORDS[lang][m.group(0).lower()]) for m in _word_matches(s, lang)]
    if words:
        m, n = rng.choice(words)
        other = next(w for w, v in NUMBER_WORDS[lang].items() if v == (n % 10) + 1 or v == 2 and n == 10)
        out.append(("numbers", "number word changed", s[: m.start()] + other + s[m.end() :]))
    once, twice, _ = FREQUENCY[lang]
    for a, b in ((once, twice), (twice, once)):
        if re.search(_bound(a, lang), s):
            out.append(("numbers", "frequency word changed", re.sub(_bound(a, lang), b, s, count=1)))
            break
    for pattern, repl in DROP_NEGATION[lang]:
        if new := _sub_once(pattern, repl, s):
            out.append(("negation", "negation dropped", new))
            break
    else:
        for pattern, repl in ADD_NEGATION[lang]:
            if new := _sub_once(pattern, repl, s):
                out.append(("negation", "negation added", new))
                break
    tokens = s.split() if lang not in CJK else list(s)
    loop = (" " if lang not in CJK else "").join(tokens[:3])
    out.append(("degenerate", "loop", " ".join([loop] * 4)))
    return out


def _bound(word: str, lang: str) -> str:
    return re.escape(word) if lang in CJK else rf"(?<!\w){re.escape(word)}(?!\w)"


def _word_matches(s: str, lang: str):
    words = NUMBER_WORDS[lang]
    if lang in CJK:  # a numeral before a counter or unit only (三日, 两次, 二錠)
        return re.finditer(
            r"(?<![一二两三四五六七八九十百])[" + "".join(words) + r"](?=[日天回次錠片粒周週か個种年])", s
        )
    return re.finditer(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")(?!\w)", s, flags=re.I)


def term_removed(s: str, lang: str, dictionary) -> str | None:
    spans = dictionary.find_spans(s)
    if not spans:
        return None
    start, end = spans[0][:2]
    return s[:start] + PRONOUN[lang] + s[end:]


# ----------------------------------------------------------------------------------------------- faithful
def faithful(s: str, lang: str, rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, source, output): rewrites that keep every fact (the source may be rewritten too)."""
    out = []
    for m in _numbers(s, lang):
        n = int(m.group(0))
        words = {v: w for w, v in NUMBER_WORDS[lang].items()}
        counter = re.match(r"\s?[^\W\d_]{3,}" if lang not in CJK else COUNTERS, s[m.end() :])
        if lang in CJK and m.start() and not re.match(r"[\u3000-\u9fff]", s[m.start() - 1]):
            continue  # インターロイキン4, β2: a name
        if counter and (2 <= n <= 9 if lang in CJK else 2 <= n <= 10):
            gap = "" if lang in CJK else " "
            rest = s[m.end() :].lstrip() if lang not in CJK else s[m.end() :]
            out.append(("number as a word", s, s[: m.start()] + words[n] + gap + rest))
            break
    for m in _word_matches(s, lang):
        n = NUMBER_WORDS[lang][m.group(0).lower()]
        out.append(("word as a number", s, s[: m.start()] + str(n) + s[m.end() :]))
        break
    once, twice, times = FREQUENCY[lang]
    for word, n in ((once, 1), (twice, 2)):
        if re.search(_bound(word, lang), s) and not (lang == "en" and n == 1):
            out.append(
                ("frequency said another way", s, re.sub(_bound(word, lang), times.format(n=n), s, count=1))
            )
            break
    for abbr, spelled, _ in UNITS[lang]:
        m = re.search(r"(\d)(\s?)" + re.escape(abbr) + (r"(?!\w)" if lang not in CJK else ""), s)
        if m and spelled != abbr:
            gap = "" if lang in CJK else " "
            out.append(("unit spelled out", s, s[: m.start(2)] + gap + spelled + s[m.end() :]))
            break
    m = re.search(r"(?<![\d.,])(\d)(\d{3})(?![\d.,])", s)
    if m:
        sep = {"en": ",", "zh": ",", "ja": ",", "fr": " ", "ru": " "}.get(lang, ".")
        out.append(("thousands separator", s, s[: m.start()] + m.group(1) + sep + m.group(2) + s[m.end() :]))
    q = next(_numbers(s, lang), None)
    said = [
        p
        for p in LIMITS[lang]
        + LOWER[lang]
        + ["不", "не ", "less", "more", "mehr", "más", "plus", "più", "mais"]
    ]
    if q is not None and not any(p in s[max(0, q.start() - 25) : q.end() + 12] for p in said):
        for kind, phrases in (
            ("upper limit said another way", LIMITS[lang]),
            ("lower limit said another way", LOWER[lang]),
        ):
            a, b = rng.sample(phrases, 2) if len(phrases) > 1 else (phrases[0], phrases[0])
            if lang == "ja":  # after the quantity and its unit
                u = re.match(r"[^\s、。をにはがで]{0,4}", s[q.end() :])
                at = q.end() + u.end()
                src, dst = s[:at] + a + s[at:], s[:at] + b + s[at:]
            else:
                gap = "" if lang == "zh" else " "
                src, dst = (
                    s[: q.start()] + a + gap + s[q.start() :],
                    s[: q.start()] + b + gap + s[q.start() :],
                )
            if src != dst:
                out.append((kind, src, dst))
    for pattern, repl in LEXICAL[lang]:
        if new := _sub_once(pattern, repl, s):
            out.append(("lexical negation", s, new))
            break
    for comma in (", ", "，", "、"):
        parts = s.rstrip(".。").split(comma)
        if len(parts) == 2 and min(len(p) for p in parts) > 8:
            end = "。" if lang in CJK else "."
            first = parts[1][:1].upper() + parts[1][1:] if lang not in CJK else parts[1]
            rest = parts[0][:1].lower() + parts[0][1:] if lang not in CJK and lang != "de" else parts[0]
            out.append(("clause moved", s, first + comma + rest + end))
            break
    return out
