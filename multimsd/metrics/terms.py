"""Medical-term types in sources, references and system outputs (the MultiMSD paper's Table 8).

The paper counts the *distinct medical terms* (term types) that occur in the input sentences, the reference
sentences and each system's outputs, with MeSH (+ scispaCy tokens) for English and J-MeDic (+ MeCab tokens)
for Japanese: a simplifier that paraphrases technical terms should end up with fewer term types than its
input, ideally close to the references.

Here a :class:`TermDictionary` holds the terms of one language as a token trie, and text is matched with the
same tokeniser as the terms (so a term only matches on token boundaries):

* space-delimited languages (de en es fr it pt ru): NFKC, then ``\\w+`` words and single punctuation marks
  (:func:`multimsd.text.word_tokenize`), lowercased; for Russian ё is folded to е;
* Japanese: NFKC, then MeCab (fugashi + unidic-lite) surface forms, lowercased (Latin letters only);
* Chinese: NFKC, then one token per Han character, runs of Latin letters / digits whole, lowercased.

Matching is greedy leftmost-longest over tokens: at each position the longest dictionary term starting
there is taken, and matching resumes after it (so "deep vein thrombosis" is one type, not also "vein").
A term's *type* is its normalised form (NFKC, lowercased, whitespace collapsed); two spellings that
tokenise identically (e.g. "Type 2 diabetes" / "type 2 diabetes") are the same type. Inflected forms and
synonyms are different types unless the dictionary maps them (it does not: one line, one type).

Dictionaries: a plain list (:func:`read_term_list`), MeSH descriptors in XML or ASCII ``.bin`` form
(:func:`read_mesh_descriptors`) or a J-MeDic-style CSV (:func:`read_jmedic_csv`); :func:`load_terms`
picks the reader. Small demo lists written for multimsd ship in ``multimsd/sample_data/terms/<lang>.txt``
(:func:`sample_dictionary`); they are *not* MeSH or J-MeDic and numbers obtained with them are not
comparable with the paper's.

Japanese caveat: the paper loaded the medical dictionary into MeCab, so its terms were single tokens. Here
terms are segmented by plain UniDic; a term matches when the text segments the same way around it, which
holds for most compounds (深部/静脈/血栓/症) but fails where context changes the segmentation (原発/性骨/
粗鬆/症 hides 骨粗鬆症; 上部/消化/管内/視/鏡 hides 内視鏡), so counts are a lower bound. ``tokenizer="chars"``
matches Japanese over characters instead (like Chinese): robust to segmentation, at the risk of matching a
short term inside an unrelated word.

Why this module is long: one metric with its own tokenisation, trie matching (types and character spans), and
readers for three dictionary formats; split up, each part would be used only by the others.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.paths import sample_data_dir
from multimsd.text import word_tokenize

__all__ = [
    "BUNDLED_NOTE",
    "TERM_FORMATS",
    "TOKENIZERS",
    "TermDictionary",
    "count_term_types",
    "dictionary_for",
    "dictionary_note",
    "find_terms",
    "is_bundled",
    "load_terms",
    "read_jmedic_csv",
    "read_mesh_descriptors",
    "read_term_list",
    "sample_dictionary",
    "sample_dictionary_path",
    "term_type_table",
    "term_types",
    "tokenize_terms",
]

TERM_FORMATS = ("auto", "list", "mesh", "jmedic")
"""Formats :func:`load_terms` understands (``mesh`` covers both the XML and the ASCII ``.bin`` file)."""

_END = ""  # trie key marking "a term ends here"; never a token (tokens are non-empty)

# --------------------------------------------------------------------------------------------------------
# Tokenisation and the dictionary
# --------------------------------------------------------------------------------------------------------


def _check_lang(lang: str) -> str:
    if lang not in LANGUAGES:
        raise MultimsdError(
            f"unsupported language {lang!r} for term matching; expected one of {', '.join(LANGUAGES)}"
        )
    return lang


TOKENIZERS = ("default", "chars")
"""``default``: the language's tokeniser (see the module docstring); ``chars`` (ja / zh only): one token per
character, runs of Latin letters / digits whole."""

_CHAR_RE = re.compile(r"[0-9A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]+|\S")


def _check_tokenizer(tokenizer: str, lang: str) -> str:
    if tokenizer not in TOKENIZERS:
        raise MultimsdError(f"unknown term tokenizer {tokenizer!r}; expected one of {', '.join(TOKENIZERS)}")
    if tokenizer == "chars" and lang not in ("ja", "zh"):
        raise MultimsdError(f"tokenizer 'chars' is only for ja and zh, not {lang!r}")
    return tokenizer


def tokenize_terms(text: str, lang: str, tokenizer: str = "default") -> list[str]:
    """Tokens used for term matching (for both dictionary terms and text): NFKC, language tokeniser, lowercase."""
    text = unicodedata.normalize("NFKC", text)
    if lang == "ru":  # ё is written as е in much Russian text
        text = text.replace("ё", "е").replace("Ё", "Е")
    if _check_tokenizer(tokenizer, _check_lang(lang)) == "chars":
        return [tok.lower() for tok in _CHAR_RE.findall(text)]
    return [tok.lower() for tok in word_tokenize(text, lang)]


def _normalise_term(term: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", term).lower().split())


class TermDictionary:
    """The medical terms of one language, stored as a token trie for leftmost-longest matching.

    ``trie`` is a dict of dicts keyed by token; the key ``""`` in a node holds the normalised form (the
    *type*) of the term that ends there. Terms that tokenise to nothing (blank, or lost to
    normalisation) are skipped; a term whose tokens equal an earlier term's is the same type (the first
    spelling is kept as its name).
    """

    def __init__(self, terms: Iterable[str], lang: str, *, tokenizer: str = "default"):
        self.lang = _check_lang(lang)
        self.tokenizer = _check_tokenizer(tokenizer, lang)
        self.trie: dict = {}
        self._types: list[str] = []
        for term in terms:
            self.add(term)

    def add(self, term: str) -> bool:
        """Add one term; return False if it is empty or its tokens are already a term."""
        if not isinstance(term, str):
            raise MultimsdError(f"term dictionary entries must be strings, got {type(term).__name__}")
        tokens = tokenize_terms(term, self.lang, self.tokenizer)
        if not tokens:
            return False
        node = self.trie
        for tok in tokens:
            node = node.setdefault(tok, {})
        if _END in node:
            return False
        node[_END] = _normalise_term(term)
        self._types.append(node[_END])
        return True

    @classmethod
    def from_file(
        cls, path: str | Path, lang: str, format: str = "auto", *, tokenizer: str = "default"
    ) -> TermDictionary:
        """Build a dictionary from a term file read by :func:`load_terms`."""
        return cls(load_terms(path, format=format), lang, tokenizer=tokenizer)

    @property
    def terms(self) -> list[str]:
        """The term types (normalised forms), in the order they were added."""
        return list(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def __contains__(self, term: object) -> bool:
        if not isinstance(term, str):
            return False
        node = self.trie
        for tok in tokenize_terms(term, self.lang, self.tokenizer):
            node = node.get(tok)
            if node is None:
                return False
        return _END in node

    def __repr__(self) -> str:
        return f"TermDictionary(lang={self.lang!r}, terms={len(self)}, tokenizer={self.tokenizer!r})"

    def find(self, text: str) -> list[str]:
        """Term types in ``text`` by greedy leftmost-longest match over tokens, in text order (with repeats)."""
        return [t for _, _, t in self._match(tokenize_terms(text, self.lang, self.tokenizer))]

    def find_spans(self, text: str) -> list[tuple[int, int, str]]:
        """The terms :meth:`find` finds, as ``(start, end, type)`` character spans of ``text`` (for the studio's
        highlighting). Tokens are located left to right in a per-character normalised copy of ``text``
        (NFKC, ё → е for Russian, lowercase) that remembers each character's origin; a token that cannot be
        located (normalisation across characters) ends the spans of that text rather than misplacing them."""
        norm: list[str] = []
        origin: list[int] = []
        for i, ch in enumerate(text):
            t = unicodedata.normalize("NFKC", ch)
            if self.lang == "ru":
                t = t.replace("ё", "е").replace("Ё", "Е")
            for c in t.lower():
                norm.append(c)
                origin.append(i)
        hay = "".join(norm)
        tokens = tokenize_terms(text, self.lang, self.tokenizer)
        starts, ends, at = [], [], 0
        for tok in tokens:
            k = hay.find(tok, at)
            if k < 0:
                tokens = tokens[: len(starts)]
                break
            starts.append(origin[k])
            ends.append(origin[k + len(tok) - 1] + 1)
            at = k + len(tok)
        return [(starts[i], ends[j - 1], t) for i, j, t in self._match(tokens)]

    def _match(self, tokens: list[str]) -> list[tuple[int, int, str]]:
        """Greedy leftmost-longest matches over ``tokens``: ``(first token, end token, type)``."""
        found: list[tuple[int, int, str]] = []
        i, n = 0, len(tokens)
        trie = self.trie
        while i < n:
            node = trie.get(tokens[i])
            best_end, best_type = -1, None
            j = i
            while node is not None:
                j += 1
                if _END in node:
                    best_end, best_type = j, node[_END]
                if j >= n:
                    break
                node = node.get(tokens[j])
            if best_type is None:
                i += 1
            else:
                found.append((i, best_end, best_type))
                i = best_end
        return found


def find_terms(text: str, dictionary: TermDictionary) -> list[str]:
    """Term types found in ``text`` (greedy leftmost-longest over tokens), in text order, with repeats."""
    return dictionary.find(text)


def term_types(sents: Iterable[str], dictionary: TermDictionary) -> set[str]:
    """The set of distinct term types found anywhere in ``sents``."""
    if isinstance(sents, str):
        raise MultimsdError("expected a list of sentences, got a single string")
    types: set[str] = set()
    for sent in sents:
        types.update(dictionary.find(sent))
    return types


def count_term_types(sents: Iterable[str], dictionary: TermDictionary) -> int:
    """Number of distinct term types found across the corpus ``sents``."""
    return len(term_types(sents, dictionary))


def term_type_table(
    sources: Sequence[str],
    references: Sequence[Sequence[str]] | Sequence[str],
    outputs: Mapping[str, Sequence[str]],
    dictionary: TermDictionary,
) -> dict[str, int]:
    """Distinct term types per column, like the paper's Table 8.

    Returns ``{"source": n, "reference": n, <output name>: n, ...}`` (outputs in the given order). The
    reference count is taken over *all* reference streams together. ``references`` is a list of streams
    (each a list of sentences parallel to ``sources``); a single stream (a list of strings) is accepted
    too. Every stream and output must have as many sentences as ``sources``.
    """
    sources = _as_stream(sources, "sources")
    if references and all(isinstance(r, str) for r in references):
        streams = [list(references)]
    else:
        streams = [_as_stream(r, f"reference stream {k}") for k, r in enumerate(references)]
    if not streams:
        raise MultimsdError("term_type_table needs at least one reference stream")
    table: dict[str, int] = {"source": count_term_types(sources, dictionary)}
    ref_types: set[str] = set()
    for k, stream in enumerate(streams):
        _check_len(stream, sources, f"reference stream {k}")
        ref_types |= term_types(stream, dictionary)
    table["reference"] = len(ref_types)
    for name, sents in outputs.items():
        if name in table:
            raise MultimsdError(f"output name {name!r} clashes with a fixed column (source, reference)")
        sents = _as_stream(sents, f"output {name!r}")
        _check_len(sents, sources, f"output {name!r}")
        table[name] = count_term_types(sents, dictionary)
    return table


def _as_stream(sents, what: str) -> list[str]:
    if isinstance(sents, str) or not all(isinstance(s, str) for s in sents):
        raise MultimsdError(f"{what} must be a list of sentences (strings)")
    return list(sents)


def _check_len(stream: Sequence[str], sources: Sequence[str], what: str) -> None:
    if len(stream) != len(sources):
        raise MultimsdError(f"{what} has {len(stream)} sentences but there are {len(sources)} sources")


# --------------------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------------------


def _check_file(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise MultimsdError(f"term dictionary not found: {p}")
    if not p.is_file():
        raise MultimsdError(f"term dictionary is not a file: {p}")
    return p


@contextmanager
def _open_binary(p: Path) -> Iterator[IO[bytes]]:
    """Open ``p`` for reading bytes, decompressing ``.gz`` transparently."""
    try:
        fh = gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb")  # noqa: SIM115
    except OSError as exc:
        raise MultimsdError(f"cannot read term dictionary {p}: {exc.strerror or exc}") from exc
    try:
        yield fh
    except (OSError, EOFError) as exc:  # e.g. a corrupt .gz
        raise MultimsdError(f"cannot read term dictionary {p}: {exc}") from exc
    finally:
        fh.close()


def _read_text(p: Path, encoding: str = "utf-8-sig", hint: str = "; convert it to UTF-8") -> str:
    with _open_binary(p) as fh:
        data = fh.read()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding.lower().replace("_", "-") in ("utf-8", "utf-8-sig", "utf8") else encoding
        raise MultimsdError(f"{p}: not valid {name} text (byte {exc.start}){hint}") from exc
    except LookupError as exc:
        raise MultimsdError(f"unknown encoding {encoding!r}") from exc


def _dedupe(terms: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for t in terms:
        t = " ".join(t.split())
        if t and t not in seen:
            seen.add(t)
            out.append(t)
    return out


def _nonempty(terms: list[str], p: Path, what: str) -> list[str]:
    if not terms:
        raise MultimsdError(f"{p}: no terms found (is it a {what}?)")
    return terms


def read_term_list(path: str | Path) -> list[str]:
    """Terms from a plain UTF-8 list: one term a line; blank lines and lines starting with ``#`` skipped."""
    p = _check_file(path)
    lines = _read_text(p).splitlines()
    terms = _dedupe(line for line in lines if line.strip() and not line.lstrip().startswith("#"))
    return _nonempty(terms, p, "term list")


