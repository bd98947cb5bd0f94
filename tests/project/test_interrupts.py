"""An interrupt is a normal end (issue #24): Ctrl-C (SIGINT) or SIGTERM during the work of train.py, align.py,
evaluate.py (``multimsd run``: tests/pipeline/test_run_pipeline.py) exits 130 / 143 with exactly one stderr line that
starts with ``interrupted`` and says where it stopped and how to go on, no traceback, no partial file; the
same command then resumes, and a resumed training run has the uninterrupted run's step losses (``==``)."""

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

PROGRESS_BAR = re.compile(r"^[\w .-]*:\s+\d+%\|")  # tqdm: "training:  42%|████ | 16/38 [...]"


def start(
    repo_root: Path, script: str, args: list[str], logs: Path, launcher=None, env=None
) -> subprocess.Popen:
    """The command in a session of its own (as a terminal's foreground job: Ctrl-C reaches the whole group)."""
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "stdout", "w") as out, open(logs / "stderr", "w") as err:
        return subprocess.Popen(
            [*(launcher or [sys.executable]), str(repo_root / script), *args],
            cwd=repo_root,
            stdout=out,
            stderr=err,
            start_new_session=True,
            env=env,
        )


def interrupt_when(proc: subprocess.Popen, ready, sig: int, timeout: float = 600) -> None:
    """Send ``sig`` to the command's process group as soon as ``ready()``; wait until it exits."""
    t0 = time.time()
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the command ended (status {proc.returncode}) before it could be interrupted")
        if time.time() - t0 > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("the interrupt point was not reached in time")
        time.sleep(0.02)
    os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the command did not exit after the interrupt")


def lines(text: str) -> list[str]:
    """Non-empty stderr lines, each progress bar update counted apart (tqdm rewrites its line with \\r)."""
    return [s for s in (x.strip() for x in re.split(r"[\r\n]", text)) if s and not PROGRESS_BAR.match(s)]


def the_interrupted_line(logs: Path) -> str:
    """Exactly one stderr line starts with ``interrupted``, it is the last one, and there is no traceback."""
    err = (logs / "stderr").read_text()
    assert "Traceback" not in err, err[-3000:]
    hits = [s for s in lines(err) if s.startswith("interrupted")]
    assert len(hits) == 1 and lines(err)[-1] == hits[0], err[-3000:]
    return hits[0]


def hidden_leftovers(*dirs: Path) -> list[Path]:
    """Temporary files and directories (every one this project writes starts with '.')."""
    return [p for d in dirs if d.exists() for p in d.rglob(".*")]


def step_losses(out: Path) -> list[float]:
    hist = json.loads((out / "all_results.json").read_text())["history"]
    return [h["loss"] for h in hist if "step" in h]


def run_to_end(repo_root: Path, script: str, args: list[str], logs: Path, launcher=None, env=None) -> None:
    proc = start(repo_root, script, args, logs, launcher, env)
    assert proc.wait(timeout=900) == 0, (logs / "stderr").read_text()[-3000:]


def check_checkpoints_are_whole(out: Path) -> None:
    from multimsd.training.checkpoint import manifest_problem

    ckpts = sorted((out / "checkpoints").iterdir())
    assert ckpts and all(p.name.startswith("step_") for p in ckpts), ckpts  # no .tmp_step_* left
    assert all(manifest_problem(p) is None for p in ckpts)
    assert not (out / "all_results.json").exists() and not (out / "predictions").exists()
    assert not hidden_leftovers(out, out.parent / "logs")


# The user's command of issue #24: tiny Llama + LoRA (dropout 0.05), 38 steps of one epoch, a checkpoint every 5.
ISSUE_24 = [
    "model=tiny_llama",
    "debug=train_tiny",
    "data.max_train_examples=null",
    "optim.batch_size=2",
    "optim.max_steps=60",
    "checkpoint_every=5",
]


@pytest.mark.e2e
def test_sigint_mid_epoch_then_the_same_command_resumes_exactly(tmp_path, repo_root):
    """The main regression test of issue #24."""
    run_to_end(repo_root, "train.py", [*ISSUE_24, f"output.dir={tmp_path / 'ref'}"], tmp_path / "ref_logs")
    expected = step_losses(tmp_path / "ref")
    assert len(expected) == 38

    out = tmp_path / "run"
    args = [*ISSUE_24, f"output.dir={out}"]
    proc = start(repo_root, "train.py", args, tmp_path / "logs")
    interrupt_when(proc, lambda: (out / "checkpoints" / "step_00000010").exists(), signal.SIGINT)
    assert proc.returncode == 130
    line = the_interrupted_line(tmp_path / "logs")
    m = re.fullmatch(
        r"interrupted at step (\d+)/38( \(saving its checkpoint\))?: the last complete checkpoint is "
        r"(\S+/checkpoints/step_(\d+)); run the same command to resume",
        line,
    )
    assert m, line
    assert int(m[4]) >= 10 and int(m[1]) > int(m[4]) and int(m[4]) % 5 == 0  # mid-epoch, in flight after it
    assert Path(m[3]).is_dir()
    check_checkpoints_are_whole(out)

    run_to_end(repo_root, "train.py", args, tmp_path / "logs2")
    results = json.loads((out / "all_results.json").read_text())
    assert results["resumed_from"] == m[3]
    assert step_losses(out) == expected  # exactly: every dropout mask, batch and update as uninterrupted


