"""A SLURM launcher for sweeps that keeps going past a failed job and re-runs only what did not finish.

hydra-submitit-launcher submits one job per sweep point, then collects the results in order and stops at the
first job that failed: the jobs after it are neither waited for nor reported, and Hydra's end-of-sweep
callback never runs, so a sweep with one failure gives no table at all. :class:`ResilientSlurmLauncher`
(``hydra/launcher=slurm_local`` / ``slurm_gpu``) does the same submission, then:

1. **waits for every job** and records, per sweep point, its SLURM job id, final state (from ``sacct``, which
   is why the test cluster runs accounting) and, for a job that did not finish, the reason -- its own error
   line, ``CANCELLED``, or submitit's "timed-out" -- in ``<sweep dir>/launcher_jobs.json``;
2. writes ``<sweep dir>/summary.md`` with every point: the finished ones with their validation scores and
   the paper's selection, the others as *failed* with job id, state and reason, never silently missing;
3. on a **re-run with the same** ``hydra.sweep.dir``, does not re-submit a point that completed before (same
   overrides, a ``COMPLETED`` record in ``jobs.jsonl``): its results are kept and it is listed as such. The
   other points are submitted again under their old job numbers; a training job then resumes from the
   last checkpoint in its own ``output.dir`` (``resume=true``, the default).

The sweep still exits non-zero when a job failed (Hydra raises the first failure), after the summary is
written. Needs the ``sweep`` extra (hydra-submitit-launcher).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf

from multimsd.fsutil import write_json_atomic
from multimsd.training.sweep import read_jobs, summary_table

log = logging.getLogger(__name__)

LAUNCHER_JOBS = "launcher_jobs.json"


def failure_reason(exc: BaseException) -> str:
    """One line saying why a job did not finish: the job's own ``error:`` / ``XxxError:`` line if its log has one,
    else the first line of submitit's message (e.g. its state, or "timed-out too many times")."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.lower().startswith("error: ") or re.match(r"^[\w.]+(Error|Exception): \S", ln):
            return ln[:300]
    return (lines[0] if lines else type(exc).__name__)[:300]


def point_key(overrides: Sequence[str]) -> str:
    return " ".join(sorted(filter_overrides(list(overrides))))


class ResilientSlurmLauncher(SlurmLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import submitit

        assert self.config is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        finished = {point_key(j["overrides"]) for j in read_jobs(sweep_dir) if j.get("status") == "COMPLETED"}
        points = [(initial_job_idx + i, list(ov)) for i, ov in enumerate(job_overrides)]
        todo = [(idx, ov) for idx, ov in points if point_key(ov) not in finished]
        for idx, ov in points:
            if (idx, ov) not in todo:
                log.info("\t#%d : %s  (finished in an earlier run: kept, not submitted)", idx, point_key(ov))

        jobs: list = []
        if todo:
            executor = self._executor(submitit)
            log.info("Submitit 'slurm' sweep output dir : %s", sweep_dir)
            params = []
            for idx, ov in todo:
                log.info("\t#%d : %s", idx, " ".join(filter_overrides(ov)))
                params.append((ov, "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state()))
            jobs = executor.map_array(self, *zip(*params))

        returns: dict[int, JobReturn] = {}
        records = _read_records(sweep_dir)
        for (idx, ov), job in zip(todo, jobs):
            rec: dict[str, Any] = {"job": idx, "overrides": filter_overrides(ov), "slurm_job_id": job.job_id}
            try:
                ret = job.results()[0]
                failed = ret.status == JobStatus.FAILED
                reason = failure_reason(ret._return_value) if failed else None
            except Exception as e:  # the job died (error, cancel, time limit): submitit raises
                ret = JobReturn(overrides=ov, status=JobStatus.FAILED, _return_value=e)
                reason = failure_reason(e)
            rec["state"] = _state(job, finished=reason is None)
            rec["reason"] = reason
            records[str(idx)] = rec
            returns[idx] = ret
            if reason:
                log.error(
                    "job #%d (SLURM job %s, %s) did not finish: %s", idx, job.job_id, rec["state"], reason
                )
        for idx, ov in points:
            if idx not in returns:  # finished in an earlier run
                returns[idx] = JobReturn(overrides=ov, status=JobStatus.COMPLETED, _return_value=None)
                records.setdefault(
                    str(idx), {"job": idx, "overrides": filter_overrides(ov), "state": "COMPLETED"}
                )
                records[str(idx)]["kept"] = True
        _write_records(sweep_dir, records)
        table = summary_table(read_jobs(sweep_dir), records)
        (sweep_dir / "summary.md").write_text(table + "\n", encoding="utf-8")
        n_failed = sum(1 for idx, _ in todo if records[str(idx)].get("reason"))
        log.info(
            "sweep: %d job(s) finished, %d failed; summary in %s",
            len(points) - n_failed,
            n_failed,
            sweep_dir / "summary.md",
        )
        return [returns[idx] for idx, _ in points]

    def _executor(self, submitit):
        """The executor hydra-submitit builds (same parameters), without its launch loop."""
        init_keys = {"max_num_timeout", "submitit_folder"}
        init = {"folder": self.params["submitit_folder"]}
        if "max_num_timeout" in self.params:
            init["slurm_max_num_timeout"] = self.params["max_num_timeout"]
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init)
        base = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(
            **{k if k in base else f"slurm_{k}": v for k, v in self.params.items() if k not in init_keys}
        )
        return executor


_ACTIVE = ("PENDING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "UNKNOWN")


def _state(job, finished: bool, wait_s: float = 30.0) -> str:
    """The job's final SLURM state. A job that returned its result is COMPLETED (accounting may still say
    RUNNING while its step ends); for the others, ``sacct`` is asked until the state is final (bounded)."""
    import time

    if finished:
        return "COMPLETED"
    deadline = time.monotonic() + wait_s
    state = "UNKNOWN"
    while True:
        try:
            state = str(job.get_info(mode="force").get("State") or "UNKNOWN")
        except Exception:  # accounting unreachable: say so rather than guess
            return "UNKNOWN"
        if state.split()[0] not in _ACTIVE or time.monotonic() > deadline:
            return state
        time.sleep(1.0)


def _read_records(sweep_dir: Path) -> dict[str, dict]:
    p = sweep_dir / LAUNCHER_JOBS
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}


def _write_records(sweep_dir: Path, records: dict) -> None:
    write_json_atomic(sweep_dir / LAUNCHER_JOBS, records)