_MESH_RECORDS = {"DescriptorRecord", "SupplementalRecord"}
_MESH_NAMES = {"DescriptorName", "SupplementalRecordName"}
_MESH_BIN_KEYS = {"MH", "ENTRY", "PRINT ENTRY"}


def read_mesh_descriptors(path: str | Path) -> list[str]:
    """Terms from a MeSH descriptor file: XML (``desc20xx.xml``) or ASCII (``d20xx.bin``); ``.gz`` is fine.

    XML: each record's own ``DescriptorName/String`` plus every ``Term/String`` of every ``Concept``
    (names of *referred* descriptors, e.g. pharmacological actions or entry combinations, are not taken).
    Parsed as a stream, record by record, so the ~300 MB file does not have to fit in memory as a tree.
    Supplementary concept records (``supp20xx.xml``) are read the same way.

    ASCII: ``MH = `` (heading) and ``ENTRY = `` / ``PRINT ENTRY = `` lines; an entry value is
    ``term|flags|...`` and only the part before the first ``|`` is kept.

    MeSH headings are often inverted ("Anemia, Iron-Deficiency"); such forms rarely occur in running text
    but the entry terms usually include the natural order ("Iron-Deficiency Anemia").
    """
    p = _check_file(path)
    with _open_binary(p) as fh:
        head = fh.read(4096)
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        terms = _read_mesh_xml(p)
    else:
        terms = _read_mesh_bin(p)
    return _nonempty(terms, p, "MeSH descriptor file")