LSTM = [
    "model=tiny_lstm",
    "debug=train_tiny",
    "model.dropout=0.3",  # dropout drawn from the global torch RNG, as LoRA's
    "data.max_train_examples=null",  # 76 pairs, batch 4: 19 steps an epoch
    "optim.epochs=3",
    "optim.max_steps=null",
    "checkpoint_every=0",  # checkpoints at the end of each epoch only: resumed from an epoch boundary
]


@pytest.mark.e2e
def test_sigterm_resumes_from_an_epoch_boundary_exactly(tmp_path, repo_root):
    """SIGTERM (what SLURM sends before it kills a job) on the LSTM: exit 143, then resumed exactly."""
    run_to_end(repo_root, "train.py", [*LSTM, f"output.dir={tmp_path / 'ref'}"], tmp_path / "ref_logs")
    expected = step_losses(tmp_path / "ref")
    assert len(expected) == 57

    out = tmp_path / "run"
    args = [*LSTM, f"output.dir={out}"]
    proc = start(repo_root, "train.py", args, tmp_path / "logs")
    interrupt_when(proc, lambda: (out / "checkpoints" / "step_00000019").exists(), signal.SIGTERM)
    assert proc.returncode == 143
    line = the_interrupted_line(tmp_path / "logs")
    m = re.fullmatch(
        r"interrupted by SIGTERM (at step \d+/57( \(saving its checkpoint\))?|in the evaluation of epoch \d "
        r"\(after step \d+/57\)): the last complete checkpoint is (\S+/step_(\d+)); run the same command to "
        r"resume",
        line,
    )
    assert m and int(m[4]) in (19, 38), line  # the end of epoch 0 or 1
    check_checkpoints_are_whole(out)

    run_to_end(repo_root, "train.py", args, tmp_path / "logs2")
    assert json.loads((out / "all_results.json").read_text())["resumed_from"] == m[3]
    assert step_losses(out) == expected


@pytest.mark.e2e
def test_sigint_before_the_first_checkpoint_says_so(tmp_path, repo_root):
    """Interrupted before any checkpoint: the line says there is none, and the same command starts again."""
    out = tmp_path / "run"
    args = [*LSTM, "optim.batch_size=1", "optim.epochs=50", f"output.dir={out}"]  # 76 steps an epoch
    proc = start(repo_root, "train.py", args, tmp_path / "logs")
    # its run record is written as the run starts (the log has no progress bar to wait for: not a terminal)
    interrupt_when(proc, lambda: (out / "train_config.json").is_file(), signal.SIGINT)
    assert proc.returncode == 130
    line = the_interrupted_line(tmp_path / "logs")
    assert re.fullmatch(
        rf"interrupted (before training|at step \d+/3800): no checkpoint in {re.escape(str(out))} yet "
        r"\(checkpoint_every=0: one at the end of each epoch\); run the same command to start again",
        line,
    ), line
    assert not (out / "checkpoints").exists() or not any((out / "checkpoints").iterdir())
    assert not hidden_leftovers(out)


@pytest.mark.e2e
def test_align_sigint_writes_nothing(tmp_path, repo_root):
    """align.py (all 108 sample article pairs, embeddings not cached yet): interrupted while encoding."""
    out = tmp_path / "aligned"
    args = [f"output.dir={out}", f"cache_dir={tmp_path / 'cache'}"]
    proc = start(repo_root, "align.py", args, tmp_path / "logs")
    interrupt_when(proc, lambda: "encoding" in (tmp_path / "logs" / "stdout").read_text(), signal.SIGINT)
    assert proc.returncode == 130
    assert the_interrupted_line(tmp_path / "logs") == (
        f"interrupted: nothing written to {out}; run the same command again"
    )
    assert not out.exists() and not hidden_leftovers(tmp_path)


