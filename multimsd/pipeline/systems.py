"""The systems of a run (``systems.*``): expanded, checked, ordered and labelled before anything is planned.

* :func:`expand_systems` — the enabled systems, each system of kind ``train`` once per sweep value
  (:mod:`multimsd.pipeline.sweep`) and, with ``seeds=[…]``, every trained or started system once per seed
  (:mod:`multimsd.pipeline.seeds`); the started ones checked (:func:`check_started`);
* a *started* system builds on another system of the run: kind ``optimise`` trains it further
  (``objective: dpo`` / ``grpo``: train.py ``mode=dpo`` / ``mode=grpo``), kind ``decode`` decodes its model again with other decoding
  settings and no training (train.py ``mode=predict``, e.g. ``train: [eval.number_guard=true]``).
  :func:`started_overrides` are the train.py overrides that make it so, :func:`planning_order` puts every
  system after the one it starts from, :func:`default_label` names it after its start.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from multimsd.errors import MultimsdError
from multimsd.pipeline.config import OBJECTIVES, SYSTEM_KINDS, RunConfig
from multimsd.pipeline.labels import system_label
from multimsd.pipeline.seeds import check_seeds, expand_seeds
from multimsd.pipeline.sweep import expand_sweep

# kind -> the kinds it may start from: a DPO system from a fine-tuned one; a decoding of either
STARTS_FROM = {"optimise": ("train",), "decode": ("train", "optimise")}


def expand_systems(cfg: RunConfig | DictConfig) -> dict[str, dict]:
    """The systems of the run, each train system once per sweep value: name -> {kind, train, label, sweep}."""
    systems = {name: sc for name, sc in cfg.systems.items() if sc.enabled}
    if not systems:
        raise MultimsdError("systems: empty; name at least one system (e.g. systems.copy.kind=copy)")
    param, values = cfg.sweep.parameter, list(cfg.sweep["values"])
    if param and not values:
        raise MultimsdError(f"sweep.parameter={param} needs sweep.values (e.g. sweep.values=[1,4])")
    out: dict[str, dict] = {}
    for name, sc in systems.items():
        if sc.kind not in SYSTEM_KINDS:
            raise MultimsdError(f"systems.{name}.kind={sc.kind!r}: choose one of {', '.join(SYSTEM_KINDS)}")
        if not name.replace("_", "").replace("-", "").isalnum():
            raise MultimsdError(f"systems.{name}: use letters, digits, '_' and '-' in system names")
        # label: the user's (systems.NAME.label) or, once its config is composed (plan), what ran
        base = {"kind": sc.kind, "train": list(sc.train), "label": sc.label, "sweep": None, "suffix": ""}
        if sc.kind in STARTS_FROM:
            base.update(start=sc.start, objective=sc.objective if sc.kind == "optimise" else None)
        if sc.kind == "train" and param:  # names that any value can take (multimsd.pipeline.sweep)
            # a made name may not be another system's (any of them, also one listed later) nor another sweep's
            out.update(expand_sweep(name, base, param, values, (set(systems) - {name}) | set(out)))
        else:
            out[name] = base
    out = expand_seeds(out, check_seeds(cfg.get("seeds")))  # seeds=[…]: each trained system once per seed
    check_started(out)
    return out


def check_started(systems: dict[str, dict]) -> None:
    """Each optimise system names a known objective; each started system a system of this run it may start
    from."""
    for name, sc in systems.items():
        if sc["kind"] not in STARTS_FROM:
            continue
        if sc["kind"] == "optimise" and sc["objective"] not in OBJECTIVES:
            raise MultimsdError(
                f"systems.{name}.objective={sc['objective']!r}: choose {', '.join(OBJECTIVES)}"
            )
        if sc["kind"] == "optimise" and sc["objective"] == "grpo":  # the rl extra: now, not after training
            from multimsd.training.checks import check_trl

            try:
                check_trl()
            except MultimsdError as e:
                raise MultimsdError(f"systems.{name}.objective=grpo: {e}") from None
        kinds = STARTS_FROM[sc["kind"]]
        choices = ", ".join(n for n, s in systems.items() if s["kind"] in kinds) or "none in this run"
        start = sc["start"]
        if start is None:
            raise MultimsdError(f"systems.{name}.start: name the system it starts from ({choices})")
        if systems.get(start, {}).get("kind") not in kinds:
            what = " or ".join(kinds)
            raise MultimsdError(f"systems.{name}.start={start!r} is not a system of kind {what} ({choices})")


def planning_order(systems: dict[str, dict]) -> list[str]:
    """The systems' names with every started system after the one it starts from (the run's order kept
    otherwise): trained and prompted systems, then optimised ones, then decodings."""
    rank = {"optimise": 1, "decode": 2}
    return sorted(systems, key=lambda n: rank.get(systems[n]["kind"], 0))


def started_overrides(sys_cfg: dict, run_dir: Path) -> list[str]:
    """The train.py overrides of a started system: its mode and the directory of the system it starts from."""
    mode = sys_cfg["objective"] if sys_cfg["kind"] == "optimise" else "predict"
    return [f"mode={mode}", f"start={run_dir / 'systems' / sys_cfg['start']}"]


def default_label(sys_cfg: dict, systems: dict[str, dict], train_cfg: DictConfig) -> str:
    """What the report calls a system that sets no label: what ran; a started system, its start's label
    (without the start's seed: a suffix of its own) and what it adds: "+ DPO", or its decoding overrides."""
    if sys_cfg["kind"] not in STARTS_FROM:
        return system_label(sys_cfg["kind"], train_cfg)
    start = systems[sys_cfg["start"]]
    seed = f", seed {start['seed']}" if start.get("seed") is not None else ""
    base = start["label"].removesuffix(seed)
    if sys_cfg["kind"] == "optimise":
        return f"{base} + {sys_cfg['objective'].upper()}"
    own = [o for o in sys_cfg["train"] if not o.startswith("seed=")]
    return f"{base} ({', '.join(own) or 'decoded again'})"