def _read_mesh_xml(p: Path) -> list[str]:
    terms: list[str] = []
    stack: list[str] = []
    root = None
    with _open_binary(p) as fh:
        try:
            for event, elem in ET.iterparse(fh, events=("start", "end")):
                if event == "start":
                    if root is None:
                        root = elem
                    stack.append(elem.tag)
                    continue
                tag = stack.pop()
                if tag == "String" and stack:
                    parent = stack[-1]
                    own_name = parent in _MESH_NAMES and len(stack) >= 2 and stack[-2] in _MESH_RECORDS
                    if (parent == "Term" or own_name) and elem.text:
                        terms.append(elem.text)
                elif tag in _MESH_RECORDS and root is not None:
                    root.clear()  # drop finished records: memory stays flat over the whole file
        except ET.ParseError as exc:
            raise MultimsdError(f"{p}: not well-formed MeSH XML ({exc})") from exc
    return _dedupe(terms)


def _read_mesh_bin(p: Path) -> list[str]:
    with _open_binary(p) as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # older MeSH ASCII files are ISO-8859-1
    terms: list[str] = []
    for line in text.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key.strip() in _MESH_BIN_KEYS:
            terms.append(value.split("|", 1)[0])
    return _dedupe(terms)


_JMEDIC_HEADERS = {"出現形", "表層形", "見出し語", "用語", "term", "surface", "surface form"}


