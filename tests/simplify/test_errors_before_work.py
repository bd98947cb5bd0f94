"""Issue #49 item 6, errors before work: ``multimsd simplify`` / ``multimsd export`` check their overrides and that
MODEL is there before MODEL is resolved or its model loaded (and before torch or transformers is imported): one
error line, exit 2, with a "did you mean" and the section named (``eval.*``, the decoding settings)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from multimsd.errors import MultimsdError
from multimsd.simplify import cli
from multimsd.simplify.checks import check_model, check_overrides
from multimsd.simplify.export import main as export_main

KEYS = (
    "backend, batch_size, before_training, do_sample, early_stopping_metric, generate, generate_max_rows, "
    "length_margin, length_ratio, max_batch_tokens, max_new_tokens, merge_lora, num_beams, number_guard, "
    "patience, temperature, top_p"
)
ONLY = "only the decoding settings can be overridden, as eval.KEY=VALUE"
BAD_OVERRIDES = {
    "eval.num_beam=4": f"not a decoding setting; did you mean eval.num_beams? (the eval.* keys: {KEYS})",
    "eval.max_new_token=9": f"not a decoding setting; did you mean eval.max_new_tokens? (the eval.* keys: {KEYS})",
    "eval.zzz=1": f"not a decoding setting (the eval.* keys: {KEYS})",
    "optim.lr=1": f"{ONLY} (e.g. eval.num_beams=4)",
    "num_beams=4": f"{ONLY}; did you mean eval.num_beams=4?",
    "evl.num_beams=4": f"{ONLY}; did you mean eval.num_beams=4?",
    "+eval.num_beams=2": f"{ONLY}; did you mean eval.num_beams=2?",
    "eval.num_beams": f"not KEY=VALUE; {ONLY} (e.g. eval.num_beams=4)",
    "eval.num_beams=abc": "eval.num_beams takes an integer, not 'abc'",
    "eval.do_sample=maybe": "eval.do_sample takes true or false, not 'maybe'",
    "eval.generate_max_rows=x": "eval.generate_max_rows takes an integer or null, not 'x'",
    "eval.num_beams=null": "eval.num_beams takes an integer, not 'null'",
}


def nothing_resolved_or_loaded(monkeypatch) -> None:
    """MODEL is neither resolved (its config read) nor its model loaded: the checks came first."""
    import multimsd.simplify.source as source_mod
    import multimsd.training.system as system_mod

    def resolve(*args, **kwargs):
        raise AssertionError("MODEL was resolved before the arguments were checked")

    def load(source):
        raise AssertionError(f"model of {source.name} loaded")

    monkeypatch.setattr(source_mod, "resolve", resolve)
    monkeypatch.setattr(system_mod, "load", load)


def error_line(capsys, main, argv: list[str]) -> str:
    """The command's stderr: exactly one ``error:`` line (returned), exit status 2."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.fixture
def run_dir(tmp_path):
    """An existing MODEL directory (never read: the checks come first) and a document."""
    (tmp_path / "run" / ".stages").mkdir(parents=True)
    (tmp_path / "doc.txt").write_text("Take 5 mg.", encoding="utf-8")
    return tmp_path / "run"


# ------------------------------------------------------------------------------------------- overrides
@pytest.mark.parametrize("override", sorted(BAD_OVERRIDES))
def test_a_bad_override_is_one_line_naming_the_decoding_settings_before_model_is_resolved(
    override, run_dir, tmp_path, capsys, monkeypatch
):
    nothing_resolved_or_loaded(monkeypatch)
    out = tmp_path / "out.jsonl"
    argv = [str(run_dir), str(tmp_path / "doc.txt"), "--out", str(out), "--lang", "en", override]
    assert error_line(capsys, cli.main, argv) == f"error: {override}: {BAD_OVERRIDES[override]}"
    assert not out.exists()


def test_a_value_the_settings_refuse_is_their_own_line(run_dir, tmp_path, capsys, monkeypatch):
    nothing_resolved_or_loaded(monkeypatch)
    argv = [str(run_dir), str(tmp_path / "doc.txt"), "--out", str(tmp_path / "o.jsonl"), "eval.backend=x"]
    assert (
        error_line(capsys, cli.main, argv)
        == "error: eval.backend='x': choose generate or static or continuous"
    )


def test_export_checks_its_overrides_the_same_way_and_writes_nothing(run_dir, tmp_path, capsys, monkeypatch):
    nothing_resolved_or_loaded(monkeypatch)
    to = tmp_path / "exported"
    line = error_line(capsys, export_main, [str(run_dir), "--to", str(to), "eval.num_beam=4"])
    assert line == f"error: eval.num_beam=4: {BAD_OVERRIDES['eval.num_beam=4']}"
    line = error_line(capsys, export_main, [str(run_dir), "optim.lr=1", "--to", str(to)])
    assert line == f"error: optim.lr=1: {ONLY} (e.g. eval.num_beams=4)"
    assert not to.exists()


def test_export_takes_decoding_overrides_to_its_system(run_dir, tmp_path, monkeypatch):
    """A good override gets to MODEL's resolution (its config is what generation_config.json is written from)."""
    import multimsd.simplify.source as source_mod

    seen = []

    def resolve(model, system=None, overrides=None):
        seen.append(overrides)
        raise MultimsdError("stop here")

    monkeypatch.setattr(source_mod, "resolve", resolve)
    with pytest.raises(SystemExit):
        export_main([str(run_dir), "--to", str(tmp_path / "x"), "eval.num_beams=4", "eval.max_new_tokens=9"])
    assert seen == [["eval.num_beams=4", "eval.max_new_tokens=9"]]


