"""A full disk loses nothing (issue #32, item 3): a write that fails for want of space (ENOSPC), at a file-size
limit (EFBIG) or on a read-only remount (EROFS) stops the command with one line naming the output and the
cause, exit 2; no temporary file stays; what was complete stays usable; once there is space again the same
command finishes with the results of a run that never failed.

The disk is a tmpfs of its own (a real ENOSPC; ``mount -o remount,ro`` for EROFS), filled to the last byte at
the moment chosen; tests that need one are skipped where mounting is not permitted (not root, no
CAP_SYS_ADMIN). EFBIG comes from ``RLIMIT_FSIZE`` in a subprocess (SIGXFSZ ignored, so the write fails instead
of killing the process).
"""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, disk_errno, write_error, write_text_atomic, writing

FULL = "no space left on device writing {} (free space and run the same command to continue)"


class SmallDisk:
    """A tmpfs mounted at ``path``: :meth:`fill` takes every free byte (a file ``FILLER``), :meth:`free` gives
    them back; :meth:`read_only` / :meth:`writable` remount it."""

    def __init__(self, path: Path, size: str) -> None:
        self.path = path
        path.mkdir(parents=True)
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode})")
        self.filler = path / "FILLER"

    def fill(self) -> None:
        """Write the filler until the file system refuses another byte."""
        with open(self.filler, "ab", buffering=0) as f:
            for chunk in (1 << 20, 1 << 12):
                block = b"\0" * chunk
                while True:
                    try:
                        if f.write(block) < chunk:
                            break
                    except OSError as e:
                        assert e.errno == errno.ENOSPC, e
                        break
        assert os.statvfs(self.path).f_bavail == 0

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def remount(self, *options: str) -> None:
        subprocess.run(["mount", "-o", ",".join(["remount", *options]), str(self.path)], check=True)

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def disk(tmp_path):
    d = SmallDisk(tmp_path / "disk", "8m")
    try:
        yield d
    finally:
        d.unmount()


def leftovers(root: Path) -> list[Path]:
    """Temporary files and directories (every one multimsd writes starts with '.')."""
    return [p for p in root.rglob(".*")]


# ------------------------------------------------------------------------------ the writers of fsutil
def test_a_full_disk_is_one_line_naming_the_file_and_the_earlier_file_stays(disk):
    target = disk.path / "out" / "results.json"
    write_text_atomic(target, "old\n")
    disk.fill()
    with pytest.raises(MultimsdError) as e:
        write_text_atomic(target, "x" * 100_000)
    assert str(e.value) == FULL.format(target)
    assert target.read_text() == "old\n" and leftovers(disk.path) == []
    disk.free()
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n"


def test_a_directory_output_is_all_or_nothing_on_a_full_disk(disk):
    out = disk.path / "evaluation"
    with atomic_directory(out) as tmp:
        (tmp / "results.json").write_text("{}\n")
    disk.fill()
    with pytest.raises(MultimsdError) as e, atomic_directory(out) as tmp:
        (tmp / "results.json").write_text("{}\n")
        (tmp / "scores.bin").write_bytes(os.urandom(1 << 20))
    assert str(e.value) == FULL.format(out)
    assert sorted(p.name for p in out.iterdir()) == ["results.json"] and leftovers(disk.path) == []


def test_a_read_only_remount_is_one_line(disk):
    target = disk.path / "report.html"
    write_text_atomic(target, "<p>old</p>\n")
    disk.remount("ro")
    try:
        with pytest.raises(MultimsdError) as e:
            write_text_atomic(target, "<p>new</p>\n")
        assert str(e.value).startswith(f"read-only file system writing {target} (")
        assert str(e.value).endswith("and run the same command to continue)")
    finally:
        disk.remount("rw")
    assert target.read_text() == "<p>old</p>\n" and leftovers(disk.path) == []


def test_library_writes_that_do_not_say_why_are_recognised(disk):
    """safetensors says the cause in words, torch.save only "file write failed": the file system is asked."""
    import torch
    from safetensors.torch import save_file

    disk.fill()
    weights = {"w": torch.zeros(1 << 18)}
    with (
        pytest.raises(MultimsdError, match="^no space left on device writing .*model.safetensors"),
        writing(disk.path / "model.safetensors"),
    ):
        save_file(weights, str(disk.path / "model.safetensors"))
    with pytest.raises(RuntimeError) as raw:
        torch.save(weights, str(disk.path / "optimizer.bin"))
    assert "No space left" not in str(raw.value)  # nothing in the message says why: hence the probe
    assert disk_errno(raw.value, disk.path) == errno.ENOSPC
    disk.free()
    assert disk_errno(raw.value, disk.path) is None  # the same error with space to spare is another failure
    assert disk_errno(sqlite3.OperationalError("database or disk is full")) == errno.ENOSPC
    assert disk_errno(ValueError("bad input")) is None
    quota = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), "/scratch/me/run/.results.json.x1")
    assert str(write_error(quota, Path("/scratch/me/run/results.json"))) == (
        "disk quota exceeded writing /scratch/me/run/results.json (free space within your quota and run the "
        "same command to continue)"
    )


