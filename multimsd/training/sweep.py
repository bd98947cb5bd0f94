"""Hydra callback that summarises a multirun sweep (``multimsd train -m loss.theta=1,2,4,8 ...``).

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

from multimsd.launcher import is_main_process
from multimsd.outdir import output_dir_of


class SweepSummary(Callback):
    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if not is_main_process():  # one line per job, not one per process of its launch (issue #37)
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        # The job's config as Hydra composed it: output.dir, or the deprecated output_dir when that was used.
        out_dir = output_dir_of(config, "train")
        results_file = Path(out_dir) / "all_results.json"
        results = json.loads(results_file.read_text(encoding="utf-8")) if results_file.exists() else {}
        line = {
            "job": config.hydra.job.num if "num" in config.hydra.job else None,
            "overrides": list(config.hydra.overrides.task),
            "output_dir": out_dir,  # a field of jobs.jsonl (its name kept: files of earlier sweeps have it)
            "status": getattr(job_return.status, "name", str(job_return.status)),
            "validation": results.get("after") or results.get("validation") or {},
        }
        with open(sweep_dir / "jobs.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        jobs = read_jobs(sweep_dir)
        if not jobs:
            return
        records_file = sweep_dir / "launcher_jobs.json"  # SLURM job ids and states (ResilientSlurmLauncher)
        records = json.loads(records_file.read_text(encoding="utf-8")) if records_file.exists() else None
        table = summary_table(jobs, records)
        (sweep_dir / "summary.md").write_text(table + "\n", encoding="utf-8")
        print(table)
        print(f"\nsweep summary written to {sweep_dir / 'summary.md'}")


def read_jobs(sweep_dir: Path) -> list[dict]:
    """The jobs' lines of ``jobs.jsonl``, the last one per job number (a re-run appends a newer line)."""
    jobs_file = Path(sweep_dir) / "jobs.jsonl"
    if not jobs_file.exists():
        return []
    latest: dict = {}
    for line in jobs_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            j = json.loads(line)
            latest[j["job"]] = j
    return list(latest.values())


def summary_table(jobs: list[dict], records: dict | None = None) -> str:
    """Markdown: one row per job; the best mean(SARI, BLEU) on validation is marked (paper's selection).

    ``records`` (the launcher's ``launcher_jobs.json``: job number -> SLURM job id, state, reason) adds the
    jobs that never reported (cancelled, timed out, killed) and the job id and state of every job, so a
    failed job is listed as failed, not missing.
    """
    # jobs.jsonl is in the order jobs finished, which differs between runs when jobs run at once (submitit,
    # SLURM): rows in job order, and a tie goes to the lowest job number, so the table is reproducible.
    by_num = {j["job"]: dict(j) for j in jobs}
    for rec in (records or {}).values():
        j = by_num.setdefault(
            rec["job"], {"job": rec["job"], "overrides": rec["overrides"], "validation": {}}
        )
        j["status"] = "COMPLETED" if rec.get("state") == "COMPLETED" and not rec.get("reason") else "FAILED"
        j.update({k: rec.get(k) for k in ("slurm_job_id", "state", "reason", "kept")})
    jobs = sorted(by_num.values(), key=lambda j: (j["job"] is None, j["job"] if j["job"] is not None else 0))
    scored = [j for j in jobs if "mean_sari_bleu" in j["validation"] and j.get("status") == "COMPLETED"]
    best = max(scored, key=lambda j: j["validation"]["mean_sari_bleu"]) if scored else None
    slurm = records is not None
    head = "| job | overrides | val SARI | val BLEU | mean | |"
    lines = [head + (" SLURM job | state | reason |" if slurm else ""), "|---|---|---:|---:|---:|---|"]
    lines[1] += "---|---|---|" if slurm else ""
    for j in jobs:
        v = j["validation"]
        cells = [f"{v[k]:.2f}" if k in v else "-" for k in ("sari", "bleu", "mean_sari_bleu")]
        mark = "**best**" if j is best else ("failed" if j.get("status") != "COMPLETED" else "")
        row = f"| {j['job']} | {' '.join(j['overrides'])} | {' | '.join(cells)} | {mark} |"
        if slurm:
            state = (j.get("state") or "-") + (" (earlier run)" if j.get("kept") else "")
            reason = (j.get("reason") or "").replace("|", "/")
            row += f" {j.get('slurm_job_id') or '-'} | {state} | {reason} |"
        lines.append(row)
    return "\n".join(lines)