def test_the_library_path_gives_the_same_lines():
    """resolve() (the studio's and the tests' way in) checks the overrides with the same words."""
    from omegaconf import OmegaConf

    from multimsd.simplify.source import with_overrides

    with pytest.raises(MultimsdError) as e:
        with_overrides(OmegaConf.create({"model": {"kind": "causal"}}), ["eval.num_beam=4"])
    assert str(e.value) == f"eval.num_beam=4: {BAD_OVERRIDES['eval.num_beam=4']}"
    check_overrides(["eval.num_beams=4", "eval.length_ratio=null", "eval.max_batch_tokens=auto"])


# ------------------------------------------------------------------------------------------- MODEL
def test_a_relative_model_path_that_is_not_there_says_no_such_directory(tmp_path, capsys, monkeypatch):
    """The user's trial: ``outputs/de-tinyy`` (one slash, so spelt like a Hub id) under a directory that has
    ``outputs/``: a path, not there, with the closest directory named; nothing resolved, nothing loaded."""
    nothing_resolved_or_loaded(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs" / "de-tiny").mkdir(parents=True)
    (tmp_path / "doc.txt").write_text("Take 5 mg.", encoding="utf-8")
    argv = ["outputs/de-tinyy", "doc.txt", "--out", "o.jsonl", "--lang", "en"]
    line = error_line(capsys, cli.main, argv)
    assert line == "error: MODEL outputs/de-tinyy: no such directory (did you mean outputs/de-tiny?)"
    line = error_line(capsys, export_main, ["outputs/de-tinyy", "--to", "exported"])
    assert line == "error: MODEL outputs/de-tinyy: no such directory (did you mean outputs/de-tiny?)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.txt", "outputs"]
    (tmp_path / "runs" / "de-tiny").mkdir(parents=True)  # any directory here: runs/… is a path under it
    with pytest.raises(MultimsdError) as e:
        check_model("runs/de-tinyy")
    assert str(e.value) == "MODEL runs/de-tinyy: no such directory (did you mean runs/de-tiny?)"


@pytest.mark.parametrize(
    "model",
    ["outputs/run", "./run", "../run", "a/b/c", "~/no-such-multimsd-run", "runs/my run", "/no/such/run"],
)
def test_a_path_that_is_not_there_is_no_such_directory_without_asking_the_hub(tmp_path, monkeypatch, model):
    """``outputs/…`` (the project's output directory, here or not), ``./``, ``../``, ``~``, two slashes, a name
    no Hub id can have, an absolute path: a path, whatever the Hub says (it is not asked)."""
    import multimsd.io as io

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(io, "hub_reachable", lambda *a: pytest.fail("the Hub was asked"))
    with pytest.raises(MultimsdError) as e:
        check_model(model)
    assert str(e.value) == f"MODEL {model}: no such directory"


def test_a_hub_id_that_is_neither_here_nor_cached_nor_reachable(tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    nothing_resolved_or_loaded(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    (tmp_path / "doc.txt").write_text("Take 5 mg.", encoding="utf-8")
    line = error_line(capsys, cli.main, ["acme/simplifier", "doc.txt", "--out", "o.jsonl"])
    assert line == (
        "error: MODEL acme/simplifier: neither a local directory nor in the Hugging Face cache, and "
        "HF_HUB_OFFLINE=1 is set. Download it where the Hub is reachable (hf download acme/simplifier), or use "
        "a local run or model directory"
    )
    (tmp_path / "hub" / "models--acme--simplifier" / "snapshots" / "abc").mkdir(parents=True)
    check_model("acme/simplifier")  # in the cache: loaded from there, as the training loads it
    check_model("offline:smollm2")  # the project's own: built on first use


def test_a_file_as_model_is_not_a_directory(tmp_path):
    (tmp_path / "model.bin").write_text("x")
    with pytest.raises(MultimsdError) as e:
        check_model(str(tmp_path / "model.bin"))
    assert (
        str(e.value)
        == f"MODEL {tmp_path / 'model.bin'}: a file, not a directory (a run, a training's output or a model)"
    )


@pytest.mark.integration
def test_the_errors_come_before_torch_and_transformers_are_imported(tmp_path):
    """In a process of its own (as a user runs it): a missing MODEL and a bad override are their lines with
    neither torch nor transformers imported (those imports are the seconds the user waited)."""
    (tmp_path / "doc.txt").write_text("Take 5 mg.", encoding="utf-8")
    (tmp_path / "run").mkdir()
    code = (
        "import json, sys\n"
        "from multimsd.main import main\n"
        "codes = []\n"
        "for argv in (['simplify', 'outputs/de-tinyy', 'doc.txt', '--out', 'o.jsonl'],\n"
        "             ['simplify', 'run', 'doc.txt', '--out', 'o.jsonl', 'eval.num_beam=4'],\n"
        "             ['export', 'run', '--to', 'x', 'eval.num_beams=abc']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as e:\n"
        "        codes.append(e.code)\n"
        "print(json.dumps([codes, [m for m in ('torch', 'transformers') if m in sys.modules]]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert json.loads(proc.stdout) == [[2, 2, 2], []], proc.stderr[-2000:]
    assert [line.split(":")[1] for line in proc.stderr.strip().splitlines()] == [
        " MODEL outputs/de-tinyy",
        " eval.num_beam=4",
        " eval.num_beams=abc",
    ]