EFBIG_SCRIPT = """
import sys
import time
from pathlib import Path
import torch
from multimsd.commands.stage import run_stage
from multimsd.fsutil import atomic_directory

def save(_cfg):
    with atomic_directory(Path(sys.argv[1])) as tmp:
        torch.save({"w": torch.zeros(1 << 20)}, str(tmp / "optimizer.bin"))  # 4 MiB

run_stage(save, None)
"""


@pytest.mark.e2e
def test_a_file_size_limit_is_one_line_and_exit_2(tmp_path):
    """RLIMIT_FSIZE (``ulimit -f``) at 1 MiB, SIGXFSZ ignored: torch.save's write fails (EFBIG, unsaid)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    out = tmp_path / "best"
    proc = subprocess.run(
        [sys.executable, "-c", EFBIG_SCRIPT, str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"error: file too large writing {out} (raise the file-size limit (ulimit -f) and run the same "
        "command to continue)"
    ]
    assert list(tmp_path.iterdir()) == []  # the partial directory is gone


def test_a_killed_writers_temporaries_are_removed_by_the_next_writer(tmp_path):
    """SIGKILL leaves a writer's temporary file or directory (no clean-up runs): the next writer of the same
    output removes those of dead processes of this host, and nothing else."""
    from multimsd.fsutil import temporary_prefix

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:

        def of(pid: int, name: str, kind: str = "tmp") -> str:
            return temporary_prefix(name, kind).replace(f"-{os.getpid()}-", f"-{pid}-") + "x1"

        (tmp_path / of(dead.pid, "results.json")).write_text("half")
        (tmp_path / of(dead.pid, "align")).mkdir()
        (tmp_path / of(dead.pid, "align") / "data.arrow").write_text("half")
        (tmp_path / of(dead.pid, "align", "old")).mkdir()
        kept = [
            of(live.pid, "results.json"),  # a writer at work
            of(dead.pid, "other.json"),  # another output's
            f".results.json.tmp-elsewhere.1-{dead.pid}-x1",  # another machine's, on a shared file system
        ]
        for name in kept:
            (tmp_path / name).write_text("in use")
        write_text_atomic(tmp_path / "results.json", "{}\n")
        with atomic_directory(tmp_path / "align") as tmp:
            (tmp / "data.arrow").write_text("whole")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*kept, "align", "results.json"])
    finally:
        live.kill()
        live.wait()


# ------------------------------------------------------------------------------ the studio's journal
TEXTS = {("en", "a1"): (["c0", "c1", "c2"], ["s0", "s1"]), ("en", "a2"): (["d0"], ["t0"])}
ACTIONS = [
    ("accept", "en", "a1", [((0,), (0,))]),
    ("link", "en", "a1", [((1, 2), (1,))]),
    ("undo", "en", "a1", []),
    ("reject", "en", "a2", [((0,), (0,))]),
]


def journal_in(d: Path, annotator: str = "ann"):
    from multimsd.studio.journal import Journal

    j = Journal(d / f"journal-{annotator}.jsonl", d / f"gold-{annotator}.jsonl", annotator, TEXTS)
    j.start(None)
    return j


def records(journal: Path) -> list[dict]:
    """A journal's records without their time stamps."""
    return [{k: v for k, v in json.loads(x).items() if k != "time"} for x in journal.read_text().splitlines()]


