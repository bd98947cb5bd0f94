"""Interrupts as a normal end of a command: Ctrl-C (SIGINT) and SIGTERM (``kill``; SLURM sends it before a kill).

Every command (``align.py``, ``train.py``, ``evaluate.py``, ``multimsd …``) runs inside :func:`installed`: in
the main thread of the process, SIGINT and SIGTERM then raise :class:`Interrupted` (a ``KeyboardInterrupt``) where
the program is, so one path handles both. The work in flight is dropped as the exception unwinds; every output
is written aside and renamed into place (:mod:`multimsd.fsutil`, the training checkpoints), so what unwinding
removes is only temporary. :func:`multimsd.commands.stage.run_stage` and :func:`guard` turn it into one line on stderr
(printed by the main process of a multi-process launch only), no traceback, and exit status 128 + the signal
(130 for SIGINT, 143 for SIGTERM)::

    interrupted at step 31/38: the last complete checkpoint is out/checkpoints/step_00000030; run the same command to resume

The line is put together from :func:`note` blocks the exception passed through on its way out, innermost
first: where the work was (``at step 31/38``; the pipeline adds ``in stage 3/5 (train/finetuned_theta1)``),
what is on disk (``the last complete checkpoint is …``, ``nothing written to …``) and what to do (the
outermost block's advice: ``run the same command to resume``).

* Only the first signal interrupts. Later ones (a second Ctrl-C, the SIGTERM a launcher forwards after the
  terminal's SIGINT) are ignored while the first one unwinds, so clean-up (removing a temporary directory)
  is not cut in the middle and cannot print a second traceback. SIGKILL remains for a process that hangs.
* :func:`deferred` marks the few steps that must not be cut: the renames that put a finished output in place.
  A signal arriving inside is held and raised when the block ends.
* A signal arriving inside a finalizer (an object's ``__del__`` run by the garbage collector, a weakref
  callback) is raised once the finalizer has returned: an exception raised there is printed and dropped by
  Python (``Exception ignored in …``), and the command ran on to its end as if no signal had come (found:
  ``regex``'s ``Group.__del__`` during evaluate.py's tokenising swallowed a SIGTERM, exit 0).
* A signal swallowed by a library's bare ``except:`` is delivered again: the dropped :class:`Interrupted`
  notices it is collected before :func:`exit_interrupted` reported it (found: Cython's memoryview set-up,
  run while ``numpy.random`` is imported, registers a class inside ``try: … except: pass``; a SIGTERM landing
  there during evaluate.py's first METEOR call was lost, exit 0).
* After a signal, any exception is part of the interrupt: a process of a multi-process run that was waiting
  for one that left gets a communication error, which is reported (or, off the main process, silenced) like
  the interrupt itself.
* A server (``multimsd studio``) is stopped by a signal, not interrupted: nothing was cut short, so
  :func:`exit_stopped` says ``studio: stopped (SIGTERM)`` and exits with status 0.

Outside :func:`installed` (a library call, a test) nothing changes: Python's own SIGINT handling applies, and
:func:`deferred` and :func:`note` only pass exceptions through.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_installed = False
_received: int | None = None  # the first signal of this process
_depth = 0  # nesting of deferred() blocks
_pending = False  # a signal arrived inside a deferred() block
_raised: int | None = None  # id() of the Interrupted unwinding now, until exit_interrupted reports it


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by SIGINT or SIGTERM within :func:`installed`."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    def __del__(self) -> None:
        # Collected while it is the live interrupt, unreported: something caught it and went on.
        global _raised, _received
        if _raised == id(self) and _received == self.signum and not _pending:
            _raised, _received = None, None  # the next delivery raises
            _deliver_again(self.signum)


def _raise(signum: int) -> None:
    global _raised
    e = Interrupted(signum)
    _raised = id(e)
    try:
        raise e
    finally:
        del e  # no cycle through this frame: a swallowed exception is collected at once


def _handler(signum: int, frame) -> None:
    global _received, _pending
    if _received is not None:
        return  # the first signal is unwinding: let its clean-up finish
    if _inside_finalizer(frame):
        _deliver_again(signum)  # raised here it would be dropped
        return
    _received = signum
    if _depth:
        _pending = True
        return
    _raise(signum)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` (main thread only; nested blocks and
    other threads change nothing); the previous handlers come back at its end, unless a signal came (the
    process is on its way out: later signals stay ignored)."""
    global _installed, _pending
    if _installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _handler) for s in SIGNALS}
    previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable(sys.unraisablehook)
    _installed = True
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        if _received is None:  # after a signal, later ones stay ignored while the process exits
            for s, h in previous.items():
                signal.signal(s, h)
            _installed, _pending = False, False


def _inside_finalizer(frame) -> bool:
    """Whether Python code at ``frame`` runs inside an object's ``__del__`` (or this module's unraisable
    hook): an exception raised there does not reach the command, it is printed and dropped."""
    while frame is not None:
        if frame.f_code.co_name == "__del__" or frame.f_code is _UNRAISABLE_CODE:
            return True
        frame = frame.f_back
    return False


