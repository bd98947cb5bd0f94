"""``multimsd simplify``: INPUT read and checked, MODEL resolved, OUT written whole and resumed, end to end on a
tiny run (e2e)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from multimsd.errors import MultimsdError
from multimsd.simplify import cli
from multimsd.simplify.documents import Input
from multimsd.simplify.run import Totals, done_ids, simplify
from multimsd.simplify.source import resolve, with_overrides
from multimsd.training.decode import Generated
from multimsd.training.system import System


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def docs(inp: Input) -> list[tuple[str, str, str]]:
    return [(d.id, d.lang, d.text) for d in inp.documents()]


# ------------------------------------------------------------------------------------------- INPUT
def test_a_txt_file_is_one_document_named_by_its_stem(tmp_path):
    p = tmp_path / "leaflet.txt"
    p.write_text("\ufeffTake 5 mg.\n\nDo not drive.\n", encoding="utf-8")
    with Input(str(p), "en") as inp:
        assert inp.check() == {"leaflet"}
        assert docs(inp) == [("leaflet", "en", "Take 5 mg.\n\nDo not drive.\n")]


def test_a_jsonl_file_one_record_a_line_text_or_complex_lang_or_default(tmp_path):
    p = write_jsonl(
        tmp_path / "d.jsonl",
        [{"id": "a", "lang": "de", "text": "Nehmen Sie 5 mg."}, {"id": 7, "complex": "Take it."}],
    )
    p.write_text(p.read_text(encoding="utf-8") + "\n\n", encoding="utf-8")  # blank lines are skipped
    with Input(str(p), "en") as inp:
        assert inp.check() == {"a", "7"}
        assert docs(inp) == [("a", "de", "Nehmen Sie 5 mg."), ("7", "en", "Take it.")]


@pytest.mark.parametrize(
    "data, expected",
    [
        (b'\n  {"id": "x", "lang": "fr", "text": "Prenez 5 mg."}\n', [("x", "fr", "Prenez 5 mg.")]),
        (b"Take 5 mg. Do not drive.\n", [("stdin", "en", "Take 5 mg. Do not drive.\n")]),
    ],
)
def test_stdin_is_jsonl_when_it_starts_with_a_brace_else_one_document(monkeypatch, data, expected):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    with Input("-", "en") as inp:
        inp.check()
        assert docs(inp) == expected
        assert docs(inp) == expected  # read twice: the check, then the decoding


BAD_INPUTS = {
    "not UTF-8": (b'{"id": "a", "lang": "en", "text": "caf\xe9"}\n', "line 1: not UTF-8"),
    "empty text": (
        b'{"id": "a", "lang": "en", "text": "x"}\n{"id": "b", "lang": "en", "text": "  "}\n',
        "line 2",
    ),
    "unknown lang": (b'{"id": "a", "lang": "xx", "text": "x"}\n', "lang 'xx' is not one of"),
    "no id": (b'{"lang": "en", "text": "x"}\n', 'no "id"'),
    "no text": (b'{"id": "a", "lang": "en"}\n', 'no "text"'),
    "not json": (b'{"id": "a", \n', "not a JSON record"),
    "twice": (b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "appears twice"),
    "no lang": (b'{"id": "a", "text": "x"}\n', "no lang"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_exit_2_and_no_out(tmp_path, capsys, case):
    data, message = BAD_INPUTS[case]
    (tmp_path / "in.jsonl").write_bytes(data)
    out = tmp_path / "o" / "out.jsonl"
    lang = [] if case == "no lang" else ["--lang", "en"]
    # MODEL (an empty directory: not a run) is not read: INPUT is checked first, before anything heavier
    with pytest.raises(SystemExit) as e:
        cli.main([str(tmp_path), str(tmp_path / "in.jsonl"), "--out", str(out), *lang])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
    assert not out.exists() and not out.parent.exists()


def test_missing_input_and_bad_lang_option(tmp_path):
    with pytest.raises(MultimsdError, match="no such file"):
        Input(str(tmp_path / "none.jsonl"))
    (tmp_path / "a.csv").write_text("x", encoding="utf-8")
    with pytest.raises(MultimsdError, match=r"\.txt"):
        Input(str(tmp_path / "a.csv"))
    with pytest.raises(MultimsdError, match="--lang: lang 'xx'"):
        Input(str(tmp_path / "a.csv"), "xx")


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["model-only"])
    assert e.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
    cli.main(["--help"])
    assert "multimsd simplify MODEL INPUT --out OUT" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------- MODEL
def test_model_that_is_neither_a_run_nor_a_training_dir_nor_a_model(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MultimsdError, match="no such directory"):
        resolve(str(tmp_path / "none"))
    with pytest.raises(MultimsdError, match="not a run directory .* nor a model that can be loaded here"):
        resolve(str(tmp_path))  # an empty directory
    with pytest.raises(
        MultimsdError, match="neither a local directory nor in the Hugging Face cache, and HF_HUB"
    ):
        resolve("no-such-org/no-such-model")  # not in the cache, the Hub off
    with pytest.raises(MultimsdError, match="--system x: MODEL tiny:llama is not a run directory"):
        resolve("tiny:llama", "x")


@pytest.mark.integration
def test_a_plain_model_is_prompted_zero_shot_like_a_runs_zero_shot_system():
    source = resolve("tiny:llama", overrides=["eval.max_new_tokens=7"])
    cfg = source.config
    assert source.name == "tiny:llama" and source.weights is None
    assert (cfg.model.kind, cfg.model.pretrained, cfg.model.lora.enabled) == ("causal", "tiny:llama", False)
    assert (cfg.mode, cfg.icl.shots, cfg.eval.max_new_tokens) == ("icl", 0, 7)
    assert resolve("tiny:mbart").config.model.kind == "seq2seq"  # an encoder-decoder: the sentence as it is


def test_a_run_with_no_model_and_an_unknown_system(tmp_path):
    (tmp_path / "run.json").write_text(
        json.dumps(
            {"config": {"systems": {"copy": {"kind": "copy"}}}, "systems": {"copy": {"kind": "copy"}}}
        ),
        encoding="utf-8",
    )
    with pytest.raises(MultimsdError, match="no system with a model"):
        resolve(str(tmp_path))
    with pytest.raises(MultimsdError, match="--system nope: no such system"):
        resolve(str(tmp_path), "nope")
    with pytest.raises(MultimsdError, match="--system copy: a copy baseline has no model"):
        resolve(str(tmp_path), "copy")


def test_only_eval_overrides_apply():
    from omegaconf import OmegaConf

    cfg = with_overrides(OmegaConf.create({"model": {"kind": "causal"}}), ["eval.num_beams=3"])
    assert cfg.eval.num_beams == 3
    for bad in (["optim.lr=1"], ["eval.nope=1"], ["eval.num_beams"]):
        with pytest.raises(MultimsdError):
            with_overrides(OmegaConf.create({"model": {"kind": "causal"}}), bad)


# ------------------------------------------------------------------------------------------- OUT, resume
def record(i: str) -> dict:
    return {"id": i, "lang": "en", "text": "", "sentences": [], "flagged": 0, "system": "s", "model": "m"}


def test_a_cut_last_line_is_removed_and_its_document_done_again(tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    whole = "".join(json.dumps(record(i)) + "\n" for i in ("d0", "d1"))
    out.write_text(whole + json.dumps(record("d2"))[:20], encoding="utf-8")
    assert done_ids(out) == {"d0", "d1"} and out.read_text(encoding="utf-8") == whole

    out.write_text(whole + json.dumps(record("d2"))[:20], encoding="utf-8")  # cut again: simplify resumes
    inp_path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": f"d{k}", "lang": "en", "text": f"Take {k} mg. Do not drive."} for k in range(4)],
    )
    import multimsd.training.predict as predict
    import multimsd.training.system as system_mod

    def words(text, add_special_tokens=False):  # a tokenizer: a token a word
        return {"input_ids": text.split()}

    monkeypatch.setattr(system_mod, "load", lambda source: (None, words, None))
    monkeypatch.setattr(
        predict,
        "generate",
        lambda cfg, m, t, rows, acc, final=False, shots=None, desc=None: [
            Generated(r["complex"]) for r in rows
        ],
    )
    source = System("s", None, None, tmp_path)
    with Input(str(inp_path)) as inp:
        t = simplify(source, inp, out, inp.check(), docs_per_call=1)
    assert (t.documents, t.skipped, t.sentences, t.tokens) == (
        2,
        2,
        4,
        12,
    )  # 2 x "Take k mg." "Do not drive."
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert ids == ["d0", "d1", "d2", "d3"]
    last = json.loads(out.read_text(encoding="utf-8").splitlines()[-1])
    assert last["text"] == "Take 3 mg. Do not drive." and last["flagged"] == 0
    assert [s["flags"] for s in last["sentences"]] == [[], []]
    assert not (tmp_path / ".out.jsonl.lock").exists()


def test_an_out_that_is_not_ours_is_refused(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("hello\n" + json.dumps(record("d0")) + "\n", encoding="utf-8")
    with pytest.raises(MultimsdError, match="line 1: not a record"):
        done_ids(out)


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps(record("d0")) + "\n" + json.dumps(record("d1")), encoding="utf-8")
    assert done_ids(out) == {"d0", "d1"} and out.read_text(encoding="utf-8").endswith("}\n")


def test_summary_lines():
    totals = Totals(documents=2, sentences=4, flagged=1, skipped=3, seconds=2.0, tokens=50)
    lines = cli.summary_lines(totals, "o.jsonl")
    assert lines[0] == "documents: 2 (3 skipped: already in --out)"
    assert lines[1] == "sentences: 4, flagged: 1 (25.0 %)"
    assert lines[2] == "speed: 25.0 output tokens/s, 2.00 sentences/s, 2.0 s"
    totals.by_check.update({"negation": 1, "numbers": 2, "terms": 1})
    assert cli.summary_lines(totals, "o.jsonl")[1] == (
        "sentences: 4, flagged: 1 (25.0 %) (numbers 2, negation 1, terms 1)"
    )


def test_the_term_lists_say_what_they_are(tmp_path):
    """Issue #47: the bundled lists are demo lists, and the summary says so, with their size."""
    from multimsd.metrics.lookup import TermLookup

    terms = TermLookup(None, missing="--terms")
    assert terms("de") is not None and terms("en") is not None
    notes = terms.notes()
    from multimsd.metrics.terms import sample_dictionary

    n = len(sample_dictionary("de"))
    assert notes[0].startswith(f"de: the bundled list, {n} terms (a demo list written for multimsd")
    assert "--terms DIR" in notes[0] and notes[1].startswith("en: the bundled list, ")
    (tmp_path / "de.txt").write_text("Paracetamol\nFieber\nLeber\n", encoding="utf-8")
    own = TermLookup(str(tmp_path), missing="--terms")
    assert own("de") is not None and own("en") is None
    assert own.notes() == [f"de: {tmp_path / 'de.txt'}, 3 terms", "en: no term list (no term check)"]


