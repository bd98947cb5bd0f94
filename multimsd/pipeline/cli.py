"""The ``multimsd`` console command: ``multimsd run [overrides]`` (the whole pipeline) and the stages on their
own, ``multimsd align|train|evaluate [hydra overrides]`` (the same Hydra commands as the checkout's
``align.py`` / ``train.py`` / ``evaluate.py``: ``--help``, ``--cfg job``, ``-m`` multirun, launchers,
``--config-dir``).

Overrides of ``multimsd run`` are Hydra's ``key=value``. The run's own keys (``conf/pipeline/run.yaml``:
``output.dir``, ``systems``, ``sweep``, ``experiment=…``, ``debug=…``) go to the run; ``align.<key>=…``, ``train.<key>=…`` and
``evaluate.<key>=…`` go to that stage's config (``align.aligner.threshold=0.6``, ``train.optim.epochs=5``,
``+train.foo=1``, ``~evaluate.systems.identity``), after the run's own lists for that stage.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

COMMANDS = """\
usage: multimsd COMMAND [--help] [key=value ...]

Commands:
  run        the whole pipeline: align -> (gold) -> train / prompt every system -> evaluate -> report
  align      article pairs -> aligned sentence pairs (a DatasetDict); gold mode tunes θ
  train      fine-tune / prompt a simplification model (on several GPUs: accelerate launch -m multimsd.train)
  evaluate   SARI, BLEU, TER, chrF, METEOR, FKGL, medical terms, bootstrap intervals
  studio     a local web app: look at a run's alignments and write gold alignments (multimsd studio PATH)
Each stage takes Hydra overrides (key=value); `multimsd COMMAND --help` lists its keys.
"""

USAGE = """\
usage: multimsd run [--help] [--cfg] [--config-dir DIR] [key=value ...]

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
  debug=tiny                   seconds-long run on tiny random models (tests)
  systems.NAME.kind=train|icl|copy   the systems compared in the report (a new NAME adds one)
  systems.NAME.label=TEXT            its name in the report (default: what ran, e.g. "SmolLM2-135M-Instruct + LoRA, θ = 4")
  systems.NAME.enabled=false         leave a system of the defaults / a preset out
  systems.NAME.train.KEY=VALUE       a train.py override of that system only
  sweep.parameter=loss.theta sweep.values=[1,4]    one trained system per value, of any train.py key:
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
Stage keys, routed to that stage's own config (see python align.py/train.py/evaluate.py --help):
  align.KEY=VALUE   train.KEY=VALUE   evaluate.KEY=VALUE

Examples:
  multimsd run
  multimsd run output.dir=outputs/theta sweep.parameter=loss.theta sweep.values=[1,4]
  multimsd run experiment=llama31_multi_weighted align.data.path=pairs.jsonl
  multimsd run experiment=weighted_loss pairs.path=corpus.tsv pairs.lang=es train.data.languages=[es]
  multimsd run train.model=tiny_llama train.debug=train_tiny align.debug=tiny