def _unraisable(previous: Callable) -> Callable:
    """sys.unraisablehook within :func:`installed`: an interrupt raised in a finalizer that
    :func:`_inside_finalizer` does not recognise (a weakref callback) is delivered again, once the
    finalizer has returned, instead of being printed and dropped; anything else goes to ``previous``."""

    def hook(unraisable) -> None:
        global _received
        e = unraisable.exc_value
        if isinstance(e, Interrupted) and _received == e.signum and not _pending:
            _received = None  # not unwinding after all: the next delivery raises
            _deliver_again(e.signum)
            return
        previous(unraisable)

    return hook


_UNRAISABLE_CODE = _unraisable(print).__code__


def _deliver_again(signum: int) -> None:
    """The signal once more, a few milliseconds from now (the finalizer runs on meanwhile). From another
    thread: called in the main thread, ``interrupt_main`` runs the handler at once, inside the finalizer."""
    timer = threading.Timer(0.005, _thread.interrupt_main, args=(signum,))
    timer.daemon = True
    timer.start()


def received() -> int | None:
    """The signal that interrupted this process, or None."""
    return _received


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A block that a signal must not cut in the middle: one arriving inside is raised when the block ends."""
    global _depth, _pending
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
    if _depth == 0 and _pending:
        _pending = False
        _raise(_received or signal.SIGINT)


Text = str | Callable[[], str]


def _text(t: Text) -> str:
    try:
        return t() if callable(t) else t
    except Exception as e:  # a description must never hide the interrupt
        return f"(state unknown: {type(e).__name__})"


@contextlib.contextmanager
def note(where: Text = "", state: Text = "", advice: Text = "") -> Iterator[None]:
    """Describe the work of this block for the line an interrupt prints (texts may be callables, evaluated
    when the interrupt passes): ``where`` (``at step 31/38``), ``state`` (what is on disk now), ``advice``."""
    try:
        yield
    except BaseException as e:
        if is_interrupt(e):
            notes = list(getattr(e, "multimsd_notes", ()))
            notes.append((_text(where), _text(state), _text(advice)))
            with contextlib.suppress(AttributeError):  # an exception type with __slots__
                e.multimsd_notes = notes  # type: ignore[attr-defined]
        raise


def message(e: BaseException | None = None) -> str:
    """The one line that reports an interrupt, from the notes of ``e`` (innermost first)."""
    notes = list(getattr(e, "multimsd_notes", ()))
    signum = getattr(e, "signum", None) or _received or signal.SIGINT
    line = "interrupted" + (f" by {signal.Signals(signum).name}" if signum != signal.SIGINT else "")
    where = " ".join(w for w, _, _ in reversed(notes) if w)
    if where:
        line += f" {where}"
    state = next((s for _, s, _ in notes if s), "")
    if state:
        line += f": {state}"
    advice = next((a for _, _, a in reversed(notes) if a), "") or "run the same command again"
    return f"{line}; {advice}"


def is_interrupt(e: BaseException) -> bool:
    """``e`` is an interrupt, or an error that followed one (not an exit already decided)."""
    return isinstance(e, KeyboardInterrupt) or (_received is not None and not isinstance(e, SystemExit))


def exit_code(e: BaseException | None = None) -> int:
    return 128 + int(getattr(e, "signum", None) or _received or signal.SIGINT)


def is_main_process() -> bool:
    """Whether this is the process that prints: rank 0 of a launch, or a process that is not part of one."""
    return os.environ.get("RANK", "0") in ("", "0")


def close_progress_bars() -> None:
    """End the lines of open progress bars (as they stood), so that the line that ends a command (the
    interrupt's, an ``error:`` line) starts a line of its own."""
    std = sys.modules.get("tqdm.std")  # no tqdm imported: no bars
    for bar in list(getattr(getattr(std, "tqdm", None), "_instances", ())):
        with contextlib.suppress(Exception):
            bar.close()


def exit_interrupted(e: BaseException) -> None:
    """Print the interrupt's line (main process only) and exit with 128 + its signal."""
    global _raised
    _raised = None  # reported: the exception may go now
    line = message(e)  # first: the notes may read state that closing things could change
    close_progress_bars()
    if is_main_process():
        sys.stdout.flush()
        print(line, file=sys.stderr, flush=True)
    raise SystemExit(exit_code(e))


def exit_stopped(e: BaseException, what: str) -> None:
    """The end of a server asked to stop (``multimsd studio``): the interrupt ``e`` cut no work short, so the
    line says it stopped (``studio: stopped (SIGTERM)``; ``Ctrl-C`` for SIGINT), with no advice to run it
    again, and the exit status is 0."""
    global _raised
    _raised = None  # reported: the exception may go now
    signum = int(getattr(e, "signum", None) or _received or signal.SIGINT)
    how = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    close_progress_bars()
    if is_main_process():
        sys.stdout.flush()
        print(f"{what}: stopped ({how})", file=sys.stderr, flush=True)
    raise SystemExit(0)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Around a whole command: an interrupt anywhere (start-up, Hydra, the stage) is one line and its exit code."""
    try:
        yield
    except BaseException as e:
        if not is_interrupt(e):
            raise
        exit_interrupted(e)


def output_state(out: Path | str, since: float) -> str:
    """What an interrupted stage left in ``out``, which it writes in one rename at its end (started ``since``,
    a ``time.time()``): nothing, or the complete output."""
    out = Path(out)
    try:
        complete = out.is_dir() and out.stat().st_mtime >= since
    except OSError:
        complete = False
    return f"{out} is complete" if complete else f"nothing written to {out}"
