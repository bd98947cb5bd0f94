"""``multimsd run``: the pipeline end to end on tiny models, re-runs that skip what is unchanged, bad input that
fails before any work, and SIGKILL at several points (Ctrl-C / SIGTERM while training) followed by the same
command (same final numbers)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from multimsd.pipeline.cli import route

# Tiny run (conf/pipeline/debug/tiny.yaml) with a training long enough to be killed between checkpoints (6 steps, a checkpoint every 2).
TINY = ["debug=tiny", "train.optim.max_steps=6", "train.checkpoint_every=2"]


def cmd(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "multimsd", "run", *TINY, f"dir={run_dir}", *extra]


def multimsd(run_dir: Path, *extra: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd(run_dir, *extra), capture_output=True, text=True, timeout=timeout)


def numbers(run_dir: Path) -> dict:
    """What must not depend on interruptions: the scores, and every trained system's losses."""
    results = json.loads((run_dir / "results.json").read_text())
    out = {"systems": results["systems"], "losses": {}}
    for d in sorted((run_dir / "systems").iterdir()):
        res = json.loads((d / "all_results.json").read_text())
        out["losses"][d.name] = [
            (h.get("step"), h.get("loss"), h.get("val_loss")) for h in res.get("history", [])
        ]
        out["losses"][d.name + "/test"] = res.get("test")
    return out


def skipped(proc: subprocess.CompletedProcess) -> list[str]:
    return [
        ln.split("] ", 1)[1].split(":")[0] for ln in proc.stderr.splitlines() if "unchanged, skipped" in ln
    ]


def ran(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln.split("] ", 1)[1].split(":")[0] for ln in proc.stderr.splitlines() if ln.endswith(": running")]


def test_route_sends_stage_keys_to_their_stage():
    own, staged, per_system = route(
        [
            "dir=x",
            "align.aligner.threshold=0.6",
            "+train.foo=1",
            "~evaluate.systems.identity",
            "gold=false",
            "systems.a-b.train.optim.lr=0.01",
            "systems.a-b.kind=icl",
        ]
    )
    assert own == ["dir=x", "gold=false"]
    assert staged == {
        "align": ["aligner.threshold=0.6"],
        "train": ["+foo=1"],
        "evaluate": ["~systems.identity"],
    }
    assert per_system == {"a-b": {"train": ["optim.lr=0.01"], "kind": "icl"}}


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    """One uninterrupted tiny run; the tests below compare against it. Its stdout and stderr go to a file,
    ``run.log`` beside it, as a SLURM job's or ``nohup``'s do."""
    run_dir = tmp_path_factory.mktemp("pipeline") / "ref"
    log = run_dir.parent / "run.log"
    with log.open("wb") as f:
        proc = subprocess.run(cmd(run_dir), stdout=f, stderr=subprocess.STDOUT, timeout=600)
    assert proc.returncode == 0, log.read_text(errors="replace")[-3000:]
    return run_dir


@pytest.mark.e2e
def test_a_log_file_gets_lines_not_progress_bars(reference_run):
    """Off a terminal no progress bar is drawn (their ``\\r`` redraws filled 146 lines of a tiny run's log):
    each loop writes one line when it ends, training its line per epoch and per run."""
    text = (reference_run.parent / "run.log").read_bytes().decode()
    assert "\r" not in text and "it/s" not in text and "%|" not in text
    lines = text.splitlines()
    # two trained systems of one epoch each: their epoch summaries and their training lines
    assert len([ln for ln in lines if re.match(r"epoch 0: val_loss", ln)]) == 2
    assert len([ln for ln in lines if re.search(r"training: \d+ steps in [\d.]+ s, loss \d", ln)]) == 2
    # the stages' log lines, the evaluation's table and the summary, nothing repeated per step
    assert len(lines) < 160, len(lines)


