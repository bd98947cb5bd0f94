"""Offline sentence splitting for the nine corpus languages, and Cardon & Grabar's corpus clean-up.

Alignment works on sentences, so every article has to be cut into sentences first, offline and fast.

* **Space-delimited languages** (de en es fr it pt ru) go through pysbd, the Python port of the rule-based
  Pragmatic Segmenter, with two layers of our own around it:

  - *Layout*: paragraphs (blank lines) always end a sentence; a single newline inside a paragraph is a
    space (web and PDF text wraps lines in mid-sentence), except before a line that starts a list item.
  - *Medical pre-marking*: before pysbd sees a paragraph, each period we can decide is either protected
    (swapped for pysbd's own placeholder ``∯``, which pysbd turns back into ``.`` and never splits on) or
    made a hard break (a newline, on which pysbd always splits). pysbd alone splits "approx. | 500 mg",
    "Le Dr. | Martin", "p. | ej.", "т. е. | внутривенно", "der Pat. | entlassen"; and its German and
    Russian rules never split after a listed abbreviation ("... usw. Die ..."). The rules, by priority:

    1. a letter label that ends a sentence ("hepatitis B.", "vitamin D.", "Typ 2.") before a capitalised
       word is a break (pysbd would read "B." as a name initial); so is a closing quote or parenthesis
       right after a sentence end (« Je vais bien. » Puis ..., „Gut.“ Dann ..., (see above.) The ...);
    2. per-language abbreviation lists: *never final* ones ("Dr.", "e.g.", "z. B.", "p. ex.", "т. е.")
       are protected whatever follows; *soft* ones ("etc.", "i.v.", "ca.", "Tbl.", "и т. д.") are
       protected before a lower-case word, a digit, a bracket or a comma, and are a break before a
       capitalised word (German: only before a typical sentence opener, because German nouns are
       capitalised: "i.v. Gabe" is one sentence, "i.v. Die" two);
    3. a unit after a number ("3 g.", "5 mmol/l.") before a capitalised word is a break; the period of a
       list number ("1. Take ...", "Steps: 1. ...") is protected;
    3b. de en es fr it pt: a single capital letter that ends a list of letters ("influenza A y B.", "vitamins
       A, C and E.") before a capitalised word is a break; so is one before a sentence opener of the language
       (an article, pronoun, conjunction: "puntuación T. La herramienta", "escore T. A ferramenta"; German:
       rule 4). Before any other capitalised word it stays a name initial ("J. Smith", "G. Rossi"): an
       initial and a one-letter sentence end cannot be told apart there, and names are the commoner case;
    4. German only: a period after a word, before a typical sentence opener ("Die", "Bei", "Er"), is a
       break;
    5. a period before an all-lower-case word is protected: in these languages a sentence never starts in
       lower case, so the period belonged to an abbreviation we do not list ("der Pat. entlassen").

    Russian adds Cyrillic name initials ("И. И. Иванов") and "г." before a city name (but "в 2020 г."
    can end a sentence) to the protected periods, before rule 2.

  Everything else is left to pysbd (decimals "2.5 mg", ellipses, quotes, question marks ...).
  pysbd's own inline-list detection is switched off: it cut "Es gibt 2 Typen: 1. Typ 1 und 2. Typ 2."
  into three pieces; list items on lines of their own are still separate sentences (layout rule).

* **Portuguese**: pysbd has no Portuguese; we give it a language class of our own built on pysbd's
  common (Latin-script) rules with a Portuguese abbreviation list ("Dr.", "Sra.", "p. ex.", "aprox.").
  (``sentencex`` on PyPI would cover Portuguese but ships as a compiled wheel, and pysbd is already a
  dependency.)

* **Japanese and Chinese** do not use pysbd (its zh rules cut '“我很好。” | ”他说。' and it has no
  notion of wrapped lines); they get a small rule-based splitter of our own, see :func:`_split_cjk`:
  sentences end at 。！？ (and ASCII !?, full-width ．), taking closing quotes and brackets along.
  Chinese "；" is deliberately not a boundary (see _CJK_MARKS). Neither language puts spaces between
  words, so joining wrapped lines must not insert one.

Every piece (a paragraph, or a list item) is checked against its input: if the concatenated sentences
do not reproduce the input's non-space characters exactly (pysbd's placeholders in the input text, say),
the piece is returned as one sentence rather than losing or altering text. Long pieces reach pysbd in
chunks cut where it would split anyway, because its running time grows with the square of the text length
(see _CHUNK_CHARS). Speed: about 4,000-10,000 sentences/s for the pysbd languages, over 100,000 for ja/zh.

Known limits: a heading line without final punctuation is glued to the next line unless a blank line
follows it (it cannot be told from a wrapped line); Latin-script sentences embedded in Japanese or Chinese
text are not split on "."; German "Typ 2. Die" style endings are only caught after the listed label words
and before the listed sentence openers.

Why this module is long: about a third of it is data — the per-language abbreviation, month, unit and
sentence-opener tables the rules above need — kept next to the regular expressions that read them.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence

import pysbd
from pysbd.abbreviation_replacer import AbbreviationReplacer
from pysbd.lang.common import Common, Standard
from pysbd.lang.deutsch import Deutsch
from pysbd.lang.english import English
from pysbd.lang.french import French
from pysbd.lang.italian import Italian
from pysbd.lang.russian import Russian
from pysbd.lang.spanish import Spanish
from pysbd.processor import Processor
from pysbd.utils import Text

from multimsd.errors import MultimsdError

__all__ = ["SUPPORTED_LANGUAGES", "clean_documents", "segment_document", "split_sentences"]

log = logging.getLogger(__name__)

SUPPORTED_LANGUAGES: tuple[str, ...] = ("de", "en", "es", "fr", "it", "ja", "pt", "ru", "zh")
"""ISO 639-1 codes :func:`split_sentences` accepts (the corpus languages)."""

_CJK = frozenset({"ja", "zh"})

# pysbd's placeholder for "a period that is not a sentence boundary"; its last step turns it back into ".".
_PROTECT = "∯"
# A newline is a hard break for pysbd (it splits on it before anything else).
_BREAK = "\n"


# --------------------------------------------------------------------------------------------------
# pysbd language classes
# --------------------------------------------------------------------------------------------------


class _NoListItemsProcessor(Processor):
    """pysbd's ``Processor.process`` without ``ListItemReplacer.add_line_break``.

    That step turns inline enumerations into sentence breaks ("Results: | 1. mild, | 2. severe."); we want
    inline lists kept inside their sentence, and handle list items on their own lines in the layout step.
    The rest is pysbd 0.3.4's ``process`` unchanged.
    """

    def process(self) -> list[str]:
        if not self.text:
            return []
        self.text = self.text.replace("\n", "\r")
        self.replace_abbreviations()
        self.replace_numbers()
        self.replace_continuous_punctuation()
        self.replace_periods_before_numeric_references()
        self.text = Text(self.text).apply(
            self.lang.Abbreviation.WithMultiplePeriodsAndEmailRule,
            self.lang.GeoLocationRule,
            self.lang.FileFormatRule,
        )
        return self.split_into_segments()


class _StartersFixMixin:
    """Fixes pysbd's sentence-starter rule for languages with an empty starter list (es fr it ru).

    pysbd builds ``(U∯S|...|I|i.v|I.V)∯(<starters>)``; with no starters the group is empty and matches
    everywhere, which re-opens *every* protected "i.v." or "I." as a boundary (es: "2,5 mg | i.v. | cada").
    """

    SENTENCE_STARTERS: list[str]
    text: str

    def replace_abbreviation_as_sentence_boundary(self) -> str:
        if not self.SENTENCE_STARTERS:
            return self.text
        return super().replace_abbreviation_as_sentence_boundary()  # type: ignore[misc]


_ABBR_KEY_SPLIT = re.compile(r"[\s./']")
_WORD_BEFORE_PERIOD = re.compile(r"([^\s./']*)\.")


@functools.cache
def _abbreviation_index(abbreviations: tuple[str, ...]) -> dict[str, list[tuple[int, str]]]:
    """Listed abbreviations by their last word (what stands right before their period), with list order."""
    index: dict[str, list[tuple[int, str]]] = {}
    for k, abbr in enumerate(abbreviations):
        index.setdefault(_ABBR_KEY_SPLIT.split(abbr.strip())[-1], []).append((k, abbr))
    return index


class _FastAbbreviationsMixin:
    """pysbd's ``search_for_abbreviations_in_string``, looking only at abbreviations that can matter.

    pysbd runs regex searches for every listed abbreviation that occurs anywhere as a substring (Italian
    lists 2,225, and short ones like "ab" occur in almost every text). All its replacements need the
    abbreviation right before a ".", so we only try those whose last word stands before a period in the
    text, in list order: same result, several times faster in Italian. The loop body is pysbd 0.3.4's.
    """

    lang: type

    def search_for_abbreviations_in_string(self, text: str) -> str:
        lowered = text.lower()
        index = _abbreviation_index(tuple(self.lang.Abbreviation.ABBREVIATIONS))
        candidates = sorted(
            {hit for word in set(_WORD_BEFORE_PERIOD.findall(lowered)) for hit in index.get(word, ())}
        )
        for _, abbr in candidates:
            stripped = abbr.strip()
            if stripped + "." not in lowered:
                continue
            abbrev_match = re.findall(rf"(?:^|\s|\r|\n){stripped}", text, flags=re.IGNORECASE)
            if not abbrev_match:
                continue
            next_word_start = r"(?<={" + str(re.escape(stripped)) + "} ).{1}"
            char_array = re.findall(next_word_start, text)
            for ind, match in enumerate(abbrev_match):
                text = self.scan_for_replacements(text, match, ind, char_array)  # type: ignore[attr-defined]
        return text


def _pysbd_language(base: type, iso: str) -> type:
    """A subclass of pysbd language ``base`` with our processor and the starters fix."""
    base_processor = getattr(base, "Processor", Processor)
    base_replacer = getattr(base, "AbbreviationReplacer", AbbreviationReplacer)
    processor = type("Processor", (_NoListItemsProcessor, base_processor), {})
    replacer = type("AbbreviationReplacer", (_StartersFixMixin, _FastAbbreviationsMixin, base_replacer), {})
    return type(
        f"_{base.__name__}",
        (base,),
        {"iso_code": iso, "Processor": processor, "AbbreviationReplacer": replacer},
    )


class _Portuguese(Common, Standard):
    """Portuguese for pysbd: the common Latin-script rules with Portuguese abbreviations.

    pysbd has no Portuguese; its Spanish class would bring Spanish words listed as abbreviations
    ("en", "de", "no", "con"), so we start from the shared rules instead.
    """

    iso_code = "pt"

    class Abbreviation(Standard.Abbreviation):
        ABBREVIATIONS = [
            "a.c", "abr", "adj", "ago", "al", "ap", "aprox", "art", "av", "cap", "cf", "cit", "cm", "col",
            "comp", "cp", "cx", "d.c", "dez", "dr", "dra", "dras", "drs", "e.g", "ed", "eng", "etc", "ex",
            "exa", "exma", "exmo", "fev", "fig", "g", "gts", "h", "i.e", "ib", "ibid", "id", "inj", "jan",
            "jr", "jul", "jun", "kg", "km", "lda", "ltda", "mai", "mar", "máx", "mg", "min", "mín", "ml",
            "mm", "n", "nov", "núm", "obs", "out", "p", "p.ex", "pág", "págs", "pp", "prof", "profa",
            "profs", "séc", "set", "sr", "sra", "sras", "srs", "srta", "sto", "sta", "tel", "v", "vol",
            "vs",
        ]  # fmt: skip
        PREPOSITIVE_ABBREVIATIONS = [
            "dr", "dra", "dras", "drs", "exa", "exma", "exmo", "prof", "profa", "profs", "sr", "sra",
            "sras", "srs", "srta", "sto", "sta",
        ]  # fmt: skip
        NUMBER_ABBREVIATIONS = ["art", "cap", "fig", "n", "núm", "p", "pág", "págs", "pp", "vol"]

    class AbbreviationReplacer(AbbreviationReplacer):
        SENTENCE_STARTERS: list[str] = []


class _Russian(Russian):
    """Russian with pysbd's standard abbreviation rule instead of its Russian one.

    pysbd's Russian rule protects a listed abbreviation whatever follows, so "... 30 мин. Затем ..." and
    "... и т. д. Затем ..." were never split. The standard rule splits before a capital letter; names after
    an abbreviation are handled in the pre-marking ("проф. Иванов": never-final list; "г. Москва",
    "И. И. Иванов": Russian rules there).
    """

    class AbbreviationReplacer(Russian.AbbreviationReplacer):
        def replace_period_of_abbr(self, txt: str, abbr: str) -> str:
            return AbbreviationReplacer.replace_period_of_abbr(self, txt, abbr)


_PYSBD_LANGUAGES: dict[str, type] = {
    "de": _pysbd_language(Deutsch, "de"),
    "en": _pysbd_language(English, "en"),
    "es": _pysbd_language(Spanish, "es"),
    "fr": _pysbd_language(French, "fr"),
    "it": _pysbd_language(Italian, "it"),
    "pt": _pysbd_language(_Portuguese, "pt"),
    "ru": _pysbd_language(_Russian, "ru"),
}


@functools.cache
def _segmenter(lang: str) -> pysbd.Segmenter:
    """One pysbd Segmenter per language, built once and reused for every call.

    pysbd only accepts its own language codes (no "pt"), so each segmenter is built as English and then
    given our language class; we call its processor directly (``Segmenter.segment`` would re-locate every
    sentence in the text, which is quadratic, and silently drops sentences it cannot find again).
    """
    seg = pysbd.Segmenter(language="en", clean=False)
    seg.language = lang
    seg.language_module = _PYSBD_LANGUAGES[lang]
    return seg


# --------------------------------------------------------------------------------------------------
# Medical pre-marking rules (space-delimited languages)
# --------------------------------------------------------------------------------------------------

# Titles and abbreviations that introduce something: their period never ends a sentence. ("им." for
# "имени" is left out on purpose: the pronoun "им." ends sentences.) A space in an
# entry matches "" or one space ("z. B." also matches "z.B."). Entries are case-sensitive; _variants adds
# the capitalised form for sentence-initial use ("Z. B.", "E.g.").
_NEVER_FINAL: dict[str, list[str]] = {
    "en": [
        "Dr.", "Drs.", "Prof.", "Mr.", "Mrs.", "Ms.", "St.", "e.g.", "i.e.", "cf.", "vs.", "approx.",
        "viz.", "resp.", "incl.", "Fig.", "Figs.", "Eq.", "Ref.",
    ],
    "de": [
        "Dr.", "Prof.", "Hr.", "Hrn.", "Fr.", "med.", "dent.", "rer.", "nat.", "St.", "z. B.", "d. h.",
        "u. U.", "bzw.", "vgl.", "sog.", "ggf.", "evtl.", "inkl.", "zzgl.", "insb.", "bspw.", "z. T.",
        "v. a.", "i. d. R.", "o. g.", "s. o.", "s. u.", "ca.", "vs.", "Abb.", "Tab.", "Nr.", "Kap.",
        "mind.", "einschl.", "jmd.",
    ],
    "fr": [
        "Dr.", "Pr.", "Prof.", "M.", "Mme.", "Mlle.", "MM.", "Me.", "St.", "Ste.", "p. ex.", "c.-à-d.",
        "cf.", "vs.", "env.", "ca.", "resp.", "fig.", "Fig.", "tabl.",
    ],
    "es": [
        "Dr.", "Dra.", "Dres.", "Sr.", "Sra.", "Sres.", "Srta.", "Prof.", "Profa.", "Lic.", "Ud.", "Uds.",
        "Vd.", "Sto.", "Sta.", "p. ej.", "ej.", "cf.", "vs.", "aprox.", "ca.", "fig.", "Fig.",
    ],
    "it": [
        "Dr.", "Dott.", "Dott.ssa", "Dr.ssa", "Prof.", "Prof.ssa", "Sig.", "Sig.ra", "Sig.na", "Sigg.",
        "On.", "Egr.", "Gent.", "S.", "ad es.", "es.", "p. es.", "cfr.", "cf.", "vs.", "ca.", "fig.", "Fig.",
        "tab.", "n.",
    ],
    "pt": [
        "Dr.", "Dra.", "Drs.", "Dras.", "Sr.", "Sra.", "Srs.", "Sras.", "Srta.", "Prof.", "Profa.", "Exmo.",
        "Exma.", "Sto.", "Sta.", "p. ex.", "ex.", "cf.", "vs.", "aprox.", "ca.", "fig.", "Fig.", "n.",
    ],
    "ru": [
        "т. е.", "т. к.", "т. н.", "т. ч.", "т. о.", "напр.", "проф.", "акад.", "доц.", "ул.",
        "ок.", "прибл.", "рис.", "гл.", "св.", "ср.", "вкл.",
    ],
}  # fmt: skip

# Abbreviations that may end a sentence (units, routes, "etc."). Multi-letter ASCII dose abbreviations
# ("b.i.d.", "s.c.") are matched generically, see _DOSE_RE.
_SOFT: dict[str, list[str]] = {
    "en": [
        "etc.", "ca.", "no.", "No.", "nos.", "Nos.", "p.", "pp.", "vol.", "et al.", "min.",
        "max.", "hr.", "hrs.", "wk.", "wks.", "mo.", "yr.", "yrs.", "tab.", "tabs.", "cap.", "caps.", "inj.",
        "amp.", "sol.", "susp.", "pt.", "pts.", "Pt.", "Pts.", "dept.", "univ.", "Tab.",
    ],
    "de": [
        "etc.", "usw.", "u. a.", "u. Ä.", "o. Ä.", "u. ä.", "o. ä.", "ff.", "Min.", "Std.", "Tbl.",
        "Tabl.", "Kps.", "Tr.", "Amp.", "Inj.", "Lsg.", "Pat.", "Pkt.", "tgl.", "wöchentl.", "mtl.", "Mio.",
        "Mrd.", "Tsd.", "Jh.", "Jhd.", "S.", "Bd.", "Aufl.", "Hrsg.", "et al.", "geb.", "gest.", "max.",
        "min.",
    ],
    "fr": [
        "etc.", "cp.", "cps.", "comp.", "gél.", "amp.", "inj.", "sol.", "min.", "max.", "h.", "no.",
        "vol.", "p.", "pp.", "chap.", "art.", "et al.", "sq.", "sqq.", "suiv.", "éd.",
    ],
    "es": [
        "etc.", "comp.", "cáps.", "amp.", "iny.", "sol.", "min.", "máx.", "mín.", "h.", "hs.", "vol.",
        "pág.", "págs.", "p.", "pp.", "cap.", "et al.", "gr.", "grs.", "art.", "núm.",
    ],
    "it": [
        "ecc.", "etc.", "cpr.", "cp.", "compr.", "caps.", "fl.", "inj.", "sol.", "min.", "max.", "h.",
        "vol.", "pag.", "pagg.", "p.", "pp.", "cap.", "et al.", "gg.", "sett.", "art.",
    ],
    "pt": [
        "etc.", "comp.", "cáps.", "cp.", "amp.", "inj.", "sol.", "min.", "h.", "vol.", "p.", "pp.", "cap.",
        "et al.", "gts.", "obs.", "pág.", "art.", "núm.", "máx.", "mín.",
    ],
    "ru": [
        "и т. д.", "и т. п.", "и др.", "и пр.", "т. д.", "т. п.", "др.", "пр.", "г.", "гг.", "в.", "вв.",
        "см.", "мин.", "сек.", "ч.", "сут.", "нед.", "мес.", "тыс.", "млн.", "млрд.", "руб.", "коп.",
        "таб.", "табл.", "амп.", "кап.", "р.", "п.", "пп.", "ст.", "стр.", "т.", "с.", "гр.",
    ],
}  # fmt: skip

# Month abbreviations are soft too: "am 1. Jan. 2021" is one sentence, "... in Jan. The ..." two.
_MONTHS: dict[str, list[str]] = {
    "en": ["Jan.", "Feb.", "Mar.", "Apr.", "Jun.", "Jul.", "Aug.", "Sep.", "Sept.", "Oct.", "Nov.", "Dec."],
    "de": ["Jan.", "Feb.", "Mär.", "Apr.", "Jun.", "Jul.", "Aug.", "Sep.", "Sept.", "Okt.", "Nov.", "Dez."],
    "fr": ["janv.", "févr.", "avr.", "juil.", "sept.", "oct.", "nov.", "déc."],
    "es": ["ene.", "feb.", "mar.", "abr.", "jun.", "jul.", "ago.", "sep.", "sept.", "oct.", "nov.", "dic."],
    "it": ["gen.", "feb.", "mar.", "apr.", "mag.", "giu.", "lug.", "ago.", "set.", "ott.", "nov.", "dic."],
    "pt": ["jan.", "fev.", "mar.", "abr.", "mai.", "jun.", "jul.", "ago.", "set.", "out.", "nov.", "dez."],
    "ru": ["янв.", "февр.", "мар.", "апр.", "авг.", "сент.", "окт.", "нояб.", "дек."],
}

# Sentence-opening words after which a German soft abbreviation ends its sentence. German capitalises
# every noun, so a capital alone proves nothing ("500 mg i.v. Gabe"); these closed-class words do.
_DE_STARTER_WORDS = """
Aber Alle Allerdings Als Also Am An Andere Anschließend Auch Auf Aus Außerdem Bei Beim Besonders
Bitte Da Dabei Dadurch Daher Damit Danach Dann Darüber Das Dass Dazu Dem Den Denn Der Deshalb Des
Die Dies Diese Diesem Diesen Dieser Dieses Doch Dort Du Durch Ein Eine Einem Einen Einer Eines
Einige Er Es Etwa Falls Für Gegen Hier Häufig Ich Ihr Ihre Im In Insbesondere Insgesamt Ist Je
Jedoch Jetzt Kann Man Manchmal Mehr Meist Meistens Mit Nach Neben Nicht Nur Ob Oder Oft Sehr Seit
Selten Sie Sind So Sollte Sollten Somit Sowohl Trotz Trotzdem Um Und Unter Viele Vom Von Vor Während
Was Weil Weitere Wenn Wer Werden Wie Wir Wird Zu Zudem Zum Zur Zusätzlich Zwar
"""
_DE_STARTERS = frozenset(_DE_STARTER_WORDS.split())

# Words after which a single capital letter, a small number or a Roman numeral is a label ("hepatitis B",
# "Typ 2", "stage IV"), not a name initial: a period there before a capitalised word ends the sentence.
_LABEL_HEADS = (
    "vitamins?|vitamine?|vitamina|витамин[аыеу]?|hepatitis|hépatite|hepatite|epatite|гепатит[аеу]?|"
    "types?|typ|tipo|типа?|groups?|gruppe|groupe|grupo|gruppo|группы?|stages?|stadium|stade|estadio|"
    "estágio|stadio|стади[ия]|grades?|grad|grado|grau|степени|class|klasse|classe|clase|классы?|phase|"
    "fase|фазы?|factor|faktor|facteur|fattore|фактор[аы]?|influenza"
)
_UPPER = "A-ZÀ-ÖØ-ÞА-ЯЁ"
_LABEL_END_RE = re.compile(
    rf"(?i:\b(?:{_LABEL_HEADS}))\s+(?:[{_UPPER}]|\d{{1,2}}|[IVX]{{1,4}})(?P<dot>\.)(?=\s+[{_UPPER}])"
)
# A list number ("1. ") at the start of a piece or after a colon or a sentence end; see _list_numbers.
_LIST_NUMBER_RE = re.compile(r"(?:^|(?<=[.:;!?]\s))(?P<num>\d{1,2})(?P<dot>\.)(?=\s)")
# A sentence end inside quotes or parentheses before a capitalised word: the sentence ends after the
# closing mark (pysbd knows "..." but not guillemets, German quotes or parentheses: « Je vais bien. » Puis,
# „Gut.“ Dann, (see above.) The). In German the next word must be a sentence opener (nouns are capitalised).
# Closing marks: German closes with “ and « („…“, »…«); elsewhere those open (with a space: « Ça va).
_QUOTE_END_RE = re.compile(rf"[.!?…]\s?(?P<close>[»”\")])(?=\s+(?P<next>[{_UPPER}][^\s,;:]*))")
_DE_QUOTE_END_RE = re.compile(rf"[.!?…]\s?(?P<close>[»”“«\")])(?=\s+(?P<next>[{_UPPER}][^\s,;:]*))")
# A single capital letter ending a list of such letters ("influenza A y B.", "vitamins A, C and E.", "Typen A
# und B.") before a capitalised word ends the sentence: a name's initials are never joined by "and" / "y".
_LETTER_LIST_END_RE = re.compile(
    rf"(?<![\w.'’-])[{_UPPER}](?:,\s*[{_UPPER}])*,?\s+(?:and|or|und|oder|sowie|y|e|o|u|et|ou|ed|od)\s+"
    rf"[{_UPPER}](?P<dot>\.)(?=\s+[{_UPPER}])"
)
# Sentence-opening words (articles, pronouns, conjunctions, prepositions, sentence adverbs) after which the
# period of a single capital letter ends its sentence ("puntuación T. La herramienta", "escore T. A
# ferramenta", "type B. It spreads"); before any other capitalised word it stays a name initial, as pysbd
# reads it ("J. Smith", "G. Rossi"). German has its own openers (_DE_STARTERS, rule 4). Closed-class words
# only, and no surname particle (De, Da, Di, Van, Von): "J. De la Cruz", "A. Van Gogh" stay one sentence.
_LETTER_STARTER_WORDS = {
    "en": """A After Also Although An And As At Because Before Both But By During Each Every For From He
        However If In It Its Many Most No Not On Once Only Or Other Our She Since So Some Such That The
        Their Then There These They This Those Thus To Unlike We What When Where Which While
        Who With Without You Your""",
    "es": """A Además Al Algunas Algunos Ambas Ambos Antes Así Aunque Aún Cada Como Con Cuando Cómo
        Después Durante El Ella Ellas Ellos En Entre Es Esa Esas Ese Eso Esos Esta Estas Este Esto Estos
        Hay Mientras Muchas Muchos No Otra Otras Otro Otros Para Pero Por Porque Puede Pueden Qué Se Según
        Si Sin Sobre Son Su Sus También Todas Todos Tras Un Una Unas Unos Usted Él""",
    "fr": """Ainsi Après Au Aucun Aucune Aussi Aux Avant Avec Ce Ceci Cela Certaines Certains Ces Cet
        Cette Chaque Chez Comme Cependant Dans Donc Elle Elles En Enfin Entre Et Il Ils Je Leur Leurs
        Lorsque Mais Nous On Ou Par Parfois Pendant Plusieurs Pour Quand Sa Sans Selon Ses Si Son Souvent
        Sur Toutefois Tous Toutes Un Une Vous À Ça""",
    "it": """A Al Alcune Alcuni Alla Alle Anche Ci Come Con Dopo Durante E Entrambi Gli I Il In Infatti
        Inoltre Ma Molte Molti Nei Nel Nella Nelle Non O Ogni Per Prima Quando Quella Quello Queste Questi
        Questa Questo Quindi Se Senza Si Sono Su Tra Tuttavia Tutte Tutti Un Una Uno È""",
    "pt": """A Além Algumas Alguns Ambos Antes Ao Aos Após As Assim Cada Com Como Contudo Depois Durante E
        Ela Elas Ele Eles Em Entre Entretanto Essa Esse Esta Estas Este Estes Isso Isto Mas Muitas Muitos
        Na Nas No Nos Não O Os Ou Para Pode Podem Por Porém Portanto Quando Se Segundo Sem Seu Seus Sua
        Suas São Também Todas Todos Um Uma Umas Uns Você À Às É Há""",
}
_LETTER_STARTERS = {lang: frozenset(words.split()) for lang, words in _LETTER_STARTER_WORDS.items()}
# Articles that also begin surnames ("C. Le Pen", "A. La Torre", "J. Des Rosiers"): openers only before a
# lower-case word ("B. La enfermedad", "B. Les symptômes"); likewise an elided "L'" ("B. L'infection").
_ARTICLE_STARTERS = frozenset(["La", "Las", "Le", "Les", "Lo", "Los", "Des"])
_ELIDED_STARTER_RE = re.compile(r"^L['’][a-zà-ÿ]")
_LETTER_LANGS = ("de", "en", "es", "fr", "it", "pt")


def _letter_starts_sentence(text: str, i: int, token: str, lang: str) -> bool:
    """The period at ``i`` follows a single capital letter ("B.", not "U.S." nor "Dr.") and ``token``, the
    next word, opens a sentence in ``lang`` (``_LETTER_STARTERS``)."""
    if i < 1 or not text[i - 1].isupper() or (i >= 2 and (text[i - 2].isalnum() or text[i - 2] in ".'’-")):
        return False
    word = token.rstrip(",;:")
    if _ELIDED_STARTER_RE.match(word):
        return True
    if word in _ARTICLE_STARTERS:
        after = text[i + 1 :].lstrip().split(maxsplit=2)
        return len(after) > 1 and _is_lower_word(after[1])
    return word in _LETTER_STARTERS.get(lang, ())


# A unit right after a number, with a period, before a capitalised word: the sentence ends there
# ("max. 3 g. Hepatitis ..."; pysbd's German rules read "g." as an abbreviation like "z.").
_UNIT_END_RE = re.compile(
    rf"(?<=\d\s)(?:[a-zµμ]{{1,3}}|[a-zµμ]{{1,3}}/[a-z]{{1,3}}|%|°C)(?P<dot>\.)(?=\s+[{_UPPER}])"
)
# Generic lower-case multi-period abbreviations (i.v., p.o., b.i.d., s.c., e.v., v.o., a.m.): soft.
_DOSE_RE = re.compile(r"(?<![\w.])(?:[a-z]\.){2,4}")
# A single period (not part of an ellipsis) followed by whitespace.
_PERIOD_SPACE_RE = re.compile(r"(?<!\.)\.(?!\.)(?=[^\S\n]+(?P<next>\S+))")
# Cyrillic name initials ("И. И. Иванов", "Иванов И. И."): pysbd only knows Latin initials.
_CYRILLIC_INITIALS_RE = re.compile(r"(?<![\w.])[А-ЯЁ](?P<dot>\.)(?=\s?[А-ЯЁ](?:\.|[а-яё]))")
# "г." (город, city) before a name, unless it follows a number (год, year, which can end a sentence).
_RU_CITY_RE = re.compile(r"(?<![\d\w.])(?<!\d\s)г(?P<dot>\.)(?=\s?[А-ЯЁ])")


def _variants(entries: Sequence[str]) -> list[str]:
    """The entries plus their capitalised forms ("z. B." -> "Z. B.") for sentence-initial use.

    Single letters ("т.", "p.") get no capitalised form: that would match name initials.
    """
    out: list[str] = []
    for e in entries:
        out.append(e)
        if e[0].islower() and len(e.rstrip(".")) > 1:
            out.append(e[0].upper() + e[1:])
    return out


def _entry_pattern(entry: str) -> str:
    """Regex for one list entry: a space after a period is optional ("z. B." = "z.B."), others required."""
    parts: list[str] = []
    for k, ch in enumerate(entry):
        if ch == ".":
            parts.append(r"\.")
            if k + 1 < len(entry):
                parts.append(r"\s?")
        elif ch == " ":
            if entry[k - 1] != ".":
                parts.append(r"\s")
        else:
            parts.append(re.escape(ch))
    return "".join(parts)


def _abbreviation_regex(entries: Sequence[str]) -> re.Pattern[str] | None:
    """One regex matching any entry as a whole token (not preceded by a letter, digit or period)."""
    if not entries:
        return None
    alts = [_entry_pattern(e) for e in sorted(set(entries), key=len, reverse=True)]
    return re.compile(r"(?<![\w.])(?:" + "|".join(alts) + ")")


@functools.cache
def _rules(lang: str) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """(never-final regex, soft regex) for a space-delimited language, compiled once."""
    return (
        _abbreviation_regex(_variants(_NEVER_FINAL.get(lang, []))),
        _abbreviation_regex(_variants(_SOFT.get(lang, []) + _MONTHS.get(lang, []))),
    )


def _list_numbers(text: str) -> list[int]:
    """Indices of the periods of list numbers: "1." at the start or after a colon, then "2.", "3." ...

    A number after a sentence end counts only if it continues the sequence, so "Voir fig. 2. Les ..."
    (period after "fig.", then "2." and a new sentence) is not taken for a list.
    """
    dots: list[int] = []
    expected = None
    for m in _LIST_NUMBER_RE.finditer(text):
        num = int(m.group("num"))
        opens = m.start() == 0 or text[m.start() - 2] == ":"
        if (opens and num == 1) or num == expected:
            dots.append(m.start("dot"))
            expected = num + 1
    return dots


def _next_token(text: str, pos: int) -> tuple[str, str]:
    """What follows position ``pos`` (just after a period): (kind, token).

    kinds: "end", "glued" (no space: "etc.)", "etc.,"), "lower", "digit", "open" (bracket), "upper",
    "break" (a newline: already a hard break), "other".
    """
    n = len(text)
    i = pos
    while i < n and text[i] in " \t\u00a0\u202f":
        i += 1
    if i >= n:
        return "end", ""
    if text[i] == "\n":
        return "break", ""
    if i == pos:
        return "glued", text[i]
    j = i
    while j < n and not text[j].isspace():
        j += 1
    token = text[i:j]
    c = token[0]
    if c.isdigit():
        return "digit", token
    if c in "([{":
        return "open", token
    if c.islower():
        return "lower", token
    if c.isupper():
        return "upper", token
    return "other", token


def _is_lower_word(token: str) -> bool:
    """True for a word written entirely in lower case ("entlassen", "chez"); false for "mRNA", "pH"."""
    return token[0].islower() and not any(ch.isupper() for ch in token)


def _mark_periods(text: str, lang: str) -> str:
    """Pre-mark the periods of one paragraph piece for pysbd: ``∯`` = protected, ``.\\n`` = break.

    See the module docstring for the rules and their order; the first rule to decide a period wins.
    """
    if not any(c in text for c in ".!?"):
        return text
    # index -> "P" (a period to protect) or "B" (insert a break after this character)
    decision: dict[int, str] = {}

    def decide(i: int, what: str) -> None:
        decision.setdefault(i, what)

    for m in _LABEL_END_RE.finditer(text):
        decide(m.start("dot"), "B")
    for m in (_DE_QUOTE_END_RE if lang == "de" else _QUOTE_END_RE).finditer(text):
        if lang != "de" or m.group("next") in _DE_STARTERS:
            decide(m.start("close"), "B")
    if lang == "ru":
        for rx in (_RU_CITY_RE, _CYRILLIC_INITIALS_RE):
            for m in rx.finditer(text):
                decide(m.start("dot"), "P")

    never_re, soft_re = _rules(lang)
    if never_re is not None:
        for m in never_re.finditer(text):
            for k in range(m.start(), m.end()):
                if text[k] == ".":
                    decide(k, "P")
    soft_matches = list(soft_re.finditer(text)) if soft_re is not None else []
    soft_matches += list(_DOSE_RE.finditer(text))
    for m in soft_matches:
        last = m.end() - 1
        for k in range(m.start(), last):
            if text[k] == ".":
                decide(k, "P")
        kind, token = _next_token(text, m.end())
        if kind in ("glued", "lower", "digit", "open"):
            if kind != "glued" or token in ",;:":
                decide(last, "P")
        elif kind == "upper":
            if lang == "de" and token.rstrip(",;:") not in _DE_STARTERS:
                decide(last, "P")
            else:
                decide(last, "B")

    for m in _UNIT_END_RE.finditer(text):
        decide(m.start("dot"), "B")
    if lang in _LETTER_LANGS:  # a single capital letter ending a sentence, not a name initial (rule 3b)
        for m in _LETTER_LIST_END_RE.finditer(text):
            decide(m.start("dot"), "B")
    for i in _list_numbers(text):
        decide(i, "P")

    for m in _PERIOD_SPACE_RE.finditer(text):
        i = m.start()
        if i in decision:
            continue
        token = m.group("next")
        german_opener = lang == "de" and token in _DE_STARTERS and i > 0 and text[i - 1].isalpha()
        if german_opener or _letter_starts_sentence(text, i, token, lang):
            decide(i, "B")
        elif _is_lower_word(token):
            decide(i, "P")

    if not decision:
        return text
    out: list[str] = []
    prev = 0
    for i in sorted(decision):
        out.append(text[prev:i])
        out.append(_PROTECT if decision[i] == "P" else text[i] + _BREAK)
        prev = i + 1
    out.append(text[prev:])
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# Layout: paragraphs and lines
# --------------------------------------------------------------------------------------------------

# A line starting with a bullet always starts a new piece; one starting with a number or letter marker
# only after a line that ended a clause (else "... begann am\n12. März" would be cut).
_BULLET_RE = re.compile(r"^(?:[-–—•*·▪◦●○■□►▶✓✔➢※・]\s*\S|[①-⑳])")
_NUMBERED_RE = re.compile(r"^(?:\d{1,2}[.)]|\(\d{1,2}\)|[a-zA-Z][.)])\s")
_CJK_NUMBERED_RE = re.compile(
    r"^(?:\d{1,2}[.)．）、](?!\d)|[（(]\d{1,2}[)）]|[一二三四五六七八九十]{1,3}[、．.])"
)
_CLAUSE_END = tuple(".:;!?)。：；！？」』）")


def _paragraphs(text: str) -> list[list[str]]:
    """Paragraphs of ``text`` as lists of stripped non-empty lines; blank lines separate paragraphs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2029", "\n\n")
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            paragraphs.append(current)
            current = []
    if current:
        paragraphs.append(current)
    return paragraphs