def read_jmedic_csv(
    path: str | Path, *, has_header: bool | None = None, encoding: str = "utf-8-sig"
) -> list[str]:
    """Terms from a J-MeDic-style CSV: the term (出現形, surface form) is the **first column**; others ignored.

    This covers both the J-MeDic table layout (出現形, 出現形よみ, ICD10, 標準病名, ...) and a MeCab user
    dictionary CSV (表層形, 左文脈ID, 右文脈ID, コスト, ...). A header row is skipped when ``has_header``
    is True, or, by default (None), when its first cell is a known header name (出現形, 表層形, 見出し語,
    用語, term, surface). ``.tsv`` files are read tab-separated. UTF-8 with or without BOM by default; pass
    ``encoding="cp932"`` for a Shift-JIS file.
    """
    p = _check_file(path)
    text = _read_text(p, encoding, hint='; pass encoding="cp932" for Shift-JIS, or convert it to UTF-8')
    stem = p.name[:-3] if p.name.endswith(".gz") else p.name
    delimiter = "\t" if stem.lower().endswith(".tsv") else ","
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error as exc:
        raise MultimsdError(f"{p}: not a readable CSV file ({exc})") from exc
    rows = [r for r in rows if r and r[0].strip()]
    if rows:
        first = rows[0][0].strip().lstrip("\ufeff")
        if has_header or (has_header is None and first.lower() in _JMEDIC_HEADERS):
            rows = rows[1:]
    return _nonempty(_dedupe(r[0] for r in rows), p, "J-MeDic-style CSV")


