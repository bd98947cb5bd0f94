"""Issue #49 items 3 and 4 for ``multimsd simplify`` / ``multimsd export``: a run that has not finished (no
run.json yet, some systems half-trained) is a MODEL whose finished systems are listed and named with --system;
a system asked for a language it was not trained on is one error line before its model is loaded (--any-lang:
a warning). The runs here are fake: systems/<name>/ with a saved config.yaml, an empty best/ (never loaded)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.simplify import cli
from multimsd.simplify.export import main as export_main
from multimsd.simplify.source import resolve
from multimsd.training.decode import Generated

MODEL = {"kind": "causal", "pretrained": "tiny:llama", "lora": {"enabled": False}}


def system(root: Path, name: str, finished: bool = True, languages=("en",), mode: str = "train") -> Path:
    """``systems/<name>/`` as the training leaves it: finished (config.yaml, all_results.json, best/), or
    half-trained (a best/ of an early epoch and its checkpoints, none of the last writes)."""
    from multimsd.training.loop import to_train_config
    from multimsd.training.results import save_config

    d = root / "systems" / name
    (d / "checkpoints").mkdir(parents=True)
    if mode != "icl":
        (d / "best").mkdir()
    if finished:
        settings = {"model": MODEL, "mode": mode, "data": {"languages": list(languages)}}
        save_config(to_train_config(settings), d)
        (d / "all_results.json").write_text("{}\n", encoding="utf-8")
    return d


def unfinished_run(root: Path) -> Path:
    """A run interrupted in its third training: two systems finished, one half-trained; no run.json, no
    evaluation, only its stage records."""
    (root / ".stages").mkdir(parents=True)
    system(root, "finetuned_theta1")
    system(root, "zero_shot", mode="icl")
    system(root, "finetuned_theta4", finished=False)
    return root


def no_model_loads(monkeypatch) -> None:
    import multimsd.training.system as system_mod

    def load(source):
        raise AssertionError(f"model of {source.name} loaded")

    monkeypatch.setattr(system_mod, "load", load)


def one_error_line(capsys, call) -> str:
    with pytest.raises(SystemExit) as e:
        call()
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("error: ")]
    assert e.value.code == 2 and len(errors) == 1, err
    return errors[0]


def test_an_unfinished_run_names_its_finished_systems_and_how_to_choose_one(tmp_path, capsys, monkeypatch):
    root = unfinished_run(tmp_path / "de")
    no_model_loads(monkeypatch)
    with pytest.raises(MultimsdError) as e:
        resolve(str(root))
    assert str(e.value) == (
        f"{root}: the run has not finished (no run.json yet: still running, or interrupted), so it has no "
        "ranking to choose its best system by; systems with a model: finetuned_theta1, zero_shot; not "
        "finetuned_theta4: its training has not finished yet, or was interrupted; name one with --system NAME "
        "(e.g. --system finetuned_theta1)"
    )
    (tmp_path / "doc.txt").write_text("Take 5 mg.", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    line = one_error_line(
        capsys, lambda: cli.main([str(root), str(tmp_path / "doc.txt"), "--out", str(out), "--lang", "en"])
    )
    assert line == f"error: {e.value}" and not out.exists()

    # a finished system, named: its saved config and its best/
    source = resolve(str(root), "finetuned_theta1")
    assert (
        source.name == "finetuned_theta1" and source.weights == root / "systems" / "finetuned_theta1" / "best"
    )
    assert resolve(str(root), "zero_shot").weights is None  # prompted: the pretrained model as it is
    with pytest.raises(MultimsdError) as half:  # best/ of an early epoch: not offered
        resolve(str(root), "finetuned_theta4")
    assert str(half.value) == (
        "--system finetuned_theta4: its training has not finished yet, or was interrupted "
        "(systems with a model: finetuned_theta1, zero_shot)"
    )
    with pytest.raises(MultimsdError, match=r"--system nope: no such system in .* \(finetuned_theta1, "):
        resolve(str(root), "nope")

    # the same rule for export, before anything is written
    line = one_error_line(capsys, lambda: export_main([str(root), "--to", str(tmp_path / "exported")]))
    assert "the run has not finished" in line and "--system finetuned_theta1" in line
    assert not (tmp_path / "exported").exists()


def test_a_run_with_no_finished_system_yet_says_so(tmp_path):
    root = tmp_path / "run"
    (root / ".stages").mkdir(parents=True)  # interrupted while aligning: no systems/ yet
    with pytest.raises(MultimsdError, match="none of its systems has a model yet \\(no systems/ yet\\)"):
        resolve(str(root))
    system(root, "finetuned", finished=False)
    with pytest.raises(
        MultimsdError, match="finetuned: its training has not finished yet, or was interrupted"
    ):
        resolve(str(root))


def test_a_finished_run_continued_with_a_system_training_again_uses_the_best_finished_one(
    tmp_path, caplog, monkeypatch
):
    """run.json and the ranking of an earlier end; finetuned_theta4, ranked first, trains again (its directory
    was replaced: no config.yaml yet) and a new system has started: the best of the finished ones is used, by
    the ranking, with a warning for the one it passes over; the half-trained ones are never planned again as
    systems of an older multimsd."""
    import multimsd.simplify.source as source_mod

    root = tmp_path / "run"
    system(root, "finetuned_theta1")
    system(root, "finetuned_theta4", finished=False)
    system(root, "grpo", finished=False)  # not in run.json: this run added it
    kinds = {"copy": "copy", "finetuned_theta1": "train", "finetuned_theta4": "train"}
    info = {"config": {}, "systems": {n: {"kind": k} for n, k in kinds.items()}}
    (root / "run.json").write_text(json.dumps(info), encoding="utf-8")
    ranking = [{"system": s} for s in ("finetuned_theta4", "copy", "finetuned_theta1")]
    (root / "results.json").write_text(json.dumps({"ranking": {"overall": ranking}}), encoding="utf-8")

    def no_plan(run_dir, info):
        raise AssertionError("planned again")

    monkeypatch.setattr(source_mod, "run_plan", no_plan)
    with caplog.at_level(logging.INFO, logger="multimsd.training.system"):
        assert resolve(str(root)).name == "finetuned_theta1"
    assert (
        "finetuned_theta4 ranks higher but cannot simplify: its training has not finished yet, or was interrupted"
        in caplog.text
    )
    assert "copy ranks higher" not in caplog.text  # a copy baseline never could
    with pytest.raises(MultimsdError, match="--system grpo: its training has not finished yet"):
        resolve(str(root), "grpo")


def test_a_language_the_system_was_not_trained_on_is_an_error_before_loading(tmp_path, capsys, monkeypatch):
    root = tmp_path / "run"
    (root / ".stages").mkdir(parents=True)
    system(root, "german", languages=("de",))
    inp = tmp_path / "docs.jsonl"
    docs = [
        {"id": "a", "lang": "de", "text": "Nehmen Sie 5 mg."},
        {"id": "b", "lang": "en", "text": "Take 5 mg."},
    ]
    inp.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    no_model_loads(monkeypatch)
    line = one_error_line(
        capsys, lambda: cli.main([str(root), str(inp), "--out", str(out), "--system", "german"])
    )
    assert line == "error: system german was trained on de only, not en (--any-lang to simplify anyway)"
    assert not out.exists()


def test_with_any_lang_it_is_a_warning_and_the_documents_are_simplified(tmp_path, caplog, monkeypatch):
    import multimsd.training.predict as predict
    import multimsd.training.system as system_mod

    root = tmp_path / "run"
    (root / ".stages").mkdir(parents=True)
    system(root, "german", languages=("de",))
    inp = tmp_path / "doc.txt"
    inp.write_text("Take 5 mg. Do not drive.", encoding="utf-8")
    out = tmp_path / "out.jsonl"

    def words(text, add_special_tokens=False):
        return {"input_ids": text.split()}

    monkeypatch.setattr(system_mod, "load", lambda source: (None, words, None))
    monkeypatch.setattr(
        predict,
        "generate",
        lambda cfg, m, t, rows, acc, final=False, shots=None, desc=None: [
            Generated(r["complex"]) for r in rows
        ],
    )
    argv = [str(root), str(inp), "--out", str(out), "--system", "german", "--lang", "en", "--terms", "none"]
    cli.main([*argv, "--any-lang"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["system german was trained on de only, not en; simplified anyway (--any-lang)"]
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["system"] == "german" and record["lang"] == "en" and len(record["sentences"]) == 2
    assert "--any-lang" in cli.USAGE


def test_a_k_shot_system_has_no_examples_for_another_language_even_with_any_lang(tmp_path):
    from multimsd.training.system import check_languages

    cfg = {"mode": "icl"}
    with pytest.raises(MultimsdError, match="^system s is k-shot with examples in en only; none for de$"):
        check_languages("s", cfg, ["en"], ["de"], True, "--any-lang")
    assert check_languages("s", cfg, ["en"], ["en"], False, "--any-lang") == ""


@pytest.mark.integration
def test_an_exported_model_knows_the_languages_of_its_prompt(tmp_path):
    """A `multimsd export` directory as MODEL is prompted 0-shot; its multimsd_prompt.json names the languages
    it was trained on, so another language is refused the same way."""
    import shutil

    from multimsd.training.models.offline import resolve_model_path

    model = tmp_path / "exported"
    shutil.copytree(resolve_model_path("tiny:llama"), model)
    assert resolve(str(model)).languages == list(LANGUAGES)  # a plain model: any language
    prompt = {"user_turn": "{instruction}\n\n{sentence}", "instructions": {"de": "Vereinfache den Satz."}}
    (model / "multimsd_prompt.json").write_text(json.dumps(prompt), encoding="utf-8")
    source = resolve(str(model))
    assert source.languages == ["de"]
    from multimsd.training.system import check_languages

    with pytest.raises(MultimsdError) as e:
        check_languages(source.name, source.config, source.shots, ["en"], False, "--any-lang")
    assert str(e.value) == f"system {model} was prompted in de only, not en (--any-lang to simplify anyway)"


def test_the_command_and_the_studio_choose_by_one_lookup(tmp_path, monkeypatch):
    """multimsd.training.system.choose: the same system and the same reasons for simplify and the studio."""
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from multimsd.studio.simplifier import Simplifier, routes
    from multimsd.training.system import UNRANKED_NOTE, choose, read_run

    root = unfinished_run(tmp_path / "run")
    no_model_loads(monkeypatch)
    studio = Simplifier(root)
    chosen = choose(read_run(root))
    with pytest.raises(MultimsdError) as e:  # the command: no ranking yet, name one
        resolve(str(root))
    assert chosen.name is None and str(e.value) == chosen.why and "--system finetuned_theta1" in chosen.why
    # the studio: the same systems, and of them the first by name, saying why
    assert studio.default == "finetuned_theta1" and studio.note == UNRANKED_NOTE
    assert choose(read_run(root), first_if_unranked=True).name == studio.default

    half = choose(read_run(root), "finetuned_theta4").why  # a system named that has not finished
    with pytest.raises(MultimsdError) as e:
        resolve(str(root), "finetuned_theta4")
    assert str(e.value) == f"--system finetuned_theta4: {half}"
    client = TestClient(Starlette(routes=routes(studio)))
    r = client.post("/api/simplify", json={"text": "Take 5 mg.", "lang": "en", "system": "finetuned_theta4"})
    assert r.status_code == 409 and r.json() == {"error": f"system finetuned_theta4: {half}"}
    assert half.endswith("(systems with a model: finetuned_theta1, zero_shot)")
    r = client.post("/api/simplify", json={"text": "Take 5 mg.", "lang": "en", "system": "nope"})
    assert r.status_code == 404 and r.json() == {"error": "no system 'nope' in this run"}
    assert choose(read_run(root), "nope").unknown

    # finished, with a ranking: both take its best
    (root / "run.json").write_text(json.dumps({"config": {}, "systems": {}}), encoding="utf-8")
    ranking = [{"system": s} for s in ("finetuned_theta4", "zero_shot", "finetuned_theta1")]
    (root / "results.json").write_text(json.dumps({"ranking": {"overall": ranking}}), encoding="utf-8")
    assert resolve(str(root)).name == Simplifier(root).default == "zero_shot"
    assert Simplifier(root).note == ""