def _starts_item(line: str, prev: str, piece: str, cjk: bool) -> bool:
    """Does ``line`` start a list item (and so a new piece) after line ``prev``, inside ``piece``?"""
    if _BULLET_RE.match(line):
        return True
    numbered = _CJK_NUMBERED_RE if cjk else _NUMBERED_RE
    if not numbered.match(line):
        return False
    in_list = bool(numbered.match(piece) or _BULLET_RE.match(piece))
    return cjk or in_list or prev.endswith(_CLAUSE_END)


def _is_ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _pieces(lines: list[str], cjk: bool) -> list[str]:
    """Join a paragraph's lines into pieces: wrapped lines are one piece, list items start a new one.

    Space-delimited languages join with a space. Japanese and Chinese join with nothing (a space would be
    an error there), except between two Latin words ("New England\\nJournal" inside Japanese text).
    """
    pieces: list[str] = []
    for k, line in enumerate(lines):
        if k == 0 or _starts_item(line, lines[k - 1], pieces[-1], cjk):
            pieces.append(line)
        elif cjk and not (_is_ascii_alnum(pieces[-1][-1]) and _is_ascii_alnum(line[0])):
            pieces[-1] += line
        else:
            pieces[-1] += " " + line
    return pieces


# --------------------------------------------------------------------------------------------------
# Japanese and Chinese
# --------------------------------------------------------------------------------------------------

