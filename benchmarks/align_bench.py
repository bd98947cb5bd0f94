"""Alignment-stage benchmark: every number measured side by side in one run, on one machine.

Corpus: the bundled sample replicated until it holds >= 10,000 sentences (each replica's sentences are made
unique so nothing is served twice from the cache). Prints:

* encoder-only throughput (the model's own encode on all sentences) vs the whole pipeline's (load, segment,
  embed, match, filter, split, write) on an empty cache; goal: ratio >= 0.9;
* the same pipeline re-run with cached embeddings vs the first run; goal: >= 20x faster;
* FAISS vs numpy k-NN matching time on the same vectors;
* ``aligner=nm`` on the bundled sample (x 1): the encoder alone on every block text vs the whole n:m pipeline on
  an empty cache (goal: the encoder dominates, ratio >= 0.9), and its re-run with cached embeddings vs the
  symmetric aligner's (goal: n:m throughput >= 0.5x symmetric; median of 3 runs each);
* peak RSS.

    python benchmarks/align_bench.py [--min-sentences 10000] [--workdir /tmp/align-bench] [--skip-nm]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

from multimsd.alignment.aligners.embedding import candidate_matches
from multimsd.alignment.encode import embed_documents, make_embedder, segment_pairs
from multimsd.alignment.stage import run, to_config
from multimsd.io import load_article_pairs


def replicate_sample(min_sentences: int, path: Path) -> int:
    pairs = load_article_pairs(None)
    per_copy = sum(len(p.complex) + len(p.simple) for p in pairs)
    copies = -(-min_sentences // per_copy)
    with open(path, "w", encoding="utf-8") as f:
        for r in range(copies):
            for p in pairs:
                tag = f" ({r})" if r else ""
                rec = {
                    "article_id": f"{p.article_id}-{r}",
                    "lang": p.lang,
                    "complex": [s + tag for s in p.complex],
                    "simple": [s + tag for s in p.simple],
                }
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return copies * per_copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-sentences", type=int, default=10_000)
    ap.add_argument("--workdir", default=None)
    ap.add_argument(
        "--skip-nm", action="store_true", help="leave out the n:m section (it encodes ~3x the text)"
    )
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="align-bench-"))
    shutil.rmtree(work / "cache", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.jsonl"
    n = replicate_sample(args.min_sentences, corpus)
    cfg = to_config(
        {
            "data": {"path": str(corpus)},
            "output": {"dir": str(work / "out")},
            "cache_dir": str(work / "cache"),
        }
    )

    # Make sure the offline model is built before timing anything (a one-off, not part of either side).
    make_embedder(cfg).model  # noqa: B018

    # 1. encoder only: the model's encode over exactly the sentences the pipeline will embed, no cache.
    pairs = load_article_pairs(corpus)
    docs = segment_pairs(pairs, False, 0.5)
    nocache = to_config({**_plain(cfg), "embedder": {**_plain(cfg)["embedder"], "cache_embeddings": False}})
    enc = make_embedder(nocache)
    enc.model  # noqa: B018  (load outside the timed region: the model is what we time)
    t0 = time.perf_counter()
    vecs = embed_documents(enc, docs, nocache)
    t_enc = time.perf_counter() - t0

    # 2. whole pipeline, empty embedding cache (model load included).
    t0 = time.perf_counter()
    run(cfg)
    t_pipe = time.perf_counter() - t0

    # 3. same pipeline again: embeddings from the cache.
    t0 = time.perf_counter()
    run(cfg)
    t_rerun = time.perf_counter() - t0

    # 4. matching alone, FAISS vs numpy, on the same vectors.
    times = {}
    for use_faiss in (True, False):
        t0 = time.perf_counter()
        for _ in range(3):
            candidate_matches(vecs, "symmetric", 4, use_faiss)
        times[use_faiss] = (time.perf_counter() - t0) / 3
    nm = None if args.skip_nm else bench_nm(work)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print("\n## Alignment benchmark")
    print(f"corpus: {n:,} sentences in {len(pairs):,} article pairs (bundled sample x {len(pairs) // 108})")
    print(f"encoder only       : {n / t_enc:8.1f} sentences/s ({t_enc:.1f} s)")
    print(
        f"whole pipeline     : {n / t_pipe:8.1f} sentences/s ({t_pipe:.1f} s)   ratio {t_enc / t_pipe:.2f} (goal >= 0.9)"
    )
    print(
        f"re-run, cached     : {t_rerun:8.2f} s   {t_pipe / t_rerun:.1f}x faster than the first run (goal >= 20x)"
    )
    print(f"matching, FAISS    : {times[True] * 1000:8.1f} ms")
    print(
        f"matching, numpy    : {times[False] * 1000:8.1f} ms   FAISS/numpy time ratio {times[True] / times[False]:.2f}"
    )
    if nm:
        print(
            f"n:m, sample x 1    : {nm['blocks']:,} block texts ({nm['shape']} blocks) from {nm['sentences']:,} sentences"
        )
        print(
            f"n:m, encoder only  : {nm['enc']:8.1f} s; whole n:m pipeline, empty cache {nm['pipe']:.1f} s"
            f"   ratio {nm['enc'] / nm['pipe']:.2f} (goal >= 0.9)"
        )
        print(
            f"cached re-run      : n:m {nm['nm_cached']:.3f} s, symmetric {nm['sym_cached']:.3f} s"
            f"   n:m throughput {nm['sym_cached'] / nm['nm_cached']:.2f}x symmetric (goal >= 0.5)"
        )
    print(f"peak RSS           : {rss_mb:8.0f} MiB")


def bench_nm(work: Path) -> dict:
    """aligner=nm on the bundled sample: encoder share on an empty cache, cached re-run against symmetric."""
    from multimsd.alignment.aligners.nm import block_vectors, spans

    def cfg_for(method: str, cache: bool = True):
        return to_config(
            {
                # each aligner's own default θ (nm: 0.01 on the block margin; symmetric: the embedder's θ)
                "aligner": {"method": method},
                "output": {"dir": str(work / f"out-{method}")},
                "cache_dir": str(work / "cache-nm"),
                "embedder": {"cache_embeddings": cache},
            }
        )

    shutil.rmtree(work / "cache-nm", ignore_errors=True)
    nm_cfg = cfg_for("nm")
    docs = segment_pairs(load_article_pairs(None), False, 0.5)
    nocache = cfg_for("nm", cache=False)
    make_embedder(nocache).model  # noqa: B018  (the model is built and loaded outside the timed region)
    t0 = time.perf_counter()
    block_vectors(docs, nocache)  # exactly the encoder calls of the stage, cache off
    t_enc = time.perf_counter() - t0
    t0 = time.perf_counter()
    run(nm_cfg)
    t_pipe = time.perf_counter() - t0
    run(
        cfg_for("symmetric")
    )  # its sentences are in the cache already (nm embeds single sentences the same way)

    def median_run(cfg) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            run(cfg)
            times.append(time.perf_counter() - t0)
        return sorted(times)[1]

    c = nm_cfg.aligner.nm
    return {
        "sentences": sum(len(a) + len(b) for a, b in docs),
        "shape": f"{c.max_complex} x {c.max_simple}",
        "blocks": sum(len(spans(len(a), c.max_complex)) + len(spans(len(b), c.max_simple)) for a, b in docs),
        "enc": t_enc,
        "pipe": t_pipe,
        "nm_cached": median_run(nm_cfg),
        "sym_cached": median_run(cfg_for("symmetric")),
    }


def _plain(cfg) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.structured(cfg))


if __name__ == "__main__":
    main()
