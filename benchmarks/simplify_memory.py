"""``multimsd simplify`` on a small and a large input, side by side in one run: peak RSS and time of each.

The command streams its input (a checking pass, then the decoding pass, 32 documents at a time) and appends
OUT a record at a time, so its memory must not grow with the number of documents: a 100,000-document input
should peak where a 1,000-document one does. Each size runs in a process of its own (the peak RSS of that
process, ``ru_maxrss`` of the child), on the same model, with the same settings:

    python benchmarks/simplify_memory.py [--sizes 1000 100000] [--model tiny:llama] [--workdir DIR]

Prints a Markdown table (documents, sentences, peak RSS, seconds, documents/s) and the ratio of the peaks.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ["take", "the", "tablet", "twice", "a", "day", "with", "water", "and", "call", "your", "doctor"]


def write_input(path: Path, n: int) -> None:
    """``n`` short one-sentence English documents, all different (ids and texts)."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            words = [WORDS[(i * k + k) % len(WORDS)] for k in range(1, 7)]
            f.write(
                json.dumps({"id": f"d{i}", "lang": "en", "text": " ".join(words).capitalize() + "."}) + "\n"
            )


def measure(model: str, n: int, workdir: Path, max_new_tokens: int) -> dict:
    inp, out = workdir / f"in-{n}.jsonl", workdir / f"out-{n}.jsonl"
    write_input(inp, n)
    out.unlink(missing_ok=True)
    code = (
        "import resource, subprocess, sys\n"
        "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    command = [sys.executable, "-m", "multimsd", "simplify", model, str(inp), "--out", str(out)]
    command += ["--terms", "none", f"eval.max_new_tokens={max_new_tokens}"]
    t0 = time.perf_counter()
    rc, peak_kib = subprocess.run(
        [sys.executable, "-c", code, *command], capture_output=True, text=True, check=True
    ).stdout.split()
    seconds = time.perf_counter() - t0
    if rc != "0":
        raise SystemExit(f"multimsd simplify exited {rc} on {n} documents")
    with open(out, encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    if lines != n:
        raise SystemExit(f"{out}: {lines} records for {n} documents")
    return {"documents": n, "peak_rss_mib": int(peak_kib) / 1024, "seconds": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000])
    ap.add_argument("--model", default="tiny:llama")
    ap.add_argument("--max-new-tokens", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="simplify-memory-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows = [measure(args.model, n, workdir, args.max_new_tokens) for n in args.sizes]
    print(f"## multimsd simplify, {args.model}, eval.max_new_tokens={args.max_new_tokens}, --terms none\n")
    print("| documents | peak RSS | seconds | documents/s |\n|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['documents']:,} | {r['peak_rss_mib']:.0f} MiB | {r['seconds']:.0f} | {r['documents'] / r['seconds']:.0f} |"
        )
    print(f"\npeak RSS, largest / smallest input: {rows[-1]['peak_rss_mib'] / rows[0]['peak_rss_mib']:.2f}x")
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
