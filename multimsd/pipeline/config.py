"""The schema of ``multimsd run`` (``conf/pipeline/run.yaml``): which stages run, with which overrides.

The stages keep their own configs (``conf/align.yaml``, ``conf/train.yaml``, ``conf/evaluate.yaml`` and their
groups); a run holds *overrides* for them, so every option and preset of ``align.py`` / ``train.py`` /
``evaluate.py`` works here unchanged, and a misspelt key still fails at start-up, in the stage's own schema.
On the command line ``align.<key>=v``, ``train.<key>=v`` and ``evaluate.<key>=v`` are routed to a stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

# What a system is: trained by train.py, prompted by train.py mode=icl (no training), or the copy baseline.
SYSTEM_KINDS = ("train", "icl", "copy")


@dataclass
class SystemConfig:
    kind: str = "train"  # train | icl | copy
    # train.py overrides of this system only, after the run's `train` list (e.g. [icl.shots=5], [loss.theta=4])
    train: list[str] = field(default_factory=list)
    label: str | None = None  # how the report names it; null = the system's name
    enabled: bool = (
        True  # false drops a system of the defaults or of a preset (systems.zero_shot.enabled=false)
    )


@dataclass
class SweepConfig:
    # A train.py key swept over `values`: every system of kind train becomes one system per value, named
    # <system>_<last part of the key><value> (finetuned_theta4). null = no sweep.
    parameter: str | None = None
    values: list[str] = field(default_factory=list)


@dataclass
class RunConfig:
    dir: str = "outputs/run"  # the run directory: every stage's outputs, report.html, results.json
    name: str | None = None  # shown in the report; null = the run directory's name
    align: list[str] = field(default_factory=list)  # align.py overrides
    # Score the aligner against the gold alignments too (Table 3, the θ curve): align.py mode=gold with the
    # align overrides; the bundled sample has gold, other data needs align.gold.path=…
    gold: bool = True
    train: list[str] = field(default_factory=list)  # train.py overrides shared by every train / icl system
    evaluate: list[str] = field(default_factory=list)  # evaluate.py overrides
    systems: dict[str, SystemConfig] = field(default_factory=dict)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    # Paired bootstrap comparisons "a:b" (difference a − b, its CI and p-value); empty = every pair of systems.
    compare: list[str] = field(default_factory=list)
    report: bool = True  # report.html + report.md
    plugins: list[str] = field(default_factory=list)  # modules imported first (registrations)


def register_run_config() -> None:
    """Register the schema with Hydra (idempotent). ``systems`` takes new names without Hydra's ``+``."""
    node = OmegaConf.structured(RunConfig)
    OmegaConf.set_struct(node["systems"], False)
    ConfigStore.instance().store(name="run_schema", node=node)