@pytest.mark.e2e
def test_evaluate_sigterm_writes_nothing_and_keeps_an_earlier_output(tmp_path, repo_root):
    """evaluate.py on 3000 rows (seconds of scoring): SIGTERM once it has read them; an earlier output stays."""
    words = [
        "the",
        "patient",
        "was",
        "given",
        "a",
        "dose",
        "of",
        "medicine",
        "for",
        "pain",
        "after",
        "surgery",
    ]
    refs = tmp_path / "refs.jsonl"
    with refs.open("w") as f:
        for i in range(3000):
            c = " ".join(words[(i * k) % len(words)] for k in range(1, 21))
            f.write(json.dumps({"complex": c, "simple": " ".join(c.split()[:12]), "lang": "en"}) + "\n")
    out = tmp_path / "evaluation"
    out.mkdir()
    (out / "results.json").write_text("{}\n")  # an earlier output of evaluate.py (its marker file)
    proc = start(repo_root, "evaluate.py", [f"refs.path={refs}", f"output.dir={out}"], tmp_path / "logs")
    interrupt_when(
        proc, lambda: "reference rows" in (tmp_path / "logs" / "stdout").read_text(), signal.SIGTERM
    )
    assert proc.returncode == 143
    assert the_interrupted_line(tmp_path / "logs") == (
        f"interrupted by SIGTERM: nothing written to {out}; run the same command again"
    )
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    assert (out / "results.json").read_text() == "{}\n" and not hidden_leftovers(tmp_path)


@pytest.mark.slow
def test_sigint_under_accelerate_launch_with_two_processes(tmp_path, repo_root):
    """Two CPU processes (torchrun, gloo): Ctrl-C reaches every process; all exit, the main one alone prints
    the line (the launcher adds its own report), and the same command resumes exactly."""
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29533",
    ]
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    common = [*ISSUE_24, "optim.batch_size=1"]
    run_to_end(
        repo_root, "train.py", [*common, f"output.dir={tmp_path / 'ref'}"], tmp_path / "rl", launcher, env
    )
    expected = step_losses(tmp_path / "ref")
    out = tmp_path / "run"
    args = [*common, f"output.dir={out}"]
    proc = start(repo_root, "train.py", args, tmp_path / "logs", launcher, env)
    t0 = time.time()
    interrupt_when(proc, lambda: (out / "checkpoints" / "step_00000010").exists(), signal.SIGINT)
    # Every worker left by itself: the launcher did not have to escalate to SIGKILL (after 30 s).
    assert time.time() - t0 < 25
    err = (tmp_path / "logs" / "stderr").read_text()
    ours = [s for s in lines(err) if s.startswith("interrupted")]
    assert len(ours) == 1, err[-3000:]  # the main process's alone; 38 steps each: 76 pairs, 2 x batch 1
    assert re.fullmatch(
        r"interrupted at step \d+/38: the last complete checkpoint is \S+; run the .*", ours[0]
    )
    # No traceback of ours; torchrun's agent reports the signal it got with its own (SignalException).
    assert err.count("Traceback") <= 1 and lines(err)[-1].startswith("torch.distributed.elastic"), err[-3000:]
    check_checkpoints_are_whole(out)
    run_to_end(repo_root, "train.py", args, tmp_path / "logs2", launcher, env)
    assert step_losses(out) == expected


# ------------------------------------------------------------------------------------------- the module
@pytest.fixture
def handlers():
    """multimsd.interrupts' handlers installed in this (test) process, and everything put back afterwards."""
    from multimsd import interrupts

    saved = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    yield interrupts
    for s, h in saved.items():
        signal.signal(s, h)
    interrupts._installed, interrupts._received, interrupts._pending, interrupts._depth = (
        False,
        None,
        False,
        0,
    )
    interrupts._raised = None


def test_the_first_signal_raises_later_ones_are_ignored_and_deferred_blocks_finish(handlers):
    interrupts = handlers
    with interrupts.installed():
        done = []
        with pytest.raises(interrupts.Interrupted) as e, interrupts.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs here, and holds the signal
            done.append("the block went on")
        assert done and e.value.signum == signal.SIGTERM and interrupts.exit_code(e.value) == 143
        os.kill(os.getpid(), signal.SIGINT)  # a second signal while the first one unwinds: ignored
        time.sleep(0.05)
    assert interrupts.received() == signal.SIGTERM


def test_the_line_is_put_together_from_the_notes(handlers):
    interrupts = handlers
    with (
        pytest.raises(KeyboardInterrupt) as e,
        interrupts.note(advice="run the same command to continue"),
        interrupts.note(where="in stage 3/5 (train/x)"),
        interrupts.note(where=lambda: "at step 4/6", state="the last complete checkpoint is c"),
    ):
        raise KeyboardInterrupt
    assert interrupts.message(e.value) == (
        "interrupted in stage 3/5 (train/x) at step 4/6: the last complete checkpoint is c; "
        "run the same command to continue"
    )
    assert interrupts.exit_code(e.value) == 130
    assert interrupts.message(KeyboardInterrupt()) == "interrupted; run the same command again"
    with pytest.raises(ValueError) as e, interrupts.note(where="x"):  # not an interrupt: no notes
        raise ValueError
    assert not hasattr(e.value, "multimsd_notes")