def _detect_format(p: Path) -> str:
    name = p.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith((".xml", ".bin")):
        return "mesh"
    if name.endswith((".csv", ".tsv")):
        return "jmedic"
    with _open_binary(p) as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"<?xml", b"<DescriptorRecordSet", b"<SupplementalRecordSet", b"<!DOCTYPE")):
        return "mesh"
    if head.startswith(b"*NEWRECORD"):
        return "mesh"
    return "list"


def load_terms(path: str | Path, format: str = "auto") -> list[str]:
    """Read a term dictionary file; ``format`` is one of :data:`TERM_FORMATS`.

    ``auto``: ``.xml`` / ``.bin`` -> MeSH, ``.csv`` / ``.tsv`` -> J-MeDic-style CSV (``.gz`` allowed on
    all), anything else by content (MeSH XML or ``*NEWRECORD`` ASCII) or else a plain list.
    """
    if format not in TERM_FORMATS:
        raise MultimsdError(
            f"unknown term dictionary format {format!r}; expected one of {', '.join(TERM_FORMATS)}"
        )
    p = _check_file(path)
    if format == "auto":
        format = _detect_format(p)
    if format == "mesh":
        return read_mesh_descriptors(p)
    if format == "jmedic":
        return read_jmedic_csv(p)
    return read_term_list(p)


