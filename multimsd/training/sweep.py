"""Hydra callback that summarises a multirun sweep (``python train.py -m loss.theta=1,2,4,8 ...``).

Each finished job appends one JSON line to ``<sweep dir>/jobs.jsonl`` (a file, so it also works when jobs
run in other processes, e.g. submitit); at the end a table of validation SARI / BLEU per job is written to
``<sweep dir>/summary.md`` and printed, with the job the paper would keep: the best mean of SARI and BLEU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn
from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class SweepSummary(Callback):
    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        results_file = Path(config.output_dir) / "all_results.json"
        results = json.loads(results_file.read_text(encoding="utf-8")) if results_file.exists() else {}
        line = {
            "job": config.hydra.job.num if "num" in config.hydra.job else None,
            "overrides": list(config.hydra.overrides.task),
            "output_dir": str(config.output_dir),
            "status": getattr(job_return.status, "name", str(job_return.status)),
            "validation": results.get("after") or results.get("validation") or {},
        }
        with open(sweep_dir / "jobs.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        jobs_file = sweep_dir / "jobs.jsonl"
        if not jobs_file.exists():
            return
        jobs = [json.loads(x) for x in jobs_file.read_text(encoding="utf-8").splitlines() if x.strip()]
        table = summary_table(jobs)
        (sweep_dir / "summary.md").write_text(table + "\n", encoding="utf-8")
        print(table)
        print(f"\nsweep summary written to {sweep_dir / 'summary.md'}")


def summary_table(jobs: list[dict]) -> str:
    """Markdown: one row per job; the best mean(SARI, BLEU) on validation is marked (paper's selection)."""
    # jobs.jsonl is in the order jobs finished, which differs between runs when jobs run at once (submitit,
    # SLURM): rows in job order, and a tie goes to the lowest job number, so the table is reproducible.
    jobs = sorted(jobs, key=lambda j: (j["job"] is None, j["job"] if j["job"] is not None else 0))
    scored = [j for j in jobs if "mean_sari_bleu" in j["validation"]]
    best = max(scored, key=lambda j: j["validation"]["mean_sari_bleu"]) if scored else None
    lines = ["| job | overrides | val SARI | val BLEU | mean | |", "|---|---|---:|---:|---:|---|"]
    for j in jobs:
        v = j["validation"]
        cells = [f"{v[k]:.2f}" if k in v else "-" for k in ("sari", "bleu", "mean_sari_bleu")]
        mark = "**best**" if j is best else ("failed" if j["status"] != "COMPLETED" else "")
        lines.append(f"| {j['job']} | {' '.join(j['overrides'])} | {' | '.join(cells)} | {mark} |")
    return "\n".join(lines)
