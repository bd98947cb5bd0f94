"""Faults: an unwritable output directory is refused before any work, and a write that fails says its own
cause; corrupted checkpoints and caches are detected, reported and not used."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_writable_dir, disk_errno, write_error, write_text_atomic

# (script, the option naming its output directory, extra options)
ENTRY_POINTS = [
    ("align.py", "output.dir", []),
    ("align.py", "gold.report_dir", ["mode=gold"]),
    ("train.py", "output.dir", []),
    ("evaluate.py", "output.dir", []),
]


def unwritable(tmp_path, kind: str) -> str:
    if kind == "proc":
        return "/proc/x/out"  # root may write anywhere by mode bits, but not into /proc
    (tmp_path / "file.txt").write_text("a regular file\n", encoding="utf-8")
    return str(tmp_path / "file.txt" / "out")


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["proc", "under_file"])
@pytest.mark.parametrize(("script", "option", "extra"), ENTRY_POINTS)
def test_unwritable_output_dir_is_one_line_before_any_work(
    python, repo_root, tmp_path, script, option, extra, kind
):
    target = unwritable(tmp_path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    start = time.monotonic()
    proc = run_cli(python, repo_root, *extra, f"{option}={target}", cwd=tmp_path, script=script, timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and option in lines[0], proc.stderr
    assert target in lines[0]
    # Before any work: no data loaded, no model built, no progress printed, and quickly.
    assert "encod" not in proc.stdout.lower() and "article pairs" not in proc.stdout + proc.stderr
    assert took < 30, f"{script} took {took:.1f}s to refuse an unwritable {option}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created (no Hydra outputs either)


def test_check_writable_dir_creates_nothing(tmp_path):
    check_writable_dir(tmp_path / "a" / "b" / "c", "output.dir")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(MultimsdError, match=r"is under .*f, which is not a directory"):
        check_writable_dir(tmp_path / "f" / "out", "output.dir")
    with pytest.raises(MultimsdError, match=r"output.dir .*f is not a directory"):
        check_writable_dir(tmp_path / "f", "output.dir")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(MultimsdError, match="dangling symbolic link"):
        check_writable_dir(tmp_path / "dangling" / "out", "output.dir")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "f"]


def test_check_writable_dir_aside_probes_the_parent(tmp_path, monkeypatch):
    """An output written aside (atomic_directory) needs its parent to take new entries, whether it exists or not."""
    import tempfile

    out = tmp_path / "out"
    out.mkdir()
    probed = []
    real = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", lambda **kw: probed.append(kw["dir"]) or real(**kw))
    check_writable_dir(out, "--to", aside=True)
    check_writable_dir(out / "new" / "x", "--to", aside=True)
    assert probed == [tmp_path, out] and list(out.iterdir()) == []  # nothing created


# --- a write that fails: its own cause, in one line naming the output (issue #49 item 7c)
TO_DO = "choose another output directory"
AGAIN = "and run the same command to continue"
CAUSES = {  # errno -> the line, of the output {out} whose directory {parent} refuses its temporary directory
    "ENOSPC": f"no space left on device writing {{out}} (free space {AGAIN})",
    "EACCES": f"permission denied writing {{out}} (no write permission on {{parent}}: {TO_DO})",
    "EPERM": f"operation not permitted writing {{out}} (not permitted on {{parent}}: {TO_DO})",
    "EROFS": f"read-only file system writing {{out}} (make the file system writable or {TO_DO} {AGAIN})",
    "ENOENT": f"no such directory writing {{out}} ({{parent}} takes no new files: {TO_DO})",
}


@pytest.mark.parametrize("name", CAUSES)
def test_a_write_error_names_its_own_cause(tmp_path, monkeypatch, name):
    """The temporary directory of the output cannot be made, for each cause (root passes mode checks and
    ``mount`` may be refused: the errno is simulated where the writer meets it)."""
    import tempfile

    def refused(prefix: str, dir: Path) -> str:
        code = getattr(errno, name)
        raise OSError(code, os.strerror(code), os.path.join(dir, prefix + "x1"))

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    out = tmp_path / "evaluation"
    with pytest.raises(MultimsdError) as e, atomic_directory(out):
        pass
    assert str(e.value) == CAUSES[name].format(out=out, parent=tmp_path)


def test_real_places_that_cannot_be_written(tmp_path):
    """/proc takes no new files (and answers 0 bytes free: not a full disk); a file is not a directory."""
    with pytest.raises(MultimsdError) as e, atomic_directory(Path("/proc/forbidden/x")):
        pass
    assert str(e.value) == f"no such directory writing /proc/forbidden/x (/proc takes no new files: {TO_DO})"
    (tmp_path / "f").write_text("x", encoding="utf-8")
    target = tmp_path / "f" / "run" / "results.json"
    with pytest.raises(MultimsdError) as e:
        write_text_atomic(target, "{}\n")
    assert str(e.value) == f"not a directory writing {target} ({tmp_path / 'f'} is a file: {TO_DO})"


def test_a_failure_to_read_inside_a_writer_is_not_a_write_error(tmp_path):
    """Only a failure at the output's own place is one: an input that is missing keeps its own error."""
    with pytest.raises(FileNotFoundError), atomic_directory(tmp_path / "out") as tmp:
        (tmp / "copy.json").write_text((tmp_path / "input.json").read_text())
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "/proc/x")
    assert write_error(missing) is None  # no output named (a stage's last resort): not a place error