# ------------------------------------------------------------------------------------------- end to end
# tiny_run: `multimsd run debug=tiny`, once per test session (tests/conftest.py)
def multimsd_cli(command: str, *args) -> subprocess.CompletedProcess:
    """``multimsd COMMAND ARGS…`` in its own process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "multimsd", command, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def simplify_cli(*args) -> subprocess.CompletedProcess:
    return multimsd_cli("simplify", *args)


@pytest.mark.e2e
def test_simplify_a_tiny_run(tiny_run, tmp_path):
    from multimsd.alignment.segment import segment_document

    texts = {
        "a": ("en", "Take 5 mg twice daily. Do not drive.\n\nCall your doctor if the fever lasts 3 days."),
        "b": ("ja", "薬を1日3回飲んでください。運転しないでください。"),
        "c": ("en", "Keep it cold."),
    }
    inp = write_jsonl(
        tmp_path / "in.jsonl", [{"id": k, "lang": lang, "text": t} for k, (lang, t) in texts.items()]
    )
    out = tmp_path / "out.jsonl"
    # the ja document goes to a system trained on en only: simplified anyway, with a warning (--any-lang)
    proc = simplify_cli(
        tiny_run, inp, "--out", out, "eval.max_new_tokens=4", "--format", "html", "--any-lang"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    view = out.with_suffix(".html").read_text(encoding="utf-8")
    assert all(f"<h2>{k} ({lang})</h2>" in view for k, (lang, _) in texts.items())
    assert "system: finetuned_theta1" in proc.stderr  # the sweep's selection; copy is skipped
    for system in ("finetuned_theta1", "zero_shot"):  # each system's whole config beside its outputs
        saved = tiny_run / "systems" / system / "config.yaml"
        assert "max_new_tokens:" in saved.read_text(encoding="utf-8")
    assert "documents: 3" in proc.stdout and "sentences: 6" in proc.stdout
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["a", "b", "c"]
    for r in records:
        lang, text = texts[r["id"]]
        assert r["lang"] == lang and r["system"] == "finetuned_theta1"
        assert [s["source"] for s in r["sentences"]] == segment_document(text, lang)
        assert all(isinstance(s["flags"], list) and isinstance(s["output"], str) for s in r["sentences"])
        assert r["flagged"] == sum(1 for s in r["sentences"] if s["flags"])

    again = simplify_cli(
        tiny_run, inp, "--out", out, "--any-lang"
    )  # everything done: nothing loaded, nothing written
    assert again.returncode == 0 and "documents: 0 (3 skipped: already in --out)" in again.stdout
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3

    zero = simplify_cli(
        tiny_run, inp, "--out", tmp_path / "zero.jsonl", "--system", "zero_shot", "--any-lang"
    )
    assert zero.returncode == 0, zero.stderr[-3000:]
    assert (
        json.loads((tmp_path / "zero.jsonl").read_text(encoding="utf-8").splitlines()[0])["system"]
        == "zero_shot"
    )

    plain = simplify_cli("tiny:llama", inp, "--out", tmp_path / "plain.jsonl", "eval.max_new_tokens=4")
    assert plain.returncode == 0, plain.stderr[-3000:]
    lines = (tmp_path / "plain.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["system"] for line in lines] == ["tiny:llama"] * 3

    bad = simplify_cli(tiny_run, inp, "--out", tmp_path / "x.jsonl", "--system", "nope")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("error: --system nope")
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.e2e
def test_sigkill_half_way_then_the_same_command_writes_each_document_once(tiny_run, tmp_path):
    """300 documents; SIGKILL once some records are in OUT (no chance to clean up), then the same command:
    OUT holds each id exactly once, in input order, every line a whole record."""
    import os
    import signal
    import time

    words = [
        "Take",
        "5",
        "mg",
        "of",
        "the",
        "medicine",
        "twice",
        "a",
        "day",
        "and",
        "do",
        "not",
        "drive",
        "after",
        "it",
    ]
    records = [
        {"id": f"d{i:03d}", "lang": "en", "text": " ".join(words[: 4 + i % 9]) + ". Call us if it hurts."}
        for i in range(300)
    ]
    inp = write_jsonl(tmp_path / "in.jsonl", records)
    out = tmp_path / "out.jsonl"
    args = [sys.executable, "-m", "multimsd", "simplify", str(tiny_run), str(inp), "--out", str(out)]
    args.append("eval.max_new_tokens=4")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not (out.exists() and out.read_bytes().count(b"\n") >= 32):
        assert proc.poll() is None, "the command ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = out.read_bytes().count(b"\n")
    assert 32 <= first < 300, first

    again = simplify_cli(tiny_run, inp, "--out", out, "eval.max_new_tokens=4")
    assert again.returncode == 0, again.stderr[-3000:]
    lines = out.read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["id"] for line in lines]  # every line whole JSON
    assert ids == [r["id"] for r in records]
    # the whole records before the kill were kept and skipped (a line the kill cut short was written again)
    assert f"documents: {300 - first} ({first} skipped: already in --out)" in again.stdout, again.stdout


@pytest.mark.e2e
def test_export_loads_with_plain_transformers_and_decodes_as_simplify(tiny_run, tmp_path):
    """multimsd export: a directory plain transformers loads; its generation_config and prompt give the greedy
    outputs multimsd simplify gives on the run's test sentences; --adapter-only, --force, a foreign DIR."""
    import torch
    from huggingface_hub import ModelCard
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from multimsd.alignment.segment import segment_document

    out = tmp_path / "model"
    proc = multimsd_cli("export", str(tiny_run), "--to", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "generation_config.json"} <= names
    assert {"README.md", "multimsd_prompt.json", "multimsd_export.json"} <= names
    assert "adapter_config.json" not in names  # merged into its base
    card = (out / "README.md").read_text(encoding="utf-8")
    meta = ModelCard(card).data.to_dict()  # huggingface_hub's own reading of the card
    assert meta["language"] == ["en"] and "base_model" not in meta and "datasets" not in meta  # no Hub ids
    assert "- Base model: `tiny:llama`, multimsd's randomly initialised model" in card
    assert str(tiny_run) not in card.split("---")[1]  # no local path in the metadata
    assert "| en | " in card and " [" in card  # the run's test scores with their intervals

    refs = tiny_run / "systems" / "finetuned_theta1" / "predictions" / "test" / "references.jsonl"
    sentences = [json.loads(line)["complex"] for line in refs.read_text(encoding="utf-8").splitlines()]
    sentences = [s for s in sentences if segment_document(s, "en") == [s]]
    assert sentences
    inp = write_jsonl(
        tmp_path / "test.jsonl", [{"id": str(i), "lang": "en", "text": s} for i, s in enumerate(sentences)]
    )
    simplified = simplify_cli(tiny_run, inp, "--out", tmp_path / "s.jsonl", "--system", "finetuned_theta1")
    assert simplified.returncode == 0, simplified.stderr[-3000:]
    expected = [
        json.loads(line)["sentences"][0]["output"]
        for line in (tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()
    ]

    tokenizer = AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out).eval()
    prompt = json.loads((out / "multimsd_prompt.json").read_text(encoding="utf-8"))
    # the trained system as multimsd loads it (LoRA merged as the evaluation merges it), for its new tokens
    from multimsd.simplify.source import resolve
    from multimsd.training.decode import merged_lora
    from multimsd.training.kinds import get_kind
    from multimsd.training.system import load

    source = resolve(str(tiny_run), "finetuned_theta1")
    ours, _, _ = load(source)
    settings = get_kind(source.config.model.kind).generation_settings(source.config)
    got = []
    for s in sentences:
        turn = prompt["user_turn"].format(instruction=prompt["instructions"]["en"], sentence=s)
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": turn}], tokenize=False, add_generation_prompt=True
        )
        enc = tokenizer(text, return_tensors="pt", add_special_tokens=False)
        n = enc["input_ids"].shape[1]
        with torch.no_grad():
            new = model.generate(**enc)[0, n:]  # generation_config.json's settings
            with merged_lora(ours, True, restore=False):
                mine = ours.generate(**enc, **settings, pad_token_id=tokenizer.pad_token_id)[0, n:]
                # the same weights: the tiny model answers with newlines only, so compare next-token logits too
                torch.testing.assert_close(model(**enc).logits, ours(**enc).logits, rtol=1e-5, atol=1e-5)
        assert new.tolist() == mine.tolist()
        got.append(" ".join(tokenizer.decode(new, skip_special_tokens=True).split()))
    assert got == expected

    adapter = tmp_path / "adapter"
    proc = multimsd_cli("export", str(tiny_run), "--to", str(adapter), "--adapter-only")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (adapter / "adapter_config.json").is_file() and not (adapter / "model.safetensors").exists()

    again = multimsd_cli("export", str(tiny_run), "--to", str(out))
    assert again.returncode == 2 and again.stderr.strip().endswith("(or --force to replace an export)")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep\n")
    foreign = multimsd_cli("export", str(tiny_run), "--to", str(mine), "--force")
    assert foreign.returncode == 2 and "not an export of multimsd" in foreign.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


