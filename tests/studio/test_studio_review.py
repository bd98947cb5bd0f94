"""``multimsd studio``'s outputs view: the run's test outputs with novel-word and term spans, the blind order
(seeded per item, stable, names never sent), ratings in a journal + an atomic ratings file, a real server
killed with SIGKILL after two acknowledged ratings, and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import html
import json
import shutil
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402
from test_studio import _get, run_dir, studio_main  # noqa: E402, F401  (run_dir: the fixture)

from multimsd.metrics.human import input_hash, text_hash  # noqa: E402
from multimsd.studio import cli  # noqa: E402
from multimsd.studio.app import create_app  # noqa: E402

# Test rows (en, en, de, en: a language's items are its rows in order) and three systems' outputs.
REFS = [
    {"complex": "Asthma narrows the airways.", "simple": "Asthma makes breathing hard.", "lang": "en"},
    {
        "complex": "Deep vein thrombosis can cause pulmonary embolism.",
        "simple": "A clot can reach the lungs.",
        "lang": "en",
    },
    {"complex": "Gicht ist eine Krankheit.", "simple": "Gicht tut weh.", "lang": "de"},
    {
        "complex": "Gout is hyperuricemia with monoarthritis.",
        "simple": "Gout is a painful joint disease.",
        "lang": "en",
    },
]
OUTPUTS = {
    "alpha": {
        "en": ["Asthma narrows the airways.", "It can cause pulmonary embolism.", "Gout hurts."],
        "de": ["Gicht ist schlimm."],
    },
    "beta": {
        "en": [
            "Asthma makes the airways narrow.",
            "A blood clot can go to the lungs.",
            "Gout is hyperuricemia.",
        ],
        "de": ["Gicht."],
    },
    "gamma": {
        "en": ["The airways get narrow.", "Deep vein thrombosis is bad.", "Gout is a disease."],
        "de": ["Es tut weh."],
    },
}
NAMES = tuple(OUTPUTS)


def add_systems(root: Path, outputs: dict = OUTPUTS, refs: list = REFS) -> None:
    """``systems/<name>/predictions/test/`` as ``multimsd run`` writes them: ``<lang>.txt`` and references."""
    for name, per_lang in outputs.items():
        d = root / "systems" / name / "predictions" / "test"
        d.mkdir(parents=True, exist_ok=True)
        (d / "references.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs), encoding="utf-8")
        for lang, lines in per_lang.items():
            (d / f"{lang}.txt").write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def review_studio(run_dir: Path, tmp_path: Path, annotator: str = "ann", root: Path | None = None):  # noqa: F811
    if root is None:
        root = tmp_path / "run"
        shutil.copytree(run_dir, root)
        add_systems(root)
    s = cli.prepare(cli.parse([str(root), "--annotator", annotator]))
    cli.start(s)
    s.corpus.close()  # the outputs view never needs the embeddings
    return root, s.states["review"], TestClient(create_app(s))


def rate(client, **body) -> dict:
    r = client.post("/api/rate", json={"lang": "en", "blind": True, **body})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.integration
def test_an_item_shows_input_reference_and_every_output_with_spans(run_dir, tmp_path):  # noqa: F811
    _, review, client = review_studio(run_dir, tmp_path)
    info = client.get("/api/info").json()["review"]
    assert info["systems"] == 3
    assert [(x["lang"], x["items"], x["rated"]) for x in info["languages"]] == [("de", 1, 0), ("en", 3, 0)]
    v = client.get("/api/review", params={"lang": "en", "i": 0, "blind": 0}).json()
    assert v["input"] == {"text": "Asthma narrows the airways.", "terms": [[0, 6, "asthma"]]}
    # "Asthma makes breathing hard.": makes, breathing, hard are not in the input (by hand)
    assert v["references"] == [
        {
            "text": "Asthma makes breathing hard.",
            "novel": [[7, 12], [13, 22], [23, 27]],
            "terms": [[0, 6, "asthma"]],
        }
    ]
    outs = {o["system"]: o for o in v["outputs"]}
    assert [o["system"] for o in v["outputs"]] == ["alpha", "beta", "gamma"]  # not blind: by name
    assert [o["slot"] for o in v["outputs"]] == ["A", "B", "C"]
    assert outs["alpha"]["novel"] == [] and outs["alpha"]["terms"] == [[0, 6, "asthma"]]
    assert outs["beta"]["novel"] == [[7, 12], [25, 31]]  # "makes", "narrow"
    assert outs["gamma"]["novel"] == [[12, 15], [16, 22]] and outs["gamma"]["terms"] == []  # get, narrow
    v1 = client.get("/api/review", params={"lang": "en", "i": 1, "blind": 0}).json()
    assert v1["input"]["terms"] == [[0, 20, "deep vein thrombosis"], [31, 49, "pulmonary embolism"]]
    assert v1["outputs"][0]["terms"] == [[13, 31, "pulmonary embolism"]]
    assert client.get("/api/review", params={"lang": "en", "i": 3}).status_code == 404
    assert client.get("/api/review", params={"lang": "xx", "i": 0}).status_code == 404


def test_blind_order_is_seeded_per_item_stable_and_names_are_never_sent(run_dir, tmp_path):  # noqa: F811
    root, review, client = review_studio(run_dir, tmp_path)
    orders = []
    for lang, n in (("en", 3), ("de", 1)):
        for i in range(n):
            raw = client.get("/api/review", params={"lang": lang, "i": i, "blind": 1}).text
            assert not any(name in raw for name in NAMES)  # no system name anywhere in the answer
            v = json.loads(raw)
            assert [o["slot"] for o in v["outputs"]] == ["A", "B", "C"] and "system" not in v["outputs"][0]
            texts = [o["text"] for o in v["outputs"]]
            again = client.get("/api/review", params={"lang": lang, "i": i, "blind": 1}).json()
            assert [o["text"] for o in again["outputs"]] == texts  # stable on reload
            by_text = {OUTPUTS[s][lang][i]: s for s in NAMES}
            orders.append([by_text[t] for t in texts])
    assert any(o != sorted(o) for o in orders)  # shuffled, not the sorted order
    assert len({tuple(o) for o in orders}) > 1  # and per item
    # another annotator (another server) sees the same order: it depends on the item and the fixed seed only
    _, _, other = review_studio(run_dir, tmp_path, "other", root=root)
    for k, (lang, i) in enumerate([("en", 0), ("en", 1), ("en", 2), ("de", 0)]):
        v = other.get("/api/review", params={"lang": lang, "i": i, "blind": 1}).json()
        assert [{OUTPUTS[s][lang][i]: s for s in NAMES}[o["text"]] for o in v["outputs"]] == orders[k]
    # a rating of slot B is recorded (server side only) as the system shown there
    r = rate(client, i=1, slot="B", values={"simplicity": 4})
    assert not any(name in json.dumps(r) for name in NAMES)
    assert r["item"]["outputs"][1]["ratings"] == {"simplicity": 4, "meaning": None, "fluency": None}
    rec = json.loads((root / "studio" / "ratings-journal-ann.jsonl").read_text())
    assert rec["system"] == orders[1][1] and rec["slot"] == "B" and rec["blind"] is True


def test_ratings_go_to_the_journal_first_and_the_ratings_file_is_rebuilt(run_dir, tmp_path):  # noqa: F811
    root, review, client = review_studio(run_dir, tmp_path)
    assert not (root / "studio" / "ratings-ann.jsonl").exists()  # no ratings, no file
    # not blind: slots are the sorted names, A = alpha, B = beta, C = gamma
    for slot in "ABC":
        r = rate(client, i=0, slot=slot, blind=False, values={"simplicity": 5, "meaning": 4, "fluency": 3})
    assert r["item"]["complete"] is True and r["item"]["outputs"][2]["system"] == "gamma"
    rate(client, i=2, slot="A", blind=False, values={"fluency": 2})
    rate(client, i=2, slot="A", blind=False, values={"fluency": 1, "meaning": 5})  # a later value wins
    lines = (root / "studio" / "ratings-ann.jsonl").read_text().splitlines()
    got = [json.loads(x) for x in lines]
    h0, h2 = (
        input_hash(REFS[0]["complex"], REFS[0]["simple"]),
        input_hash(REFS[3]["complex"], REFS[3]["simple"]),
    )
    assert got == [
        {
            "lang": "en",
            "item": 0,
            "input": h0,
            "system": s,
            "output": text_hash(OUTPUTS[s]["en"][0]),
            "annotator": "ann",
            "blind": False,
            "simplicity": 5,
            "meaning": 4,
            "fluency": 3,
        }
        for s in NAMES
    ] + [
        {
            "lang": "en",
            "item": 2,
            "input": h2,
            "system": "alpha",
            "output": text_hash("Gout hurts."),
            "annotator": "ann",
            "blind": False,
            "simplicity": None,
            "meaning": 5,
            "fluency": 1,
        }
    ]
    journal = [
        json.loads(x) for x in (root / "studio" / "ratings-journal-ann.jsonl").read_text().splitlines()
    ]
    assert [j["seq"] for j in journal] == [1, 2, 3, 4, 5] and journal[3]["values"] == {"fluency": 2}
    prog = client.get("/api/info").json()["review"]["languages"]
    assert prog[1] == {"lang": "en", "items": 3, "rated": 1, "started": 2}
    # a restart replays the journal: the same file, the same state; a torn last line is dropped
    with open(root / "studio" / "ratings-journal-ann.jsonl", "a") as f:
        f.write('{"seq": 6, "action": "ra')
    (root / "studio" / "ratings-ann.jsonl").unlink()
    _, again, client2 = review_studio(run_dir, tmp_path, root=root)
    assert (root / "studio" / "ratings-ann.jsonl").read_text().splitlines() == lines
    assert (root / "studio" / "ratings-journal-ann.jsonl").read_text().endswith("}\n")
    r = rate(client2, i=1, slot="C", blind=False, values={"fluency": 4})
    assert r["seq"] == 6
    assert (
        json.loads((root / "studio" / "ratings-journal-ann.jsonl").read_text().splitlines()[-1])["seq"] == 6
    )


def test_bad_ratings_are_refused_and_write_nothing(run_dir, tmp_path):  # noqa: F811
    root, _, client = review_studio(run_dir, tmp_path)
    good = {"lang": "en", "i": 0, "slot": "A", "blind": True, "values": {"meaning": 3}}
    bad = [
        ({**good, "values": {"meaning": 6}}, 400),
        ({**good, "values": {"meaning": True}}, 400),
        ({**good, "values": {"beauty": 3}}, 400),
        ({**good, "values": {}}, 400),
        ({**good, "slot": "D"}, 400),
        ({**good, "blind": "yes"}, 400),
        ({**good, "i": 3}, 404),
        ({**good, "i": "x"}, 404),
        ({**good, "lang": "fr"}, 404),
    ]
    for body, code in bad:
        r = client.post("/api/rate", json=body)
        assert r.status_code == code, (body, r.text)
    r = client.post("/api/rate", content=json.dumps(good), headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    assert not (root / "studio" / "ratings-journal-ann.jsonl").exists()
    assert not (root / "studio" / "ratings-ann.jsonl").exists()


def test_a_run_without_predictions_has_no_outputs_view(run_dir, tmp_path):  # noqa: F811
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))
    assert s.states["review"] is None
    client = TestClient(create_app(s))
    info = client.get("/api/info").json()
    why = "no system of this run has test outputs yet (systems/&lt;name&gt;/predictions/test)"
    assert info["review"] is None and info["views"][2] == {
        "name": "review",
        "title": "outputs",
        "key": "3",
        "available": False,
        "why": html.unescape(why),
    }
    # the button stays, greyed, with the reason (issue #49: not silently hidden)
    assert (
        f'<button data-view="review" data-key="3" title="3: not available here: {why}" class="unavailable" '
        f'aria-disabled="true" data-why="{why}">outputs</button>'
    ) in client.get("/").text
    for r in (client.get("/api/review"), client.post("/api/rate", json={})):  # its routes say why, in JSON
        assert r.status_code == 404 and r.json() == {
            "error": f"the outputs view is not available here: {html.unescape(why)}"
        }
    assert client.get("/static/review.js").status_code == 200
    s.corpus.close()


@pytest.mark.integration
def test_bad_input_is_one_line_exit_2_and_writes_nothing(run_dir, tmp_path, capsys):  # noqa: F811
    def case(name: str, edit) -> Path:
        root = tmp_path / name
        shutil.copytree(run_dir, root)
        add_systems(root)
        edit(root)
        return root

    def other_refs(root):
        p = root / "systems/gamma/predictions/test/references.jsonl"
        p.write_text(p.read_text().replace("Gout is", "Gout was"))

    def short(root):
        (root / "systems/beta/predictions/test/en.txt").write_text("one line\n")

    def missing(root):
        (root / "systems/alpha/predictions/test/de.txt").unlink()

    def damaged(root):
        (root / "studio").mkdir()
        (root / "studio/ratings-journal-ann.jsonl").write_text('{"seq": 1, oops\n{"seq": 2}\n')

    def stale(root):
        journal = root / "studio/ratings-journal-ann.jsonl"
        rec = {
            "seq": 1,
            "action": "rate",
            "lang": "en",
            "item": 0,
            "input": input_hash(REFS[0]["complex"], REFS[0]["simple"]),
            "system": "beta",
            "output": text_hash("an output the run no longer has"),
            "slot": "B",
            "blind": True,
            "values": {"fluency": 3},
            "annotator": "ann",
        }
        (root / "studio").mkdir()
        journal.write_text(json.dumps(rec) + "\n")

    cases = {
        "other test rows than": other_refs,
        "has 1 lines but references.jsonl 3 en rows": short,
        "predictions not found": missing,
        "not a JSON line": damaged,
        "has another input or output now": stale,
    }
    for needle, edit in cases.items():
        root = case(needle.split()[0] + str(len(needle)), edit)
        before = sorted(p.name for p in (root / "studio").iterdir()) if (root / "studio").exists() else None
        code, err = studio_main([str(root), "--annotator", "ann"], capsys)
        assert code == 2, (needle, err)
        assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
        after = sorted(p.name for p in (root / "studio").iterdir()) if (root / "studio").exists() else None
        assert after == before  # nothing written: no gold journal, no ratings file


@pytest.mark.e2e
def test_a_real_server_killed_with_sigkill_loses_no_acknowledged_rating(run_dir, tmp_path, studio_server):  # noqa: F811
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    add_systems(root)
    server = studio_server(root, "--annotator", "kim")
    acked = []
    for i, slot in ((0, "C"), (2, "A")):
        body = {"lang": "en", "i": i, "slot": slot, "blind": True, "values": {"simplicity": 2 + i}}
        req = urllib.request.Request(
            f"{server.url}api/rate",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 200
            acked.append(json.loads(r.read())["seq"])
    server.kill()  # right after the second acknowledged rating
    assert acked == [1, 2]
    ratings = [json.loads(x) for x in (root / "studio" / "ratings-kim.jsonl").read_text().splitlines()]
    assert [(r["item"], r["simplicity"], r["blind"]) for r in ratings] == [(0, 2, True), (2, 4, True)]
    server = studio_server(root, "--annotator", "kim")
    for i, slot, value in ((0, 2, 2), (2, 0, 4)):
        status, body = _get(f"{server.url}api/review?lang=en&i={i}&blind=1")
        assert status == 200
        outs = json.loads(body)["outputs"]
        assert outs[slot]["ratings"]["simplicity"] == value


def test_a_rating_the_disk_cannot_take_is_a_507_and_taken_back_whole(run_dir, tmp_path, monkeypatch):  # noqa: F811
    """The ratings file cannot be rebuilt (a full disk) after the journal append: HTTP 507 with the one-line
    cause, the journal and the item's ratings as before; the same rating later is recorded once, seq 2."""
    from multimsd.errors import MultimsdError

    root, review, client = review_studio(run_dir, tmp_path)
    rate(client, i=0, slot="A", blind=False, values={"fluency": 3})
    journal = root / "studio" / "ratings-journal-ann.jsonl"
    before, ratings_before = journal.read_bytes(), (root / "studio" / "ratings-ann.jsonl").read_bytes()

    def full():
        raise MultimsdError("no space left on device writing ratings-ann.jsonl (free space and run again)")

    monkeypatch.setattr(review, "write_ratings", full)
    r = client.post(
        "/api/rate", json={"lang": "en", "i": 0, "slot": "B", "blind": False, "values": {"meaning": 2}}
    )
    assert r.status_code == 507 and r.json()["error"].startswith("no space left on device")
    assert journal.read_bytes() == before
    assert (root / "studio" / "ratings-ann.jsonl").read_bytes() == ratings_before
    item = client.get("/api/review", params={"lang": "en", "i": 0, "blind": "false"}).json()
    assert [o["ratings"]["meaning"] for o in item["outputs"]] == [None, None, None]
    monkeypatch.undo()
    r = rate(client, i=0, slot="B", blind=False, values={"meaning": 2})
    assert r["seq"] == 2 and [json.loads(x)["seq"] for x in journal.read_text().splitlines()] == [1, 2]