def test_the_file_system_is_asked_only_when_nothing_says_why(monkeypatch):
    """torch.save says only "file write failed": then a full file system is the cause. A place error says its
    own cause, and /proc (no blocks, 0 free) is never full."""
    from multimsd import fsutil

    unsaid = RuntimeError("file write failed")
    assert disk_errno(unsaid, "/proc/x") is None
    monkeypatch.setattr(fsutil, "_fs_cause", lambda _where: errno.ENOSPC)  # a full disk
    assert disk_errno(unsaid, "/scratch/x") == errno.ENOSPC
    said = FileNotFoundError(errno.ENOENT, "No such file or directory", "/scratch/x")
    assert disk_errno(said, "/scratch/x") is None


# --- checkpoints and the best model: verified against their manifest when read


def tiny_cfg(tmp_path, name: str) -> dict:
    """The LoRA tiny-llama run of tests/training/test_checkpoint.py: 8 optimizer steps, a checkpoint after each."""
    from test_checkpoint import lora_cfg

    return lora_cfg(tmp_path, name)


def step_losses(res: dict) -> list[float]:
    return [h["loss"] for h in res["history"] if "step" in h]


def truncate(path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def flip_bytes(path) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 8] = bytes(b ^ 0xFF for b in data[mid : mid + 8])  # same size: only the hash can tell
    path.write_bytes(bytes(data))


def reset_accelerate() -> None:
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


@pytest.mark.integration
@pytest.mark.usefixtures("fresh_accelerate_state")
def test_corrupted_checkpoint_is_reported_and_the_previous_one_resumed(tmp_path, monkeypatch, caplog):
    from multimsd.training import loop
    from multimsd.training.checkpoint import MANIFEST

    expected = step_losses(loop.run(tiny_cfg(tmp_path, "ref")))
    assert len(expected) == 8
    ckpts = tmp_path / "ref" / "checkpoints"
    assert sorted(p.name for p in ckpts.iterdir()) == ["step_00000007", "step_00000008"]  # keep-2 rotation
    assert (ckpts / "step_00000008" / MANIFEST).is_file() and (tmp_path / "ref" / "best" / MANIFEST).is_file()

    real_save = loop.save_checkpoint

    def crash_after_step_5(accelerator, out, state, keep=2):
        real_save(accelerator, out, state, keep)
        if state.step == 5:
            raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(loop, "save_checkpoint", crash_after_step_5)
    reset_accelerate()
    with pytest.raises(KeyboardInterrupt):
        loop.run(tiny_cfg(tmp_path, "run"))
    monkeypatch.setattr(loop, "save_checkpoint", real_save)

    # 1. The newest checkpoint's weights are cut short: reported by file name, the one before is resumed.
    ckpts = tmp_path / "run" / "checkpoints"
    truncate(ckpts / "step_00000005" / "model.safetensors")
    reset_accelerate()
    with caplog.at_level("WARNING", logger="multimsd"):
        resumed = loop.run(tiny_cfg(tmp_path, "run"))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "checkpoint" in r.msg]
    assert len(warnings) == 1, warnings
    assert "step_00000005/model.safetensors" in warnings[0] and "truncated" in warnings[0]
    assert resumed["resumed_from"].endswith("step_00000004")
    assert step_losses(resumed) == expected
    # the skipped checkpoint did not outlive the rotation in place of a good one
    assert sorted(p.name for p in ckpts.iterdir()) == ["step_00000007", "step_00000008"]

    # 2. Both checkpoints damaged (bytes flipped at the same size, a file missing): none is used, the run starts
    # afresh and still gives the uninterrupted run's losses.
    flip_bytes(ckpts / "step_00000008" / "optimizer.bin")
    (ckpts / "step_00000007" / "model.safetensors").unlink()
    caplog.clear()
    reset_accelerate()
    with caplog.at_level("WARNING", logger="multimsd"):
        fresh = loop.run(tiny_cfg(tmp_path, "run"))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "checkpoint" in r.msg]
    assert len(warnings) == 2, warnings
    assert "step_00000008/optimizer.bin" in warnings[0] and "SHA-256" in warnings[0]
    assert "step_00000007/model.safetensors is missing" in warnings[1]
    assert fresh["resumed_from"] is None
    assert step_losses(fresh) == expected

    # 3. The best model, reloaded for the final predictions, is checked the same way: a damaged file is an error
    # naming it, never silently used.
    from multimsd.training.config import TrainConfig
    from multimsd.training.kinds import get_kind

    class Unwrapping:  # load_best only asks the accelerator to unwrap the model
        @staticmethod
        def unwrap_model(model):
            return model

    best = tmp_path / "ref" / "best"
    victim = max((p for p in best.iterdir() if p.name != MANIFEST), key=lambda p: p.stat().st_size)
    flip_bytes(victim)
    with pytest.raises(MultimsdError, match=rf"best model cannot be used: .*{victim.name} does not match"):
        loop.load_best(TrainConfig(), get_kind("causal"), best, Unwrapping(), object())