@pytest.mark.e2e
def test_run_writes_every_stage_and_results(reference_run):
    d = reference_run
    assert (d / "align" / "dataset_dict.json").is_file() and (d / "align" / "stats.json").is_file()
    systems = {"zero_shot", "finetuned_theta1", "finetuned_theta4"}
    assert {p.name for p in (d / "systems").iterdir()} == systems
    for s in systems:
        assert (d / "systems" / s / "predictions" / "test" / "en.txt").is_file()
    results = json.loads((d / "results.json").read_text())
    assert set(results["systems"]) == systems | {"copy"}
    evaluation = json.loads((d / "evaluation" / "results.json").read_text())
    # results.json carries the evaluation's numbers unchanged
    assert results["systems"]["copy"]["en"]["sari"] == evaluation["systems"]["copy"]["en"]["sari"]
    # ... and the shares of degenerate outputs: every generated output says whether it was cut at the cap
    assert results["degenerate"] == evaluation["degenerate"]
    for s in systems:
        gen = json.loads((d / "systems" / s / "predictions" / "test" / "generation.json").read_text())
        lines = (d / "systems" / s / "predictions" / "test" / "en.txt").read_text().splitlines()
        assert len(gen["cut"]["en"]) == len(lines) and all(isinstance(c, bool) for c in gen["cut"]["en"])
        out = results["systems"][s]["en"]["outputs"]
        assert out["cut_known"] == len(lines) and out["cut"] == sum(gen["cut"]["en"]) / len(lines)
        assert out["empty"] == sum(not x.strip() for x in lines) / len(lines)
    assert results["systems"]["copy"]["en"]["outputs"]["cut"] == 0.0
    run = json.loads((d / "run.json").read_text())
    assert run["systems"]["finetuned_theta4"]["theta"] == 4.0
    sweep = run["sweep"]
    assert sweep["parameter"] == "loss.theta"
    assert sweep["systems"] == ["finetuned_theta1", "finetuned_theta4"]
    # the paper's selection: best validation mean(SARI, BLEU), read from each system's own results
    val = {
        s: json.loads((d / "systems" / s / "all_results.json").read_text())["validation"]["mean_sari_bleu"]
        for s in sweep["systems"]
    }
    assert {s: v["mean_sari_bleu"] for s, v in sweep["validation"].items()} == val
    assert sweep["selected"] == max(val, key=val.get) and results["sweep"] == sweep
    assert set(run["timings"]) >= {"align", "evaluate", "train/finetuned_theta1"}
    # θ reached the training: the weighted loss differs between the two settings
    trained = ("finetuned_theta1", "finetuned_theta4")
    hist = {s: json.loads((d / "systems" / s / "all_results.json").read_text())["history"] for s in trained}
    first = {s: next(h["loss"] for h in hist[s] if "step" in h) for s in trained}
    assert first["finetuned_theta4"] > first["finetuned_theta1"] * 1.5


@pytest.mark.e2e
def test_rerun_skips_unchanged_and_reruns_downstream_of_a_change(reference_run, tmp_path):
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(reference_run, d, symlinks=True)
    # The stage configs hold the run directory's path, but their fingerprints read it as "<run>": a copied (or
    # moved) run directory skips every stage
    again = multimsd(d)
    assert again.returncode == 0, again.stderr[-2000:]
    assert ran(again) == [] and len(skipped(again)) == 5
    before = numbers(d)
    # a changed evaluation setting re-runs the evaluation only
    ev = multimsd(d, "evaluate.metrics.lowercase=false")
    assert ev.returncode == 0, ev.stderr[-2000:]
    assert ran(ev) == ["evaluate"] and "align" in skipped(ev)
    # a changed training setting of one system re-runs that system and the evaluation
    tr = multimsd(d, "evaluate.metrics.lowercase=false", "systems.finetuned.train.optim.lr=0.01")
    assert tr.returncode == 0, tr.stderr[-2000:]
    assert ran(tr) == ["train/finetuned_theta1", "train/finetuned_theta4", "evaluate"]
    assert numbers(d)["losses"]["finetuned_theta1"] != before["losses"]["finetuned_theta1"]
    # an output changed behind the run's back is detected and rebuilt, never used
    res = d / "evaluation" / "results.json"
    res.write_text(res.read_text().replace('"sari"', '"sarI"', 1))
    fix = multimsd(d, "evaluate.metrics.lowercase=false", "systems.finetuned.train.optim.lr=0.01")
    assert fix.returncode == 0 and ran(fix) == ["evaluate"], fix.stderr[-2000:]
    assert "changed since the stage finished" in fix.stderr
    assert '"sarI"' not in res.read_text()