# Sentence-final marks. ASCII "!?" count too (web text mixes them in). Chinese "；" is NOT a boundary:
# the semicolon joins coordinate clauses of one sentence (GB/T 15834), and cutting there yields fragments
# with no counterpart on the simplified side of a pair. "．" (full-width period, Japanese academic style)
# counts unless it sits in a number ("２．５").
_CJK_MARKS = frozenset("。！？!?．｡")
_CJK_CLOSERS = frozenset("」』）)］]】〕〉》”’\"'｣")
# Closing quotes (as opposed to brackets): a sentence that ends inside quotes ends with them.
_CJK_QUOTE_CLOSERS = frozenset("」』”’\"'｣")
_CJK_PAIRS = {
    "「": "」", "『": "』", "（": "）", "(": ")", "［": "］", "[": "]", "【": "】", "〔": "〕", "〈": "〉",
    "《": "》", "“": "”", "‘": "’", "｢": "｣",
}  # fmt: skip
# A bracketed stretch longer than this does not hide its marks (an unclosed-looking quote spanning a
# whole article must not turn it into one sentence).
_CJK_MAX_BRACKET = 200
# After "mark + closing quote", these continue the same sentence: Japanese quotative と/って
# (「はい。」と言った), and commas.
_CJK_CONTINUATION = {"ja": ("と", "って", "、", "，", ","), "zh": ("，", "、", ",", "：", ":")}


