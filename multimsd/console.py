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
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import time
import warnings
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


class _Lines:
    """A loop's progress off a terminal: no bar, one log line when the loop ends (``desc: n units in t s``,
    and the last ``set_postfix`` values), and the tqdm methods our loops call (``update``, ``set_postfix``,
    ``close``)."""

    def __init__(self, iterable: Iterable | None, desc: str, unit: str) -> None:
        self.iterable, self.desc, self.unit = iterable, desc, unit
        self.n, self.postfix, self.start, self.closed = 0, {}, time.perf_counter(), False

    def __iter__(self) -> Iterator:
        for x in self.iterable or ():
            yield x
            self.n += 1
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, **values: Any) -> None:
        self.postfix = values

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        units = self.unit if self.n == 1 else PLURAL.get(self.unit, self.unit + "s")
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
        log.info("%s: %d %s in %.1f s%s", self.desc, self.n, units, time.perf_counter() - self.start, extra)


def progress_bar(
    iterable: Iterable | None = None,
    desc: str = "",
    unit: str = "it",
    disable: bool = False,
    **tqdm_args: Any,
) -> Any:
    """A tqdm bar over ``iterable`` (or one updated by hand: ``total=``) on a terminal. Elsewhere
    (:func:`bars_shown`) no bar, and one log line when the loop ends, unless ``leave=False`` (a loop inside
    another, which has its own line). ``disable``: a loop too short for either."""
    from tqdm.auto import tqdm

    if bars_shown() and not disable:
        return tqdm(iterable, desc=desc, unit=unit, **tqdm_args)
    if disable or tqdm_args.get("leave", True) is False:
        return tqdm(iterable, disable=True, **tqdm_args)
    return _Lines(iterable, desc, unit)


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