def test_studio_action_on_a_full_disk_is_taken_back_whole(disk, tmp_path):
    """The first action of a new journal fails at its append, the second one (the journal's page has room)
    at the gold file after the append: either way the journal and the gold file stay as they were, the
    annotator sees the error, and the same clicks later give the gold of a studio that never failed."""
    ref = journal_in(tmp_path / "ref")
    for a in ACTIONS:
        ref.act(*a)

    d = disk.path / "studio"
    j = journal_in(d)
    gold_before = j.gold_path.read_bytes()
    disk.fill()
    with pytest.raises(MultimsdError, match=f"^no space left on device writing {j.path}"):
        j.act(*ACTIONS[0])
    assert not j.path.exists() and j.gold_path.read_bytes() == gold_before and j.records == []
    disk.free()
    j.act(*ACTIONS[0])
    journal_before, gold_before = j.path.read_bytes(), j.gold_path.read_bytes()
    disk.fill()
    with pytest.raises(MultimsdError, match=f"^no space left on device writing {j.gold_path}"):
        j.act(*ACTIONS[1])  # appended (the journal's last page had room), then the gold file failed
    assert j.path.read_bytes() == journal_before and j.gold_path.read_bytes() == gold_before
    assert [r["action"] for r in j.records] == ["accept"] and j.seq == 1  # memory follows the disk
    assert leftovers(disk.path) == []
    disk.free()
    for a in ACTIONS[1:]:
        j.act(*a)
    assert j.gold_path.read_bytes() == ref.gold_path.read_bytes()
    assert records(j.path) == records(ref.path)  # the same records, seq numbers included


# ------------------------------------------------------------------------------ the embedding cache
@pytest.mark.integration
def test_embedding_cache_on_a_full_disk_keeps_what_it_had(disk, tiny_encoder):
    from test_faults import TEXTS as SENTENCES
    from test_faults import embedder_cfg

    from multimsd.alignment.embed import Embedder

    cfg = embedder_cfg(tiny_encoder)
    more = [f"filler sentence number {i} of the second batch" for i in range(100)]
    fresh = Embedder(cfg, disk.path / "fresh")
    expected = fresh.encode(SENTENCES + more, show_progress=False)
    cache = disk.path / "cache"
    first = Embedder(cfg, cache)
    first._model = fresh.model  # loaded once (seconds): the cache is what is tested
    first.encode(SENTENCES, show_progress=False)
    disk.fill()
    with pytest.raises(MultimsdError) as e:
        first.encode(more, show_progress=False)
    assert str(e.value) == FULL.format(first.cache.path)
    first.cache.close()
    assert leftovers(disk.path) == []  # no journal of the failed transaction beside the database
    disk.free()
    again = Embedder(cfg, cache)
    again._model = fresh.model
    got = again.encode(SENTENCES + more, show_progress=False)
    assert again.n_encoded == len(more)  # what was committed before the disk filled was kept, and used
    np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------------------ the aligned DatasetDict
def aligned_rows(n: int, tag: str) -> list[dict]:
    return [
        {
            "complex": f"{tag} complex sentence {k} " + "word " * 40,
            "simple": f"{tag} simple sentence {k}",
            "lang": "en",
            "article_id": f"a{k // 10}",
            "score": 0.5,
            "cosine": 0.5,
            "complex_idx": k,
            "simple_idx": k,
            "complex_members": [k],
            "simple_members": [k],
            "split": ("train", "validation", "test")[k % 3],
        }
        for k in range(n)
    ]


@pytest.mark.integration
def test_aligned_dataset_dict_on_a_full_disk_keeps_the_earlier_one(disk):
    import datasets

    from multimsd.alignment.stage import write_output
    from multimsd.config import AlignConfig

    out = disk.path / "align"
    stats = {"languages": ["en"]}
    write_output(out, aligned_rows(30, "old"), stats, "old stats", AlignConfig())
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    disk.fill()
    with pytest.raises(MultimsdError) as e:
        write_output(out, aligned_rows(3000, "new"), stats, "new stats", AlignConfig())
    assert str(e.value) == FULL.format(out)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert leftovers(disk.path) == []
    assert datasets.load_from_disk(str(out))["train"][0]["complex"].startswith("old")  # still usable
    disk.free()
    write_output(out, aligned_rows(3000, "new"), stats, "new stats", AlignConfig())
    assert datasets.load_from_disk(str(out))["train"].num_rows == 1000


