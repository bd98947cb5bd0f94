"""The studio's simplify view (issue #39 item 5), its API: which of a run's systems can simplify (from each one's
saved ``config.yaml``, without the run's planner), the run's best selected first, one document through the
system with the same outputs and flags as ``multimsd simplify``, the marks, one model loaded, and bad requests.
Its real-browser test is tests/studio/test_studio_simplify_browser.py."""

from __future__ import annotations

import json
import shutil
import weakref
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402
from test_studio import run_dir  # noqa: E402, F401  (run_dir: the fixture)

from multimsd.studio import cli  # noqa: E402
from multimsd.studio.app import create_app  # noqa: E402

pytestmark = pytest.mark.integration  # a tiny model is built and generates

TEXT = "Take 5 mg twice daily. Asthma narrows the airways."


def save(root: Path, name: str, settings: dict) -> None:
    from multimsd.training.loop import to_train_config
    from multimsd.training.results import save_config

    d = root / "systems" / name
    d.mkdir(parents=True)
    save_config(to_train_config(settings), d)


def add_systems(root: Path) -> None:
    """A run's record with four systems: a copy baseline, a 0-shot tiny Llama (the only one that can simplify),
    a 3-shot one and a trained one whose training did not finish; the ranking puts the copy first."""
    model = {"kind": "causal", "pretrained": "tiny:llama", "lora": {"enabled": False}}
    prompted = {"model": model, "mode": "icl", "eval": {"max_new_tokens": 6}, "data": {"languages": ["en"]}}
    save(root, "zero_shot", {**prompted, "icl": {"shots": 0}})
    save(root, "three_shot", {**prompted, "icl": {"shots": 3}})
    save(root, "finetuned", {"model": model, "eval": {"max_new_tokens": 6}})
    kinds = {"copy": "copy", "zero_shot": "icl", "three_shot": "icl", "finetuned": "train"}
    (root / "run.json").write_text(
        json.dumps({"systems": {n: {"kind": k} for n, k in kinds.items()}}), encoding="utf-8"
    )
    ranking = [{"system": "copy"}, {"system": "zero_shot"}]
    (root / "results.json").write_text(json.dumps({"ranking": {"overall": ranking}}), encoding="utf-8")


@pytest.fixture
def client(run_dir, tmp_path):  # noqa: F811
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    add_systems(root)
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))
    cli.start(s)
    yield root, s.states["simplify"], TestClient(create_app(s))
    s.corpus.close()


def test_the_view_lists_the_runs_systems_and_why_some_cannot_simplify(client):
    _, _, c = client
    info = c.get("/api/info").json()
    assert next(v for v in info["views"] if v["name"] == "simplify")["available"] is True
    systems = {s["name"]: s for s in info["simplify"]["systems"]}
    assert systems["zero_shot"] == {"name": "zero_shot", "usable": True, "why": "", "languages": ["en"]}
    assert systems["copy"]["why"] == "a copy baseline has no model"
    assert systems["three_shot"]["why"].startswith(
        "3-shot prompting: its examples were not saved (shots.json"
    )
    assert systems["finetuned"]["why"].startswith("no trained model (")
    assert info["simplify"]["default"] == "zero_shot"  # the copy ranks first but has no model
    assert '<button data-view="simplify" data-key="4" title="4">simplify</button>' in c.get("/").text


