"""``multimsd run sweep.parameter=KEY sweep.values=[…]`` over any key and any values (issue #31, item 2):
floats (1.5, 1e-4), strings and booleans give valid system names (hand-checked tokens), the run records the
swept key and value per system, the report's sweep table and chart use them, the selection by validation
mean(SARI, BLEU) is unchanged, and the default θ ∈ {1, 4} sweep keeps its names. End to end through
``multimsd run debug=tiny``: θ ∈ {1.5, 2.5}, optim.lr ∈ {1e-4, 3e-4}, optim.scheduler ∈ {linear, constant}."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from multimsd.errors import MultimsdError
from multimsd.paths import conf_dir
from multimsd.pipeline.config import SystemConfig
from multimsd.pipeline.run import compose, expand_systems, plan
from multimsd.pipeline.sweep import override, quote, value_text, value_token
from multimsd.render.blocks import Chart, Table
from multimsd.render.markdown import render_markdown
from multimsd.report.load import Run, SystemInfo
from multimsd.report.sweep import sweep_section


def run_cfg(*overrides: str):
    return compose("run", ["debug=tiny", *overrides], config_dir=conf_dir() / "pipeline")


# ------------------------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    "given, token",
    [
        ("1", "1"),  # the default sweep's names stay finetuned_theta1 / finetuned_theta4
        ("4", "4"),
        ("1.5", "1p5"),
        ("2.5", "2p5"),
        ("2.0", "2"),
        ("0.05", "0p05"),
        ("0.01", "0p01"),
        ("0.001", "1em3"),
        ("0.0001", "1em4"),  # sweep.values=[1e-4]: OmegaConf hands over the string "0.0001"
        ("0.0003", "3em4"),
        ("1e-05", "1em5"),
        ("0.00015", "1p5em4"),
        ("-2", "m2"),
        ("-0.5", "m0p5"),
        ("100.0", "100"),
        ("123456.0", "123456"),
        ("10000000000.0", "1e10"),
        ("True", "true"),  # sweep.values=[true]: the string "True"
        ("False", "false"),
        ("linear", "linear"),
        ("cosine_with_restarts", "cosine_with_restarts"),
        ("Cosine With Restarts", "cosine-with-restarts"),
        ("a/b.c", "a-b-c"),
    ],
)
def test_value_tokens(given, token):
    assert value_token(given) == token


def test_labels_show_the_value_not_the_token():
    assert [value_text(v) for v in ("1", "1.5", "0.0001", "2.0", "True", "linear")] == [
        "1",
        "1.5",
        "0.0001",
        "2",
        "true",
        "linear",
    ]


@pytest.mark.parametrize("text", ["a b", "it's", "a\\b", "end\\", "x\\'y", "a,b=c", "[1,2]", "a:b"])
def test_overrides_quote_what_hydra_would_misread(text):
    o = OverridesParser.create().parse_override(override("optim.scheduler", text))
    assert o.key_or_group == "optim.scheduler" and o.value() == text
    assert OverridesParser.create().parse_override(f"k=[{quote(text)}]").value() == [text]


def test_plain_values_are_passed_as_written():
    assert override("loss.theta", "4") == "loss.theta=4"
    assert override("optim.lr", "0.0001") == "optim.lr=0.0001"
    assert override("optim.scheduler", "linear") == "optim.scheduler=linear"
    assert override("x", "-2") == "x=-2" and override("x", "True") == "x=True"


@pytest.mark.integration
def test_names_and_overrides_of_each_kind_of_value():
    cases = {
        ("loss.theta", "[1,4]"): {"finetuned_theta1": "loss.theta=1", "finetuned_theta4": "loss.theta=4"},
        ("loss.theta", "[1.5,2]"): {
            "finetuned_theta1p5": "loss.theta=1.5",
            "finetuned_theta2": "loss.theta=2",
        },
        ("optim.lr", "[1e-4,3e-4]"): {
            "finetuned_lr1em4": "optim.lr=0.0001",
            "finetuned_lr3em4": "optim.lr=0.0003",
        },
        ("optim.scheduler", "[linear,constant]"): {
            "finetuned_scheduler_linear": "optim.scheduler=linear",
            "finetuned_scheduler_constant": "optim.scheduler=constant",
        },
        ("data.group_by_length", "[true,false]"): {
            "finetuned_group_by_length_true": "data.group_by_length=True",
            "finetuned_group_by_length_false": "data.group_by_length=False",
        },
    }
    for (key, values), expected in cases.items():
        systems = expand_systems(run_cfg(f"sweep.parameter={key}", f"sweep.values={values}"))
        swept = {n: sc["train"][-1] for n, sc in systems.items() if sc["sweep"] is not None}
        assert swept == expected, (key, values)
        assert list(systems)[:2] == ["copy", "zero_shot"]
        assert all(sc["parameter"] == key for n, sc in systems.items() if n in swept)


@pytest.mark.integration
def test_clashing_names_are_one_error_line():
    cases = {
        "[2,2.0]": "sweep.values: 2 and 2.0 both name the system finetuned_theta2; give each value once",
        "[Linear,linear]": "both name the system finetuned_theta_linear",
        "['!!',1]": "'!!' gives no name",
    }
    for values, message in cases.items():
        with pytest.raises(MultimsdError, match="^sweep") as e:
            expand_systems(run_cfg(f"sweep.values={values}"))
        assert message in str(e.value) and "\n" not in str(e.value)
    # a made name that another system already has
    cfg = run_cfg()
    cfg.systems["finetuned_theta4"] = SystemConfig(kind="icl")
    with pytest.raises(MultimsdError, match="finetuned_theta4 .loss.theta=4 of systems.finetuned. is also"):
        expand_systems(cfg)
    # ... or that a seed makes
    cfg = run_cfg("seeds=[1,2]")
    cfg.systems["finetuned_theta4_seed2"] = SystemConfig(kind="icl")
    with pytest.raises(
        MultimsdError, match="^seeds: finetuned_theta4_seed2 .seed 2 of finetuned_theta4. is also"
    ):
        expand_systems(cfg)


@pytest.mark.integration
def test_plan_builds_the_evaluation_with_any_value(tmp_path):
    """Issue #31's first two rows: the evaluate config failed to compose (a dot or 1e-4 in a Hydra key); now it
    holds every system under its name, the run's own evaluate overrides after them, and each swept system's
    value as its composed train.py config has it."""
    cases = {
        ("loss.theta", "[1.5,2]"): {"finetuned_theta1p5": 1.5, "finetuned_theta2": 2.0},
        ("optim.lr", "[0.0001,0.01]"): {"finetuned_lr1em4": 0.0001, "finetuned_lr0p01": 0.01},
        ("optim.scheduler", "[linear,constant]"): {
            "finetuned_scheduler_linear": "linear",
            "finetuned_scheduler_constant": "constant",
        },
        ("data.group_by_length", "[true,false]"): {
            "finetuned_group_by_length_true": True,
            "finetuned_group_by_length_false": False,
        },
    }
    for (key, values), expected in cases.items():
        cfg = run_cfg(f"sweep.parameter={key}", f"sweep.values={values}")
        cfg.evaluate = ["systems.extra=@identity"]
        stages = plan(cfg, tmp_path / "r")
        ev = next(s for s in stages if s.kind == "evaluate")
        assert list(ev.config.systems) == ["copy", "zero_shot", *expected, "extra"]
        for name in expected:
            assert ev.config.systems[name] == str(tmp_path / "r" / "systems" / name / "predictions" / "test")
        values_seen = {n: sc["value"] for n, sc in ev.info.items() if sc["sweep"] is not None}
        assert values_seen == expected and all(type(values_seen[n]) is type(v) for n, v in expected.items())
        train = {s.system: s.config for s in stages if s.kind == "train"}
        for name, v in expected.items():
            section, field = key.split(".")
            assert train[name][section][field] == v
    # compare names the swept systems (quoted for Hydra)
    cfg = run_cfg(
        "sweep.parameter=optim.lr", "sweep.values=[1e-4,3e-4]", "compare=[finetuned_lr3em4:finetuned_lr1em4]"
    )
    ev = plan(cfg, tmp_path / "r")[-1]
    assert list(ev.config.bootstrap.compare) == ["finetuned_lr3em4:finetuned_lr1em4"]


@pytest.mark.integration
def test_a_system_name_hydra_cannot_read_as_a_key_still_evaluates(tmp_path):
    """The systems reach the evaluation as a map: a name Hydra's lexer rejects as a key (a leading digit and a
    dash) composes too."""
    cfg = run_cfg("sweep.parameter=null", "sweep.values=[]")
    cfg.systems["2nd-try"] = SystemConfig(kind="copy")
    ev = plan(cfg, tmp_path / "r")[-1]
    assert ev.config.systems["2nd-try"] == "@identity"


# ------------------------------------------------------------------------------------------- report
def report_run(parameter: str, systems: dict[str, tuple], selected: str | None = None) -> Run:
    """A Run with one language: ``systems`` name -> (sweep record or None, theta, SARI, BLEU)."""
    names = list(systems)
    return Run(
        dir=Path("."),
        meta={
            "sweep": {
                "parameter": parameter,
                "systems": names,
                "selected": selected,
                "validation": {n: {"mean_sari_bleu": 10.0 + i} for i, n in enumerate(names)},
            }
        },
        stats=None,
        gold=None,
        evaluation={
            "languages": ["en"],
            "systems": {n: {"en": {"sari": s, "bleu": b}} for n, (_, _, s, b) in systems.items()},
        },
        references=None,
        systems={
            n: SystemInfo(n, "train", f"label {n}", theta, None, None, sweep=rec)
            for n, (rec, theta, _, _) in systems.items()
        },
    )


def table_of(section) -> Table:
    return next(b for b in section.blocks if isinstance(b, Table))


def test_report_reads_the_recorded_value_of_any_key():
    """Issue #31's third row: lr = 1 and lr = 2 were both shown as "optim.lr = 1" (θ) and plotted at θ."""
    run = report_run(
        "optim.lr",
        {
            "finetuned_lr2": ({"parameter": "optim.lr", "value": 2.0}, 1.0, 30.0, 4.0),
            "finetuned_lr1": ({"parameter": "optim.lr", "value": 1}, 1.0, 20.0, 2.0),
        },
        selected="finetuned_lr2",
    )
    sec = sweep_section(run)
    assert sec.title == "Sweep over optim.lr"
    rows = table_of(sec).rows
    assert [r[0].text for r in rows] == ["1", "2"]  # ascending values, not θ
    assert [r[1].text for r in rows] == ["label finetuned_lr1", "label finetuned_lr2 (selected)"]
    chart = next(b for b in sec.blocks if isinstance(b, Chart)).svg
    assert "<polyline" in chart and ">optim.lr</text>" in chart
    # x ticks from 1 to 2, not one θ = 1 column
    assert ">1</text>" in chart and ">2</text>" in chart
    md = render_markdown("t", [sec], "")
    assert "| 1 | label finetuned_lr1 |" in md and "| 2 | label finetuned_lr2 (selected) |" in md


