"""What a run prints: the entry points' warning filters, and our own lines kept apart from progress bars.

Nothing here acts on import. :func:`quiet_console` is called by the commands (``align.py`` / ``train.py`` /
``evaluate.py``, ``multimsd …``, through :func:`multimsd.commands.stage.run_stage`), never by the library, so code of
your own that imports multimsd keeps every warning it would otherwise see.

* Deprecation and future warnings raised inside the Hugging Face / torch stack (:data:`LIBRARY_MODULES`) are
  not the user's to fix, and a training run printed several of them; they are ignored. Warnings attributed to
  any other module (multimsd's own, the user's, a plugin's) still show, and so does everything when Python's
  own warning options are given (``python -W default train.py …``, ``PYTHONWARNINGS``).
* A progress bar holds its line until it ends; a log record or summary printed meanwhile was glued to the
  end of the bar (``training: 50%|█████ | 1/2epoch 0: val_loss …``). :func:`say` and the console log
  handlers first take the bars aside: on a terminal they are cleared and redrawn below the line, in a log
  file (not a terminal) the bar's line is ended, so every line of ours starts a line.
* Progress bars only on a terminal (:func:`bars_shown`: stderr, where the bars are drawn, is a TTY). A log
  written to a file (SLURM, ``nohup``, ``> log 2>&1``) was full of ``\r`` redraws: 146 lines for
  ``multimsd run debug=tiny``. Off a terminal, every loop of ours that shows a bar (:func:`progress_bar`) writes
  one log line when it ends instead (``encoding: 12 batches in 3.1 s``; training's beside its epoch
  summaries), and :func:`quiet_console` switches off the bars of transformers, datasets and huggingface_hub.
* Long work talks, also off a terminal: while such a loop runs, a line every :data:`PROGRESS_EVERY` seconds
  says where it is (``training: 12/64 steps (19 %) in 2 min 3 s, 0.10 steps/s, about 8 min 40 s left``), even
  when one step takes longer than that (a loaded machine: 9 silent minutes in a user's log, issue #49). A
  phase with nothing to count (loading a model) says it is still at work the same way (:func:`working`).
  One daemon thread writes these lines for every open loop (:class:`_Heartbeat`).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

LIBRARY_MODULES = (
    "transformers",
    "peft",
    "accelerate",
    "datasets",
    "huggingface_hub",
    "sentence_transformers",
    "tokenizers",
    "safetensors",
    "torch",
)
"""Packages whose deprecation / future warnings the commands ignore (the package and its submodules)."""

LIBRARY_WARNINGS = (FutureWarning, DeprecationWarning, PendingDeprecationWarning)

LIBRARY_MODULE_PATTERN = rf"({'|'.join(LIBRARY_MODULES)})(\.|$)"


def quiet_library_warnings() -> None:
    """Ignore :data:`LIBRARY_WARNINGS` attributed to :data:`LIBRARY_MODULES`, unless Python's warning options
    (``-W``, ``PYTHONWARNINGS``) were given: then those decide."""
    if sys.warnoptions:
        return
    for category in LIBRARY_WARNINGS:
        # filterwarnings drops an identical earlier filter: calling this twice installs each filter once.
        warnings.filterwarnings("ignore", category=category, module=LIBRARY_MODULE_PATTERN)


def _open_bars() -> list:
    std = sys.modules.get("tqdm.std")  # no tqdm imported: no bars
    if std is None:
        return []
    return [b for b in list(getattr(std.tqdm, "_instances", ())) if not getattr(b, "disable", True)]


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def bars_shown() -> bool:
    """The one rule for progress bars: shown only when stderr, where they are drawn, is a terminal."""
    return _is_terminal(sys.stderr)


PLURAL = {"batch": "batches"}

PROGRESS_EVERY = 20.0
"""Seconds between the progress lines of a loop or phase off a terminal: under the 30 s of silence a user
reading a log takes for a hung run."""

PROGRESS_TICK = 1.0
"""How often the progress thread looks at the open loops: a line is at most this late."""


def duration(seconds: float) -> str:
    """``42 s``, ``8 min 40 s``, ``1 h 05 min``: a span as a person reads it in a log."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class _Heartbeat:
    """One daemon thread that writes, every :data:`PROGRESS_EVERY` seconds, the status line of each open
    loop or phase that has said nothing for that long. It holds them weakly: a loop abandoned by an exception
    (never closed) is dropped once it is collected, and a closed one is dropped at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: weakref.WeakSet = weakref.WeakSet()
        self.thread: threading.Thread | None = None
        self.wake = threading.Event()  # a new loop wakes the thread, which then reads PROGRESS_TICK again

    def watch(self, item: Any) -> None:
        with self.lock:
            self.open.add(item)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._beat, name="multimsd-progress", daemon=True)
                self.thread.start()
        self.wake.set()

    def forget(self, item: Any) -> None:
        with self.lock:
            self.open.discard(item)

    def _beat(self) -> None:
        while True:
            self.wake.wait(PROGRESS_TICK)
            self.wake.clear()
            now = time.perf_counter()
            with self.lock:
                due = [i for i in list(self.open) if now - i.last_line >= PROGRESS_EVERY]
            for item in due:
                item.last_line = now
                log.info("%s", item.status())


_HEARTBEAT = _Heartbeat()


class _Lines:
    """A loop's progress off a terminal: no bar; a status line every :data:`PROGRESS_EVERY` seconds while it
    runs (done / total, rate, time left) and one log line when it ends (``desc: n units in t s``, and the last
    ``set_postfix`` values); the tqdm methods our loops call (``update``, ``set_postfix``, ``close``)."""

    def __init__(
        self, iterable: Iterable | None, desc: str, unit: str, total: int | None = None, initial: int = 0
    ) -> None:
        self.iterable, self.desc, self.unit = iterable, desc, unit
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.initial, self.n = total, initial, initial
        self.postfix, self.start, self.closed = {}, time.perf_counter(), False
        self.last_line = self.start
        _HEARTBEAT.watch(self)

    def __iter__(self) -> Iterator:
        try:
            for x in self.iterable or ():
                yield x
                self.n += 1
        finally:
            self.close()

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, **values: Any) -> None:
        self.postfix = values

    def _units(self, n: int) -> str:
        return self.unit if n == 1 else PLURAL.get(self.unit, self.unit + "s")

    def status(self) -> str:
        """Where the loop is: ``training: 12/64 steps (19 %) in 2 min 3 s, 0.10 steps/s, about 8 min 40 s
        left, loss 3.21`` (the rate and time left from the units done since this run of the loop began)."""
        elapsed = time.perf_counter() - self.start
        done = self.n - self.initial
        line = f"{self.desc}: {self.n}"
        if self.total:
            line += f"/{self.total} {self._units(self.total)} ({100 * self.n / self.total:.0f} %)"
        else:
            line += f" {self._units(self.n)}"
        line += f" in {duration(elapsed)}"
        if done > 0:
            line += f", {done / elapsed:.3g} {self._units(2)}/s"
            if self.total and self.total > self.n:
                line += f", about {duration((self.total - self.n) * elapsed / done)} left"
        else:
            line += f", the first {self.unit} still at work"
        return line + "".join(f", {k} {v}" for k, v in self.postfix.items())

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        _HEARTBEAT.forget(self)
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
        log.info(
            "%s: %d %s in %.1f s%s",
            self.desc,
            self.n - self.initial,
            self._units(self.n - self.initial),
            time.perf_counter() - self.start,
            extra,
        )


class _Phase:
    """A phase with nothing to count, for :func:`working`: its status is the time it has taken so far."""

    def __init__(self, desc: str) -> None:
        self.desc, self.start = desc, time.perf_counter()
        self.last_line = self.start

    def status(self) -> str:
        return f"{self.desc}: still at work after {duration(time.perf_counter() - self.start)}"


@contextmanager
def working(desc: str) -> Iterator[None]:
    """Within the block (loading a model, building the offline models: work with no count to show), a line
    every :data:`PROGRESS_EVERY` seconds that it is still at work, on a terminal or not; nothing for a block
    shorter than that."""
    phase = _Phase(desc)
    _HEARTBEAT.watch(phase)
    try:
        yield
    finally:
        _HEARTBEAT.forget(phase)


def progress_bar(
    iterable: Iterable | None = None,
    desc: str = "",
    unit: str = "it",
    disable: bool = False,
    **tqdm_args: Any,
) -> Any:
    """A tqdm bar over ``iterable`` (or one updated by hand: ``total=``) on a terminal. Elsewhere
    (:func:`bars_shown`) no bar: a status line every :data:`PROGRESS_EVERY` seconds while the loop runs and
    one log line when it ends, unless ``leave=False`` (a loop inside another, which has its own lines).
    ``disable``: a loop too short for either."""
    from tqdm.auto import tqdm

    if bars_shown() and not disable:
        return tqdm(iterable, desc=desc, unit=unit, **tqdm_args)
    if disable or tqdm_args.get("leave", True) is False:
        return tqdm(iterable, disable=True, **tqdm_args)
    return _Lines(iterable, desc, unit, total=tqdm_args.get("total"), initial=tqdm_args.get("initial", 0))


def library_bars_off() -> None:
    """Off a terminal, switch off the progress bars that transformers, datasets and huggingface_hub draw
    themselves (loading weights, mapping a dataset, downloading). Each library reads its variable when it is
    imported (also in the processes this one starts); one imported already is switched off by its function.
    A library not imported yet is not imported for it."""
    if bars_shown():
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers follows huggingface_hub's
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
    hf_logging = sys.modules.get("transformers.utils.logging")
    if hf_logging is not None:
        hf_logging.disable_progress_bar()


@contextmanager
def direct_bars_off() -> Iterator[None]:
    """Off a terminal, the bars a library draws with tqdm directly, with no switch of its own (transformers'
    GGUF conversion), are off within the block; on a terminal nothing changes. tqdm reads ``TQDM_DISABLE`` only
    when it is imported, so the block gives tqdm's constructor ``disable=True`` as its default instead."""
    if bars_shown():
        yield
        return
    from tqdm import std

    original = vars(std.tqdm)["__init__"]  # tqdm's own descriptor (a partialmethod of its env defaults)
    std.tqdm.__init__ = functools.partialmethod(original, disable=True)  # a caller's own disable= still wins
    try:
        yield
    finally:
        std.tqdm.__init__ = original