# --- the SQLite embedding cache: checked on open, vectors checked on read

TEXTS = [
    "Deep vein thrombosis is a clot.",
    "Ein Blutgerinnsel im Bein.",
    "脚の静脈に血栓ができます。",
    "short",
]


def embedder_cfg(tiny_encoder):
    from multimsd.config import EmbedderConfig

    return EmbedderConfig(name="tiny", model=str(tiny_encoder), backend="transformers", pooling="cls")


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "embedding cache" in r.msg]


@pytest.mark.integration
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_damaged_embedding_cache_is_moved_aside_and_rebuilt(tiny_encoder, tmp_path, caplog, damage):
    from multimsd.alignment.embed import Embedder

    cfg = embedder_cfg(tiny_encoder)
    expected = Embedder(cfg, tmp_path / "fresh").encode(TEXTS)
    first = Embedder(cfg, tmp_path / "cache")
    first.encode(TEXTS)
    # enough rows that the database spans several pages, so a cut falls inside its b-tree
    first.encode([f"filler sentence number {i}" for i in range(300)], show_progress=False)
    path = first.cache.path
    first.cache.close()
    if damage == "garbage":
        path.write_bytes(b"this is not a database\n" * 100)
    else:
        data = path.read_bytes()
        assert len(data) > 4 * 4096
        path.write_bytes(data[: len(data) // 2])

    with caplog.at_level("WARNING", logger="multimsd"):
        again = Embedder(cfg, tmp_path / "cache")
        got = again.encode(TEXTS)
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and str(path) in warnings[0] and "damaged" in warnings[0], warnings
    assert again.n_encoded == len(TEXTS)  # nothing of the damaged file was used
    np.testing.assert_array_equal(got, expected)
    assert path.with_name(path.name + ".corrupt").is_file()
    # the rebuilt cache is a good one: the next run opens it quietly and takes everything from it
    caplog.clear()
    with caplog.at_level("WARNING", logger="multimsd"):
        third = Embedder(cfg, tmp_path / "cache")
        np.testing.assert_array_equal(third.encode(TEXTS), expected)
    assert third.n_encoded == 0 and cache_warnings(caplog) == []


@pytest.mark.integration
def test_cached_vector_of_the_wrong_length_is_encoded_again(tiny_encoder, tmp_path, caplog):
    import sqlite3

    from multimsd.alignment.embed import Embedder, EmbeddingCache

    cfg = embedder_cfg(tiny_encoder)
    first = Embedder(cfg, tmp_path)
    expected = first.encode(TEXTS)
    assert first.cache.dim == expected.shape[1]
    path = first.cache.path
    first.cache.close()
    db = sqlite3.connect(path)
    cut = EmbeddingCache.key("", TEXTS[0])
    db.execute("UPDATE emb SET vec = substr(vec, 1, 10) WHERE key = ?", (cut,))  # 10 bytes: 2.5 floats
    # doubled, and stored as TEXT by ||: neither its type nor its length is a vector's
    db.execute("UPDATE emb SET vec = vec || vec WHERE key = ?", (EmbeddingCache.key("", TEXTS[1]),))
    db.commit()
    db.close()

    with caplog.at_level("WARNING", logger="multimsd"):
        second = Embedder(cfg, tmp_path)
        got = second.encode(TEXTS)
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and "2 stored vector(s) of the wrong length" in warnings[0], warnings
    assert second.n_encoded == 2  # only the two bad ones
    np.testing.assert_array_equal(got, expected)
    third = Embedder(cfg, tmp_path)  # and they were overwritten with good ones
    np.testing.assert_array_equal(third.encode(TEXTS), expected)
    assert third.n_encoded == 0


# --- offline model builds: the marker lists every file's size


def test_truncated_file_of_a_cached_build_forces_a_rebuild(tmp_path, caplog):
    from multimsd.buildcache import MARKER, cached_build

    calls = []

    def write(out):
        calls.append(out)
        (out / "weights.bin").write_bytes(bytes(range(256)) * 16)
        (out / "sub").mkdir()
        (out / "sub" / "vocab.txt").write_text("a\nb\n", encoding="utf-8")
        return {}

    build = lambda: cached_build(tmp_path, "m", {"v": 1}, ("weights.bin",), write, force=False)  # noqa: E731
    target = build()
    assert build() == target and len(calls) == 1  # a good build is reused
    assert '"sub/vocab.txt": 4' in (target / MARKER).read_text(encoding="utf-8")
    truncate(target / "weights.bin")
    with caplog.at_level("WARNING", logger="multimsd"):
        assert build() == target
    assert len(calls) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "weights.bin has 2048 bytes, the marker says 4096" in warnings[0], warnings
    assert (target / "weights.bin").read_bytes() == bytes(range(256)) * 16