def test_report_shows_small_floats_exactly_and_strings_as_bars_in_the_run_order():
    lr = report_run(
        "optim.lr",
        {
            "a": ({"parameter": "optim.lr", "value": 0.0003}, 1.0, 1.0, 1.0),
            "b": ({"parameter": "optim.lr", "value": 0.0001}, 1.0, 2.0, 2.0),
            "c": ({"parameter": "optim.lr", "value": 1.2345678e-4}, 1.0, 3.0, 3.0),
        },
    )
    assert [r[0].text for r in table_of(sweep_section(lr)).rows] == ["0.0001", "0.00012345678", "0.0003"]
    sched = report_run(
        "optim.scheduler",
        {
            "s_linear": ({"parameter": "optim.scheduler", "value": "linear"}, 1.0, 30.0, 3.0),
            "s_constant": ({"parameter": "optim.scheduler", "value": "constant"}, 1.0, 20.0, 2.0),
            "s_yes": ({"parameter": "optim.scheduler", "value": True}, 1.0, 25.0, 2.5),
        },
    )
    sec = sweep_section(sched)
    rows = table_of(sec).rows
    assert [r[0].text for r in rows] == ["linear", "constant", "true"] and not rows[0][0].num
    svg = next(b for b in sec.blocks if isinstance(b, Chart)).svg
    assert "<polyline" not in svg and svg.count("<rect") == 1 + 6 + 2  # frame, 3 values x 2 bars, legend
    assert "<title>SARI: 30.00</title>" in svg and ">constant</text>" in svg


