"""Novel-token share: the percentage of a text's tokens whose word does not occur in its source sentence.

It measures what the novel-token weighted loss is about. That loss multiplies by θ the loss of the *reference*
tokens absent from the input, so a model trained with θ > 1 should write more words of its own; this metric
asks whether its *outputs* do. For one sentence pair, with ``O`` the set of the source's tokens and ``s_1 ..
s_m`` the output's tokens (both normalised as SARI normalises them: lowercased when ``lowercase``, split by the
language's tokenizer), ``novel = #{j : s_j not in O}`` and ``total = m``; the corpus score is
``100 * sum(novel) / sum(total)`` (0 for a corpus of empty outputs). A copy of the input scores 0; the same
number for the references says how much the human simplifications add.

Word tokens here, not the model's subwords: the number is comparable across models and tokenisers. (The loss's
novelty is per subword of the model's tokenizer; the two agree on which *words* are new.) Counts are integers
summed over sentences, so bootstrap intervals come from the same per-sentence statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from multimsd.metrics.sari import normalize

__all__ = ["corpus_novelty", "novel_spans", "novelty_from_totals", "novelty_statistics"]


def novelty_statistics(
    sources: Sequence[str], outputs: Sequence[str], *, lowercase: bool = True, tokenizer: str = "13a"
) -> np.ndarray:
    """Per sentence ``[novel tokens, tokens]`` of ``outputs`` against their ``sources``: ``[n, 2]`` int64."""
    if len(sources) != len(outputs):
        raise ValueError(f"{len(sources)} sources but {len(outputs)} outputs")
    rows = []
    for src, out in zip(sources, outputs):
        seen = set(normalize(src, lowercase=lowercase, tokenizer=tokenizer).split())
        toks = normalize(out, lowercase=lowercase, tokenizer=tokenizer).split()
        rows.append((sum(1 for t in toks if t not in seen), len(toks)))
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2)


def novelty_from_totals(totals: np.ndarray) -> np.ndarray:
    """``100 * novel / tokens`` of summed :func:`novelty_statistics` ``[..., 2]``; 0 where there are no tokens."""
    t = np.asarray(totals, dtype=np.float64)
    novel, total = t[..., 0], t[..., 1]
    return np.where(total > 0, 100.0 * novel / np.where(total > 0, total, 1.0), 0.0)


def corpus_novelty(
    sources: Sequence[str], outputs: Sequence[str], *, lowercase: bool = True, tokenizer: str = "13a"
) -> float:
    """The corpus novel-token share (percent) of ``outputs`` against ``sources``."""
    stats = novelty_statistics(sources, outputs, lowercase=lowercase, tokenizer=tokenizer)
    return float(novelty_from_totals(stats.sum(0)))


def novel_spans(
    source: str, output: str, *, lowercase: bool = True, tokenizer: str = "13a"
) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of ``output`` whose token is novel against ``source``: the tokens
    :func:`novelty_statistics` counts as novel, found back in the text (for the studio's highlighting).

    Tokens are located left to right in the (lowercased) output; a token the tokenizer rewrote so that it is
    no longer a substring of the text (an escaped entity) gets no span, though it still counts as novel. With
    ``lowercase`` the text is searched lowercased, so offsets are only kept where lowercasing kept its length.
    """
    seen = set(normalize(source, lowercase=lowercase, tokenizer=tokenizer).split())
    toks = normalize(output, lowercase=lowercase, tokenizer=tokenizer).split()
    hay = output.lower() if lowercase else output
    if len(hay) != len(output):  # a character whose lowercase is longer: offsets would drift
        return []
    spans, at = [], 0
    for t in toks:
        k = hay.find(t, at)
        if k < 0:
            continue
        at = k + len(t)
        if t not in seen:
            spans.append((k, at))
    return spans
