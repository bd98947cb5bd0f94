"""The words of the safety checks, per language: number words, units, limits, negation cues.

Everything here is matched on NFKC-normalised, lowercased text. Regular expressions are strings so that the
modules that use them decide how to compile and anchor them. Where a list leaves a word out on purpose the
comment says why: a missing word costs a miss, a wrong one a false alarm on every sentence that has it.

Why this module is long: it is the data of nine languages, one table per kind of word; split up, each part
would be read only together with the others.
"""

from __future__ import annotations

LANGS = ("de", "en", "es", "fr", "it", "ja", "pt", "ru", "zh")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ------------------------------------------------------------------------------------------------ numbers
# Cardinal number words -> value (not "cent" / "cento" / "cem": they are the "cent" of "pour cent"). Words that are also articles or pronouns (one, ein, un, una, um, один …) are
# in ONE_WORDS instead: they count only right before a unit ("one time", "una vez", "ein Mal", "один раз").
NUMBER_WORDS: dict[str, dict[str, str]] = {
    "en": {"zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
           "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "fifteen": "15",
           "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100"},
    "de": {"null": "0", "zwei": "2", "drei": "3", "vier": "4", "fünf": "5", "sechs": "6", "sieben": "7",
           "neun": "9", "zehn": "10", "elf": "11", "zwölf": "12", "fünfzehn": "15",
           "zwanzig": "20", "dreißig": "30", "vierzig": "40", "fünfzig": "50", "sechzig": "60",
           "hundert": "100"},
    "es": {"cero": "0", "dos": "2", "tres": "3", "cuatro": "4", "cinco": "5", "seis": "6", "siete": "7",
           "ocho": "8", "nueve": "9", "diez": "10", "once": "11", "doce": "12", "quince": "15",
           "veinte": "20", "treinta": "30", "cuarenta": "40", "cincuenta": "50", "sesenta": "60",
           "cien": "100"},
    "fr": {"zéro": "0", "deux": "2", "trois": "3", "quatre": "4", "cinq": "5", "six": "6", "sept": "7",
           "huit": "8", "dix": "10", "onze": "11", "douze": "12", "quinze": "15",
           "vingt": "20", "trente": "30", "quarante": "40", "cinquante": "50", "soixante": "60"},
    "it": {"zero": "0", "due": "2", "tre": "3", "quattro": "4", "cinque": "5", "sette": "7",
           "otto": "8", "nove": "9", "dieci": "10", "undici": "11", "dodici": "12", "quindici": "15",
           "venti": "20", "trenta": "30", "quaranta": "40", "cinquanta": "50", "sessanta": "60"},
    "pt": {"zero": "0", "dois": "2", "duas": "2", "três": "3", "quatro": "4", "cinco": "5", "seis": "6",
           "sete": "7", "oito": "8", "nove": "9", "dez": "10", "onze": "11", "doze": "12", "quinze": "15",
           "vinte": "20", "trinta": "30", "quarenta": "40", "cinquenta": "50", "sessenta": "60"},
    "ru": {"ноль": "0", "два": "2", "две": "2", "двух": "2", "двум": "2", "три": "3", "трёх": "3",
           "трех": "3", "трём": "3", "четыре": "4", "четырёх": "4", "четырех": "4", "пять": "5", "пяти": "5",
           "шесть": "6", "шести": "6", "семь": "7", "семи": "7", "восемь": "8", "восьми": "8",
           "девять": "9", "девяти": "9", "десять": "10", "десяти": "10", "одиннадцать": "11",
           "двенадцать": "12", "двенадцати": "12", "пятнадцать": "15", "двадцать": "20", "двадцати": "20",
           "тридцать": "30", "сорок": "40", "пятьдесят": "50", "шестьдесят": "60", "сто": "100"},
}  # fmt: skip
# Also "one", and words that are a number in one reading and something else in another (it "sei": six / you
# are; fr "neuf": nine / new; de "acht": eight / attention): numbers only before a unit.
ONE_WORDS: dict[str, dict[str, str]] = {
    "en": {"one": "1"},
    "de": {"ein": "1", "eine": "1", "einen": "1", "einem": "1", "einer": "1", "eins": "1", "acht": "8"},
    "es": {"un": "1", "una": "1", "uno": "1"},
    "fr": {"un": "1", "une": "1", "neuf": "9"},
    "it": {"un": "1", "uno": "1", "una": "1", "sei": "6"},
    "pt": {"um": "1", "uma": "1"},
    "ru": {"один": "1", "одна": "1", "одно": "1", "одну": "1", "одного": "1", "одной": "1"},
}
# Frequency words: a count of times in one word.
TIMES_WORDS: dict[str, dict[str, str]] = {
    "en": {"once": "1", "twice": "2", "thrice": "3"},
    "de": {"einmal": "1", "zweimal": "2", "dreimal": "3", "viermal": "4", "fünfmal": "5", "sechsmal": "6"},
    "ru": {"дважды": "2", "трижды": "3", "однократно": "1"},
}
# Phrases that are a count of times with no number in them ("раз в день": once a day).
TIMES_PHRASES: dict[str, dict[str, str]] = {
    "ru": {r"\bраз в (?:день|сутки|неделю|месяц|год|час)\b": "1"},
}

