"""Composing a stage's (or the run's) config the way its command does, so every config a run needs is built and
checked before any work: one error line naming a misspelt key, a bad value or an unknown preset."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from multimsd.cli import config_error_line, extra_keys
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
    directories on Hydra's search path (a user's own presets, ``--config-dir``)."""
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
        raise MultimsdError(f"{config_name} config: {config_error_line(e)}{_owner_hint(e)}") from None
    finally:
        GlobalHydra.instance().clear()
    extra = extra_keys(cfg)
    if extra:
        raise MultimsdError(f"{config_name} config: no such key: +{extra[0]}")
    # A deprecated name of output.dir (train.py's output_dir, the run's dir) becomes output.dir here, so every
    # config, and every fingerprint made from one, is the same whichever name was used.
    return use_output_dir(cfg, config_name, overrides)


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


def register_schemas() -> None:
    """The stages' schemas, and every built-in aligner's and model kind's options (``aligner=<name>``,
    ``model=<kind>``: registered by importing them)."""
    from hydra.core.config_store import ConfigStore

    import multimsd.alignment.aligners  # noqa: F401
    import multimsd.training.kinds  # noqa: F401
    from multimsd.config import register_configs
    from multimsd.pipeline.config import register_run_config
    from multimsd.training.config import TrainConfig

    register_configs()
    register_run_config()
    ConfigStore.instance().store(name="train_schema", node=TrainConfig)
