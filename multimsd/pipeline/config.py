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

from multimsd.split import SplitConfig

# What a system is: trained by train.py, prompted by train.py mode=icl (no training), the copy baseline,
# optimised further from another system of the run (train.py mode=dpo from that system's best model), or that
# system's model decoded again with other decoding settings (train.py mode=predict; no training).
SYSTEM_KINDS = ("train", "icl", "copy", "optimise", "decode")
# How an optimise system improves on its start: dpo = preference pairs mined from the start system's samples
# and scored by the rewards (multimsd.training.preference); grpo = TRL's GRPOTrainer, groups of samples scored
# by the same rewards, with a KL to the start (causal models with LoRA; the rl extra; multimsd.training.grpo).
OBJECTIVES = ("dpo", "grpo")


@dataclass
class SystemConfig:
    kind: str = "train"  # train | icl | copy | optimise | decode
    # train.py overrides of this system only, after the run's `train` list (e.g. [icl.shots=5], [loss.theta=4]);
    # an optimise system's come after its start system's (e.g. [dpo.beta=0.2, dpo.samples=8])
    train: list[str] = field(default_factory=list)
    # kind=optimise: the system of kind train it starts from and stays near (a swept one by its made name,
    # finetuned_theta1; with seeds=[…] each seed starts from the same seed's system), and how it optimises;
    # kind=decode: the trained or optimised system whose model it decodes again, with its own `train`
    # overrides (e.g. [eval.number_guard=true]: never a digit the source lacks)
    start: str | None = None
    objective: str = "dpo"
    label: str | None = None  # how the report names it; null = the system's name
    enabled: bool = (
        True  # false drops a system of the defaults or of a preset (systems.zero_shot.enabled=false)
    )


@dataclass
class SweepConfig:
    # A train.py key swept over `values` (any key; numbers, strings, booleans): every system of kind train
    # becomes one system per value, named <system>_<last part of the key><the value as letters and digits>
    # (finetuned_theta4, finetuned_theta1p5, finetuned_lr1em4, finetuned_scheduler_linear; rules in
    # multimsd.pipeline.sweep). run.json records each one's key and value. null = no sweep.
    parameter: str | None = None
    values: list[str] = field(default_factory=list)


@dataclass
class PairsConfig:
    """A sentence-pair corpus used as the run's dataset instead of aligning articles (multimsd.pipeline.pairs)."""

    path: str | None = (
        None  # TSV (header row) / JSONL / save_to_disk directory / Hub id; null = align articles
    )
    # Our field -> the corpus's column, for the fields named otherwise: {article_id: FILE_ID, complex: SOURCE}
    columns: dict[str, str] = field(default_factory=dict)
    lang: str | None = None  # the language of every row, when the corpus has no lang column
    bad_rows: str = "error"  # error | skip: a TSV row with a stray tab / an empty side (skipped ones counted)
    # The split by document id (pairs.split.validation / test / max_fraction / seed): the rule and defaults of
    # align.py's split.*, multimsd.split.SplitConfig. Its seed also draws the max_pairs sample.
    split: SplitConfig = field(default_factory=SplitConfig)
    # A seeded sample of at most this many pairs per split (reduced-scale runs); {} = every pair
    max_pairs: dict[str, int] = field(default_factory=dict)


@dataclass
class RunOutput:
    dir: str = "outputs/run"  # the run directory: every stage's outputs, report.html, results.json


@dataclass
class RunConfig:
    output: RunOutput = field(default_factory=RunOutput)
    # Deprecated: the old name of output.dir, still read (copied to output.dir, with a one-line note).
    dir: str | None = None
    name: str | None = None  # shown in the report; null = the run directory's name
    align: list[str] = field(default_factory=list)  # align.py overrides
    pairs: PairsConfig = field(default_factory=PairsConfig)  # pairs.path=… replaces alignment
    # Score the aligner against the gold alignments too (Table 3, the θ curve): align.py mode=gold with the
    # align overrides; the bundled sample has gold, other data needs align.gold.path=…
    gold: bool = True
    train: list[str] = field(default_factory=list)  # train.py overrides shared by every train / icl system
    evaluate: list[str] = field(default_factory=list)  # evaluate.py overrides
    systems: dict[str, SystemConfig] = field(default_factory=dict)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    # Train every system of kind train (each sweep value too) once per seed, train.py's seed=<s>, each in its
    # own systems/<name>_seed<s>/ (seeds=[1,2,3]); icl and copy systems run once. results.json and the report
    # add per-seed scores, mean ± sd and an interval over seeds and sentences; a sweep selects on the mean over
    # seeds. null = one run per system with train.py's own seed (as without this key).
    seeds: list[int] | None = None
    # Paired bootstrap comparisons "a:b" (difference a − b, its CI and p-value); empty = every pair of systems.
    compare: list[str] = field(default_factory=list)
    report: bool = True  # report.html + report.md
    # Example rows per language in the report (test rows in order; collapsed per language in the HTML); 0 = none
    report_examples: int = 10
    plugins: list[str] = field(default_factory=list)  # modules imported first (registrations)
    # A directory of your own configs laid out like multimsd's conf/ (DIR/experiment/x.yaml for
    # train.experiment=x, DIR/pipeline/experiment/y.yaml for a run preset experiment=y); searched after the
    # packaged configs. On the command line: multimsd run --config-dir DIR.
    config_dir: str | None = None


def register_run_config() -> None:
    """Register the schema with Hydra (idempotent). The dict keys (``systems``, ``pairs.columns``,
    ``pairs.max_pairs``) take new names without Hydra's ``+``."""
    node = OmegaConf.structured(RunConfig)
    OmegaConf.set_struct(node["systems"], False)
    OmegaConf.set_struct(node["pairs"]["columns"], False)  # pairs.columns={article_id: FILE_ID} needs no +
    OmegaConf.set_struct(node["pairs"]["max_pairs"], False)
    ConfigStore.instance().store(name="run_schema", node=node)


# Registered when imported, as an aligner or a model kind is: whatever composes "run" (this package's cli and
# run, tests through multimsd.pipeline.run.compose) has imported this module first.
register_run_config()