# ------------------------------------------------------------------------------------------- export, unit
def test_the_model_card_has_metadata_and_the_runs_scores_with_intervals():
    from multimsd.training.hub import model_card
    from multimsd.training.loop import to_train_config

    cfg = to_train_config({"data": {"languages": ["en", "es"]}})
    evaluation = {
        "en": {
            "sari": 40.0,
            "bleu": 8.2,
            "safety": 28.6,
            "ci": {"sari": [38.0, 42.0], "safety": [0.0, 57.1]},
        },
        "es": {"sari": 35.5, "bleu": 7.0},
    }
    card = model_card(cfg, {"test": {"sari": 40.0, "bleu": 8.0}}, evaluation)
    head = card.split("---")[1]
    assert head.startswith("\nlanguage:\n- en\n- es\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\n")
    assert "datasets" not in head and "metrics:\n- sari\n- bleu\n" in head and "\n# license: " in head
    assert "| en | 40.00 [38.00, 42.00] | 8.20 | 28.60 [0.00, 57.10] |" in card
    assert "| es | 35.50 | 7.00 |  |" in card
    assert "| test | 40.00 | 8.00 |" in card and "| validation |" not in card  # no validation scores: no row
    assert "multimsd_prompt.json" in card  # a chat model: how its prompt is built
    assert "## Evaluation on the run's test split" not in model_card(cfg, {})


