"""Lexical-aligner benchmark: bulk scoring (rapidfuzz cdist + sparse products) vs a per-pair Python loop.

Both sides compute the same 11 string similarities of every (complex, simple) sentence pair of each article
pair of the bundled sample, measured side by side in one run, and must agree to 1e-9. Two workloads:

* ``articles``: the sample's article pairs as they are (about 13 x 13 sentences each);
* ``merged``: the article pairs of each language concatenated into one (about 150 x 150), closer to the size
  of a real MSD Manual article pair, where bulk scoring pays off most;
* ``merged-DL``: the same without Damerau-Levenshtein. Unrestricted DL has no bit-parallel algorithm: it is
  the same C++ dynamic programme per pair on both sides and dominates both, so this row shows what bulk
  scoring buys on the other ten.

Then, on the merged workload: the bulk rate of each score alone, and ``lexical_matches`` at the paper's band
(θ = 0.5), where Damerau-Levenshtein is computed only for pairs whose mean could reach θ (checked to give
exactly the matches of the full matrices).

The per-pair loop gets its sentences lowercased and tokenised once, outside its timer (so it is timed on
scoring alone); the bulk side's time includes that preparation, so the ratio is if anything understated.

    python benchmarks/lexical_bench.py [--workers 1] [--repeat 2] [--threshold 0.5]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from multimsd.alignment.aligners.lexical import (
    STRING_SCORES,
    LexicalConfig,
    lexical_matches,
    mean_similarity,
    pair_similarities,
    prepare,
    score_matrices,
)
from multimsd.alignment.segment import segment_document
from multimsd.io import load_article_pairs


def load_docs() -> tuple[list[tuple[list[str], list[str], str]], list[tuple[list[str], list[str], str]]]:
    pairs = load_article_pairs(None)
    docs = [(segment_document(p.complex, p.lang), segment_document(p.simple, p.lang), p.lang) for p in pairs]
    merged: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for c, s, lang in docs:
        merged[lang][0].extend(c)
        merged[lang][1].extend(s)
    return docs, [(c, s, lang) for lang, (c, s) in merged.items()]


def bulk(docs, scores, workers: int) -> list[dict[str, np.ndarray]]:
    return [score_matrices(c, s, lang, scores, workers) for c, s, lang in docs]


def naive(prepared, scores) -> list[dict[str, np.ndarray]]:
    """The same scores one pair at a time: two nested Python loops over prepared sentences."""
    out = []
    for a, b, lang in prepared:
        mats = {name: np.zeros((len(a), len(b))) for name in scores}
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                for name, v in pair_similarities(x, y, lang, scores).items():
                    mats[name][i, j] = v
        out.append(mats)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=1, help="rapidfuzz threads for the bulk side (-1 = all)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per side; the fastest counts")
    ap.add_argument("--threshold", type=float, default=0.5, help="θ for the lexical_matches measurement")
    args = ap.parse_args()
    articles, merged = load_docs()
    # Warm-up: MeCab's dictionary load and first-call costs are not what is measured.
    bulk(articles[:9], STRING_SCORES, args.workers)
    print(f"bulk workers={args.workers}; best of {args.repeat} alternated runs per side")
    header = ("workload", "scores", "articles", "pairs", "bulk pairs/s", "loop pairs/s", "ratio")
    print("{:<10} {:>6} {:>8} {:>9} {:>14} {:>14} {:>7}".format(*header))
    no_dl = tuple(s for s in STRING_SCORES if s != "damerau_levenshtein")
    workloads = (
        ("articles", articles, STRING_SCORES),
        ("merged", merged, STRING_SCORES),
        ("merged-DL", merged, no_dl),
    )
    for name, docs, scores in workloads:
        n_pairs = sum(len(c) * len(s) for c, s, _ in docs)
        prepared = [
            ([prepare(x, lang) for x in c], [prepare(x, lang) for x in s], lang) for c, s, lang in docs
        ]
        # Alternate the two sides so drift in machine load hits both alike; keep each side's fastest run.
        t_bulk, t_loop = float("inf"), float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fast = bulk(docs, scores, args.workers)
            t1 = time.perf_counter()
            slow = naive(prepared, scores)
            t2 = time.perf_counter()
            t_bulk, t_loop = min(t_bulk, t1 - t0), min(t_loop, t2 - t1)
        worst = max(float(np.max(np.abs(f[k] - s[k]))) for f, s in zip(fast, slow) for k in scores)
        assert worst <= 1e-9, f"bulk and per-pair scores differ by {worst}"
        print(
            f"{name:<10} {len(scores):>6} {len(docs):>8} {n_pairs:>9,} "
            f"{n_pairs / t_bulk:>14,.0f} {n_pairs / t_loop:>14,.0f} {t_loop / t_bulk:>6.1f}x"
        )
    print("bulk and per-pair scores agree (max abs difference <= 1e-9)")

    # Where the bulk time goes, per score, on the merged workload.
    n_merged = sum(len(c) * len(s) for c, s, _ in merged)
    rates = []
    for score in STRING_SCORES:
        t0 = time.perf_counter()
        for c, s, lang in merged:
            score_matrices(c, s, lang, [score], args.workers)
        rates.append(f"{score} {n_merged / (time.perf_counter() - t0):,.0f}")
    print("bulk pairs/s per score (merged): " + ", ".join(rates))

    # lexical_matches at the paper's band: Damerau-Levenshtein only where the mean could reach θ.
    cfg = LexicalConfig(workers=args.workers)
    docs = [(c, s) for c, s, _ in merged]
    langs = [lang for _, _, lang in merged]
    t0 = time.perf_counter()
    band = lexical_matches(docs, langs, cfg, min_score=args.threshold)
    t_band = time.perf_counter() - t0
    expected = []
    for c, s, lang in merged:
        mean = mean_similarity(score_matrices(c, s, lang, STRING_SCORES, args.workers))
        ii, jj = np.nonzero((mean >= args.threshold) & (mean <= cfg.max_mean))
        expected.append([(int(i), int(j), float(mean[i, j])) for i, j in zip(ii, jj)])
    assert [[(x.i, x.j, x.score) for x in ms] for ms in band] == expected, "bounded DL changed the matches"
    print(
        f"lexical_matches, band [{args.threshold}, {cfg.max_mean}] (merged): {n_merged / t_band:,.0f} pairs/s, "
        f"{sum(map(len, band))} pairs kept, identical to filtering the full matrices"
    )


if __name__ == "__main__":
    main()