def wait_then_kill(proc: subprocess.Popen, ready, timeout: float = 300) -> bool:
    """SIGKILL ``proc`` (and its children) as soon as ``ready()``; False when it finished first."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if ready():
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("kill point not reached in time")


@pytest.mark.e2e
def test_sigkill_at_three_points_then_same_numbers(reference_run, tmp_path):
    d = tmp_path / "killed"
    stages = d / ".stages"
    ckpt = d / "systems" / "finetuned_theta1" / "checkpoints"
    points = {
        "training the first system (alignment finished)": lambda: (stages / "align.json").exists(),
        "between checkpoints of a training run": lambda: ckpt.is_dir() and any(ckpt.glob("step_*")),
        "evaluating (every system finished)": lambda: (stages / "evaluate.started.json").exists(),
    }
    killed = []
    for name, ready in points.items():
        proc = subprocess.Popen(
            cmd(d), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        if wait_then_kill(proc, ready):
            killed.append(name)
            assert not (d / "results.json").exists() or name.startswith("evaluating")
    # Each point is polled every 20 ms and each stage takes seconds: every kill must have landed.
    assert killed == list(points), f"the run finished before these kill points: {set(points) - set(killed)}"
    final = multimsd(d)
    assert final.returncode == 0, final.stderr[-3000:]
    assert "align" in skipped(final)  # finished stages are not redone
    assert numbers(d) == numbers(reference_run)


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_in_training_is_one_line_then_the_same_command_continues(reference_run, tmp_path, sig):
    """Ctrl-C (SIGINT to the whole process group, as from a terminal) or SIGTERM while a system trains: exit
    130 / 143, one line naming the stage, the step and the last complete checkpoint, no traceback; the same
    command then skips what finished, resumes the training and ends with the uninterrupted run's numbers."""
    d = tmp_path / "run"
    ckpt = d / "systems" / "finetuned_theta1" / "checkpoints"
    err = tmp_path / "stderr"
    with err.open("w") as f:
        proc = subprocess.Popen(cmd(d), stdout=subprocess.DEVNULL, stderr=f, start_new_session=True)
    t0 = time.time()
    while not (ckpt.is_dir() and any(ckpt.glob("step_*"))):
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.time() - t0 < 300, "the interrupt point was not reached in time"
        time.sleep(0.02)
    os.killpg(proc.pid, sig)
    assert proc.wait(timeout=120) == 128 + sig
    text = err.read_text()
    assert "Traceback" not in text, text[-3000:]
    hits = [ln for ln in text.splitlines() if ln.startswith("interrupted")]
    assert len(hits) == 1 and text.rstrip().endswith(hits[0]), text[-3000:]
    assert re.fullmatch(
        r"interrupted( by SIGTERM)? in stage 3/\d+ \(train/finetuned_theta1\) (at step \d+/\d+( \(saving its "
        r"checkpoint\))?|in the evaluation of epoch \d \(after step \d+/\d+\)): the last complete checkpoint is "
        rf"{re.escape(str(ckpt))}/step_\d+; run the same command to continue \(finished stages are skipped\)",
        hits[0],
    ), hits[0]
    assert not (d / "results.json").exists()
    assert not [p for p in d.rglob(".*") if p.name != ".stages" and ".stages" not in p.parts]  # no temp files

    final = multimsd(d)
    assert final.returncode == 0, final.stderr[-3000:]
    assert skipped(final)[:2] == ["align", "train/zero_shot"]
    assert "train/finetuned_theta1: continuing an unfinished run" in final.stderr
    assert numbers(d) == numbers(reference_run)