Errors in the input print one line and exit with status 2.
"""

STAGE_KEY = re.compile(r"^(?P<op>\+{0,2}|~)(?P<stage>align|train|evaluate)\.(?P<rest>.+)$")
SYSTEM_TRAIN_KEY = re.compile(r"^(?P<op>\+{0,2}|~)systems\.(?P<name>[\w-]+)\.train\.(?P<rest>.+)$")
SYSTEM_FIELD = re.compile(r"^\+{0,2}systems\.(?P<name>[\w-]+)\.(?P<field>kind|label|enabled)=(?P<value>.*)$")


def route(overrides: list[str]) -> tuple[list[str], dict[str, list[str]], dict[str, dict]]:
    """Split overrides into the run's own, each stage's (``train.optim.lr=1e-4`` -> train: ``optim.lr=1e-4``)
    and each system's (``systems.x.kind=icl``, ``systems.x.train.icl.shots=5`` -> x: kind icl, train
    ``icl.shots=5``; set on the composed config, so a new system needs no ``+``)."""
    own: list[str] = []
    staged: dict[str, list[str]] = {"align": [], "train": [], "evaluate": []}
    per_system: dict[str, dict] = {}
    for o in overrides:
        if m := STAGE_KEY.match(o):
            staged[m["stage"]].append(m["op"] + m["rest"])
        elif m := SYSTEM_TRAIN_KEY.match(o):
            per_system.setdefault(m["name"], {}).setdefault("train", []).append(m["op"] + m["rest"])
        elif m := SYSTEM_FIELD.match(o):
            per_system.setdefault(m["name"], {})[m["field"]] = m["value"].strip("'\"")
        else:
            own.append(o)
    return own, staged, per_system


STAGE_COMMANDS = ("align", "train", "evaluate")


def config_dir_option(args: list[str]) -> tuple[str | None, list[str]]:
    """``--config-dir DIR`` / ``--config-dir=DIR`` / ``-cd DIR`` (Hydra's spelling) taken out of ``args``."""
    rest: list[str] = []
    found: str | None = None
    it = iter(args)
    for a in it:
        if a in ("--config-dir", "-cd"):
            found = next(it, None)
            if found is None:
                print("error: --config-dir needs a directory", file=sys.stderr)
                sys.exit(2)
        elif a.startswith("--config-dir="):
            found = a.split("=", 1)[1]
        else:
            rest.append(a)
    return found, rest


def check_command_line(config_name: str, argv: list[str]) -> None:
    """Compose the stage's config from ``argv`` as the command will, before Hydra runs it: a key outside the
    schema (with or without ``+``), a value of the wrong type or an unknown preset is one ``error:`` line naming
    it, and exit status 2, before anything is written. A sweep (``-m a=1,2``) is checked with its first
    value; ``hydra.*`` settings and ``--help`` are left to Hydra."""
    from hydra._internal.utils import get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from multimsd.errors import MultimsdError
    from multimsd.pipeline.run import compose

    args, _ = get_args_parser().parse_known_args(argv)
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


def run_stage_command(name: str, args: list[str]) -> None:
    """``multimsd align|train|evaluate …``: the stage's own Hydra entry point, with Hydra's command line."""
    import importlib

    sys.argv = [f"multimsd {name}", *args]
    importlib.import_module(f"multimsd.{name}").main()


def main(argv: list[str] | None = None) -> None:
    from multimsd import interrupts

    # Ctrl-C / SIGTERM anywhere (a stage's start-up included): one ``interrupted …`` line, exit 130 / 143
    with interrupts.installed(), interrupts.guard():
        _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(COMMANDS)
        return
    if argv[0] in STAGE_COMMANDS:
        run_stage_command(argv[0], argv[1:])
        return
    if argv[0] == "studio":  # not a Hydra command: its own arguments (multimsd studio --help)
        from multimsd.studio.cli import main as studio_main

        studio_main(argv[1:])
        return
    if argv[0] != "run":
        print(
            f"error: unknown command {argv[0]!r} (choose run, {', '.join(STAGE_COMMANDS)}, studio)",
            file=sys.stderr,
        )
        sys.exit(2)
    args = argv[1:]
    if "-h" in args or "--help" in args:
        print(USAGE)
        return
    show_cfg = "--cfg" in args
    args = [a for a in args if a != "--cfg"]
    user_dir, args = config_dir_option(args)

    from multimsd.cli import preload_plugins, run_stage

    def go(_cfg) -> dict | None:
        from omegaconf import OmegaConf

        from multimsd.cli import load_plugins
        from multimsd.errors import MultimsdError
        from multimsd.paths import conf_dir
        from multimsd.pipeline.config import SystemConfig
        from multimsd.pipeline.run import compose, run, summary_lines

        own, staged, per_system = route(args)
        if user_dir is not None:
            if not Path(user_dir).is_dir():
                raise MultimsdError(f"--config-dir {user_dir}: not a directory")
            own.append(f"config_dir={Path(user_dir).resolve()}")
        # The run's own presets: the packaged conf/pipeline, then the user's DIR/pipeline.
        mine = (
            [str(Path(user_dir) / "pipeline")] if user_dir and (Path(user_dir) / "pipeline").is_dir() else []
        )
        cfg = compose("run", own, config_dir=conf_dir() / "pipeline", search=mine)
        for stage, extra in staged.items():
            cfg[stage] = [*cfg[stage], *extra]
        for name, fields in per_system.items():
            if name not in cfg.systems:
                if "kind" not in fields:
                    known = ", ".join(cfg.systems)
                    raise MultimsdError(
                        f"systems.{name}: no such system in this run ({known}); "
                        f"a new one needs systems.{name}.kind=train|icl|copy"
                    )
                cfg.systems[name] = SystemConfig()
            for field, value in fields.items():
                if field == "train":
                    value = [*cfg.systems[name].train, *value]
                elif field == "enabled":
                    value = value.lower() not in ("false", "0", "no")
                cfg.systems[name][field] = value
        load_plugins(list(cfg.plugins))
        if show_cfg:  # the run's config, and the stages it would run (every stage config composed: validated)
            from multimsd.pipeline.run import plan

            print(OmegaConf.to_yaml(cfg))
            for stage in plan(cfg, Path(cfg.output.dir).resolve()):
                print(f"# stage {stage.name}: {stage.out}")
            return None
        results = run(cfg, args)
        print("\n".join(summary_lines(results)))
        return results

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    # Plugins named on the command line (plugins=, align.plugins=, …) and installed ones register their options
    # before any config is composed.
    preload_plugins(args)
    run_stage(go, None)


if __name__ == "__main__":
    main()
