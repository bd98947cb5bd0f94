"""The sweep summary (multimsd.training.sweep) and the SLURM launcher's failure lines, without a cluster."""

from __future__ import annotations

import json

import pytest
from helpers.tables import rows_by

from multimsd.training.sweep import read_jobs, summary_table

MARK = ""  # the column of the marks (**best**, failed) has no header


def job(num, theta, mean, status="COMPLETED"):
    v = {"sari": mean + 1, "bleu": mean - 1, "mean_sari_bleu": mean} if mean is not None else {}
    return {"job": num, "overrides": [f"loss.theta={theta}"], "status": status, "validation": v}


def rows(table: str) -> dict[int, dict[str, str]]:
    """The table's rows by job number, each by column header."""
    return rows_by(table, "job", convert=int)


def test_read_jobs_keeps_the_latest_line_of_each_job(tmp_path):
    lines = [job(0, 1, None, "FAILED"), job(1, 2, 30.0), job(0, 1, 31.0)]  # job 0 re-run later
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(j) + "\n" for j in lines))
    got = sorted(read_jobs(tmp_path), key=lambda j: j["job"])
    assert [(j["job"], j["status"]) for j in got] == [(0, "COMPLETED"), (1, "COMPLETED")]
    assert read_jobs(tmp_path / "nowhere") == []


def test_summary_lists_failed_jobs_with_id_state_and_reason():
    jobs = [job(0, 1, 30.0), job(2, 4, 35.0, status="FAILED")]  # job 2 raised after scoring validation
    records = {
        "0": {"job": 0, "overrides": ["loss.theta=1"], "slurm_job_id": "11", "state": "COMPLETED", "reason": None},
        # job 1 was cancelled: it never wrote to jobs.jsonl, the launcher knows it
        "1": {"job": 1, "overrides": ["loss.theta=2"], "slurm_job_id": "12", "state": "CANCELLED by 0",
              "reason": "Job 12 (task: 0) has not produced any output (state: CANCELLED by 0)"},
        "2": {"job": 2, "overrides": ["loss.theta=4"], "slurm_job_id": "13", "state": "FAILED",
              "reason": "error: out of memory"},
        "3": {"job": 3, "overrides": ["loss.theta=8"], "state": "COMPLETED", "kept": True},
    }  # fmt: skip
    r = rows(summary_table([*jobs, job(3, 8, 32.0)], records))
    assert sorted(r) == [0, 1, 2, 3]
    slurm = ("SLURM job", "state", "reason")
    assert r[1][MARK] == "failed"
    assert [r[1][c] for c in slurm] == ["12", "CANCELLED by 0", records["1"]["reason"]]
    assert r[2][MARK] == "failed" and r[2]["reason"] == "error: out of memory"
    # the best is chosen among the finished jobs only (job 2 scored higher but failed)
    assert r[3][MARK] == "**best**" and r[3]["state"] == "COMPLETED (earlier run)"
    assert r[0][MARK] == "" and r[0]["SLURM job"] == "11"
    scores = ("overrides", "val SARI", "val BLEU", "mean")
    assert [r[0][c] for c in scores] == ["loss.theta=1", "31.00", "29.00", "30.00"]


def test_summary_without_launcher_records_has_no_slurm_columns():
    table = summary_table([job(0, 1, 30.0), job(1, 2, 31.0)])
    assert "SLURM job" not in table.splitlines()[0]
    assert rows(table)[1][MARK] == "**best**" and rows(table)[0][MARK] == ""


def test_failure_reason_is_the_jobs_own_error_line():
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="needs the sweep extra")
    from multimsd.training.slurm_launcher import failure_reason

    trace = "Job (task=0) failed during processing with trace:\n----\nTraceback ...\nerror: training data not found: /x\n"
    assert failure_reason(RuntimeError(trace)) == "error: training data not found: /x"
    nested = "Failed\nValueError: bad shape (3, 4)\n  more"
    assert failure_reason(RuntimeError(nested)) == "ValueError: bad shape (3, 4)"
    assert failure_reason(RuntimeError("Job 7 has timed-out too many times.\nmore")) == (
        "Job 7 has timed-out too many times."
    )
    assert failure_reason(RuntimeError("")) == "RuntimeError"
