"""One writer per output directory, and one studio per annotator: an OS lock that dies with its holder.

Two ``multimsd run`` into one run directory (a double launch, a SLURM job requeued while the first still runs)
would train the same system into the same checkpoints at once; two studios of one annotator would both append
to one journal, each rebuilding the gold file from its own memory. So every command that writes holds an
exclusive lock while it writes: ``multimsd run`` its run directory, align.py its ``output.dir`` (mode=gold:
``gold.report_dir``), train.py and evaluate.py their ``output.dir``, the studio its annotator's journal. A
second writer gets one line (``MultimsdError``: exit 2) naming the holder's pid, host and start, having written
nothing.

Why these choices:

* **The lock of a path P is the file ``.P.lock`` beside it** (``outputs/.run.lock`` for ``outputs/run``), not
  inside it: align.py and evaluate.py replace their output directory whole by a rename
  (:func:`multimsd.fsutil.atomic_directory`, which already writes its temporary siblings there) and
  ``multimsd run`` removes a stage's directory whose config changed; a lock file inside would go with them.
  The lock file is created (the parent directory too, as the command would) before anything else is written;
  a second writer finds it and creates nothing. The holder removes it when it is done (the directories made
  for it too, when they are still empty), so a command that stops early, on bad input, leaves nothing behind;
  one left by a killed holder is harmless, the next writer locks it. Removing a lock file races with a writer
  that has just opened it: so a writer that got its lock checks that the path still names the file it locked,
  and tries again if not.
* **POSIX record locks** (``fcntl.lockf``: ``F_SETLK`` on the whole file), because the kernel drops them when
  the holding process ends, however it ends (SIGKILL, OOM kill, a crash): no stale lock to remove by hand.
  They are not inherited by forked children (data-loader workers), so a killed run frees its directory at
  once. They are also the lock that network file systems forward: the Linux NFS client sends them to the
  server (NLM for NFSv3, the protocol's own LOCK for NFSv4), as does GPFS; Lustre with the ``flock`` mount
  option, BeeGFS with ``tuneUseGlobalFileLocks = true``. (``flock()`` on NFS is emulated with the same POSIX
  lock since Linux 2.6.12; it would add nothing.) Where the file system refuses locks (ENOLCK: NFS mounted
  ``nolock`` without a lock manager; ENOSYS / EOPNOTSUPP: Lustre ``noflock``) the command runs unlocked with
  one warning, as before this module: a lock is a safeguard, not a reason to stop a run (docs/slurm.md).
  A POSIX lock is per process and any ``close`` of the file in that process drops it, so the holder never
  opens its own lock file twice: one process that asks twice for a lock it holds is refused like another.
* **The holder writes its pid, host, start time and command into the file after it has the lock** (and
  fsyncs it, for readers on other NFS clients); the details of a killed holder mean nothing once it is gone.
* **One lock per directory, nested**: ``multimsd run`` holds its run directory while its stages, in the same
  process, each hold their own (``<run>/.align.lock``, ``<run>/systems/.NAME.lock``, …): different files, no
  deadlock, and a stray ``multimsd train output.dir=<run>/systems/NAME`` is refused while the run trains it.
* **Under a launcher with N processes only the launcher's rank 0 takes the lock**, before ``Accelerator()``
  starts: N processes of one launch are one writer, and only the main one writes the output directory. The
  rank is the launcher's (:func:`multimsd.launcher.detect`): ``RANK`` / ``WORLD_SIZE`` from torchrun and
  ``accelerate launch``, ``PMI_RANK`` / ``OMPI_COMM_WORLD_RANK`` / ``MV2_COMM_WORLD_RANK`` from MPI,
  ``SLURM_PROCID`` of ``SLURM_STEP_NUM_TASKS`` from ``srun``; no such variable: one process, the writer.
  A process of another rank skips the lock, so it must never write: it is in the main process's group or it
  does not run. Hence the other half of the rule (issue #37): processes that no launcher joins (``srun -n 2``
  or ``mpirun -n 2`` of a command, without torchrun) are refused here, every one of them, before anything is
  written (:func:`multimsd.launcher.check_joinable`); and the training stage refuses, before the lock and
  again right after ``Accelerator()``, a launch whose processes Accelerate did not join into one group of
  the launcher's size (``conf/accelerate/ddp.yaml`` on a machine without a GPU: each process would be its own
  ``num_processes 1`` main process; :func:`multimsd.launcher.check_training_launch`). A refused launch's other
  processes stop with the same line, or when the launcher stops them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from multimsd.errors import MultimsdError

log = logging.getLogger(__name__)

# Locks this process holds, by the lock file's (device, inode): POSIX locks do not exclude their own process.
_held: dict[tuple[int, int], WriterLock] = {}
_UNSUPPORTED = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}


def lock_path(path: Path | str) -> Path:
    """Where the lock of ``path`` (a directory or a file) lives: ``.NAME.lock`` beside it."""
    path = Path(path).expanduser().resolve()
    if not path.name:
        raise MultimsdError(f"{path}: the file system root cannot be an output directory")
    return path.parent / f".{path.name}.lock"


def is_main_process() -> bool:
    """Whether this process writes for its launch: the launcher's rank 0 (``RANK``, an MPI rank or
    ``SLURM_PROCID``: :func:`multimsd.launcher.detect`), or a process that no launcher started."""
    from multimsd.launcher import is_main_process as main

    return main()


class WriterLock:
    """An exclusive lock on ``path`` (a lock file), described to a second writer as ``what``.

    ``command``: what the holder is (``multimsd run``); ``advice``: what a refused writer can do."""

    def __init__(
        self, path: Path, what: str, command: str, advice: str, target: tuple[Path, str] | None = None
    ) -> None:
        self.path, self.what, self.command, self.advice = Path(path), what, command, advice
        self.target = target  # (the directory written, its config key): an unwritable one is reported as such
        self.fd: int | None = None
        self.key: tuple[int, int] | None = None
        self.made: list[Path] = []  # directories created for the lock file, removed with it when left empty

    def acquire(self) -> WriterLock:
        """Take the lock or raise the one-line refusal. Creates the lock file (and its directory) if missing."""
        # This very process holds it: refused before the file is opened, since closing another descriptor
        # of it would drop the lock this process holds.
        with contextlib.suppress(OSError):
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) in _held:
                raise MultimsdError(self._refusal(_held[(st.st_dev, st.st_ino)].holder()))
        for _ in range(100):
            fd = self._open()
            try:
                st = os.fstat(fd)
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as e:
                    if e.errno in (errno.EACCES, errno.EAGAIN):
                        raise MultimsdError(self._refusal(self._read_holder())) from None
                    if e.errno not in _UNSUPPORTED:
                        raise
                    log.warning(
                        "%s: its file system does not support file locks (%s); running without the "
                        "one-writer check (docs/slurm.md)",
                        self.what,
                        e.strerror or errno.errorcode.get(e.errno, e.errno),
                    )
                    with contextlib.suppress(OSError):
                        self.path.unlink()
                    os.close(fd)
                    self._remove_made()
                    return self
                # Locked; but a holder that was releasing may have removed this file between our open and our
                # lock: then the path names another file (or none), and the lock is that one's to take.
                now = os.stat(self.path)
                if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                    raise FileNotFoundError(self.path)
            except FileNotFoundError:
                os.close(fd)
                continue
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                self._remove_made()
                raise
            break
        else:  # pragma: no cover - a hundred holders released it while we tried
            raise MultimsdError(f"{self.what}: cannot lock {self.path}: it keeps being replaced")
        self.fd, self.key = fd, (st.st_dev, st.st_ino)
        _held[self.key] = self
        self._write_holder()
        return self

    def release(self) -> None:
        """Give the lock back: remove the lock file (and the directories made for it, when empty), then close
        it, which is what frees the lock. A command that stopped early leaves nothing behind."""
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        _held.pop(self.key, None)
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(fd)
        self._remove_made()

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    # ------------------------------------------------------------------------------------------ internals
    def _open(self) -> int:
        missing = []
        d = self.path.parent
        while not d.exists() and d.parent != d:
            missing.append(d)
            d = d.parent
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.made = [m for m in missing if m not in self.made] + self.made  # deepest first
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as e:
            from multimsd.fsutil import check_writable_dir

            self._remove_made()
            if self.target is not None:  # /proc, a read-only mount, a path under a file: the usual line
                check_writable_dir(*self.target)
            raise MultimsdError(
                f"{self.what}: cannot create its lock file {self.path}: {e.strerror or e} "
                "(the directory that holds it must be writable)"
            ) from None

    def _remove_made(self) -> None:
        for d in self.made:  # deepest first; one that is not empty (the command wrote there) stays
            try:
                d.rmdir()
            except OSError:
                break
        self.made = []

    def holder(self) -> dict:
        """This holder's details, as written into the lock file."""
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since)),
            "command": self.command,
        }

    def _write_holder(self) -> None:
        self.since = time.time()
        data = (json.dumps(self.holder()) + "\n").encode()
        with contextlib.suppress(OSError):  # the details are for the message; the lock is what counts
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, data, 0)
            os.fsync(self.fd)

    def _read_holder(self) -> dict | None:
        """The holder's details; it writes them right after taking the lock, so a refused writer that came
        in between waits a moment for them."""
        for _ in range(20):
            with contextlib.suppress(OSError, ValueError):
                info = json.loads(self.path.read_text(encoding="utf-8"))
                if isinstance(info, dict) and "pid" in info:
                    return info
            time.sleep(0.05)
        return None

    def _refusal(self, holder: dict | None) -> str:
        if holder is None:
            who = "another process (it has not written its details yet)"
        else:
            who = (
                f"pid {holder.get('pid')} on host {holder.get('host')} since {holder.get('since')} "
                f"({holder.get('command')})"
            )
        return f"{self.what} is being written by {who}; {self.advice}"


def output_lock(directory: Path | str, command: str, key: str = "output.dir") -> WriterLock:
    """The lock of an output directory ``directory`` (set by the config key ``key``), held by ``command``."""
    directory = Path(directory).expanduser().resolve()
    return WriterLock(
        lock_path(directory),
        f"{key} {directory}",
        command,
        f"wait for it to finish or stop it, or choose another {key}",
        target=(directory, key),
    )


@contextlib.contextmanager
def hold(directory: Path | str | None, command: str, key: str = "output.dir") -> Iterator[None]:
    """Hold the lock of output directory ``directory`` for the block (nothing when it is None, and on the
    processes of a distributed launch other than the main one). Processes that no launcher joined (``srun -n 2``
    of a command) are refused, every one (:func:`multimsd.launcher.check_joinable`)."""
    from multimsd.launcher import check_joinable

    if directory is None or not str(directory):
        yield
        return
    check_joinable()
    if not is_main_process():
        yield
        return
    with output_lock(directory, command, key):
        yield