# --------------------------------------------------------------------------------------------------------
# Bundled demo dictionaries
# --------------------------------------------------------------------------------------------------------


def sample_dictionary_path(lang: str) -> Path:
    """Path of the small demo term list bundled for ``lang`` (``sample_data/terms/<lang>.txt``)."""
    p = sample_data_dir() / "terms" / f"{_check_lang(lang)}.txt"
    if not p.is_file():
        raise MultimsdError(f"no bundled sample term list for {lang!r} ({p})")
    return p


def sample_dictionary(lang: str, *, tokenizer: str = "default") -> TermDictionary:
    """The small demo dictionary bundled for ``lang`` (written for multimsd; not MeSH / J-MeDic)."""
    return TermDictionary(read_term_list(sample_dictionary_path(lang)), lang, tokenizer=tokenizer)


TERM_FILE_TYPES = (".txt", ".xml", ".bin", ".csv", ".tsv")  # each may be gzipped (.gz)

BUNDLED_NOTE = (
    "a demo list written for multimsd, not MeSH or J-MeDic: most medical terms of a real text are not in it "
    "(on FDA leaflets on acetaminophen it finds none of 16 English and 29 Spanish terms: "
    "benchmarks/terms_recall.py); pass your own lists with --terms DIR (the evaluation's terms.dir)"
)
"""What every place that shows term flags or counts says about the bundled lists (docs/evaluation.md, "Terms")."""


def is_bundled(path: str | Path | None) -> bool:
    """Whether ``path`` is one of the bundled demo lists."""
    return path is not None and Path(path).resolve().parent == (sample_data_dir() / "terms").resolve()


def dictionary_note(lang: str, dictionary: TermDictionary | None, path: str | Path | None) -> str:
    """One line on ``lang``'s term dictionary: its size and where it is from (the bundled list says what it is)."""
    if dictionary is None:
        return f"{lang}: no term list (no term check)"
    if is_bundled(path):
        return f"{lang}: the bundled list, {len(dictionary):,} terms ({BUNDLED_NOTE})"
    return f"{lang}: {path}, {len(dictionary):,} terms"


def dictionary_for(
    lang: str, terms_dir: str | Path | None = None, what: str = "terms directory"
) -> tuple[TermDictionary | None, Path | None]:
    """(the term dictionary of ``lang``, its file): the first ``<lang>.<type>[.gz]`` file of ``terms_dir``
    (:data:`TERM_FILE_TYPES`, read by :func:`load_terms`), or without a directory the bundled sample list;
    (None, None) when there is none for the language. The evaluation, the studio and ``multimsd simplify``
    all find their dictionaries here."""
    if terms_dir is None:
        try:
            path = sample_dictionary_path(lang)
        except MultimsdError:
            return None, None
        return sample_dictionary(lang), path
    d = Path(terms_dir).expanduser()
    if not d.is_dir():
        raise MultimsdError(f"{what} not found (or not a directory): {d}")
    files = sorted(
        f
        for f in d.iterdir()
        if f.is_file()
        and f.name.startswith(lang + ".")
        and f.name.removesuffix(".gz")[len(lang) :] in TERM_FILE_TYPES
    )
    if not files:
        return None, None
    return TermDictionary(load_terms(files[0]), lang), files[0]