# ------------------------------------------------------------------------------ checkpoints
@pytest.mark.integration
@pytest.mark.usefixtures("fresh_accelerate_state")
def test_checkpoint_on_a_full_disk_then_the_same_run_resumes_exactly(disk, tmp_path, monkeypatch):
    """The disk fills as step 3's checkpoint is written: one line naming it, no partial checkpoint, steps 1-2
    whole; with space again the same run resumes from step 2 and gives the uninterrupted run's losses."""
    from test_faults import reset_accelerate, step_losses, tiny_cfg

    from multimsd.training import loop
    from multimsd.training.checkpoint import manifest_problem

    one_epoch = {"batch_size": 2, "epochs": 1, "lr": 1e-2}  # 4 optimizer steps, a checkpoint after each
    expected = step_losses(loop.run({**tiny_cfg(tmp_path, "ref"), "optim": one_epoch}))
    assert len(expected) == 4
    real_save = loop.save_checkpoint

    def disk_fills_at_step_3(accelerator, out, state, keep=2):
        if state.step == 3:
            disk.fill()
        return real_save(accelerator, out, state, keep)

    monkeypatch.setattr(loop, "save_checkpoint", disk_fills_at_step_3)
    out = disk.path / "run"
    reset_accelerate()
    with pytest.raises(MultimsdError) as e:
        loop.run({**tiny_cfg(disk.path, "run"), "optim": one_epoch})
    assert str(e.value) == FULL.format(out / "checkpoints" / "step_00000003")
    ckpts = sorted((out / "checkpoints").iterdir())
    assert [p.name for p in ckpts] == ["step_00000001", "step_00000002"]
    assert all(manifest_problem(p) is None for p in ckpts) and leftovers(out) == []

    disk.free()
    monkeypatch.setattr(loop, "save_checkpoint", real_save)
    reset_accelerate()
    resumed = loop.run({**tiny_cfg(disk.path, "run"), "optim": one_epoch})
    assert resumed["resumed_from"].endswith("step_00000002")
    assert step_losses(resumed) == expected


# ------------------------------------------------------------------------------ multimsd run, end to end
# tests/pipeline/test_run_pipeline.py's tiny run (a training long enough to fill the disk in: 6 steps, a checkpoint every 2)
RUN = ["debug=tiny", "train.optim.max_steps=6", "train.checkpoint_every=2"]


def multimsd_run(run_dir: Path, cache: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "multimsd",
        "run",
        *RUN,
        f"output.dir={run_dir}",
        f"align.cache_dir={cache}",  # the embedding cache on the small disk too
    ]