def test_report_of_a_run_json_without_records():
    """A run.json written before the per-system records: its θ sweep is read from ``theta``; a sweep over
    another key has no value to show, so no section (rather than θ under that key's name)."""
    old = {"theta1": (None, 1.0, 20.0, 2.0), "theta4": (None, 4.0, 30.0, 3.0)}
    rows = table_of(sweep_section(report_run("loss.theta", old))).rows
    assert [r[0].text for r in rows] == ["1", "4"]
    assert sweep_section(report_run("optim.lr", old)) is None


# ------------------------------------------------------------------------------------------- end to end
def multimsd(run_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "multimsd", "run", "debug=tiny", f"output.dir={run_dir}"]
    # no 0-shot system: it plays no part in a sweep, and each run takes seconds less
    args += ["systems.zero_shot.enabled=false", *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


E2E = {
    "theta": (
        ["sweep.values=[1.5,2.5]"],
        "loss.theta",
        {"finetuned_theta1p5": 1.5, "finetuned_theta2p5": 2.5},
    ),
    "lr": (
        ["sweep.parameter=optim.lr", "sweep.values=[1e-4,3e-4]"],
        "optim.lr",
        {"finetuned_lr1em4": 0.0001, "finetuned_lr3em4": 0.0003},
    ),
    "scheduler": (
        ["sweep.parameter=optim.scheduler", "sweep.values=[linear,constant]"],
        "optim.scheduler",
        {"finetuned_scheduler_linear": "linear", "finetuned_scheduler_constant": "constant"},
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(E2E))
def test_sweep_end_to_end(case, tmp_path):
    extra, key, expected = E2E[case]
    d = tmp_path / "run"
    proc = multimsd(d, *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {p.name for p in (d / "systems").iterdir()} == set(expected)
    run = json.loads((d / "run.json").read_text())
    results = json.loads((d / "results.json").read_text())
    assert set(results["systems"]) == {"copy", *expected}
    # the swept key and the value each system ran with, as its train.py config had it
    for name, value in expected.items():
        assert run["systems"][name]["sweep"] == {"parameter": key, "value": value}
        ran = json.loads((d / "systems" / name / "train_config.json").read_text())
        section, field = key.split(".")
        assert ran[section][field] == value
    assert "sweep" not in run["systems"]["copy"]
    sweep = run["sweep"]
    assert sweep["parameter"] == key and sweep["systems"] == list(expected) and sweep["values"] == expected
    # the selection is the paper's: the best validation mean(SARI, BLEU), ties to the first
    val = {
        s: json.loads((d / "systems" / s / "all_results.json").read_text())["validation"]["mean_sari_bleu"]
        for s in expected
    }
    assert sweep["selected"] == max(val, key=val.get) and results["sweep"] == sweep
    # the validation outputs' degenerate shares are recorded beside it, and a flagged choice is said
    assert set(sweep["validation_flagged"]) <= set(expected)
    warned = (
        "its validation outputs, on which it was selected, are degenerate" in (d / "report.md").read_text()
    )
    assert warned == (sweep["selected"] in sweep["validation_flagged"])
    # the value reached the training: the two runs' losses differ
    hist = [json.loads((d / "systems" / s / "all_results.json").read_text())["history"] for s in expected]
    assert hist[0] != hist[1]
    # the report: one row per value with that value, under the key's name
    md = (d / "report.md").read_text()
    part = md.split(f"## Sweep over {key}")[1]
    short = key.split(".")[-1]
    shown = "θ" if short == "theta" else short
    for value in expected.values():
        text = {1.5: "1.5", 2.5: "2.5", 0.0001: "0.0001", 0.0003: "0.0003"}.get(value, value)
        assert f"| {text} | tiny random Llama + LoRA, {shown} = {text}" in part, part
    assert f"SARI and BLEU vs {key}" in (d / "report.html").read_text()


def test_seeded_selection_shows_the_recorded_values():
    """With seeds, the selection table and the chart (mean over seeds) read the same records: a string sweep is
    a table of its values in the run's order, and bars."""
    from multimsd.report.seeds import seeds_section

    def cell(sari: float, bleu: float) -> dict:
        return {
            "sari": {
                "mean": sari,
                "sd": 1.0,
                "per_seed": {"1": sari - 1, "2": sari + 1},
                "ci": [sari - 2, sari + 2],
            },
            "bleu": {"mean": bleu, "sd": 0.5, "per_seed": {"1": bleu, "2": bleu}},
        }

    bases = {"ft_scheduler_linear": "linear", "ft_scheduler_constant": "constant"}
    members = {b: [f"{b}_seed1", f"{b}_seed2"] for b in bases}
    run = report_run(
        "optim.scheduler",
        {
            m: ({"parameter": "optim.scheduler", "value": v}, 1.0, 1.0, 1.0)
            for b, v in bases.items()
            for m in members[b]
        },
    )
    run.meta["seeds"] = {
        "seeds": [1, 2],
        "confidence": 0.95,
        "method": "percentile",
        "systems": {
            "ft_scheduler_linear": {
                "label": "linear run",
                "systems": {"1": "a", "2": "b"},
                "en": cell(30.0, 3.0),
            },
            "ft_scheduler_constant": {
                "label": "constant run",
                "systems": {"1": "c", "2": "d"},
                "en": cell(20.0, 2.0),
            },
        },
    }
    run.meta["sweep"] = {
        "parameter": "optim.scheduler",
        "systems": [m for ms in members.values() for m in ms],
        "seed_systems": members,
        "selected": "ft_scheduler_constant",
        "validation": {
            "ft_scheduler_linear": {"mean_sari_bleu": 10.0, "mean_sari_bleu_sd": 0.1, "per_seed": {}},
            "ft_scheduler_constant": {"mean_sari_bleu": 12.0, "mean_sari_bleu_sd": 0.2, "per_seed": {}},
        },
    }
    sec = seeds_section(run)
    selection = [b for b in sec.blocks if isinstance(b, Table) and b.caption.startswith("Selection")][0]
    assert selection.header[0] == "optim.scheduler"
    assert [(r[0].text, r[1].text) for r in selection.rows] == [
        ("linear", "linear run"),
        ("constant", "constant run (selected)"),
    ]
    svg = next(b for b in sec.blocks if isinstance(b, Chart)).svg
    assert "SARI and BLEU vs optim.scheduler, mean over seeds" in svg and "<polyline" not in svg
    assert "<title>SARI: 30.00</title>" in svg and "<title>SARI: [28.00, 32.00]</title>" in svg
    assert not any(getattr(b, "text", "").startswith("⚠") for b in sec.blocks)
    # one seed of the selected value wrote degenerate validation outputs: the warning names that seed's system
    shares = {"n": 4, "empty": 0.5, "cut": 0.0, "identical": 0.0, "flagged": ["empty"]}
    run.meta["sweep"]["validation_flagged"] = {"ft_scheduler_constant_seed2": {"en": shares}}
    warned = [b.text for b in seeds_section(run).blocks if getattr(b, "text", "").startswith("⚠")]
    assert len(warned) == 1 and warned[0].startswith("⚠ label ft_scheduler_constant_seed2: its validation")
    assert "en 50 % empty" in warned[0]


# ----------------------------------------------------------------- degenerate validation outputs of a sweep
def write_validation(system_dir: Path, rows: list[tuple[str, str, str]], cut: dict | None) -> None:
    """predictions/validation of one trained system: rows of (lang, source, output), generation.json's cut
    flags per language (None: no generation.json)."""
    d = system_dir / "predictions" / "validation"
    d.mkdir(parents=True)
    refs = [{"complex": src, "simple": "ref", "lang": lang} for lang, src, _ in rows]
    (d / "references.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    for lang in sorted({r[0] for r in rows}):
        (d / f"{lang}.txt").write_text("\n".join(out for g, _, out in rows if g == lang) + "\n")
    if cut is not None:
        (d / "generation.json").write_text(json.dumps({"cut": cut}))


def test_validation_flags_are_the_evaluations_shares_of_the_validation_outputs(tmp_path):
    from multimsd.metrics.degenerate import flag_text
    from multimsd.pipeline.sweep import validation_flags

    # 4 en rows: one empty output, two copies of the input (white space does not count), one cut;
    # 2 de rows, clean: de is not listed
    en = [("en", "A b.", ""), ("en", "C d.", " C  d."), ("en", "E f.", "E f."), ("en", "G h.", "short")]
    de = [("de", "X y.", "x"), ("de", "Z w.", "z")]
    write_validation(tmp_path / "a", en + de, {"en": [False, False, False, True], "de": [False, False]})
    write_validation(tmp_path / "b", [("en", "A b.", "a"), ("en", "C d.", "c")], None)  # clean, cut unknown
    dirs = {"a": tmp_path / "a", "b": tmp_path / "b", "none": tmp_path / "none"}  # none: no predictions
    flags = validation_flags(dirs, max_share=0.1)
    assert set(flags) == {"a"} and set(flags["a"]) == {"en"}
    en_shares = flags["a"]["en"]
    assert (en_shares["empty"], en_shares["cut"], en_shares["identical"]) == (0.25, 0.25, 0.5)
    assert en_shares["flagged"] == ["empty", "cut", "identical"]
    assert flag_text(flags["a"]) == (
        "en 25 % empty, en 25 % cut at the length cap, en 50 % identical to the input"
    )
    # the threshold is the evaluation's: at 0.3 only the copies flag en
    assert validation_flags(dirs, max_share=0.3)["a"]["en"]["flagged"] == ["identical"]


def test_the_report_warns_when_the_selected_systems_validation_outputs_are_degenerate():
    systems = {
        "finetuned_theta1": ({"parameter": "loss.theta", "value": 1}, 1.0, 30.0, 4.0),
        "finetuned_theta4": ({"parameter": "loss.theta", "value": 4}, 4.0, 35.0, 3.0),
    }
    shares = {"n": 10, "empty": 0.0, "cut": 0.4, "identical": 0.0, "flagged": ["cut"]}
    run = report_run("loss.theta", systems, selected="finetuned_theta4")
    run.evaluation["degenerate"] = {"max_share": 0.1}
    paragraphs = lambda sec: [b.text for b in sec.blocks if type(b).__name__ == "Paragraph"]  # noqa: E731
    assert not any("⚠" in p for p in paragraphs(sweep_section(run)))  # nothing recorded: no warning
    run.meta["sweep"]["validation_flagged"] = {"finetuned_theta1": {"en": shares}}
    assert not any("⚠" in p for p in paragraphs(sweep_section(run)))  # another system's flags: none
    run.meta["sweep"]["validation_flagged"] = {"finetuned_theta4": {"en": shares}}
    warned = [p for p in paragraphs(sweep_section(run)) if "⚠" in p]
    assert warned == [
        "⚠ label finetuned_theta4: its validation outputs, on which it was selected, are degenerate (above "
        "10 %): en 40 % cut at the length cap. The scores it was chosen on describe those outputs; raise "
        "generation.max_new_tokens or look at the outputs before relying on the choice."
    ]
    assert run.meta["sweep"]["selected"] == "finetuned_theta4"  # the selection itself is the paper's


# ------------------------------------------------------------------------------------------- a tie (issue #40)
def write_validation_scores(run_dir: Path, scores: dict[str, float]) -> None:
    for name, m in scores.items():
        d = run_dir / "systems" / name
        d.mkdir(parents=True)
        v = {"sari": m, "bleu": m, "mean_sari_bleu": m}
        (d / "all_results.json").write_text(json.dumps({"validation": v}), encoding="utf-8")


def test_a_tied_selection_says_tie_and_the_rule_in_the_report_and_on_the_console(tmp_path):
    from multimsd.pipeline.cli import summary_lines
    from multimsd.pipeline.run import select_swept

    # lr 3e-4 listed first in sweep.values, 1e-4 second: the same validation mean(SARI, BLEU)
    swept = ["finetuned_lr3em4", "finetuned_lr1em4", "finetuned_lr1em3"]
    write_validation_scores(
        tmp_path, {"finetuned_lr3em4": 25.0, "finetuned_lr1em4": 25.0, "finetuned_lr1em3": 9.0}
    )
    sweep = {"parameter": "optim.lr", "systems": swept, **select_swept(tmp_path, swept)}
    assert sweep["selected"] == "finetuned_lr3em4"  # the rule the report states: the first in sweep.values
    line = [x for x in summary_lines({"dir": str(tmp_path), "sweep": sweep}) if x.startswith("sweep over")]
    assert line == [
        "sweep over optim.lr: finetuned_lr3em4 selected by mean(sari,bleu) on validation (25.00) — a tie: "
        "finetuned_lr3em4 and finetuned_lr1em4 score the same (25.00); a tie goes to the value listed first "
        "in sweep.values"
    ]
    run = report_run(
        "optim.lr",
        {
            "finetuned_lr3em4": ({"parameter": "optim.lr", "value": 3e-4}, 1.0, 30.0, 4.0),
            "finetuned_lr1em4": ({"parameter": "optim.lr", "value": 1e-4}, 1.0, 31.0, 5.0),
            "finetuned_lr1em3": ({"parameter": "optim.lr", "value": 1e-3}, 1.0, 20.0, 2.0),
        },
    )
    run.meta["sweep"] = sweep
    sec = sweep_section(run)
    assert [r[1].text for r in table_of(sec).rows] == [
        "label finetuned_lr1em4 (tie)",
        "label finetuned_lr3em4 (selected, tie)",
        "label finetuned_lr1em3",
    ]
    text = next(b.text for b in sec.blocks if getattr(b, "text", "").startswith("Selected"))
    assert (
        "label finetuned_lr3em4 — a tie: label finetuned_lr3em4 and label finetuned_lr1em4 score the same "
        "(25.00); a tie goes to the value listed first in sweep.values." in text
    )
    md = render_markdown("t", [sec], "")
    assert "(selected, tie)" in md and "a tie goes to the value listed first in sweep.values" in md


def test_no_tie_is_said_when_the_best_validation_score_is_one_systems(tmp_path):
    from multimsd.pipeline.cli import summary_lines
    from multimsd.pipeline.run import select_swept

    swept = ["finetuned_theta1", "finetuned_theta4"]
    write_validation_scores(tmp_path, {"finetuned_theta1": 20.0, "finetuned_theta4": 20.000001})
    sweep = {"parameter": "loss.theta", "systems": swept, **select_swept(tmp_path, swept)}
    line = [x for x in summary_lines({"dir": str(tmp_path), "sweep": sweep}) if x.startswith("sweep over")]
    assert line == [
        "sweep over loss.theta: finetuned_theta4 selected by mean(sari,bleu) on validation (20.00)"
    ]
    run = report_run("loss.theta", {n: (None, float(n[-1]), 1.0, 1.0) for n in swept})
    run.meta["sweep"] = sweep
    assert [r[1].text for r in table_of(sweep_section(run)).rows] == [
        "label finetuned_theta1",
        "label finetuned_theta4 (selected)",
    ]


def test_a_tie_on_the_mean_over_seeds_says_so_too():
    from multimsd.pipeline.cli import summary_lines
    from multimsd.pipeline.seeds import select_on_seed_mean
    from multimsd.report.seeds import seeds_section

    v = {"sari": 20.0, "bleu": 10.0, "mean_sari_bleu": 15.0}
    sweep = select_on_seed_mean({"ft_theta4": {1: v, 2: v}, "ft_theta1": {1: v, 2: v}})
    assert sweep["selected"] == "ft_theta4"  # listed first
    lines = summary_lines({"dir": ".", "sweep": {"parameter": "loss.theta", **sweep}})
    assert (
        "— a tie: ft_theta4 and ft_theta1 score the same (15.00); a tie goes to the value listed first"
        in (lines[0])
    )
    members = {b: [f"{b}_seed1", f"{b}_seed2"] for b in ("ft_theta4", "ft_theta1")}
    run = report_run(
        "loss.theta",
        {
            m: ({"parameter": "loss.theta", "value": float(b[-1])}, 1.0, 1.0, 1.0)
            for b in members
            for m in members[b]
        },
    )
    run.meta["seeds"] = {
        "seeds": [1, 2],
        "systems": {b: {"label": f"θ = {b[-1]}", "systems": {}, "en": {}} for b in members},
    }
    run.meta["sweep"] = {"parameter": "loss.theta", "seed_systems": members, **sweep}
    sec = seeds_section(run)
    selection = [b for b in sec.blocks if isinstance(b, Table) and b.caption.startswith("Selection")][0]
    assert [r[1].text for r in selection.rows] == ["θ = 4 (selected, tie)", "θ = 1 (tie)"]
    assert any(
        "θ = 4 — a tie: θ = 4 and θ = 1 score the same (15.00)" in getattr(b, "text", "") for b in sec.blocks
    )