@contextmanager
def bars_aside() -> Iterator[None]:
    """Within the block, what is written starts on a line of its own, whatever progress bars are open: on a
    terminal the bars are cleared, elsewhere their line is ended; after it, the bars are drawn again."""
    bars = _open_bars()
    if not bars:
        yield
        return
    from tqdm.std import tqdm

    with tqdm.get_lock():
        ended: set[int] = set()
        for bar in bars:
            if _is_terminal(bar.fp):
                bar.clear(nolock=True)
            elif id(bar.fp) not in ended:  # one bar line per stream (nested bars share it off a terminal)
                ended.add(id(bar.fp))
                bar.fp.write("\n")
                bar.fp.flush()
        try:
            yield
        finally:
            for bar in bars:
                bar.refresh(nolock=True)


def say(message: str, accelerator: Any = None) -> None:
    """Print one line of ours (an epoch summary) on stdout, apart from any progress bar; with ``accelerator``
    only on the local main process (as ``accelerator.print``)."""
    if accelerator is not None and not accelerator.is_local_main_process:
        return
    with bars_aside():
        print(message, flush=True)


def _between_bars(write: Any) -> Any:
    @functools.wraps(write)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with bars_aside():
            return write(*args, **kwargs)

    wrapped.multimsd_between_bars = True  # type: ignore[attr-defined]
    return wrapped