@pytest.mark.e2e
def test_bad_input_fails_in_one_line_before_any_work(tmp_path):
    cases = {
        "typo in a stage key": (["train.optim.lrr=1"], "train config"),
        "unknown run key": (["colour=red"], "run config"),
        "unknown system kind": (["systems.copy.kind=magic"], "systems.copy.kind"),
        "training override of an unknown system": (["systems.nope.train.optim.lr=1"], "systems.nope"),
        "unwritable run dir": (["output.dir=/proc/no/run"], "cannot be written"),
        "run dir under a file": ([f"output.dir={tmp_path / 'f.txt' / 'run'}"], "not a directory"),
    }
    (tmp_path / "f.txt").write_text("x")
    for what, (extra, message) in cases.items():
        d = tmp_path / "run"
        # (output.dir, not the deprecated dir=, whose note would be a second line; tests/project/test_output_dir.py)
        args = [sys.executable, "-m", "multimsd", "run", "debug=tiny", f"output.dir={d}", *extra]
        t0 = time.time()
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2, (what, proc.stderr[-2000:])
        assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], (what, lines)
        assert not d.exists(), what
        assert time.time() - t0 < 60, what
    # a directory that is not a run directory is not written into
    other = tmp_path / "mine"
    other.mkdir()
    (other / "thesis.tex").write_text("x")
    proc = subprocess.run(
        [sys.executable, "-m", "multimsd", "run", "debug=tiny", f"output.dir={other}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "not a multimsd run directory" in proc.stderr
    assert sorted(p.name for p in other.iterdir()) == ["thesis.tex"]


def test_console_script_is_installed():
    exe = Path(sys.executable).with_name("multimsd")
    assert exe.is_file(), "pip install -e . installs the multimsd command"
    out = subprocess.run([str(exe), "run", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "multimsd run" in out.stdout and "align.KEY=VALUE" in out.stdout


@pytest.mark.integration
@pytest.mark.parametrize(
    "experiment, systems",
    [
        (
            "llama31_multi_weighted",
            ["zero_shot", *(f"finetuned_theta{t}" for t in (1, 2, 4, 8)), "five_shot"],
        ),
        ("mbart50_multi_weighted", [f"finetuned_theta{t}" for t in (1, 2, 4, 8)]),
    ],
)
def test_paper_presets_compose_every_stage(experiment, systems, tmp_path):
    """The presets' stage configs all compose (validated against the schemas) without running anything."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "multimsd",
            "run",
            f"experiment={experiment}",
            f"dir={tmp_path / 'r'}",
        ]
        + ["align.data=jsonl", "align.data.path=pairs.jsonl", "--cfg", "job"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    stages = [ln.split()[2].rstrip(":") for ln in proc.stdout.splitlines() if ln.startswith("# stage ")]
    assert stages == ["align", *(f"train/{s}" for s in systems), "evaluate"]
    assert not (tmp_path / "r").exists()


def test_systems_can_be_added_and_dropped_from_the_command_line(tmp_path):
    from multimsd.paths import conf_dir
    from multimsd.pipeline.run import compose, expand_systems

    cfg = compose("run", ["debug=tiny"], config_dir=conf_dir() / "pipeline")
    assert set(expand_systems(cfg)) == {"copy", "zero_shot", "finetuned_theta1", "finetuned_theta4"}
    cfg.systems.zero_shot.enabled = False
    cfg.sweep["values"] = ["2"]
    assert set(expand_systems(cfg)) == {"copy", "finetuned_theta2"}
    assert expand_systems(cfg)["finetuned_theta2"]["train"][-1] == "loss.theta=2"