def _bracket_pairs(text: str) -> tuple[list[int], dict[int, int]]:
    """Depth of matched-bracket nesting at each position, and closer index -> opener index.

    Only properly matched pairs of at most _CJK_MAX_BRACKET characters count; stray brackets are ignored.
    """
    n = len(text)
    diff = [0] * (n + 1)
    stack: list[tuple[str, int]] = []
    opener_of: dict[int, int] = {}
    for i, ch in enumerate(text):
        if ch in _CJK_PAIRS:
            stack.append((_CJK_PAIRS[ch], i))
        elif ch in _CJK_CLOSERS and stack:
            # Pop to the nearest matching opener; unmatched openers above it are dropped.
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth][0] == ch:
                    start = stack[depth][1]
                    del stack[depth:]
                    opener_of[i] = start
                    if i - start <= _CJK_MAX_BRACKET:
                        diff[start + 1] += 1
                        diff[i] -= 1
                    break
    inside = [0] * n
    running = 0
    for i in range(n):
        running += diff[i]
        inside[i] = running
    return inside, opener_of


def _is_cjk_mark(text: str, i: int) -> bool:
    ch = text[i]
    if ch not in _CJK_MARKS:
        return False
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if ch in "!?":
        return not _is_ascii_alnum(nxt)  # "?id=3", "Yahoo!Japan"
    if ch == "．":
        prev = text[i - 1] if i else ""
        return not (nxt.isdigit() or _is_ascii_alnum(prev))
    return True