def test_generation_settings_are_what_each_kind_decodes_with():
    from multimsd.training.kinds import get_kind
    from multimsd.training.loop import to_train_config

    cfg = to_train_config({"eval": {"num_beams": 5, "max_new_tokens": 64}})
    assert get_kind("causal").generation_settings(cfg) == {
        "do_sample": False,
        "num_beams": 5,
        "max_new_tokens": 64,
    }
    assert get_kind("seq2seq").generation_settings(cfg) == {
        "num_beams": 5,
        "max_length": 64,
        "do_sample": False,
    }
    sampling = to_train_config(
        {"eval": {"num_beams": 5, "do_sample": True, "temperature": 0.7, "top_p": 0.9}}
    )
    for kind in ("causal", "seq2seq"):  # sampling: one beam, the temperature and top_p as set
        settings = get_kind(kind).generation_settings(sampling)
        assert (settings["do_sample"], settings["num_beams"], settings["temperature"], settings["top_p"]) == (
            True, 1, 0.7, 0.9,
        )  # fmt: skip


# ------------------------------------------------------------------------------------------- the view
def test_the_view_marks_novel_words_terms_and_flags(tmp_path):
    from multimsd.metrics.lookup import TermLookup
    from multimsd.simplify.view import write_view

    rec = {
        "id": "leaflet-1",
        "lang": "en",
        "text": "",
        "sentences": [
            {
                "source": "Asthma needs 5 mg daily.",
                "output": "Asthma needs 6 mg every day.",
                "flags": ["numbers: x"],
            },
            {"source": "Keep it cold.", "output": "Keep it cold.", "flags": []},
        ],
        "flagged": 1,
        "system": "s",
        "model": "m",
    }
    out = write_jsonl(tmp_path / "out.jsonl", [rec])
    html = write_view(out, "html").read_text(encoding="utf-8")
    assert html.count('<mark class="term">Asthma</mark>') == 2  # source and output
    for word in ("6", "every", "day"):  # not in the source
        assert f'<mark class="novel">{word}</mark>' in html
    assert '<mark class="novel">needs</mark>' not in html and '<mark class="novel">cold</mark>' not in html
    assert html.count('<td class="flag">') == 2  # the flagged output and its reasons, not the second row
    assert "1 document(s), 2 sentence(s), 1 flagged" in html and "<h2>leaflet-1 (en)</h2>" in html
    md = write_view(out, "md").read_text(encoding="utf-8")
    assert (
        "| _Asthma_ needs 5 mg daily. | ⚠ _Asthma_ needs **6** mg **every** **day**. | ⚠ numbers: x |" in md
    )
    none = write_view(out, "html", TermLookup(use_terms=False)).read_text(encoding="utf-8")
    assert 'class="term"' not in none and 'class="novel"' in none