def the_error_line(stderr: str, disk: Path) -> str:
    """Exactly one ``error:`` line, the last one, no traceback, naming a path on the full disk."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr[-3000:]
    m = re.fullmatch(
        r"error: no space left on device writing (\S+) \(free space and run the same command to continue\)",
        errors[0],
    )
    assert m and m[1].startswith(str(disk)), errors[0]
    return m[1]


def check_nothing_half_written(run_dir: Path, cache: Path) -> None:
    """No temporary file or directory (the stage records aside), the run lock released, every checkpoint whole,
    no SQLite journal beside the embedding cache."""
    from multimsd.training.checkpoint import manifest_problem

    stray = [p for p in leftovers(run_dir) if ".stages" not in p.relative_to(run_dir).parts]
    assert stray == [], stray
    assert not list(run_dir.parent.glob(".*.lock")), "the run lock was not released"
    assert not list(cache.rglob("*-journal")), list(cache.rglob("*"))
    for ckpt in run_dir.glob("systems/*/checkpoints/*"):
        assert ckpt.name.startswith("step_") and manifest_problem(ckpt) is None, ckpt


@pytest.mark.slow
def test_multimsd_run_on_a_filling_disk_continues_to_the_same_results(tmp_path):
    """The disk fills while the run aligns, trains and evaluates (three commands, each stopped by it), and then
    while a finished run rewrites its results and report: each time one line and exit 2, nothing half written;
    each time the same command, once space is freed, goes on; the end is the uninterrupted run's numbers."""
    from test_run_pipeline import numbers

    ref = tmp_path / "ref"
    ref_cmd = multimsd_run(ref, tmp_path)[:-1]  # the default embedding cache: where it is matters not
    proc = subprocess.run(ref_cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]

    disk = SmallDisk(tmp_path / "disk", "64m")
    try:
        run_dir, cache = disk.path / "run", disk.path / "cache"
        stages = run_dir / ".stages"
        ckpts = run_dir / "systems" / "finetuned_theta1" / "checkpoints"
        points = {
            "aligning": lambda: (stages / "align.started.json").exists(),
            "training": lambda: ckpts.is_dir() and any(ckpts.glob("step_*")),
            "evaluating": lambda: (stages / "evaluate.started.json").exists(),
        }
        failed = {}
        for name, ready in points.items():
            err = tmp_path / f"{name}.stderr"
            with err.open("w") as f:
                proc = subprocess.Popen(multimsd_run(run_dir, cache), stdout=subprocess.DEVNULL, stderr=f)
            t0 = time.time()
            while not ready():
                assert proc.poll() is None, f"{name}: the run ended first\n" + err.read_text()[-3000:]
                assert time.time() - t0 < 600, f"{name}: not reached in time"
                time.sleep(0.02)
            disk.fill()
            assert proc.wait(timeout=600) == 2, err.read_text()[-3000:]
            failed[name] = the_error_line(err.read_text(), disk.path)
            check_nothing_half_written(run_dir, cache)
            assert not (run_dir / "results.json").exists()
            disk.free()
        done = subprocess.run(multimsd_run(run_dir, cache), capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        assert numbers(run_dir) == numbers(ref), failed
        print("the disk filled while writing:", *(f"{k}: {v}" for k, v in failed.items()), sep="\n  ")

        # A finished run: the same command skips every stage and rewrites run.json, results.json and the report.
        report = (run_dir / "report.html").read_bytes()
        disk.fill()
        again = subprocess.run(multimsd_run(run_dir, cache), capture_output=True, text=True, timeout=900)
        assert again.returncode == 2, again.stderr[-3000:]
        assert the_error_line(again.stderr, disk.path) == str(run_dir / "run.json")
        assert (run_dir / "report.html").read_bytes() == report  # the earlier report stays, whole
        check_nothing_half_written(run_dir, cache)
        disk.free()
        again = subprocess.run(multimsd_run(run_dir, cache), capture_output=True, text=True, timeout=900)
        assert again.returncode == 0, again.stderr[-3000:]
        assert numbers(run_dir) == numbers(ref)
    finally:
        disk.unmount()


def test_report_on_a_full_disk_keeps_the_earlier_report(disk):
    """report.md is written first, report.html second: the disk is full for report.html only (report.md's old
    pages are freed for its new copy). One line naming report.html; the earlier report.html stays whole."""
    from test_report import make_run

    from multimsd.report import build_report

    run = make_run(disk.path)
    build_report(run)
    html = (run / "report.html").read_bytes()
    disk.fill()
    (run / "report.md").unlink()
    with pytest.raises(MultimsdError) as e:
        build_report(run)
    assert str(e.value) == FULL.format(run / "report.html")
    assert (run / "report.html").read_bytes() == html and (run / "report.md").is_file()
    assert leftovers(disk.path) == []
    disk.free()
    assert build_report(run)["html"] == run / "report.html"


def test_tokenized_cache_on_a_full_disk_is_one_line_and_leaves_no_file(disk, tmp_path):
    from test_train import tiny_cfg as train_cfg

    from multimsd.training.data import load_pairs, select, tokenize_dataset
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    tc = to_train_config(train_cfg(tmp_path, model="tiny_llama"))
    _, tok = load_model_and_tokenizer(tc.model)
    rows = select(load_pairs(None), tc.data, tc.seed)["train"]
    cache = disk.path / "tokenized"
    cache.mkdir()
    disk.fill()
    with pytest.raises(
        MultimsdError, match=rf"^no space left on device writing {cache}/tokenized-\w+\.arrow "
    ):
        tokenize_dataset(tok, rows, "causal", 512, cache)
    assert list(cache.iterdir()) == []
    disk.free()
    assert len(tokenize_dataset(tok, rows, "causal", 512, cache)) == len(rows)


def test_offline_model_build_on_a_full_disk_leaves_no_partial_build(disk):
    from multimsd.buildcache import cached_build

    def write(out: Path) -> dict:
        (out / "weights.bin").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
        return {}

    disk.fill()
    with pytest.raises(MultimsdError) as e:
        cached_build(disk.path, "m", {"v": 1}, ("weights.bin",), write, force=False)
    assert str(e.value) == FULL.format(disk.path / "m")
    assert [p.name for p in leftovers(disk.path)] == [".m.lock"]  # the builders' lock file, kept by design
    assert not (disk.path / "m").exists()
    disk.free()
    built = cached_build(disk.path, "m", {"v": 1}, ("weights.bin",), write, force=False)
    assert (built / "weights.bin").stat().st_size == 1 << 20


def test_evaluation_outputs_on_a_full_disk_keep_the_earlier_ones(disk, tmp_path):
    """evaluate's results.json, table.md, scores.png: all or nothing; the earlier directory stays whole."""
    from test_evaluate_cli import ROWS, cfg, write_lines, write_refs

    from multimsd.evaluation.stage import run

    refs = write_refs(tmp_path / "refs.jsonl", [r for r in ROWS if r[0] == "en"])
    system = write_lines(tmp_path / "sys.txt", [s for g, _, s in ROWS if g == "en"])
    c = cfg(disk.path, refs, mine=system)
    c["output"]["plot"] = True
    c.update(terms={"enabled": False}, metrics={"include": ["sari", "bleu"]}, bootstrap={"samples": 0})
    first = run(c)
    out = disk.path / "out"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"results.json", "table.md", "scores.png"} <= set(before)
    disk.fill()
    with pytest.raises(MultimsdError) as e:
        run(c)
    assert str(e.value) == FULL.format(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and leftovers(disk.path) == []
    disk.free()
    assert run(c)["systems"] == first["systems"]