def _split_cjk(text: str, lang: str) -> list[str]:
    """Split one piece of Japanese or Chinese text after its sentence-final marks.

    A run of marks ("！？") and the closing brackets or quotes right after it stay with the sentence
    (「…です。」). A mark inside a matched bracket pair is not a boundary ("（1日2回。食後）"). A mark right
    before a closing quote ends the sentence after the quote, unless a continuation follows (ja quotative
    「はい。」と言った, a comma); before a closing parenthesis it does only if the parenthesis opened at the
    start of the sentence ("（1日2回。）ことが" stays whole).
    """
    inside, opener_of = _bracket_pairs(text)
    continuation = _CJK_CONTINUATION[lang]
    out: list[str] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        if not _is_cjk_mark(text, i):
            i += 1
            continue
        j = i + 1
        while j < n and text[j] in _CJK_MARKS:
            j += 1
        closers_from = j
        while j < n and text[j] in _CJK_CLOSERS:
            j += 1
        if j > closers_from:
            if text[j - 1] in _CJK_QUOTE_CLOSERS:
                split = not text.startswith(continuation, j)
            else:
                # "（1日2回。）ことが": a parenthesis opened mid-sentence closes inside that sentence.
                opener = opener_of.get(j - 1)
                mid_sentence = opener is not None and opener > start and text[start:opener].strip() != ""
                split = not mid_sentence
        else:
            split = inside[i] == 0
        if split:
            out.append(text[start:j])
            start = j
        i = j
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def _check_lang(lang: str) -> None:
    if lang not in SUPPORTED_LANGUAGES:
        raise MultimsdError(f"unknown language {lang!r}; supported: {', '.join(SUPPORTED_LANGUAGES)}")