class SignalsItselfWhenCollected:
    """An object whose finalizer receives a SIGTERM and runs on a while (as regex's ``Group.__del__`` did
    during evaluate.py's tokenising: the signal was dropped there and the command exited 0)."""

    def __init__(self, trace: list):
        self.trace = trace

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        total = sum(range(100_000))  # the interpreter checks for signals in here
        self.trace.append(("finalizer finished", total))


def run_until_interrupted(trace: list, collect) -> None:
    """Collect a finalizer that signals, then keep working: the interrupt must stop the work."""
    collect()
    for i in range(2000):  # 10 s of work; interrupted, a few milliseconds of it
        trace.append(i)
        time.sleep(0.005)


def test_a_signal_inside_a_finalizer_interrupts_once_it_has_returned(handlers, capsys):
    interrupts = handlers
    trace: list = []

    def collect():
        obj = SignalsItselfWhenCollected(trace)
        del obj  # the last reference: __del__ runs now

    with pytest.raises(interrupts.Interrupted) as e, interrupts.installed():
        run_until_interrupted(trace, collect)
    assert e.value.signum == signal.SIGTERM
    # the finalizer ran to its end, then the work was interrupted (before: all 2000 steps ran, no interrupt)
    assert trace[0] == ("finalizer finished", sum(range(100_000))) and len(trace) < 1000, len(trace)
    assert "Exception ignored" not in capsys.readouterr().err


def test_a_signal_inside_a_weakref_callback_is_delivered_again(handlers, capsys):
    """A finalizer the handler cannot recognise by its frames: Python reports the dropped interrupt to
    sys.unraisablehook, which delivers the signal again instead of printing it."""
    import weakref

    interrupts = handlers
    trace: list = []

    class Box:
        pass

    def callback(_ref):
        os.kill(os.getpid(), signal.SIGTERM)
        total = sum(range(100_000))
        trace.append(("callback finished", total))

    def collect():
        box = Box()
        trace.append(weakref.ref(box, callback))
        del box

    with pytest.raises(interrupts.Interrupted), interrupts.installed():
        run_until_interrupted(trace, collect)
    # the first delivery cut the callback (Python dropped it there); the second one stopped the work
    assert len([t for t in trace if isinstance(t, int)]) < 1000
    assert "Exception ignored" not in capsys.readouterr().err
    assert sys.unraisablehook is not None and "multimsd" not in getattr(sys.unraisablehook, "__module__", "")


def test_a_signal_swallowed_by_a_bare_except_is_delivered_again(handlers):
    """A library's ``try: … except: pass`` catches the interrupt (Cython's memoryview set-up does, while numpy.random
    is imported: a SIGTERM landing there ended evaluate.py with exit 0). The dropped exception delivers the
    signal again, and the work after the bare except is interrupted."""
    interrupts = handlers
    trace: list = []
    with pytest.raises(interrupts.Interrupted) as e, interrupts.installed():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler raises here
            trace.append("not reached")
        except:  # noqa: E722 - the library's bare except, on purpose
            trace.append("swallowed")
        for i in range(2000):  # 10 s of work; interrupted, a few milliseconds of it
            trace.append(i)
            time.sleep(0.005)
    assert e.value.signum == signal.SIGTERM and trace[0] == "swallowed" and len(trace) < 1000, len(trace)
    assert interrupts.exit_code(e.value) == 143


def test_a_reported_interrupt_is_not_delivered_again(handlers, capsys):
    """Once exit_interrupted has printed the line, the exception may be dropped: no second delivery."""
    interrupts = handlers
    with pytest.raises(SystemExit) as done, interrupts.installed():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        except interrupts.Interrupted as e:
            interrupts.exit_interrupted(e)
    assert done.value.code == 143
    del done
    import gc

    gc.collect()
    time.sleep(0.05)  # a second delivery would raise here (the handlers are still ours: a signal came)
    assert capsys.readouterr().err.strip() == "interrupted by SIGTERM; run the same command again"


def test_a_server_asked_to_stop_says_it_stopped_with_status_0(handlers, capsys):
    """Issue #49: a studio stopped by Ctrl-C or SIGTERM ended as it should; no advice to run it again, status 0,
    and the interrupt, reported, is not delivered again."""
    interrupts = handlers
    with pytest.raises(SystemExit) as done, interrupts.installed():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except interrupts.Interrupted as e:
            interrupts.exit_stopped(e, "studio")
    assert done.value.code == 0
    del done
    import gc

    gc.collect()
    time.sleep(0.05)  # a second delivery would raise here
    assert capsys.readouterr().err.strip() == "studio: stopped (Ctrl-C)"
