"""Corpus-level SARI, numerically identical to EASSE's ``corpus_sari`` (v0.2.4).

Written from the prose description in ``shared/notes/sari-spec.md`` (no EASSE code was used; EASSE is
GPL-3). Parity with EASSE is proven by ``tests/evaluation/test_sari_parity.py`` on the ``shared/data/easse-parity``
pack.

Algorithm in brief (for every sentence and every n-gram order n = 1..4, with ``O``/``S`` the n-gram
counts of the source/system sentence, ``R`` the element-wise *sum* of the counts of all ``r`` references):

* ADD works on n-gram *sets*: system additions ``set(S) - set(O)``, reference additions
  ``set(R) - set(O)``, correct additions = their intersection.
* KEEP works on counts scaled by ``r``: ``min(rO, rS)`` kept by the system, ``min(rO, R)`` kept by the
  references, the correct part being the minimum of both.
* DELETE likewise: ``max(rO - rS, 0)`` deleted by the system, ``max(rO - R, 0)`` by the references.

The nine numbers per order are summed over the whole corpus (streaming: memory does not grow with the
corpus), and only then turned into precision / recall / F1 per order, averaged over the four orders
("macro", EASSE's default) or with P and R averaged first (``use_paper_version=True``).
SARI = 100 * (add + keep + delete) / 3.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain

from multimsd.errors import MultimsdError

__all__ = [
    "MAX_NGRAM_ORDER",
    "SariStatistics",
    "available_tokenizers",
    "corpus_sari",
    "corpus_sari_operation_scores",
    "get_tokenizer",
    "normalize",
    "register_tokenizer",
    "sentence_sari",
]

MAX_NGRAM_ORDER = 4

TokenizerFn = Callable[[str], str]
"""A tokeniser maps one sentence to a string of whitespace-separated tokens."""

# --------------------------------------------------------------------------------------------------------
# Tokeniser registry
# --------------------------------------------------------------------------------------------------------


def _whitespace(sent: str) -> str:
    return " ".join(sent.split())


def _make_13a() -> TokenizerFn:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def _make_intl() -> TokenizerFn:
    from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

    return TokenizerV14International()


# name -> zero-argument factory (built lazily, so importing this module does not import sacrebleu).
_FACTORIES: dict[str, Callable[[], TokenizerFn]] = {
    "13a": _make_13a,
    "intl": _make_intl,
    "none": lambda: _whitespace,
    "pretokenized": lambda: _whitespace,
}
_INSTANCES: dict[str, TokenizerFn] = {}


def register_tokenizer(name: str, fn: TokenizerFn, *, overwrite: bool = False) -> None:
    """Make ``fn`` available as ``tokenizer=name`` in SARI and BLEU.

    ``fn`` takes one (already lowercased, if asked) sentence and returns its tokens joined by single
    spaces, like sacrebleu's tokenisers. Intended for language-aware tokenisers (e.g. ``ja``, ``zh``).
    Re-registering an existing name needs ``overwrite=True``.
    """
    if not isinstance(name, str) or not name:
        raise MultimsdError(f"tokenizer name must be a non-empty string, got {name!r}")
    if not callable(fn):
        raise MultimsdError(f"tokenizer {name!r}: expected a callable str -> str, got {type(fn).__name__}")
    if name in _FACTORIES and not overwrite:
        raise MultimsdError(f"tokenizer {name!r} is already registered (pass overwrite=True to replace it)")
    _FACTORIES[name] = lambda: fn
    _INSTANCES.pop(name, None)


def available_tokenizers() -> list[str]:
    """Names accepted by the ``tokenizer`` option."""
    return sorted(_FACTORIES)


def get_tokenizer(name: str) -> TokenizerFn:
    """Return the tokeniser registered as ``name`` (raises :class:`MultimsdError` if unknown)."""
    tok = _INSTANCES.get(name)
    if tok is None:
        factory = _FACTORIES.get(name)
        if factory is None:
            known = ", ".join(available_tokenizers())
            raise MultimsdError(f"unknown tokenizer {name!r} (known: {known})")
        tok = _INSTANCES[name] = factory()
    return tok


def normalize(sent: str, *, lowercase: bool = True, tokenizer: str = "13a") -> str:
    """EASSE-style normalisation: lowercase (optional) *then* tokenise."""
    if lowercase:
        sent = sent.lower()
    return get_tokenizer(tokenizer)(sent)


# --------------------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------------------

# Indices of the nine per-order statistics.
_ADD_SYS, _ADD_REF, _ADD_OK, _KEEP_SYS, _KEEP_REF, _KEEP_OK, _DEL_SYS, _DEL_REF, _DEL_OK = range(9)


def _ngrams(tokens: list[str], n: int) -> Iterable:
    """n-grams of one token list. Unigrams are the tokens themselves, longer ones tuples.

    Equivalent to EASSE's ``' '.join(tokens[i:i+n])`` keys: tokens contain no whitespace, so for a fixed n
    the mapping is one-to-one, and orders are never mixed in one counter.
    """
    if n == 1:
        return tokens
    return zip(*(tokens[i:] for i in range(n)))


class SariStatistics:
    """Streaming accumulator of the 9 x 4 SARI sufficient statistics (all integers).

    ``add`` one sentence at a time (already tokenised); ``scores`` turns the totals into (add, keep, del).
    Two accumulators can be merged with ``+=`` (e.g. for sharded evaluation).
    """

    __slots__ = ("counts", "n_sentences")

    def __init__(self) -> None:
        self.counts: list[list[int]] = [[0] * 9 for _ in range(MAX_NGRAM_ORDER)]
        self.n_sentences = 0

    def __iadd__(self, other: SariStatistics) -> SariStatistics:
        for mine, theirs in zip(self.counts, other.counts):
            for k in range(9):
                mine[k] += theirs[k]
        self.n_sentences += other.n_sentences
        return self

    def add(self, orig_tokens: list[str], sys_tokens: list[str], refs_tokens: Sequence[list[str]]) -> None:
        """Accumulate one sentence: source tokens, system tokens, and one token list per reference."""
        r = len(refs_tokens)
        for n in range(1, MAX_NGRAM_ORDER + 1):
            st = self.counts[n - 1]
            o_cnt = Counter(_ngrams(orig_tokens, n))
            s_cnt = Counter(_ngrams(sys_tokens, n))
            r_cnt = Counter(chain.from_iterable(_ngrams(ref, n) for ref in refs_tokens))

            # ADD: binary (set) statistics.
            o_keys = o_cnt.keys()
            sys_add = s_cnt.keys() - o_keys
            st[_ADD_SYS] += len(sys_add)
            st[_ADD_REF] += len(r_cnt.keys() - o_keys)
            st[_ADD_OK] += len(sys_add & r_cnt.keys())

            # KEEP and DELETE: counts, source and system scaled by r. Only source n-grams contribute.
            keep_sys = keep_ref = keep_ok = del_sys = del_ref = del_ok = 0
            s_get = s_cnt.get
            r_get = r_cnt.get
            for gram, oc in o_cnt.items():
                sc = s_get(gram, 0)
                rc = r_get(gram, 0)
                ro = r * oc
                if sc >= oc:  # system keeps every occurrence, deletes none
                    ks = ro
                    ds = 0
                else:
                    ks = r * sc
                    ds = ro - ks
                kr = ro if rc >= ro else rc
                dr = ro - kr
                keep_sys += ks
                keep_ref += kr
                keep_ok += ks if ks < kr else kr
                del_sys += ds
                del_ref += dr
                del_ok += ds if ds < dr else dr
            st[_KEEP_SYS] += keep_sys
            st[_KEEP_REF] += keep_ref
            st[_KEEP_OK] += keep_ok
            st[_DEL_SYS] += del_sys
            st[_DEL_REF] += del_ref
            st[_DEL_OK] += del_ok
        self.n_sentences += 1

    def scores(
        self, *, use_paper_version: bool = False, use_f1_for_deletion: bool = True
    ) -> tuple[float, float, float]:
        """(add, keep, delete) scores in [0, 100] from the accumulated totals."""
        add = _operation_score(self.counts, _ADD_SYS, _ADD_REF, _ADD_OK, use_paper_version, True)
        keep = _operation_score(self.counts, _KEEP_SYS, _KEEP_REF, _KEEP_OK, use_paper_version, True)
        dele = _operation_score(
            self.counts, _DEL_SYS, _DEL_REF, _DEL_OK, use_paper_version, use_f1_for_deletion
        )
        return 100.0 * add, 100.0 * keep, 100.0 * dele


def _precision_recall(sys_total: int, ref_total: int, correct: int) -> tuple[float, float]:
    p = correct / sys_total if sys_total > 0 else 0.0
    r = correct / ref_total if ref_total > 0 else 0.0
    return p, r


def _operation_score(
    counts: list[list[int]], i_sys: int, i_ref: int, i_ok: int, paper: bool, use_f1: bool
) -> float:
    prs = [_precision_recall(c[i_sys], c[i_ref], c[i_ok]) for c in counts]
    n = len(prs)
    if paper:
        # "micro" (paper) version: average P and R over the orders first, then one F1.
        p = sum(pr[0] for pr in prs) / n
        r = sum(pr[1] for pr in prs) / n
        if not use_f1:
            return p
        return 2 * p * r / (p + r) if (p > 0 or r > 0) else 0.0
    # "macro" (Java / EASSE default) version: F1 per order, then the mean.
    if not use_f1:
        return sum(pr[0] for pr in prs) / n
    return sum(2 * p * r / (p + r) if (p > 0 and r > 0) else 0.0 for p, r in prs) / n


# --------------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------------


def _check_inputs(orig_sents, sys_sents, refs_sents) -> None:
    for name, value in (("orig_sents", orig_sents), ("sys_sents", sys_sents)):
        if isinstance(value, str):
            raise MultimsdError(f"{name} must be a list of sentences, not a single string")
    if isinstance(refs_sents, str) or len(refs_sents) == 0:
        raise MultimsdError("refs_sents must be a non-empty list of reference streams (lists of sentences)")
    for k, stream in enumerate(refs_sents):
        if isinstance(stream, str):
            raise MultimsdError(
                f"refs_sents[{k}] is a string: refs_sents must be a list of reference streams, "
                "refs_sents[k][i] being the k-th reference of sentence i"
            )
    n_sys = len(sys_sents)
    ref_lens = [len(stream) for stream in refs_sents]
    if len(orig_sents) != n_sys or any(n != n_sys for n in ref_lens):
        refs_desc = ", ".join(f"refs_sents[{k}] has {n}" for k, n in enumerate(ref_lens) if n != n_sys)
        msg = f"SARI input lengths differ: sys_sents has {n_sys}, orig_sents has {len(orig_sents)}"
        if refs_desc:
            msg += f", {refs_desc}"
        msg += " (refs_sents is a list of reference streams, each aligned with sys_sents)"
        raise MultimsdError(msg)


def _corpus_statistics(
    orig_sents: Sequence[str],
    sys_sents: Sequence[str],
    refs_sents: Sequence[Sequence[str]],
    *,
    lowercase: bool,
    tokenizer: str,
    legacy: bool,
) -> SariStatistics:
    _check_inputs(orig_sents, sys_sents, refs_sents)
    tok = get_tokenizer(tokenizer)
    if legacy:
        # EASSE legacy mode (replicates the Java STAR behaviour): no lowercasing at all, the source is
        # used as is (only whitespace-split), system and references go through the tokenizer.
        lowercase = False

    def prep(sent: str) -> list[str]:
        if lowercase:
            sent = sent.lower()
        return tok(sent).split()

    prep_orig = str.split if legacy else prep
    stats = SariStatistics()
    for orig, sys, *refs in zip(orig_sents, sys_sents, *refs_sents):
        stats.add(prep_orig(orig), prep(sys), [prep(ref) for ref in refs])
    return stats


def corpus_sari_operation_scores(
    orig_sents: Sequence[str],
    sys_sents: Sequence[str],
    refs_sents: Sequence[Sequence[str]],
    *,
    lowercase: bool = True,
    tokenizer: str = "13a",
    legacy: bool = False,
    use_paper_version: bool = False,
    use_f1_for_deletion: bool = True,
) -> tuple[float, float, float]:
    """Corpus-level (add, keep, delete) SARI components, each in [0, 100], as EASSE computes them.

    :param orig_sents: source sentences.
    :param sys_sents: system outputs, aligned with ``orig_sents``.
    :param refs_sents: reference *streams*: ``refs_sents[k][i]`` is the k-th reference of sentence i
        (sacrebleu / EASSE convention); every stream has one entry per sentence.
    :param lowercase: lowercase everything before tokenising (EASSE default True).
    :param tokenizer: a registered tokenizer name: ``13a`` (default), ``intl``, ``none``/``pretokenized``
        (whitespace split), or one added with :func:`register_tokenizer`.
    :param legacy: EASSE ``legacy=True``: no lowercasing, source not normalised at all (for the old
        tokenised+lowercased TurkCorpus files).
    :param use_paper_version: average P and R over n-gram orders before F1 (EASSE ``use_paper_version``).
    :param use_f1_for_deletion: F1 (default) or precision only for the delete operation.
    """
    stats = _corpus_statistics(
        orig_sents, sys_sents, refs_sents, lowercase=lowercase, tokenizer=tokenizer, legacy=legacy
    )
    return stats.scores(use_paper_version=use_paper_version, use_f1_for_deletion=use_f1_for_deletion)


def corpus_sari(
    orig_sents: Sequence[str],
    sys_sents: Sequence[str],
    refs_sents: Sequence[Sequence[str]],
    *,
    lowercase: bool = True,
    tokenizer: str = "13a",
    legacy: bool = False,
    use_paper_version: bool = False,
    use_f1_for_deletion: bool = True,
) -> float:
    """Corpus-level SARI in [0, 100], identical to EASSE's ``corpus_sari`` (same options and defaults).

    See :func:`corpus_sari_operation_scores` for the parameters; SARI = mean of add, keep and delete.
    """
    add, keep, dele = corpus_sari_operation_scores(
        orig_sents,
        sys_sents,
        refs_sents,
        lowercase=lowercase,
        tokenizer=tokenizer,
        legacy=legacy,
        use_paper_version=use_paper_version,
        use_f1_for_deletion=use_f1_for_deletion,
    )
    return (add + keep + dele) / 3


def sentence_sari(
    orig: str,
    sys: str,
    refs: Sequence[str],
    *,
    lowercase: bool = True,
    tokenizer: str = "13a",
    legacy: bool = False,
    use_paper_version: bool = False,
    use_f1_for_deletion: bool = True,
) -> float:
    """SARI of one sentence: :func:`corpus_sari` on a one-sentence corpus.

    ``refs`` is the list of references *of this sentence*. Note: the mean of sentence SARIs is not the
    corpus SARI (the corpus score sums statistics before computing P/R/F1).
    """
    if isinstance(refs, str):
        raise MultimsdError("sentence_sari: refs must be a list of reference strings, not a single string")
    return corpus_sari(
        [orig],
        [sys],
        [[ref] for ref in refs],
        lowercase=lowercase,
        tokenizer=tokenizer,
        legacy=legacy,
        use_paper_version=use_paper_version,
        use_f1_for_deletion=use_f1_for_deletion,
    )