def test_the_terms_check_flags_a_dropped_term_and_none_turns_it_off(tmp_path, monkeypatch):
    import multimsd.training.predict as predict
    from multimsd.metrics.lookup import TermLookup
    from multimsd.simplify.documents import Document
    from multimsd.simplify.run import record
    from multimsd.training.system import simplify_sentences

    terms = TermLookup()  # the bundled sample lists, as the evaluation's default
    src = System("s", None, None, tmp_path)

    def checked(output: str, terms=None) -> dict:
        monkeypatch.setattr(
            predict,
            "generate",
            lambda cfg, m, t, rows, acc, final=False, shots=None, desc=None: [Generated(output)],
        )
        rows = simplify_sentences(src, (None, None, None), [("en", ["Asthma is a chronic disease."])], terms)
        return record(Document("d", "en", "x"), rows[0], src)

    rec = checked("It is a long illness.", terms)
    assert rec["sentences"][0]["flags"] == ["terms: medical term 'asthma' of the source is not in the output"]
    assert checked("It is a long illness.")["flagged"] == 0
    assert checked("Asthma is a long illness.", terms)["flagged"] == 0


def test_a_training_dir_with_its_saved_config_keeps_its_decoding_settings(tmp_path):
    from multimsd.training.loop import to_train_config
    from multimsd.training.results import save_config

    cfg = to_train_config(
        {"model": {"kind": "causal", "pretrained": "tiny:llama"}, "eval": {"max_new_tokens": 33}}
    )
    (tmp_path / "best").mkdir()
    (tmp_path / "train_config.json").write_text(json.dumps({"seed": 3}), encoding="utf-8")
    assert resolve(str(tmp_path)).config.eval.max_new_tokens == 256  # written before config.yaml: defaults
    save_config(cfg, tmp_path)
    source = resolve(str(tmp_path), overrides=["eval.num_beams=2"])
    assert source.config.eval.max_new_tokens == 33 and source.config.eval.num_beams == 2
    assert source.config.model.pretrained == "tiny:llama" and source.weights == tmp_path / "best"