def test_a_paragraph_gets_what_multimsd_simplify_writes_for_it(client, tmp_path, monkeypatch):
    import multimsd.training.system as system_mod
    from multimsd.alignment.api import segment_text
    from multimsd.simplify.cli import main as simplify_main

    root, state, c = client
    loads = []
    real_load = system_mod.load
    monkeypatch.setattr(system_mod, "load", lambda s: loads.append(s.name) or real_load(s))
    r = c.post("/api/simplify", json={"text": TEXT, "lang": "en", "system": "zero_shot"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["system"] == "zero_shot" and len(got["sentences"]) == len(segment_text(TEXT, "en")) == 2

    inp = tmp_path / "doc.txt"
    inp.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    simplify_main([str(root), str(inp), "--out", str(out), "--system", "zero_shot", "--lang", "en"])
    record = json.loads(out.read_text(encoding="utf-8"))
    keys = ("source", "output", "flags")
    assert [{k: s[k] for k in keys} for s in got["sentences"]] == [
        {k: s[k] for k in keys} for s in record["sentences"]
    ]
    assert got["text"] == record["text"] and got["flagged"] == record["flagged"]
    # the random model keeps neither the dose nor the term: both flagged, with their reasons
    first, second = got["sentences"]
    assert any(f.startswith("numbers: 5 mg of the source is not in the output") for f in first["flags"])
    assert "terms: medical term 'asthma' of the source is not in the output" in second["flags"]
    assert second["source_terms"] and second["source_terms"][0][:2] == [0, 6]  # "Asthma" marked in the source
    for s in got["sentences"]:  # novel spans lie inside the output
        assert all(0 <= a < b <= len(s["output"]) for a, b in s["novel"])
    # a second request, the system named by default: the model is not loaded again
    again = c.post("/api/simplify", json={"text": "Do not drive.", "lang": "en"}).json()
    assert again["system"] == "zero_shot" and again["load_seconds"] < got["load_seconds"] + 1
    assert loads == ["zero_shot", "zero_shot"]  # the studio's, the command's: none for the second request
    assert state.loaded[0] == "zero_shot"


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"text": "  ", "lang": "en"}, 400, "text: the paragraph to simplify (not empty)"),
        ({"text": TEXT, "lang": "xx"}, 400, "lang: one of de, en, es, fr, it, ja, pt, ru, zh"),
        ({"text": TEXT, "lang": "en", "system": "nope"}, 404, "no system 'nope' in this run"),
        ({"text": TEXT, "lang": "en", "system": "copy"}, 409, "system copy: a copy baseline has no model"),
        ({"text": "x" * 20_001, "lang": "en"}, 413, "20001 characters: at most 20000 here"),
    ],
)
def test_a_bad_request_is_one_error_and_loads_nothing(client, body, status, error):
    _, state, c = client
    r = c.post("/api/simplify", json=body)
    assert r.status_code == status and r.json()["error"].startswith(error)
    assert state.loaded is None


def test_a_k_shot_system_is_prompted_with_the_examples_its_evaluation_drew(client, monkeypatch):
    """The examples are shots.json's, in its order, for the text's language; another language is refused."""
    import multimsd.training.predict as predict

    root, state, _ = client
    shots = {"en": [["The drug is contraindicated.", "Do not take the drug."]] * 3}
    (root / "systems" / "three_shot" / "shots.json").write_text(json.dumps(shots), encoding="utf-8")
    s = cli.prepare(cli.parse([str(root), "--annotator", "kim"]))
    c = TestClient(create_app(s))
    systems = {x["name"]: x for x in c.get("/api/info").json()["simplify"]["systems"]}
    assert systems["three_shot"]["usable"] and systems["three_shot"]["languages"] == ["en"]
    seen = []
    real = predict.generate
    monkeypatch.setattr(
        predict, "generate", lambda *a, shots=None, **k: seen.append(shots) or real(*a, shots=shots, **k)
    )
    r = c.post("/api/simplify", json={"text": "Take 5 mg.", "lang": "en", "system": "three_shot"})
    assert r.status_code == 200, r.text
    assert seen == [{"en": [tuple(p) for p in shots["en"]]}]
    r = c.post("/api/simplify", json={"text": "Nimm 5 mg.", "lang": "de", "system": "three_shot"})
    assert r.status_code == 400 and r.json()["error"] == (
        "system three_shot is k-shot with examples in en only; none for de"
    )
    s.corpus.close()