# Chinese / Japanese numerals, counted only before a counter or a unit (一般, 一起, 统一 are not numbers).
CJK_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}  # fmt: skip
CJK_POWERS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
# Counters after a number in ja / zh that are no unit of their own (tablets, drops, people, years of age).
CJK_COUNTERS = ("片", "粒", "颗", "錠", "杯", "滴", "包", "支", "袋", "瓶", "岁", "歳", "个", "個", "枚", "種",
                "种", "人", "倍", "名", "本", "型", "つ", "剤", "カプセル", "回分", "次量")  # fmt: skip

# Units by meaning: every spelling -> one name (the name is what the checks compare; the reasons show the
# text as written).
_UNITS: dict[str, tuple[str, ...]] = {
    "mg": ("mg", "milligram", "milligrams", "milligramm", "milligramme", "milligrammes", "miligramo",
           "miligramos", "milligrammo", "milligrammi", "miligrama", "miligramas", "мг", "миллиграмм",
           "миллиграмма", "миллиграммов", "ミリグラム", "毫克"),
    "g": ("g", "gram", "grams", "gramm", "gramme", "grammes", "gramo", "gramos", "grammo", "grammi", "grama",
          "gramas", "г", "грамм", "грамма", "граммов", "グラム", "克"),
    "kg": ("kg", "kilogram", "kilograms", "kilogramm", "kilo", "kilos", "кг", "キログラム", "公斤"),
    "µg": ("µg", "μg", "mcg", "microgram", "micrograms", "mikrogramm", "microgramo", "microgramos",
           "microgrammes", "microgrammi", "microgramas", "мкг", "マイクログラム", "微克"),
    "ml": ("ml", "milliliter", "milliliters", "millilitre", "millilitres", "mililitro", "mililitros",
           "millilitro", "millilitri", "мл", "миллилитр", "миллилитра", "миллилитров", "ミリリットル",
           "毫升"),
    "l": ("l", "liter", "liters", "litre", "litres", "litro", "litros", "litri", "л", "литр", "литра",
          "литров", "リットル", "升"),
    "iu": ("iu", "ie", "ui", "units", "unit", "einheiten", "unidades", "unités", "unità", "ед", "ме", "единиц",
           "единицы", "単位", "单位", "国际单位"),
    "%": ("%", "percent", "per cent", "prozent", "por ciento", "pour cent", "per cento", "por cento",
          "процент", "процента", "процентов", "パーセント"),
    "mmhg": ("mmhg", "mm hg", "мм рт. ст.", "мм рт.ст.", "мм рт ст", "毫米汞柱"),
    "mmol": ("mmol", "mmol/l"),
    "°c": ("°c", "°", "grad", "grados", "degrés", "gradi", "graus", "градусов", "градуса", "度"),
    "hour": ("h", "hour", "hours", "hr", "hrs", "stunde", "stunden", "std", "hora", "horas", "heure", "heures",
             "ora", "ore", "час", "часа", "часов", "時間", "小时", "小時"),
    "minute": ("min", "minute", "minutes", "minuten", "minuto", "minutos", "minuti", "минута", "минуты",
               "минут", "分钟", "分間", "分"),
    "day": ("day", "days", "tag", "tage", "tagen", "tages", "día", "días", "jour", "jours", "giorno", "giorni",
            "dia", "dias", "день", "дня", "дней", "日間", "日", "天"),
    "week": ("week", "weeks", "woche", "wochen", "semana", "semanas", "semaine", "semaines", "settimana",
             "settimane", "неделя", "недели", "недель", "неделю", "週間", "週", "周", "星期"),
    "month": ("month", "months", "monat", "monate", "monaten", "mes", "meses", "mois", "mese", "mesi",
              "месяц", "месяца", "месяцев", "か月", "ヶ月", "カ月", "ケ月", "ヵ月", "箇月", "个月", "月"),
    "year": ("year", "years", "jahr", "jahre", "jahren", "jahres", "año", "años", "an", "ans", "année",
             "années", "anno", "anni", "ano", "anos", "год", "года", "лет", "年"),
    "times": ("time", "times", "mal", "x", "×", "vez", "veces", "vezes", "fois", "volta", "volte", "раз", "раза",
              "次", "回"),
}  # fmt: skip
UNITS = {spelling: name for name, spellings in _UNITS.items() for spelling in spellings}
# What a unit is called in each language's reasons when the text gave none of its own (never needed when a
# quantity was found in the text: the reasons quote the text).
TIME_UNITS = ("hour", "minute", "day", "week", "month", "year")