def llama_converter() -> Path:
    """llama.cpp's convert_hf_to_gguf.py as `make llama-convert` puts it into the virtualenv (skipped where it
    is not, unless ``MULTIMSD_REQUIRE_LLAMA_CONVERT=1``: CI sets it)."""
    where = Path(sys.prefix) / "llama-convert"
    if not (where / ".installed").is_file():
        if os.environ.get("MULTIMSD_REQUIRE_LLAMA_CONVERT") == "1":
            pytest.fail(f"llama.cpp's converter is not in {where} (make llama-convert)")
        pytest.skip("llama.cpp's converter is not installed (make llama-convert)")
    return where


@pytest.mark.e2e
def test_llama_cpps_converter_reads_the_export_with_the_adapter_merged(tiny_run, tmp_path):
    """Issue #39 item 4: the exported directory is what llama.cpp's convert_hf_to_gguf.py takes. The GGUF it
    writes is a llama with the SmolLM2 tokenizer, and its weights are the export's (to float16), with the LoRA
    adapter in them: a layer the adapter trained differs from the base model's."""
    import numpy as np
    from safetensors.numpy import load_file

    from multimsd.training.models.offline import resolve_model_path

    tool = llama_converter()
    out = tmp_path / "model"
    proc = multimsd_cli("export", str(tiny_run), "--to", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    gguf_file = tmp_path / "model.gguf"
    env = {**os.environ, "PYTHONPATH": f"{tool / 'gguf-py'}{os.pathsep}{tool / 'deps'}"}
    converted = subprocess.run(
        [sys.executable, str(tool / "convert_hf_to_gguf.py"), str(out), "--outfile", str(gguf_file)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert converted.returncode == 0, converted.stderr[-3000:]

    sys.path.insert(0, str(tool / "gguf-py"))
    try:
        import gguf
    finally:
        sys.path.remove(str(tool / "gguf-py"))
    reader = gguf.GGUFReader(str(gguf_file))

    def field(key: str) -> str:
        f = reader.fields[key]
        return bytes(f.parts[f.data[0]]).decode()

    assert field("general.architecture") == "llama" and field("tokenizer.ggml.pre") == "smollm"
    tensors = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors}
    exported = load_file(str(out / "model.safetensors"))
    base = load_file(str(Path(resolve_model_path("tiny:llama")) / "model.safetensors"))
    pairs = {
        "token_embd.weight": "model.embed_tokens.weight",
        "blk.0.ffn_down.weight": "model.layers.0.mlp.down_proj.weight",  # (q and k: permuted for RoPE)
        "blk.0.attn_v.weight": "model.layers.0.self_attn.v_proj.weight",
    }
    for ours, theirs in pairs.items():
        np.testing.assert_allclose(tensors[ours], exported[theirs], atol=2e-3, rtol=1e-2)
    merged = "model.layers.0.self_attn.v_proj.weight"  # a LoRA target: the trained adapter is in it
    assert np.abs(exported[merged] - base[merged]).max() > 1e-4


@pytest.mark.parametrize(
    "text",
    ["model: [unclosed\n", "- a list\n", "\udcff".encode("utf-8", "surrogateescape").decode("latin-1")],
)
def test_a_damaged_saved_config_is_one_error_line(tmp_path, text):
    (tmp_path / "best").mkdir()
    (tmp_path / "train_config.json").write_text(json.dumps({"seed": 3}), encoding="utf-8")
    (tmp_path / "config.yaml").write_text(text, encoding="latin-1")
    with pytest.raises(MultimsdError, match=r"config\.yaml: cannot be read: "):
        resolve(str(tmp_path))


@pytest.mark.integration
def test_a_k_shot_training_output_simplifies_with_the_prompt_it_was_evaluated_with(tmp_path):
    """``train.py mode=icl icl.shots=2`` saves its examples (shots.json, validation pairs); MODEL = that
    directory prompts with them, so the test sentences come back exactly as its evaluation predicted them."""
    from test_train import tiny_cfg

    from multimsd.training.loop import run
    from multimsd.training.system import load, simplify_sentences

    run({**tiny_cfg(tmp_path, model="tiny_llama"), "mode": "icl", "icl": {"shots": 2}})
    out = tmp_path / "run"
    shots = json.loads((out / "shots.json").read_text(encoding="utf-8"))
    assert list(shots) == ["en"] and len(shots["en"]) == 2
    refs = [
        json.loads(x) for x in (out / "predictions" / "test" / "references.jsonl").read_text().splitlines()
    ]
    assert not {r["complex"] for r in refs} & {c for c, _ in shots["en"]}  # examples are not test rows
    source = resolve(str(out))
    assert source.weights is None and source.shots == {"en": [tuple(p) for p in shots["en"]]}
    rows = simplify_sentences(source, load(source), [("en", [r["complex"] for r in refs])])[0]
    predicted = (out / "predictions" / "test" / "en.txt").read_text(encoding="utf-8").splitlines()
    assert [r["output"].replace("\n", " ") for r in rows] == predicted
    with pytest.raises(MultimsdError, match="2-shot with examples in en only; no examples for de"):
        simplify_sentences(source, (None, None, None), [("de", ["Nimm 5 mg."])])
    (out / "shots.json").write_text(json.dumps({"en": [["only one pair", "of two"]]}), encoding="utf-8")
    with pytest.raises(MultimsdError, match=r"shots\.json: en: not 2 \[complex, simple\] pairs of text"):
        resolve(str(out))
    (out / "shots.json").unlink()  # made before the examples were saved
    with pytest.raises(MultimsdError, match="2-shot prompting: its examples were not saved"):
        resolve(str(out))
