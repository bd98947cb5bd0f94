"""A kill soak (issue #32, item 4): ``multimsd run`` (tests/pipeline/test_run_pipeline.py's tiny run) is killed at random
points, alternately by SIGKILL and by SIGTERM to its process group, each time followed by the same command;
a last run goes to the end, and its numbers equal those of a run that was never interrupted, with no
temporary or lock file of the killed commands left.

The points are drawn from a seeded generator: the seed is printed and named in every failure message, and
``MULTIMSD_SOAK_SEED=<seed>`` replays the same delays (the same points, as far as a machine's speed allows).
Without it every run of the test draws a new seed, so that the soak covers new points over time.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_run_pipeline import TINY, numbers

SEED_ENV = "MULTIMSD_SOAK_SEED"
KILLS = 6  # SIGKILL, SIGTERM, SIGKILL, ...


def command(run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "multimsd", "run", *TINY, f"output.dir={run_dir}"]


def stage_seconds_left(run_dir: Path, ref: Path) -> float:
    """The reference run's seconds for the stages that ``run_dir`` has not finished."""
    return sum(
        json.loads(rec.read_text())["seconds"]
        for rec in (ref / ".stages").glob("*.json")
        if not rec.name.endswith(".started.json") and not (run_dir / ".stages" / rec.name).exists()
    )


def interrupted_line(stderr: str) -> str:
    """A SIGTERM that the command handled: exactly one ``interrupted`` line, the last one, no traceback."""
    assert "Traceback" not in stderr, stderr[-3000:]
    hits = [ln for ln in stderr.splitlines() if ln.startswith("interrupted")]
    assert len(hits) == 1 and stderr.rstrip().endswith(hits[0]), stderr[-3000:]
    return hits[0]


@pytest.mark.slow
def test_kill_soak_then_the_same_command_gives_the_uninterrupted_numbers(tmp_path):
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(1 << 32))
    replay = f"kill soak seed {seed} (replay: {SEED_ENV}={seed} pytest -m slow {Path(__file__).name})"
    print(replay)
    rng = random.Random(seed)

    # The delays are drawn over what a command has left to do on this machine, now: the reference run's
    # seconds for each stage not finished yet, plus the time of a command with every stage done (start-up,
    # checks, results and report).
    ref = tmp_path / "ref"
    idle = 0.0
    for _ in range(2):
        t0 = time.monotonic()
        proc = subprocess.run(command(ref), capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        idle = time.monotonic() - t0

    run_dir = tmp_path / "run"
    log: list[str] = []
    for k in range(KILLS):
        sig = signal.SIGKILL if k % 2 == 0 else signal.SIGTERM
        delay = rng.uniform(0.5, idle + stage_seconds_left(run_dir, ref))
        err = tmp_path / f"kill{k}.stderr"
        with err.open("w") as f:
            proc = subprocess.Popen(
                command(run_dir), stdout=subprocess.DEVNULL, stderr=f, start_new_session=True
            )
        try:
            rc = proc.wait(timeout=delay)
            log.append(f"{k}: finished before its {sig.name} at {delay:.1f}s (status {rc})")
            assert rc == 0, f"{replay}\n" + "\n".join(log) + "\n" + err.read_text()[-3000:]
            continue
        except subprocess.TimeoutExpired:
            pass
        os.killpg(proc.pid, sig)
        rc = proc.wait(timeout=120)
        stage = next(
            (ln.split("] ", 1)[1] for ln in reversed(err.read_text().splitlines()) if "] " in ln), "start-up"
        )
        log.append(f"{k}: {sig.name} at {delay:.1f}s, status {rc}, last stage line: {stage}")
        context = f"{replay}\n" + "\n".join(log)
        if sig == signal.SIGKILL:
            assert rc in (-signal.SIGKILL, 0), context
        else:
            # 143: handled (one line); -15: outside the command's handlers (Python starting up, or exiting
            # after the work was done)
            assert rc in (128 + signal.SIGTERM, -signal.SIGTERM, 0), context + "\n" + err.read_text()[-3000:]
            if rc == 128 + signal.SIGTERM:
                interrupted_line(err.read_text())

    final = subprocess.run(command(run_dir), capture_output=True, text=True, timeout=900)
    context = f"{replay}\n" + "\n".join(log)
    assert final.returncode == 0, context + "\n" + final.stderr[-3000:]
    assert numbers(run_dir) == numbers(ref), context
    print("\n".join(log))
    # What the killed commands left (temporary files, lock files) went with the commands after them.
    stray = [
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob(".*")
        if p.name != ".stages" and ".stages" not in p.parts and "ref" not in p.relative_to(tmp_path).parts
    ]
    assert stray == [], context