# Range connectors between two numbers ("3 to 4 days", "von 6 bis 12 Jahren", "entre 3 y 4"): (before the
# first number, between them). The first part may be empty.
RANGES: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("from", "to"), ("between", "and"), ("", "to"), ("", "or")),
    "de": (("von", "bis"), ("zwischen", "und"), ("", "bis"), ("", "oder")),
    "es": (("de", "a"), ("entre", "y"), ("", "a"), ("", "o")),
    "fr": (("de", "à"), ("entre", "et"), ("", "à"), ("", "ou")),
    "it": (("da", "a"), ("dai", "ai"), ("dal", "al"), ("tra", "e"), ("fra", "e"), ("", "a"), ("", "o")),
    "pt": (("de", "a"), ("entre", "e"), ("", "a"), ("", "ou")),
    "ru": (("от", "до"), ("между", "и"), ("", "или")),
    "ja": (("", "から"), ("", "~"), ("", "〜")),
    "zh": (("", "到"), ("", "至"), ("", "~"), ("", "〜")),
}

# ----------------------------------------------------------------------------------------- limits (≤ / ≥)
# A limit is a relation on the quantity it is said of: "at most 2 tablets" = "do not exceed 2 tablets" = "no
# more than 2 tablets" = ≤ 2 tablets. "pre" phrases come before the quantity (at most four words between, no
# other number), "post" phrases right after it (at most one word between). The negation inside a limit ("do
# not exceed", "nicht mehr als", 不超过, 超えない) is part of the relation, not a negation of the sentence.
UPPER, LOWER = "≤", "≥"
_NEG_EN = r"(?:not|never|n't|no)"
_VERBS_EN = r"(?:(?!a\b|an\b|the\b)\w+\s+){0,2}?"  # "do not take more than", not "not a woman over 65"
LIMITS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "pre≤": (rf"\b{_NEG_EN}\s+{_VERBS_EN}(?:more|higher|greater|longer|over|above|beyond)(?:\s+than)?",
                 rf"\b{_NEG_EN}\s+{_VERBS_EN}exceed(?:ing)?", r"\bnot to exceed",
                 r"\bat (?:the )?most", r"\bup to", r"\bmaximum(?: of)?", r"\bmax\.?", r"\bless than",
                 r"\bfewer than", r"\bunder", r"\bbelow", r"\byounger than", r"\blower than", r"\bshorter than",
                 r"\bno later than", r"\blimit(?:ed)? to"),
        "post≤": (r"or (?:less|fewer|under|below|younger|lower|shorter)", r"at (?:the )?most", r"maximum",
                  r"max\.?"),
        "pre≥": (rf"\b{_NEG_EN}\s+{_VERBS_EN}(?:less|fewer|lower|shorter)(?:\s+than)?", r"\bat least",
                 r"\bminimum(?: of)?", r"\bmore than", r"\bover", r"\babove", r"\bgreater than", r"\bolder than",
                 r"\bhigher than", r"\blonger than", r"\bexceed(?:s|ing)?", r"\bin excess of"),
        "post≥": (r"or (?:more|longer|older|over|above|higher|greater)", r"at least", r"minimum",
                  r"and (?:over|above|older)"),
    },
    "de": {
        "pre≤": (r"\b(?:nicht|nie|niemals|keine?)\s+(?:\w+\s+){0,2}?(?:mehr|länger|höher|über|öfter|häufiger)(?:\s+als)?",
                 r"\büberschreiten sie\s+(?:\w+\s+){0,1}?nicht", r"\bhöchstens", r"\w*höchst\w*",
                 r"\bmaximal\w*", r"\bmax\.?", r"\bbis zu", r"\bweniger als", r"\bunter", r"\bunterhalb von",
                 r"\bjünger als", r"\bniedriger als", r"\bkürzer als"),
        "post≤": (r"(?:darf |dürfen |sollte |sollten )?nicht (?:über)?schritten", r"nicht (?:zu )?überschreiten",
                  r"(?:oder|und) (?:weniger|jünger|kürzer)", r"höchstens"),
        "pre≥": (r"\b(?:nicht|nie)\s+(?:\w+\s+){0,2}?(?:weniger|kürzer|seltener)(?:\s+als)?", r"\bmindestens",
                 r"\bwenigstens", r"\bmehr als", r"\büber", r"\boberhalb von", r"\bälter als", r"\blänger als",
                 r"\bhöher als", r"\bab"),
        "post≥": (r"(?:oder|und) (?:mehr|älter|länger|darüber)", r"mindestens"),
    },
    "es": {
        "pre≤": (r"\bno\s+(?:\w+\s+){0,2}?(?:más|mayor(?:es)?)\s+(?:de|que)",
                 r"\bno\s+(?:supere|superar|exceda|exceder|sobrepase|sobrepasar|pase|pasar)(?: de)?",
                 r"\bcomo (?:máximo|mucho)", r"\ba lo sumo", r"\b(?:un )?máxim[oa]s?(?: de)?", r"\bhasta",
                 r"\bmenos de", r"\bpor debajo de", r"\bmenores de", r"\binferior(?:es)? a"),
        "post≤": (r"o menos", r"como (?:máximo|mucho)", r"máximo"),
        "pre≥": (r"\bno\s+(?:\w+\s+){0,2}?menos\s+de", r"\bal menos", r"\bpor lo menos", r"\bcomo mínimo",
                 r"\b(?:un )?mínim[oa]s?(?: de)?", r"\bmás de", r"\bmayores de", r"\bpor encima de",
                 r"\bsuperior(?:es)? a", r"\ba partir de", r"\bsupera(?:n|r)?(?: (?:los|las|el|la))?",
                 r"\bpas(?:a|e|ar|en) de"),
        "post≥": (r"o más", r"como mínimo", r"o mayores"),
    },
    "fr": {
        "pre≤": (r"\b(?:pas|jamais)\s+(?:\w+\s+){0,1}?plus\s+(?:de|d'|que)",
                 r"\bne\s+(?:\w+\s+){0,1}?(?:pas|jamais)\s+dépasser", r"\bne\s+dépassez\s+(?:pas|jamais)",
                 r"\bsans dépasser", r"\bau (?:maximum|plus)", r"\b(?:la |une )?(?:dose )?maxim(?:um|ale)\w*(?: de)?",
                 r"\bjusqu'à", r"\bmoins de", r"\ben dessous de", r"\bau-dessous de", r"\binférieure?s? à",
                 r"\bde moins de"),
        "post≤": (r"au (?:maximum|plus)", r"ou moins", r"maximum"),
        "pre≥": (r"\b(?:pas|jamais)\s+(?:\w+\s+){0,1}?moins\s+(?:de|d'|que)", r"\bau (?:moins|minimum)",
                 r"\bminimum(?: de)?", r"\bplus de", r"\bau-delà de", r"\bau-dessus de", r"\ben dessus de",
                 r"\bsupérieure?s? à", r"\bà partir de", r"\bdépass(?:e|ent|ant)"),
        "post≥": (r"ou plus", r"au (?:moins|minimum)", r"minimum"),
    },
    "it": {
        "pre≤": (r"\bnon\s+(?:\w+\s+){0,2}?più\s+(?:di|del|della|dei|delle)",
                 r"\bnon\s+(?:superare|superi|superate|eccedere|ecceda|oltrepassare)",
                 r"\bal massimo", r"\b(?:la )?(?:dose )?massim[aoie](?: (?:è )?di)?", r"\bfino a",
                 r"\bmeno di", r"\bsotto(?: i| le| il| la)?", r"\binferiore a"),
        "post≤": (r"al massimo", r"o meno"),
        "pre≥": (r"\bnon\s+(?:\w+\s+){0,2}?meno\s+di", r"\balmeno", r"\bcome minimo", r"\bminim[oa]",
                 r"\bpiù di", r"\boltre(?: i| le)?", r"\bsopra(?: i| le)?", r"\bsuperiore a", r"\ba partire da",
                 r"\bsupera(?:no|re)?(?: i| le| il| la)?"),
        "post≥": (r"o più", r"almeno"),
    },
    "pt": {
        "pre≤": (r"\bnão\s+(?:\w+\s+){0,2}?mais\s+(?:de|que|do que)",
                 r"\bnão\s+(?:exceda|exceder|ultrapasse|ultrapassar|supere|superar)(?: (?:a|o|os|as))?",
                 r"\bno máximo", r"\b(?:um )?máxim[oa]s?(?: (?:diári[oa] )?(?:é )?de)?", r"\baté",
                 r"\bmenos de", r"\babaixo de", r"\bmenores de", r"\binferior(?:es)? a"),
        "post≤": (r"ou menos", r"no máximo"),
        "pre≥": (r"\bnão\s+(?:\w+\s+){0,2}?menos\s+de", r"\bpelo menos", r"\bno mínimo", r"\b(?:um )?mínim[oa]",
                 r"\bmais de", r"\bacima de", r"\bmaiores de", r"\bsuperior(?:es)? a", r"\ba partir de",
                 r"\bpass(?:ar|a|e) de"),
        "post≥": (r"ou mais", r"no mínimo"),
    },
    "ru": {
        "pre≤": (r"\bне\s+(?:\w+\s+){0,2}?(?:более|больше|свыше|дольше)",
                 r"\bне\s+(?:превышайте|превышать|превышая|превышает)", r"\bмаксимум",
                 r"\bмаксимальн\w*", r"\bдо", r"\bменее", r"\bменьше", r"\bниже", r"\bмладше"),
        "post≤": (r"или меньше", r"максимум"),
        "pre≥": (r"\bне\s+(?:\w+\s+){0,2}?(?:менее|меньше|реже)", r"\bпо крайней мере", r"\bкак минимум",
                 r"\bминимум", r"\bболее", r"\bбольше", r"\bсвыше", r"\bвыше", r"\bстарше", r"\bот"),
        "post≥": (r"или больше", r"и более", r"и старше", r"минимум"),
    },
    "zh": {
        "pre≤": (r"(?:不|不要|不得|不能|不宜|不应|勿|切勿)超过", r"最多", r"至多", r"最高", r"最大", r"少于", r"低于",
                 r"不到", r"不多于", r"不高于", r"小于"),
        "post≤": (r"以下", r"以内", r"或以下", r"或更少"),
        "pre≥": (r"至少", r"不少于", r"不低于", r"最少", r"最低", r"超过", r"多于", r"高于", r"大于"),
        "post≥": (r"以上", r"或以上", r"或更多"),
    },
    "ja": {
        "pre≤": (r"最大(?:量|用量|投与量)?(?:で|は)?", r"最高", r"多くても"),
        "post≤": (r"まで", r"以下", r"以内", r"未満", r"より(?:少な|低|短|下)", r"を?超え(?:ない|ず)",
                  r"を?超えて[^。、]{0,8}?(?:ない|ません)", r"以上は[^。、]{0,8}?(?:ない|ません)"),
        "pre≥": (r"少なくとも", r"最低(?:でも)?"),
        "post≥": (r"以上", r"より(?:多|高|長|上)", r"を?超える", r"超"),
    },
}  # fmt: skip

