"""One writer per output directory (multimsd.runlock): a second ``multimsd run`` / align / train / evaluate
into a directory another process writes is one line and exit 2, having written nothing; the lock dies with
its holder (SIGKILL included), so the next command needs no cleanup."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from multimsd import runlock
from multimsd.errors import MultimsdError

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("RANK", None)

# A process that holds the lock of each directory named on its command line until it is killed.
HOLDER = """
import contextlib, sys, time
from multimsd.runlock import hold
with contextlib.ExitStack() as stack:
    for d in sys.argv[1:]:
        stack.enter_context(hold(d, "test holder"))
    print("held", flush=True)
    time.sleep(600)
"""


@contextlib.contextmanager
def holder(*dirs: Path):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, *map(str, dirs)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()


def snapshot(root: Path) -> dict:
    """Every entry under ``root`` (and root itself): kind, size and modification time in ns."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        out[p.relative_to(root).as_posix()] = (p.is_dir(), st.st_size, st.st_mtime_ns)
    return out


def multimsd(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "multimsd", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )


def refusal(proc: subprocess.CompletedProcess, directory: Path, pid: int, command: str = "test holder"):
    """Exit 2 and exactly one line: who holds ``directory`` since when, and what to do."""
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("note: dir is deprecated")]
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith(f"error: output.dir {directory.resolve()} is being written by pid {pid} on host ")
    assert f" on host {socket.gethostname()} since 20" in line and f" UTC ({command}); " in line
    assert line.endswith("wait for it to finish or stop it, or choose another output.dir"), line


# ------------------------------------------------------------------------------------------- the lock itself
def test_the_lock_file_lies_beside_the_directory_and_names_its_holder(tmp_path):
    d = tmp_path / "out" / "run"
    assert runlock.lock_path(d) == tmp_path / "out" / ".run.lock"
    assert (
        runlock.lock_path(tmp_path / "x" / "journal-kim.jsonl") == tmp_path / "x" / ".journal-kim.jsonl.lock"
    )
    with runlock.output_lock(d, "multimsd run"):
        assert not d.exists()  # only the lock file (and the directory that holds it) is created
        info = json.loads((tmp_path / "out" / ".run.lock").read_text())
        assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
        assert info["command"] == "multimsd run" and info["since"].endswith(" UTC")
        # this process asking again is refused too (a POSIX lock would not exclude its own process)
        with pytest.raises(MultimsdError, match=rf"is being written by pid {os.getpid()} .*\(multimsd run\)"):
            runlock.output_lock(d, "train").acquire()
        # a directory inside it has its own lock: a run and its stages never wait for each other
        with runlock.hold(d / "systems" / "a", "train"):
            assert (d / "systems" / ".a.lock").is_file()
    # released: the lock file and the directory made for it are gone (a command that failed leaves nothing)
    assert list(tmp_path.iterdir()) == []
    with runlock.hold(d, "again"):  # free again
        pass


def test_a_second_process_is_refused_until_the_holder_is_killed(tmp_path):
    d = tmp_path / "run"
    with holder(d) as proc:
        lock = runlock.output_lock(d, "mine")
        with pytest.raises(MultimsdError) as e:
            lock.acquire()
        assert f"is being written by pid {proc.pid} on host {socket.gethostname()}" in str(e.value)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    # Killed: the kernel dropped its lock; its details are still in the file, and nobody has to remove it.
    assert json.loads(runlock.lock_path(d).read_text())["pid"] == proc.pid
    with runlock.output_lock(d, "mine"):
        assert json.loads(runlock.lock_path(d).read_text())["pid"] == os.getpid()
    assert not runlock.lock_path(d).exists()


def test_a_lock_file_removed_by_its_releasing_holder_is_not_taken(tmp_path, monkeypatch):
    """The race of removing lock files: B opens the file, A releases (removes it, then frees it), B locks the
    removed file. B must notice (the path names another file, or none) and lock the path's file instead."""
    d = tmp_path / "run"
    real_lockf = runlock.fcntl.lockf
    calls = []

    def lockf(fd, op):
        if not calls:  # between B's open and B's lock: A removes the file it held
            runlock.lock_path(d).unlink()
        calls.append(fd)
        return real_lockf(fd, op)

    runlock.lock_path(d).write_text("")  # A's file
    monkeypatch.setattr(runlock.fcntl, "lockf", lockf)
    with runlock.output_lock(d, "B") as lock:
        assert len(calls) == 2  # locked the removed file, saw it, locked the new one
        assert os.fstat(lock.fd).st_ino == runlock.lock_path(d).stat().st_ino


