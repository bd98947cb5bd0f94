"""Composing a stage's (or the run's) config the way its command does, and checking a command line before
anything runs: one error line naming a misspelt key, a bad value, an unknown preset or a malformed option.

Every command reads its command line with Hydra's own parser (:func:`parse_command_line`), so ``--help``,
``--cfg job|hydra|all``, ``-m`` and ``--config-dir DIR`` are spelt, and fail, the same way in each of them."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from omegaconf import DictConfig

from multimsd.errors import MultimsdError
from multimsd.outdir import use_output_dir
from multimsd.paths import conf_dir


def compose(
    config_name: str,
    overrides: list[str],
    config_dir: Path | None = None,
    search: list[str] | tuple[str, ...] = (),
) -> DictConfig:
    """A config composed by Hydra as the entry point would (schemas registered, ``hydra`` node dropped).

    ``config_dir``: the primary config directory (default the packaged ``conf/``); ``search``: more
    directories on Hydra's search path (a user's own presets, ``--config-dir``). The stages' schemas are
    registered here; a schema of a command above (the run's) is registered by that command's package."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    register_schemas()
    GlobalHydra.instance().clear()
    where = config_dir or conf_dir()
    overrides = list(overrides)
    for d in search:
        if not Path(d).is_dir():
            raise MultimsdError(f"config_dir={d}: not a directory")
    if search:
        quoted = ",".join("'file://" + str(Path(d).resolve()).replace("'", "\\'") + "'" for d in search)
        overrides.append(f"hydra.searchpath=[{quoted}]")
    try:
        with initialize_config_dir(version_base="1.3", config_dir=str(where), job_name="multimsd_run"):
            cfg = hydra_compose(config_name=config_name, overrides=overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as e:
        message = f"{config_name} config: {config_error_line(e)}{_owner_hint(e)}"
        missing = missing_key(e)
        raise (NoSuchKey(message, *missing) if missing else MultimsdError(message)) from None
    finally:
        GlobalHydra.instance().clear()
    extra = extra_keys(cfg)
    if extra:
        raise NoSuchKey(f"{config_name} config: no such key: +{extra[0]}", extra[0].split(" (")[0])
    # A deprecated name of output.dir (train.py's output_dir, the run's dir) becomes output.dir here, so every
    # config, and every fingerprint made from one, is the same whichever name was used.
    return use_output_dir(cfg, config_name, overrides)


class NoSuchKey(MultimsdError):
    """A key (or a config group, ``model=…``) that the config has not: ``key`` as the config would spell its
    full path, ``closest`` the nearest valid one (``optim.lrr`` -> ``optim.lr``) or None."""

    def __init__(self, message: str, key: str, closest: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.closest = closest


def configs_with_key(config_names: Sequence[str], override: str, search: Sequence[str] = ()) -> list[str]:
    """Which of these configs (``align``, ``train``, …) have the key of ``override`` (``optim.lr=1e-3``, a
    group choice ``model=x``), each as ``NAME.KEY``: the key as given where the config takes it (a bad value
    included), or, where only a part below its first one is misspelt, the config's closest spelling
    (``optim.lrr`` -> ``train.optim.lr``). A config without the key's first part is left out. Each config is
    composed with the override alone (a second or so each): for error messages."""
    key = OVERRIDE_KEY.match(override)
    if key is None:
        return []
    name = key["key"]
    found: list[str] = []
    for config_name in config_names:
        try:
            compose(config_name, [override], search=search)
        except NoSuchKey as e:
            if "." not in e.key:  # not even its first part: not this config's key
                continue
            found.append(f"{config_name}.{e.closest or name}")
            continue
        except MultimsdError:
            pass  # composed up to its value (a bad value, an unknown preset): the key is this config's
        found.append(f"{config_name}.{name}")
    return found


OVERRIDE_KEY = re.compile(r"^(?:\+{1,2}|~)?(?P<key>[\w.@/-]+?)(?:=|$)")


def register_schemas() -> None:
    """The stages' schemas, and every built-in aligner's and model kind's options (``aligner=<name>``,
    ``model=<kind>``: registered by importing them). Idempotent."""
    from hydra.core.config_store import ConfigStore

    import multimsd.alignment.aligners  # noqa: F401
    import multimsd.training.kinds  # noqa: F401
    from multimsd.config import register_configs
    from multimsd.training.config import TrainConfig

    register_configs()
    ConfigStore.instance().store(name="train_schema", node=TrainConfig)


# ------------------------------------------------------------------------------------------- the command line
def parse_command_line(command: str, argv: list[str]) -> argparse.Namespace:
    """``argv`` read by Hydra's own parser, as every stage command reads it (``--help``, ``--cfg job``, ``-m``,
    ``--config-dir DIR``, overrides); a malformed option, or a ``--config-dir`` that is not a directory, is one
    ``error:`` line naming the command, exit 2 (argparse would print its usage too)."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()
    parser.prog = f"multimsd {command}"

    def error(message: str) -> NoReturn:
        print(f"error: multimsd {command}: {message}", file=sys.stderr)
        sys.exit(2)

    parser.error = error  # type: ignore[method-assign]
    args = parser.parse_args(argv)
    if args.config_dir is not None and not Path(args.config_dir).is_dir():
        error(f"--config-dir {args.config_dir}: not a directory")
    return args


def check_command_line(config_name: str, argv: list[str]) -> None:
    """Compose the stage's config from ``argv`` as the command will, before Hydra runs it: a key outside the
    schema (with or without ``+``), a value of the wrong type or an unknown preset is one ``error:`` line naming
    it, and exit status 2, before anything is written. A sweep (``-m a=1,2``) is checked with its first
    value; ``hydra.*`` settings and ``--help`` are left to Hydra."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = parse_command_line(config_name, argv)
    if (
        args.help
        or args.hydra_help
        or args.info
        or args.shell_completion
        or args.config_name
        or args.config_path
    ):
        return
    overrides: list[str] = []
    try:
        for o in OverridesParser.create().parse_overrides(list(args.overrides)):
            if o.key_or_group.split("/")[0].split(".")[0] == "hydra" and o.key_or_group != "hydra.searchpath":
                continue  # Hydra's own settings (launcher, sweeper, run dir): Hydra checks them
            if o.is_sweep_override():
                first = next(iter(o.sweep_string_iterator()), None)
                if first is None:
                    continue
                overrides.append(f"{o.get_key_element()}={first}")
            else:
                overrides.append(o.input_line)
        compose(config_name, overrides, search=[args.config_dir] if args.config_dir else [])
    except MultimsdError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # a malformed override: Hydra's parser message, first line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print(f"error: {config_name} command line: {first}", file=sys.stderr)
        sys.exit(2)


# ------------------------------------------------------------------------------------------- error lines
def config_error_line(e: BaseException) -> str:
    """One line for a config that cannot be composed (Hydra / OmegaConf), naming the key and, for a key that
    does not exist, the closest valid one: ``aligner.treshold: no such key (did you mean aligner.threshold?)``."""
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    x: BaseException | None = e
    while x is not None:
        full_key = getattr(x, "full_key", None)
        if full_key and type(x).__name__ in ("ConfigAttributeError", "ConfigKeyError"):
            closest = _closest_key(x)
            return f"{full_key}: no such key" + (f" (did you mean {closest}?)" if closest else "")
        if full_key and type(x).__name__ == "ValidationError":
            return f"{full_key}: {(str(x).strip().splitlines() or [''])[0]}"
        x = x.__cause__ or x.__context__
    options = getattr(e, "options", None)
    if type(e).__name__ == "MissingConfigException" and options:
        return f"{first} (choose from {', '.join(sorted(options))})"
    return first


def missing_key(e: BaseException) -> tuple[str, str | None] | None:
    """The key a config that cannot be composed lacks and its closest valid spelling (or None), as
    :func:`config_error_line` names them; a config group it has not (``Could not override 'model'``) too.
    None for any other error (a bad value, an unknown preset)."""
    x: BaseException | None = e
    while x is not None:
        full_key = getattr(x, "full_key", None)
        if full_key and type(x).__name__ in ("ConfigAttributeError", "ConfigKeyError"):
            return str(full_key), _closest_key(x)
        if full_key and type(x).__name__ == "ValidationError":
            return None
        x = x.__cause__ or x.__context__
    group = re.match(r"Could not override '([^']+)'\. No match in the defaults list", str(e).strip())
    return (group[1], None) if group else None


def _closest_key(x: BaseException) -> str | None:
    """For OmegaConf's error on a key that does not exist: the closest valid key, its full path, or None."""
    import difflib

    parent = getattr(x, "parent_node", None)
    prefix, _, key = str(getattr(x, "full_key", "")).rpartition(".")
    valid = [str(k) for k in parent] if isinstance(parent, DictConfig) else []
    close = _output_dir_spelling(key, parent) or difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    return f"{prefix + '.' if prefix else ''}{close[0]}" if close else None


def _output_dir_spelling(key: str, parent: Any) -> list[str]:
    """``output_dir`` / ``dir`` (the output directory's other names) where the config has ``output.dir``: that
    (multimsd.outdir). Empty for any other key."""
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

    from omegaconf import OmegaConf

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


def _owner_hint(e: BaseException) -> str:
    """For a key that belongs to another component's options (``aligner.classifier.*`` while aligner=symmetric,
    ``model.lstm.*`` with a transformers model): which config group option has it."""
    from hydra.core.config_store import ConfigStore

    x: BaseException | None = e
    while x is not None and not getattr(x, "full_key", None):
        x = x.__cause__ or x.__context__
    if x is None or type(x).__name__ not in ("ConfigAttributeError", "ConfigKeyError"):
        return ""  # only a key that does not exist here can belong elsewhere (not a bad value)
    group, _, rest = str(x.full_key).partition(".")
    field = rest.split(".")[0]
    entries = ConfigStore.instance().repo.get(group)
    if not field or not isinstance(entries, dict):
        return ""
    for name, entry in entries.items():
        node = getattr(entry, "node", None)
        if name.endswith(".yaml") and isinstance(node, DictConfig) and field in node:
            option = name.removesuffix(".yaml")
            return f"; {group}.{field} is an option of {group}={option}: add {group}={option}"
    return ""
