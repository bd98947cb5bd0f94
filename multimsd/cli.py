"""What the three entry points (align.py, train.py, evaluate.py) share: logging and the error contract."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from typing import Any


# Library chatter ("Loading weights", prompt lists, SIMD builds) hides our own progress; warnings still show.
def load_plugins(names: list[str]) -> None:
    """Import the user's extension modules (``plugins=[pkg.mod]``): importing one runs its registrations."""
    import importlib

    from multimsd.errors import MultimsdError

    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                raise MultimsdError(
                    f"plugins: cannot import {name!r} (is its directory on PYTHONPATH, or the package installed?)"
                ) from None
            raise


PLUGIN_KEY = re.compile(r"^\+{0,2}(?:(?:align|train|evaluate)\.)?plugins=(?P<value>.*)$")
ENTRY_POINT_GROUP = "multimsd.plugins"


def plugins_on_command_line(argv: list[str]) -> list[str]:
    """The modules named by ``plugins=[…]`` (also ``+plugins``, and ``align.plugins`` … of ``multimsd run``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    names: list[str] = []
    for arg in argv:
        m = PLUGIN_KEY.match(arg)
        if not m:
            continue
        try:
            value = OverridesParser.create().parse_overrides([f"plugins={m['value']}"])[0].value()
        except Exception:  # Hydra reports a malformed value itself, in its own words
            continue
        names += [str(v) for v in (value if isinstance(value, list) else [value]) if v]
    return names


def preload_plugins(argv: list[str] | None = None) -> None:
    """Import the plugins before Hydra composes the config, so the options they register (``aligner=<name>``,
    a model kind's ``model.*``) are part of the schema: the ones named on the command line and every installed
    ``multimsd.plugins`` entry point. A module that cannot be imported is one ``error:`` line, exit 2."""
    from importlib.metadata import entry_points

    from multimsd.errors import MultimsdError

    try:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            ep.load()
        load_plugins(plugins_on_command_line(sys.argv[1:] if argv is None else argv))
    except MultimsdError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def config_error_line(e: BaseException) -> str:
    """One line for a config that cannot be composed (Hydra / OmegaConf), naming the key and, for a key that
    does not exist, the closest valid one: ``aligner.treshold: no such key (did you mean aligner.threshold?)``."""
    import difflib

    from omegaconf import DictConfig

    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    x: BaseException | None = e
    while x is not None:
        full_key = getattr(x, "full_key", None)
        parent = getattr(x, "parent_node", None)
        if full_key and type(x).__name__ in ("ConfigAttributeError", "ConfigKeyError"):
            prefix, _, key = str(full_key).rpartition(".")
            valid = [str(k) for k in parent] if isinstance(parent, DictConfig) else []
            close = _output_dir_spelling(key, parent) or difflib.get_close_matches(
                key, valid, n=1, cutoff=0.6
            )
            hint = f" (did you mean {prefix + '.' if prefix else ''}{close[0]}?)" if close else ""
            return f"{full_key}: no such key{hint}"
        if full_key and type(x).__name__ == "ValidationError":
            return f"{full_key}: {(str(x).strip().splitlines() or [''])[0]}"
        x = x.__cause__ or x.__context__
    options = getattr(e, "options", None)
    if type(e).__name__ == "MissingConfigException" and options:
        return f"{first} (choose from {', '.join(sorted(options))})"
    return first


def _output_dir_spelling(key: str, parent: Any) -> list[str]:
    """``output_dir`` / ``dir`` (the output directory's other names) where the config has ``output.dir``: that
    (multimsd.outdir). Empty for any other key."""
    from omegaconf import DictConfig

    if key not in ("output_dir", "dir") or not isinstance(parent, DictConfig) or "output" not in parent:
        return []
    node = parent._get_node("output")
    return ["output.dir"] if isinstance(node, DictConfig) and "dir" in node else []


def extra_keys(cfg: Any, prefix: str = "") -> list[str]:
    """Keys of a composed config that its schema does not have (Hydra's ``+key=value`` adds them to a typed
    node without complaint): every one is a typo or a setting nothing reads. Each as ``key`` or ``key (did
    you mean other?)``."""
    import dataclasses
    import difflib

    from omegaconf import DictConfig, OmegaConf

    out: list[str] = []
    if not isinstance(cfg, DictConfig):
        return out
    kind = OmegaConf.get_type(cfg)
    fields = {f.name for f in dataclasses.fields(kind)} if kind and dataclasses.is_dataclass(kind) else None
    for key in cfg:
        name = f"{prefix}{key}"
        if fields is not None and key not in fields:
            close = _output_dir_spelling(str(key), cfg) or difflib.get_close_matches(
                str(key), sorted(fields), n=1, cutoff=0.6
            )
            out.append(f"{name} (did you mean {prefix}{close[0]}?)" if close else name)
            continue
        child = cfg._get_node(key)
        if isinstance(child, DictConfig):
            out += extra_keys(child, name + ".")
    return out


NOISY_LOGGERS = ("faiss", "sentence_transformers", "transformers", "peft", "accelerate", "gensim")


def run_stage(run: Callable[[Any], Any], cfg: Any) -> Any:
    """Run a stage; a :class:`MultimsdError` becomes one ``error: …`` line on stderr and exit status 2, an
    interrupt (Ctrl-C, SIGTERM: :mod:`multimsd.interrupts`) one ``interrupted …`` line and 130 / 143."""
    from multimsd import interrupts
    from multimsd.console import quiet_console
    from multimsd.errors import MultimsdError
    from multimsd.fsutil import disk_error

    quiet_console()  # library deprecation warnings off, log lines apart from progress bars (commands only)
    logging.getLogger("multimsd").setLevel(logging.INFO)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
    # SIGTERM too raises where the stage is (already so when the command's main() installed the handlers)
    with interrupts.installed():
        try:
            load_plugins(list(cfg.get("plugins") or []) if hasattr(cfg, "get") else [])
            return run(cfg)
        except BaseException as e:
            if interrupts.is_interrupt(e):  # where it stopped and how to go on, from the stage's notes
                interrupts.exit_interrupted(e)
            # A full disk where no writer named its output (a mkdir) is the user's to fix too (multimsd.fsutil).
            err = e if isinstance(e, MultimsdError) else disk_error(e) if isinstance(e, OSError) else None
            if err is None:
                raise
            # One clear line for input/environment problems; tracebacks are for bugs.
            interrupts.close_progress_bars()  # a stage can fail with its bar open (a full disk at a checkpoint)
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)
