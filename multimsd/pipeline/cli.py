"""``multimsd run [overrides]``: the whole pipeline in one command (:mod:`multimsd.pipeline.run`).

Its command line is read as the stage commands read theirs (Hydra's parser:
:func:`multimsd.commands.compose.parse_command_line`): ``--help``, ``--cfg job|hydra|all`` (with
``--resolve``), ``--config-dir DIR`` and ``key=value``. Overrides are Hydra's ``key=value``. The run's own keys
(``conf/pipeline/run.yaml``: ``output.dir``, ``systems``, ``sweep``, ``experiment=…``, ``debug=…``) go to the
run; ``align.<key>=…``, ``train.<key>=…`` and ``evaluate.<key>=…`` go to that stage's config
(``align.aligner.threshold=0.6``, ``train.optim.epochs=5``, ``+train.foo=1``, ``~evaluate.systems.identity``),
after the run's own lists for that stage. ``-m`` is refused with what to use instead: a run sweeps itself
(``sweep.*``, ``seeds``).
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

from omegaconf import DictConfig

USAGE = """\
usage: multimsd run [--help] [--cfg job|hydra|all [--resolve]] [--config-dir DIR] [key=value ...]

Runs align -> (gold) -> train / prompt every system -> evaluate -> report into one run directory
(default outputs/run). With no overrides: the bundled sample, offline models, 2 CPU cores.
A stage whose resolved config is unchanged and whose outputs are intact is skipped on a re-run;
a killed run continues where it stopped. One run at a time writes a run directory: a second one into it
is refused (one line naming the first one's pid and host, exit 2). A full disk stops the run with one line
naming the file (exit 2), nothing half written: free space and run the same command to continue.

Run keys (conf/pipeline/run.yaml):
  output.dir=PATH              the run directory (report.html, results.json, every stage's outputs);
                               dir=PATH is its deprecated name
  experiment=NAME              a preset of conf/pipeline/experiment/ (e.g. llama31_multi_weighted)
  debug=tiny                   seconds-long run on tiny random models (tests): the first 3 articles in en
                               and ja (align.data.max_articles), at most 16 training pairs, 2 steps; the log says so
  systems.NAME.kind=train|icl|copy   the systems compared in the report (a new NAME adds one)
  systems.NAME.label=TEXT            its name in the report (default: what ran, e.g. "SmolLM2-135M-Instruct + LoRA, θ = 4")
  systems.NAME.enabled=false         leave a system of the defaults / a preset out
  systems.NAME.train.KEY=VALUE       a `multimsd train` override of that system only
  sweep.parameter=loss.theta sweep.values=[1,4]    one trained system per value, of any train key:
                               'sweep.values=[1.5,2.5]' -> finetuned_theta1p5, ...; sweep.parameter=optim.lr
                               'sweep.values=[1e-4,3e-4]' -> finetuned_lr1em4, ...; strings and booleans
                               too (sweep.parameter=optim.scheduler 'sweep.values=[linear,constant]')
  seeds=[1,2,3]                every trained system once per seed (systems/NAME_seedS/); per-seed scores,
                               mean ± sd and an interval over seeds and sentences; θ chosen on the seed mean
  compare=[a:b,...]            paired bootstrap comparisons (default: every pair)
  gold=false                   skip the gold-alignment scores (Table 3)
  --config-dir DIR             your own presets, laid out like multimsd's conf/: DIR/pipeline/experiment/x.yaml
                               (experiment=x), DIR/experiment/y.yaml (train.experiment=y), ...
  pairs.path=FILE              an aligned sentence-pair corpus (TSV / JSONL / saved dataset) instead of
                               aligning articles: split by document id, bad rows an error or,
                               with pairs.bad_rows=skip, counted; pairs.lang=es when it has no lang column;
                               pairs.columns={article_id: FILE_ID, complex: SOURCE, simple: TARGET} maps
                               columns; pairs.max_pairs={train: 160} caps a split (reduced-scale runs)
  pairs.split.validation=128 pairs.split.test=128 pairs.split.max_fraction=0.1 pairs.split.seed=42
                               its split by document id (defaults shown): documents held out for
                               validation and for test, each at most max_fraction of them (at least one),
                               drawn with seed (which also draws the max_pairs sample); the same rule and
                               keys as align.split.* (article ids) and train.data.split.*
Stage keys, routed to that stage's own config (multimsd align|train|evaluate --help lists them):
  align.KEY=VALUE   train.KEY=VALUE   evaluate.KEY=VALUE

Examples:
  multimsd run
  multimsd run output.dir=outputs/theta sweep.parameter=loss.theta sweep.values=[1,4]
  multimsd run experiment=llama31_multi_weighted align.data.path=pairs.jsonl
  multimsd run experiment=weighted_loss pairs.path=corpus.tsv pairs.lang=es
  multimsd run train.model=tiny_llama train.debug=train_tiny align.debug=tiny

Options (read as multimsd align|train|evaluate read theirs):
  --cfg job      print the run's config and its plan (a `# stage NAME: OUT` line per stage); runs nothing
  --cfg hydra    print the config Hydra composed for each stage, under its `# stage` line (a run has no
                 Hydra launcher, sweeper or run directory: its stages run in this process)
  --cfg all      both: the run's config, then each stage's;  --resolve resolves ${...} in them
  -m             refused: a run sweeps itself (sweep.parameter=… sweep.values=[…], seeds=[…]);
                 a Hydra multirun is a stage's (multimsd train -m loss.theta=1,4)
Errors in the input print one line and exit with status 2.
"""

# The stages whose configs a run holds overrides for (RunConfig's lists of the same names): align.<key>=v, …
STAGES = ("align", "train", "evaluate")
STAGE_KEY = re.compile(rf"^(?P<op>\+{{0,2}}|~)(?P<stage>{'|'.join(STAGES)})\.(?P<rest>.+)$")
SYSTEM_TRAIN_KEY = re.compile(r"^(?P<op>\+{0,2}|~)systems\.(?P<name>[\w-]+)\.train\.(?P<rest>.+)$")
SYSTEM_FIELD = re.compile(
    r"^\+{0,2}systems\.(?P<name>[\w-]+)\.(?P<field>kind|label|enabled|start|objective)=(?P<value>.*)$"
)
# systems.x.train=[a=1,b=2]: the system's whole list of train overrides (replacing it, as Hydra would)
SYSTEM_TRAIN_LIST = re.compile(r"^\+{0,2}systems\.(?P<name>[\w-]+)\.train=(?P<value>\[.*\])$")


def route(overrides: list[str]) -> tuple[list[str], dict[str, list[str]], dict[str, dict]]:
    """Split overrides into the run's own, each stage's (``train.optim.lr=1e-4`` -> train: ``optim.lr=1e-4``)
    and each system's (``systems.x.kind=icl``, ``systems.x.train.icl.shots=5`` -> x: kind icl, train
    ``icl.shots=5``; set on the composed config, so a new system needs no ``+``)."""
    own: list[str] = []
    staged: dict[str, list[str]] = {stage: [] for stage in STAGES}
    per_system: dict[str, dict] = {}
    for o in overrides:
        if m := STAGE_KEY.match(o):
            staged[m["stage"]].append(m["op"] + m["rest"])
        elif m := SYSTEM_TRAIN_KEY.match(o):
            per_system.setdefault(m["name"], {}).setdefault("train", []).append(m["op"] + m["rest"])
        elif m := SYSTEM_FIELD.match(o):
            per_system.setdefault(m["name"], {})[m["field"]] = m["value"].strip("'\"")
        elif m := SYSTEM_TRAIN_LIST.match(o):
            per_system.setdefault(m["name"], {})["train="] = override_list(o)
        else:
            own.append(o)
    return own, staged, per_system


def override_list(override: str) -> list[str]:
    """The list of ``systems.x.train=[a=1,'b=c d']`` as Hydra's override grammar reads it (quotes and all)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from multimsd.errors import MultimsdError

    try:
        value = OverridesParser.create().parse_override(override).value()
    except Exception as e:  # noqa: BLE001  (Hydra's grammar errors: one line)
        raise MultimsdError(f"{override}: not a list of overrides ({str(e).splitlines()[0]})") from None
    return [str(v) for v in value]


# Hydra's options that a run has no use for (it composes configs, it is not launched by Hydra): the stage
# commands take them.
STAGE_ONLY = {
    "hydra_help": "--hydra-help",
    "info": "--info",
    "shell_completion": "--shell-completion",
    "config_path": "--config-path",
    "config_name": "--config-name",
    "package": "--package",
    "experimental_rerun": "--experimental-rerun",
}
MULTIRUN = (
    "multimsd run has no -m/--multirun: a run sweeps itself, sweep.parameter=KEY sweep.values=[…] (one trained "
    "system per value) or seeds=[…] (each trained system once per seed); a Hydra multirun is a stage's "
    "(multimsd train -m …)"
)


def run_config(overrides: list[str], user_dir: str | None) -> DictConfig:
    """The run's config from its command line: its own keys composed by Hydra (packaged presets, then the
    user's ``DIR/pipeline``), the stages' overrides appended to its lists, the systems' fields set; the
    plugins it names imported."""
    from multimsd.commands.compose import NoSuchKey, compose
    from multimsd.commands.plugins import load_plugins
    from multimsd.errors import MultimsdError
    from multimsd.paths import conf_dir
    from multimsd.pipeline.config import SystemConfig  # (importing it registers the run's schema)

    own, staged, per_system = route(overrides)
    if user_dir is not None:  # a directory (parse_command_line checked it)
        own.append(f"config_dir={Path(user_dir).resolve()}")
    mine = [str(Path(user_dir) / "pipeline")] if user_dir and (Path(user_dir) / "pipeline").is_dir() else []
    try:
        cfg = compose("run", own, config_dir=conf_dir() / "pipeline", search=mine)
    except NoSuchKey as e:
        raise stage_key_hint(e, own, [user_dir] if user_dir else []) from None
    for stage, extra in staged.items():
        cfg[stage] = [*cfg[stage], *extra]
    for name, fields in per_system.items():
        if name not in cfg.systems:
            if "kind" not in fields:
                known = ", ".join(cfg.systems)
                raise MultimsdError(
                    f"systems.{name}: no such system in this run ({known}); "
                    f"a new one needs systems.{name}.kind=train|icl|copy|optimise|decode"
                )
            cfg.systems[name] = SystemConfig()
        for field, value in fields.items():
            if field == "train":
                value = [*cfg.systems[name].train, *value]
            elif field == "train=":  # the whole list given: it replaces the preset's
                field = "train"
            elif field == "enabled":
                value = value.lower() not in ("false", "0", "no")
            cfg.systems[name][field] = value
    load_plugins(list(cfg.plugins))
    return cfg


def stage_key_hint(e: Exception, own: list[str], search: list[str]) -> Exception:
    """A key the run has not (``optim.lr=1e-3``) that is a stage's key given without its stage: the error
    naming it as the run takes it, ``run config: optim: no such key (did you mean train.optim.lr?)``; each
    stage that has it (``data.path``: align.data.path or train.data.path). Any other error as it was."""
    from multimsd.commands.compose import OVERRIDE_KEY, configs_with_key
    from multimsd.errors import MultimsdError

    top = str(getattr(e, "key", "")).split(".")[0]
    given = [o for o in own if (m := OVERRIDE_KEY.match(o)) and m["key"].split(".")[0] == top]
    if not top or "." in str(e.key) or not given:  # a misspelt key below one of the run's own: not a stage's
        return e
    owners = configs_with_key(STAGES, given[0], search=search)
    if not owners:
        return e
    return MultimsdError(f"run config: {e.key}: no such key (did you mean {' or '.join(owners)}?)")


def show_config(cfg: DictConfig, what: str, resolve: bool = False) -> None:
    """``--cfg``, nothing run. ``job``: the run's config and its plan, a ``# stage NAME: OUT`` line per stage;
    ``hydra``: the config Hydra composed for each stage, under its ``# stage`` line (a run has no launcher,
    sweeper or run directory of Hydra's: its stages run in this process); ``all``: the run's config, then
    each stage's. Every stage config is composed, so a bad key fails here as it would in the run."""
    from omegaconf import OmegaConf

    from multimsd.pipeline.run import plan
    from multimsd.pipeline.sweep import parse_value

    stages = plan(cfg, Path(cfg.output.dir).resolve())
    if what in ("job", "all"):
        # sweep.values are strings in the schema (any train key's values): shown as the values they stand for
        # (numbers as numbers: loss.theta's [1, 4], not ['1', '4']), as the run reads them (parse_value)
        shown = OmegaConf.to_container(cfg, resolve=resolve)
        shown["sweep"]["values"] = [parse_value(v) for v in shown["sweep"]["values"]]
        print(OmegaConf.to_yaml(OmegaConf.create(shown), resolve=resolve))
    for stage in stages:
        print(f"# stage {stage.name}: {stage.out}")
        if what in ("hydra", "all"):
            print(OmegaConf.to_yaml(stage.config, resolve=resolve))


def main(argv: list[str] | None = None) -> None:
    """``multimsd run [--help] [--cfg job|hydra|all] [--config-dir DIR] [key=value ...]`` (``argv``: the
    arguments after ``run``; default ``sys.argv[1:]``)."""
    from multimsd import interrupts

    # Ctrl-C / SIGTERM anywhere (a stage's start-up included): one ``interrupted …`` line, exit 130 / 143
    with interrupts.installed(), interrupts.guard():
        _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> None:
    from multimsd.commands.compose import parse_command_line
    from multimsd.commands.plugins import preload_plugins
    from multimsd.commands.stage import run_stage

    args = parse_command_line("run", argv)
    if args.help:
        print(USAGE)
        return
    refused = [flag for key, flag in STAGE_ONLY.items() if getattr(args, key)]
    if args.multirun or refused:
        why = MULTIRUN if args.multirun else f"{refused[0]} is an option of the stage commands"
        print(
            f"error: {why}; multimsd run takes --help, --cfg job|hydra|all, --config-dir DIR and key=value",
            file=sys.stderr,
        )
        sys.exit(2)
    overrides = list(args.overrides)

    def go(_cfg) -> dict | None:
        from multimsd.pipeline.run import run

        cfg = run_config(overrides, args.config_dir)
        if args.cfg:
            show_config(cfg, args.cfg, resolve=args.resolve)
            return None
        results = run(cfg, overrides)
        print("\n".join(summary_lines(results)))
        return results

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    # Plugins named on the command line (plugins=, align.plugins=, …) and installed ones register their options
    # before any config is composed.
    preload_plugins(overrides)
    run_stage(go, None)


if __name__ == "__main__":
    main()


def summary_lines(results: dict) -> list[str]:
    from multimsd.pipeline.seeds import summary_lines as seed_summary_lines
    from multimsd.pipeline.sweep import selection_lines

    """What the command prints at the end: per system and language SARI [CI] / BLEU, and where things are."""
    lines = []
    for system, per_lang in results.get("systems", {}).items():
        for lang, s in per_lang.items():
            ci = (s.get("ci") or {}).get("sari")
            ci_txt = f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""
            lines.append(
                f"  {system:28s} {lang:>3s}  SARI {s.get('sari', float('nan')):6.2f}{ci_txt}  "
                f"BLEU {s.get('bleu', float('nan')):6.2f}  n={s.get('n_sentences')}"
            )
    if results.get("seeds"):
        lines += seed_summary_lines(results["seeds"])
    lines += selection_lines(results.get("sweep") or {})
    report: dict = results.get("report") or {}
    lines.append(f"run directory: {results['dir']}")
    lines.append(f"results: {Path(results['dir']) / 'results.json'}")
    if report.get("html"):
        lines.append(f"report: {report['html']}")
    return lines