def keep_lines_apart() -> None:
    """Make the console log handlers (the root logger's stream handlers: Hydra's, ``logging.basicConfig``'s)
    and the printing of warnings take the progress bars aside (:func:`bars_aside`) before they write."""
    for handler in logging.getLogger().handlers:
        console = isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
        if console and not getattr(handler.emit, "multimsd_between_bars", False):
            handler.emit = _between_bars(handler.emit)  # type: ignore[method-assign]
    if not getattr(warnings.showwarning, "multimsd_between_bars", False):
        warnings.showwarning = _between_bars(warnings.showwarning)


def quiet_console() -> None:
    """What every command sets up before its stage runs: :func:`quiet_library_warnings`,
    :func:`keep_lines_apart` and :func:`library_bars_off`."""
    quiet_library_warnings()
    keep_lines_apart()
    library_bars_off()


class _DropMessages(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        # Accelerate's loggers put "[RANK n] " in front of the message.
        return not re.sub(r"^\s*\[RANK \d+\]\s*", "", record.getMessage()).startswith(self.prefix)


@contextmanager
def without_log_message(logger: str, prefix: str) -> Iterator[None]:
    """Within the block, records of ``logger`` whose message starts with ``prefix`` are dropped (only those)."""
    drop = _DropMessages(prefix)
    target = logging.getLogger(logger)
    target.addFilter(drop)
    try:
        yield
    finally:
        target.removeFilter(drop)