def test_a_damaged_system_is_listed_with_its_reason_and_a_damaged_run_record_hides_the_view(
    run_dir,  # noqa: F811
    tmp_path,
    caplog,
):
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    add_systems(root)
    (root / "systems" / "three_shot" / "config.yaml").write_text("model: [unclosed\n", encoding="utf-8")
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))
    why = {x["name"]: x["why"] for x in s.states["simplify"].info()["systems"]}
    assert why["three_shot"].startswith(f"{root / 'systems' / 'three_shot' / 'config.yaml'}: cannot be read")
    assert why["zero_shot"] == ""  # the others are still offered
    s.corpus.close()
    (root / "run.json").write_text("{not json", encoding="utf-8")
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))  # the studio still starts
    assert s.states.get("simplify") is None
    assert "no simplify view: " in caplog.text and "run.json: cannot be read" in caplog.text
    s.corpus.close()


def test_a_form_post_from_another_page_is_refused(client):
    _, state, c = client
    r = c.post(
        "/api/simplify",
        content=json.dumps({"text": TEXT, "lang": "en"}),
        headers={"content-type": "text/plain"},
    )
    assert r.status_code == 415 and state.loaded is None


@pytest.mark.e2e
def test_every_system_of_a_real_run_gives_what_multimsd_simplify_writes(tiny_run, tmp_path, monkeypatch):
    """A real run (LoRA trained with θ = 1 and 4, a 0-shot system, a copy baseline): the view offers the systems
    with a model, selects the one `multimsd simplify` picks, and for each gives the command's sentences."""
    # bitsandbytes, imported by the first model load, logs a warning with an exception as its argument on some
    # CPUs; pytest keeps log records, and that exception's frames would keep the first model alive through
    # their callers. Imported here, those frames are this test's, and the memory check below sees the product.
    import bitsandbytes  # noqa: F401
    import peft  # noqa: F401

    import multimsd.training.system as system_mod
    from multimsd.simplify.cli import main as simplify_main
    from multimsd.simplify.source import resolve
    from multimsd.studio.simplifier import Simplifier

    state = Simplifier(tiny_run)
    usable = sorted(n for n, why in state.why.items() if not why)
    assert usable == ["finetuned_theta1", "finetuned_theta4", "zero_shot"]
    assert state.why["copy"] == "a copy baseline has no model"
    assert state.default == resolve(str(tiny_run)).name
    inp = tmp_path / "doc.txt"
    inp.write_text(TEXT, encoding="utf-8")
    held = None  # the model simplified with before: freed before the next one is loaded (one in memory)
    real_load = system_mod.load

    def load(system):
        assert held is None or held() is None, f"the model before {system.name} is still in memory"
        return real_load(system)

    monkeypatch.setattr(system_mod, "load", load)
    got = {}
    for name in usable:
        got[name] = state.simplify(name, "en", TEXT)
        assert state.loaded[0] == name  # the one asked for last is held
        held = weakref.ref(state.loaded[2][0])
    monkeypatch.undo()  # the command loads its own model, while the studio holds one
    for name in usable:
        out = tmp_path / f"{name}.jsonl"
        simplify_main([str(tiny_run), str(inp), "--out", str(out), "--system", name, "--lang", "en"])
        record = json.loads(out.read_text(encoding="utf-8"))
        keys = ("source", "output", "flags", "cut")
        assert [{k: s.get(k) for k in keys} for s in got[name]["sentences"]] == [
            {k: s.get(k) for k in keys} for s in record["sentences"]
        ], name


def test_listing_a_runs_systems_imports_no_torch(client):
    """The view is prepared at the studio's start: reading the systems' configs must not cost torch's import
    (about 2 s here: a studio on a run started in 6.9 s instead of 2.1 s when it did)."""
    import subprocess
    import sys

    root, _, _ = client
    code = (
        "import sys; from pathlib import Path; from multimsd.studio.simplifier import Simplifier; "
        f"s = Simplifier(Path({str(root)!r})); assert s.default == 'zero_shot', s.why; "
        "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
