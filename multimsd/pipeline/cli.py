"""The ``multimsd`` console command (installed by ``pip install -e .``): ``multimsd run [overrides]``.

Overrides are Hydra's ``key=value``. The run's own keys (``conf/pipeline/run.yaml``: ``dir``, ``systems``,
``sweep``, ``experiment=…``, ``debug=…``) go to the run; ``align.<key>=…``, ``train.<key>=…`` and
``evaluate.<key>=…`` go to that stage's config (``align.aligner.threshold=0.6``, ``train.optim.epochs=5``,
``+train.foo=1``, ``~evaluate.systems.identity``), after the run's own lists for that stage.
"""

from __future__ import annotations

import logging
import re
import sys

USAGE = """\
usage: multimsd run [--help] [--cfg] [key=value ...]

Runs align -> (gold) -> train / prompt every system -> evaluate -> report into one run directory
(default outputs/run). With no overrides: the bundled sample, offline models, 2 CPU cores.
A stage whose resolved config is unchanged and whose outputs are intact is skipped on a re-run;
a killed run continues where it stopped.

Run keys (conf/pipeline/run.yaml):
  dir=PATH                     the run directory (report.html, results.json, every stage's outputs)
  experiment=NAME              a preset of conf/pipeline/experiment/ (e.g. llama31_multi_weighted)
  debug=tiny                   seconds-long run on tiny random models (tests)
  systems.NAME.kind=train|icl|copy   the systems compared in the report (a new NAME adds one)
  systems.NAME.label=TEXT            its name in the report
  systems.NAME.enabled=false         leave a system of the defaults / a preset out
  systems.NAME.train.KEY=VALUE       a train.py override of that system only
  sweep.parameter=loss.theta sweep.values=[1,4]    one trained system per value
  compare=[a:b,...]            paired bootstrap comparisons (default: every pair)
  gold=false                   skip the gold-alignment scores (Table 3)
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
  multimsd run dir=outputs/theta sweep.parameter=loss.theta sweep.values=[1,4]
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


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return
    if argv[0] != "run":
        print(f"error: unknown command {argv[0]!r} (multimsd run --help)", file=sys.stderr)
        sys.exit(2)
    args = argv[1:]
    if "-h" in args or "--help" in args:
        print(USAGE)
        return
    show_cfg = "--cfg" in args
    args = [a for a in args if a != "--cfg"]

    from multimsd.cli import run_stage

    def go(_cfg) -> dict | None:
        from omegaconf import OmegaConf

        from multimsd.cli import load_plugins
        from multimsd.errors import MultimsdError
        from multimsd.pipeline.config import SystemConfig
        from multimsd.pipeline.run import compose, conf_dir, run, summary_lines

        own, staged, per_system = route(args)
        cfg = compose("run", own, config_dir=conf_dir() / "pipeline")
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
            from pathlib import Path

            from multimsd.pipeline.run import plan

            print(OmegaConf.to_yaml(cfg))
            for stage in plan(cfg, Path(cfg.dir).resolve()):
                print(f"# stage {stage.name}: {stage.out}")
            return None
        results = run(cfg, args)
        print("\n".join(summary_lines(results)))
        return results

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    run_stage(go, None)


if __name__ == "__main__":
    main()