def test_only_the_main_process_of_a_distributed_launch_takes_it(tmp_path, monkeypatch):
    d = tmp_path / "run"
    with runlock.hold(d, "rank 0"):
        monkeypatch.setenv("RANK", "1")
        with runlock.hold(d, "rank 1"):  # one launch is one writer: rank 1 does not ask
            pass
        monkeypatch.setenv("RANK", "0")
        with pytest.raises(MultimsdError, match=r"\(rank 0\)"):
            runlock.output_lock(d, "another launch").acquire()


def test_a_file_system_without_locks_runs_unlocked_with_one_warning(tmp_path, monkeypatch, caplog):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(runlock.fcntl, "lockf", no_locks)
    with (
        caplog.at_level(logging.WARNING, logger="multimsd.runlock"),
        runlock.hold(tmp_path / "a" / "run", "x"),
    ):
        assert list(tmp_path.iterdir()) == []  # nothing of the lock is left to confuse anyone
    assert "does not support file locks (No locks available)" in caplog.text


@pytest.mark.integration
def test_a_command_stopped_by_bad_input_leaves_no_lock_behind(tmp_path):
    """What made the lock (the file, the directories for it) goes when the command fails before it writes."""
    d = tmp_path / "new" / "out"
    proc = multimsd("evaluate", f"output.dir={d}", f"refs.path={tmp_path / 'missing.jsonl'}")
    assert proc.returncode == 2 and proc.stderr.startswith("error: "), proc.stderr
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------- the commands
@pytest.mark.e2e
def test_a_second_multimsd_run_is_one_line_exit_2_and_writes_nothing(tmp_path):
    """The run directory of an earlier run (a re-run into it) and a new one (the first run just started)."""
    existing = tmp_path / "earlier"
    (existing / ".stages").mkdir(parents=True)
    (existing / ".stages" / "align.json").write_text("{}")
    (existing / "results.json").write_text("{}")
    fresh = tmp_path / "new"
    with holder(existing, fresh) as proc:
        before = snapshot(tmp_path)
        for d in (existing, fresh):
            refusal(multimsd("run", "debug=tiny", f"output.dir={d}"), d, proc.pid)
            refusal(multimsd("run", "debug=tiny", f"dir={d}"), d, proc.pid)  # the deprecated name too
        assert snapshot(tmp_path) == before
        assert not fresh.exists()


@pytest.mark.e2e
@pytest.mark.parametrize("stage", ["align", "train", "evaluate"])
def test_a_second_stage_command_is_one_line_exit_2_and_writes_nothing(tmp_path, stage):
    d = tmp_path / "out"
    d.mkdir()
    (d / "kept.txt").write_text("x")
    with holder(d) as proc:
        before = snapshot(tmp_path)
        refusal(multimsd(stage, f"output.dir={d}"), d, proc.pid)
        assert snapshot(tmp_path) == before


@pytest.mark.integration
def test_align_gold_mode_holds_its_report_dir(tmp_path):
    d = tmp_path / "gold"
    with holder(d) as proc:
        proc_ = multimsd("align", "mode=gold", f"gold.report_dir={d}")
        assert proc_.returncode == 2 and proc_.stderr.count("\n") == 1, proc_.stderr
        assert f"gold.report_dir {d} is being written by pid {proc.pid}" in proc_.stderr
        assert "choose another gold.report_dir" in proc_.stderr


@pytest.mark.e2e
def test_two_real_runs_at_once_the_second_is_refused_and_the_first_finishes(tmp_path):
    """Issue #32's row: the same ``multimsd run debug=tiny`` in two terminals, the second 3 s later (~30 s on
    2 CPU cores: the tiny run is short enough for the default suite)."""
    d = tmp_path / "run"
    args = ["run", "debug=tiny", f"output.dir={d}"]
    first = subprocess.Popen(
        [sys.executable, "-m", "multimsd", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + 120
        while not (d / ".stages").is_dir():  # the first one is writing
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not start"
            time.sleep(0.2)
        time.sleep(3)
        second = multimsd(*args)
        refusal(second, d, first.pid, command="multimsd run")
        out, err = first.communicate(timeout=1200)
        assert first.returncode == 0, err[-3000:]
        assert "continuing an unfinished run" not in err and "resumed from" not in out + err
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    again = multimsd(*args, timeout=1200)  # after the first finished: as before, every stage skipped
    assert again.returncode == 0, again.stderr[-3000:]
    assert "unchanged, skipped" in again.stderr and ": running" not in again.stderr
