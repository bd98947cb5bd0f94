# 🤗 evaluate metric script: corpus SARI computed by multimsd.metrics (EASSE-identical), loadable offline with
# evaluate.load("<path to this directory>"). evaluate's import scanner reads this file line by line, so keep
# one import per line and no import statements inside docstrings.
"""SARI (EASSE-identical corpus SARI from multimsd) as a 🤗 evaluate metric."""

import datasets
import evaluate

from multimsd.metrics import corpus_sari_operation_scores, resolve_tokenizer

_CITATION = """
@article{xu-etal-2016-optimizing,
  title = {Optimizing Statistical Machine Translation for Text Simplification},
  author = {Xu, Wei and Napoles, Courtney and Pavlick, Ellie and Chen, Quanze and Callison-Burch, Chris},
  journal = {Transactions of the Association for Computational Linguistics},
  volume = {4},
  year = {2016},
  pages = {401--415},
}
"""

_DESCRIPTION = """
SARI compares a system output against its source and the references, rewarding n-grams that are correctly
added, kept and deleted (n = 1..4). This is multimsd's corpus-level SARI, numerically identical to EASSE's
corpus_sari (statistics are summed over the corpus before precision / recall / F1), with language-aware
tokenizers for de en es fr it ja pt ru zh. Note: the Hub's "sari" metric averages sentence-level scores
instead, so its numbers differ.
"""

_KWARGS_DESCRIPTION = """
Args:
    sources: list of source sentences.
    predictions: list of system outputs, one per source.
    references: list of lists of references, references[i] being the references of sentence i
        (every sentence needs the same number of references).
    lowercase: lowercase before tokenizing (default True, as EASSE).
    tokenizer: a multimsd tokenizer name (13a, intl, none, ja-mecab, zh-char, ...); default: the
        language's default tokenizer when lang is given, else 13a.
    lang: optional language code (de en es fr it ja pt ru zh) choosing the default tokenizer.
    use_paper_version: average P and R over n-gram orders before F1 (EASSE's use_paper_version).
Returns:
    sari, sari_add, sari_keep, sari_delete: floats in [0, 100]; tokenizer: the tokenizer used.
Examples:
    >>> sari = evaluate.load("multimsd/hf_metrics/sari")
    >>> sari.compute(sources=["About 95 species are currently accepted ."],
    ...              predictions=["About 95 you now get in ."],
    ...              references=[["About 95 species are currently known ."]])
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Sari(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "sources": datasets.Value("string", id="sequence"),
                    "predictions": datasets.Value("string", id="sequence"),
                    "references": datasets.Sequence(datasets.Value("string", id="sequence"), id="references"),
                }
            ),
            codebase_urls=["https://github.com/feralvam/easse"],
            reference_urls=["https://aclanthology.org/Q16-1029/"],
        )

    def _compute(
        self,
        sources,
        predictions,
        references,
        lowercase=True,
        tokenizer=None,
        lang=None,
        use_paper_version=False,
    ):
        if lang is not None or tokenizer is None:
            tokenizer = resolve_tokenizer(lang, tokenizer) if lang is not None else "13a"
        n_refs = {len(refs) for refs in references}
        if len(n_refs) > 1:
            raise ValueError(f"every sentence needs the same number of references (found {sorted(n_refs)})")
        streams = [list(stream) for stream in zip(*references)]
        add, keep, delete = corpus_sari_operation_scores(
            sources,
            predictions,
            streams,
            lowercase=lowercase,
            tokenizer=tokenizer,
            use_paper_version=use_paper_version,
        )
        return {
            "sari": (add + keep + delete) / 3,
            "sari_add": add,
            "sari_keep": keep,
            "sari_delete": delete,
            "tokenizer": tokenizer,
        }