def _nonspace(s: str) -> str:
    return "".join(s.split())


def _attach_orphans(piece: str, sentences: list[str]) -> list[str]:
    """Merge pieces with no letter or digit into a neighbour, using the exact text between them.

    pysbd sometimes leaves a closing quote on its own (German »Gut.« | « | Dann); such a piece belongs
    to the sentence before it (or, at the start, to the one after it).
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for s in sentences:
        k = piece.find(s, pos)
        if k < 0:  # not a plain substring: leave as is (the caller's check decides)
            return sentences
        spans.append((k, k + len(s)))
        pos = k + len(s)
    merged: list[tuple[int, int]] = []
    pending_start: int | None = None
    for a, b in spans:
        if not any(ch.isalnum() for ch in piece[a:b]):
            if merged:
                merged[-1] = (merged[-1][0], b)
            elif pending_start is None:
                pending_start = a
            continue
        if pending_start is not None:
            a, pending_start = pending_start, None
        merged.append((a, b))
    if pending_start is not None:  # nothing but punctuation
        merged.append((pending_start, spans[-1][1]))
    return [piece[a:b] for a, b in merged]


# pysbd's abbreviation pass re-scans the whole text for every occurrence of an abbreviation, so its time
# grows with the square of the text length (an article with no blank lines: 1,000 German sentences took
# 3.4 s, 4,000 short ones 17 s). Long pieces are therefore handed to it in chunks of about this size, cut
# only where pysbd would split anyway: at our hard breaks, or after an ordinary word ("auf.", "Erkrankung.";
# not one pysbd lists as an abbreviation, not protected by us) before a capitalised word, outside
# brackets and quotes.
_CHUNK_CHARS = 2000
_SAFE_CUT_RE = re.compile(rf"(?<![\w.{_PROTECT}-])(?P<word>[^\W\d_]{{2,}})\.(?=\s+[{_UPPER}][^\W\d_])")
_PAIRED = (("(", ")"), ("[", "]"), ("«", "»"), ("„", "“"), ("“", "”"))


@functools.cache
def _pysbd_abbreviations(lang: str) -> frozenset[str]:
    return frozenset(a.strip().lower() for a in _PYSBD_LANGUAGES[lang].Abbreviation.ABBREVIATIONS)


def _balanced(text: str) -> bool:
    """No bracket or quote left open in ``text`` (counting only; good enough to choose a cut)."""
    if text.count('"') % 2:
        return False
    return all(text.count(a) == text.count(b) for a, b in _PAIRED if a != b)


def _chunks(marked: str, lang: str) -> list[str]:
    """Cut pre-marked text into pieces pysbd can process independently, see _CHUNK_CHARS."""
    out: list[str] = []
    for part in marked.split(_BREAK):
        start = 0
        if len(part) > _CHUNK_CHARS:
            for m in _SAFE_CUT_RE.finditer(part):
                word = m.group("word")
                if (
                    m.end() - start >= _CHUNK_CHARS
                    and word[1:].islower()
                    and word.lower() not in _pysbd_abbreviations(lang)
                    and _balanced(part[start : m.end()])
                ):
                    out.append(part[start : m.end()])
                    start = m.end()
        out.append(part[start:])
    return out


def _split_piece(piece: str, lang: str) -> list[str]:
    """Sentences of one piece (a paragraph, or one list item), verified to keep every character."""
    if lang in _CJK:
        sentences = _split_cjk(piece, lang)
    else:
        segmenter = _segmenter(lang)
        processed = [
            s
            for chunk in _chunks(_mark_periods(piece, lang), lang)
            for s in segmenter.processor(chunk).process()
        ]
        sentences = _attach_orphans(piece, [s.strip() for s in processed if s and s.strip()])
    if _nonspace("".join(sentences)) != _nonspace(piece):
        # pysbd rewrote something (its placeholder characters occurring in the input, say): keep the
        # text intact, unsplit, rather than lose or change characters.
        log.debug("segmenter changed the text of a %s piece; kept it unsplit", lang)
        return [piece.strip()]
    return sentences


def split_sentences(text: str, lang: str) -> list[str]:
    """Split ``text`` in language ``lang`` into sentences, offline.

    Blank lines always end a sentence. A single newline is a space in space-delimited languages and
    nothing in Japanese and Chinese (wrapped lines are joined); a line that starts a list item starts a new
    sentence. Sentences come back stripped, empty ones dropped, and otherwise exactly as in ``text``.

    Raises :class:`~multimsd.errors.MultimsdError` for a language outside :data:`SUPPORTED_LANGUAGES`.
    """
    _check_lang(lang)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    cjk = lang in _CJK
    sentences: list[str] = []
    for lines in _paragraphs(text):
        for piece in _pieces(lines, cjk):
            sentences.extend(_split_piece(piece, lang))
    return sentences


def segment_document(doc: str | list[str], lang: str) -> list[str]:
    """Sentences of one document.

    A list is taken as already segmented (a corpus that ships sentences, or a gold alignment that refers
    to them by index): it is used as given, each item only stripped and empty ones dropped, so indices into
    the source stay meaningful apart from the dropped empties. A str is split with :func:`split_sentences`.
    """
    _check_lang(lang)
    if isinstance(doc, str):
        return split_sentences(doc, lang)
    if isinstance(doc, (list, tuple)):
        out: list[str] = []
        for k, s in enumerate(doc):
            if not isinstance(s, str):
                raise TypeError(f"sentence {k} of the document must be a str, not {type(s).__name__}")
            s = s.strip()
            if s:
                out.append(s)
        return out
    raise TypeError(f"doc must be a str or a list of str, not {type(doc).__name__}")


def _has_letter(s: str) -> bool:
    # str.isalpha is Unicode-aware: CJK ideographs, kana, Cyrillic all count as letters.
    return any(ch.isalpha() for ch in s)


def clean_documents(docs: list[list[str]], min_doc_fraction: float = 0.5) -> list[list[str]]:
    """Cardon & Grabar (2019) clean-up of one sub-corpus (e.g. all professional articles of one language).

    * Boilerplate: a sentence (compared after whitespace normalisation) found in at least
      ``min_doc_fraction`` of the documents is removed from all of them: site navigation, disclaimers and
      licence lines repeat across a site's pages and would otherwise align with each other perfectly.
      A sentence also needs to occur in at least two documents to count, so one- and two-document inputs
      are not wiped out (with two documents, every sentence is in half of them).
    * Sentences with no letter at all (page numbers, "***", "2.5") are removed: they carry nothing to
      simplify and align spuriously. Letters are Unicode letters, so CJK text is kept.

    Returns new lists (the input is not modified); kept sentences are returned unchanged.
    Raises :class:`~multimsd.errors.MultimsdError` unless ``0 < min_doc_fraction <= 1``.
    """
    if not 0 < min_doc_fraction <= 1:
        raise MultimsdError(f"min_doc_fraction must be in (0, 1], got {min_doc_fraction!r}")
    keys = [{" ".join(s.split()) for s in doc} for doc in docs]
    counts: dict[str, int] = {}
    for doc_keys in keys:
        for key in doc_keys:
            counts[key] = counts.get(key, 0) + 1
    threshold = min_doc_fraction * len(docs) - 1e-9
    boilerplate = {key for key, c in counts.items() if c >= 2 and c >= threshold}
    return [[s for s in doc if _has_letter(s) and " ".join(s.split()) not in boilerplate] for doc in docs]
