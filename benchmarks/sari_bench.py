"""Time multimsd corpus SARI against sacrebleu corpus BLEU on the same synthetic corpus.

    .venv/bin/python benchmarks/sari_bench.py [--sentences 10000] [--refs 8] [--repeats 3]

Both metrics see the same raw (untokenised, mixed-case) sentences and tokenise with sacrebleu's 13a
tokenizer; the tokenizers' LRU caches are cleared before every timed run so neither metric benefits from
work done by an earlier run. The best of ``--repeats`` runs is reported for each, runs interleaved.
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc

import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

from multimsd.metrics import corpus_sari

PUNCT = [",", ".", ";", "(", ")", "-", "'s"]


def make_corpus(n_sents: int, n_refs: int, seed: int = 0):
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
        for _ in range(8000)
    ]
    vocab[:50] = [w.capitalize() for w in vocab[:50]]

    def sentence() -> list[str]:
        words = [rng.choice(vocab) for _ in range(rng.randint(12, 40))]
        for _ in range(rng.randint(0, 4)):
            words.insert(rng.randrange(len(words)), rng.choice(PUNCT))
        return words

    def simplify(words: list[str]) -> str:
        out = []
        for w in words:
            x = rng.random()
            if x < 0.15:  # delete
                continue
            if x < 0.25:  # substitute
                out.append(rng.choice(vocab))
            else:
                out.append(w)
        if rng.random() < 0.3:  # split-ish edit: add a few words
            out.extend(rng.choice(vocab) for _ in range(rng.randint(1, 4)))
        return " ".join(out) + " ."

    orig, sys_out, refs = [], [], [[] for _ in range(n_refs)]
    for _ in range(n_sents):
        words = sentence()
        orig.append(" ".join(words) + " .")
        sys_out.append(simplify(words))
        for stream in refs:
            stream.append(simplify(words))
    return orig, sys_out, refs


def clear_tokenizer_caches() -> None:
    Tokenizer13a.__call__.cache_clear()
    TokenizerRegexp.__call__.cache_clear()


def timed(fn):
    clear_tokenizer_caches()
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=10_000)
    ap.add_argument("--refs", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    orig, sys_out, refs = make_corpus(args.sentences, args.refs)
    print(f"corpus: {args.sentences} sentences x {args.refs} references (sacrebleu {sacrebleu.__version__})")

    sari_times, bleu_times = [], []
    for _ in range(args.repeats):
        t, sari = timed(lambda: corpus_sari(orig, sys_out, refs))
        sari_times.append(t)
        t, bleu = timed(lambda: sacrebleu.corpus_bleu(sys_out, refs, force=True))
        bleu_times.append(t)

    t_sari, t_bleu = min(sari_times), min(bleu_times)
    print(
        f"multimsd corpus_sari   : {t_sari:7.3f} s  (SARI = {sari:.4f})  runs: {', '.join(f'{x:.3f}' for x in sari_times)}"
    )
    print(
        f"sacrebleu corpus_bleu  : {t_bleu:7.3f} s  (BLEU = {bleu.score:.4f})  runs: {', '.join(f'{x:.3f}' for x in bleu_times)}"
    )
    print(f"ratio SARI / BLEU time : {t_sari / t_bleu:.2f}x")

    # Peak extra memory of one SARI run. The statistics are streamed, so without the tokenizer's LRU cache
    # (sacrebleu's, bounded at 2**16 entries) the peak does not grow with the corpus size.
    for tokenizer in ("13a", "none"):
        clear_tokenizer_caches()
        tracemalloc.start()
        corpus_sari(orig, sys_out, refs, tokenizer=tokenizer)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        note = " (includes sacrebleu's bounded 13a LRU caches)" if tokenizer == "13a" else ""
        print(f"corpus_sari peak traced allocation, tokenizer={tokenizer}: {peak / 2**20:.2f} MiB{note}")
    clear_tokenizer_caches()


if __name__ == "__main__":
    main()