# -------------------------------------------------------------------------------------------------- negation
# Negation cues (tokens of multimsd.text.word_tokenize, lowercased).
NEGATIONS: dict[str, frozenset[str]] = {
    "en": _words("not no never none nothing nobody neither nor without cannot unless"),
    "de": _words("nicht kein keine keinen keinem keiner keines nie niemals nichts niemand ohne weder"),
    "es": _words("no nunca jamás sin ni ningún ninguna ninguno nada nadie tampoco"),
    "fr": _words("pas jamais rien aucun aucune aucuns sans ni nullement non"),
    "it": _words("non mai senza né nessun nessuno nessuna niente nulla"),
    "pt": _words("não nunca jamais sem nem nenhum nenhuma nada ninguém"),
    "ru": _words("не нет никогда без ни ничего никто нельзя"),
    "ja": _words("ない ず ぬ なし 無し 無い ん"),
    "zh": _words("不 没 無 无 非 别 勿 未 莫 否"),
}
# Negative concord: with the language's negation particle in a clause ("no … nunca", "non … mai", "не …
# никогда"), these words repeat that one negation instead of adding one; "ni … ni" / "neither … nor" is one.
PARTICLES: dict[str, frozenset[str]] = {
    "es": _words("no"), "it": _words("non"), "pt": _words("não"), "ru": _words("не нельзя нет"),
    "fr": _words("pas"),
}  # fmt: skip
CONCORD: dict[str, frozenset[str]] = {
    "es": _words("nunca jamás ni ningún ninguna ninguno nada nadie tampoco"),
    "it": _words("mai né nessun nessuno nessuna niente nulla"),
    "pt": _words("nunca jamais nem nenhum nenhuma nada ninguém"),
    "ru": _words("никогда ни ничего никто"),
    "fr": _words("jamais rien aucun aucune aucuns ni"),
}
CORRELATIVE: dict[str, frozenset[str]] = {
    "en": _words("neither nor"), "de": _words("weder"), "es": _words("ni"), "fr": _words("ni"),
    "it": _words("né"), "pt": _words("nem"), "ru": _words("ни"),
}  # fmt: skip
# Lexical negations: one word (a stem, matched at a word's start) or phrase that says "do not": avoid, vermeiden,
# evitar, éviter, evitare, избегать, 避免, 避ける …; and "swallow whole" for "do not crush or chew".
LEXICAL: dict[str, tuple[str, ...]] = {
    # the forms that tell the reader what not to do (avoid, avoiding, to be avoided; evite, evitar), not the
    # ones that describe ("inhalers avoid attacks", "evitan crisis": they prevent them)
    "en": (
        r"\bavoid(?:ing|ed)?\b",
        r"\brefrain",
        r"\babstain",
        r"\bprohibit",
        r"\bforbid",
        r"\bcontraindicat",
        r"\bswallow\w*\b[^.;!?]{0,30}?\bwhole\b",
    ),
    "de": (
        r"\bvermeiden\b",
        r"\bvermeide\b",
        r"\bmeiden\b",
        r"\bverzichten\b",
        r"\bunterlassen\b",
        r"\bverboten\b",
        r"\bkontraindiziert",
        r"\bgegenangezeigt",
        r"\bes sei denn",
        r"\baußer wenn",
        r"\bunzerkaut",
        r"\bschluck\w*\b[^.;!?]{0,40}?\b(?:im ganzen|ganz)\b",
    ),
    "es": (
        r"\bevit(?:e|en|ar|ando)\b",
        r"\bevít(?:ese|elo|ela|elos|elas)\b",
        r"\babst[eé]n",
        r"\bprohib",
        r"\bcontraindica",
        r"\ba menos que",
        r"\bsalvo (?:que|si)",
        r"\bexcepto si",
        r"\btrag\w*\b[^.;!?]{0,40}?\benter[oa]s?\b",
    ),
    "fr": (
        r"\bévit(?:ez|er)\b",
        r"\babsten",
        r"\binterdit",
        r"\bcontre-indiqu",
        r"\bà moins (?:que|de|d')",
        r"\bsauf si",
        r"\bavale\w*\b[^.;!?]{0,40}?\bentie?r(?:e|s|es)?\b",
    ),
    "it": (
        r"\bevit(?:i|are|ate|ando)\b",
        r"\basten",
        r"\bvietat",
        r"\bcontroindicat",
        r"\ba meno che",
        r"\bsalvo che",
        r"\btranne (?:se|che)",
        r"\beccetto se",
        r"\b(?:ingo\w*|deglut\w*|inghiott\w*)\b[^.;!?]{0,40}?\binter[aeio]\b",
    ),
    "pt": (
        r"\bevit(?:e|ar|em|ando)\b",
        r"\babst[eê]n",
        r"\babster",
        r"\bproibid",
        r"\bcontraindicad",
        r"\ba menos que",
        r"\bexceto se",
        r"\bsalvo se",
        r"\b(?:engol\w*|engul\w*)\b[^.;!?]{0,40}?\binteir[oa]s?\b",
    ),
    "ru": (
        r"\bизбега(?:йте|ть|я)\b",
        r"\bвоздерж",
        r"\bзапрещ",
        r"\bпротивопоказ",
        r"\b(?:глота\w*|проглат\w*|проглот\w*)\b[^.;!?]{0,40}?\bцеликом\b",
    ),
    "zh": (r"避免", r"禁止", r"禁用", r"禁忌", r"忌", r"整(?:片|粒|颗)(?:吞|服)"),
    "ja": (r"避け", r"控え", r"禁止", r"禁忌", r"そのまま飲み込"),
}
# "Only if": the restriction says "not unless" — two negations ("Never take it unless …" = "Only take it if …",
# "… without a prescription" = "only with a prescription"; not "only with caution").
ONLY_IF: dict[str, tuple[str, ...]] = {
    "en": (r"\bonly\b(?:\s+\S+){0,4}?\s+(?:if|when|after|under|with(?! (?:caution|care)))\b",),
    "de": (r"\bnur\b(?:\s+\S+){0,4}?\s*,?\s+(?:wenn|falls|nach|unter|mit(?! vorsicht))\b",),
    "es": (
        r"\b(?:solo|sólo|solamente|únicamente)\b(?:\s+\S+){0,4}?\s+(?:si|cuando|después|bajo|tras|con(?! (?:precaución|cuidado|cautela)))\b",
    ),
    "fr": (
        r"\b(?:seulement|uniquement)\b(?:\s+\S+){0,4}?\s+(?:si|quand|lorsque|après|sous|sur|avec(?! (?:prudence|précaution)))\b",
        r"\bn(?:e\b|')[^.;!?]{0,40}?\bque (?:si|lorsque|quand|après|sur)\b",
    ),
    "it": (
        r"\b(?:solo|soltanto|solamente|unicamente)\b(?:\s+\S+){0,4}?\s+(?:se|quando|dopo|su|con(?! (?:cautela|attenzione|prudenza)))\b",
    ),
    "pt": (
        r"\b(?:só|somente|apenas|unicamente)\b(?:\s+\S+){0,4}?\s+(?:se|quando|depois|após|sob|com(?! (?:cuidado|cautela|precaução)))\b",
    ),
    "ru": (r"\bтолько\b(?:\s+\S+){0,4}?\s*,?\s+(?:если|когда|после|по|при|с(?! осторожност))\b",),
    "zh": (r"只有[^。；！？]{0,15}?才", r"(?:只|仅)(?:能|可|应)?(?:在|于|限于?|凭)"),
    "ja": (r"(?:場合|とき|時|際)(?:に)?(?:のみ|だけ|に限り|に限って)",),
}
# Words with a negation cue in them that negate nothing (they are masked before counting): litotes ("not
# uncommon" = common), "not only", obligations (しなければならない = must), and in Chinese, where every
# character is a token, the compounds with 不 非 别 否 无 未 that are words of their own (非常 = very, 特别 =
# especially, 是否 = whether, 不良反应 = adverse reaction).
NOT_NEGATIONS: dict[str, tuple[str, ...]] = {
    "en": (r"\bnot\s+(?:uncommon|unusual|infrequent|rare|unlike)\b", r"\bnot only\b", r"\bno doubt\b"),
    "de": (r"\bnicht\s+(?:selten|unüblich|ungewöhnlich|unwahrscheinlich)\b", r"\bnicht nur\b"),
    "es": (r"\bno\s+(?:es\s+)?(?:raro|rara|infrecuente|poco común|inusual)\b", r"\bno (?:solo|sólo)\b"),
    "fr": (r"\b(?:n'est\s+)?pas\s+(?:rare|inhabituel|exceptionnel)\b", r"\bnon seulement\b"),
    "it": (r"\bnon\s+(?:è\s+)?(?:raro|rara|infrequente|insolito|insolita)\b", r"\bnon solo\b"),
    "pt": (r"\bnão\s+(?:é\s+)?(?:raro|rara|incomum|infrequente)\b", r"\bnão (?:só|apenas)\b"),
    "ru": (r"\bне\s+(?:редко|редкость|редки\w*)\b", r"\bне только\b"),
    "ja": (r"少なくない", r"珍しくない", r"(?:まれ|稀)ではない", r"(?:なければ|なくては|なくちゃ)(?:ならない|なりません|いけない|いけません)",
           r"ないと(?:いけ|だめ)"),
    "zh": (r"非常", r"非甾体", r"非处方", r"特别", r"分别", r"区别", r"差别", r"性别", r"类别", r"级别", r"鉴别",
           r"识别", r"告别", r"辨别", r"个别", r"别人", r"别的", r"别处", r"是否", r"能否", r"可否", r"与否",
           r"否则", r"不良", r"不适", r"不全", r"不足", r"不规则", r"不规律", r"不同", r"不断", r"不久", r"不仅",
           r"不但", r"不管", r"不论", r"不孕", r"不育", r"不明", r"不稳", r"不耐受", r"不宁", r"不典型", r"不对称",
           r"不可逆", r"不过", r"不少", r"不乏", r"不罕见", r"不得不", r"无菌", r"无论", r"未来", r"未成年",
           r"并非不"),
}  # fmt: skip
