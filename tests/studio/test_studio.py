"""``multimsd studio``: the alignment view's API, gold written as you go (journal + atomic gold file), the token
gate, path traversal, bad input, and a real server killed with SIGKILL that loses no acknowledged action."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")  # Starlette's TestClient

from starlette.testclient import TestClient  # noqa: E402

from multimsd.alignment.embed import Embedder  # noqa: E402
from multimsd.alignment.stage import run as align_run  # noqa: E402
from multimsd.alignment.stage import to_config  # noqa: E402
from multimsd.gold import load_gold  # noqa: E402
from multimsd.studio import cli  # noqa: E402
from multimsd.studio.app import create_app  # noqa: E402
from multimsd.studio.journal import Journal  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Both sides the same sentences: the symmetric aligner's mutual argmax is the diagonal (cosine 1) with any
# encoder, so the predicted alignments are known without a real model.
A1 = ["The heart pumps blood.", "Aspirin thins the blood.", "Sleep helps the brain.", "Water is vital."]
A2 = ["Asthma narrows the airways.", "Inhalers open them.", "Smoke makes it worse."]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_encoder) -> Path:
    """A ``multimsd run``-like directory: align/ made by the real alignment stage, its embeddings cached."""
    base = tmp_path_factory.mktemp("studio")
    corpus = base / "corpus.jsonl"
    with open(corpus, "w", encoding="utf-8") as f:
        for aid, sents in (("a1", A1), ("a2", A2)):
            f.write(json.dumps({"article_id": aid, "lang": "en", "complex": sents, "simple": sents}) + "\n")
    cfg = {
        "data": {"path": str(corpus), "languages": ["en"]},
        "embedder": {"name": "tiny", "model": str(tiny_encoder), "backend": "transformers", "batch_size": 4},
        "aligner": {"method": "symmetric", "threshold": 0.5},
        "filters": {"drop_identical": False},
        "cache_dir": str(base / "cache"),
        "output": {"dir": str(base / "run" / "align")},
    }
    align_run(to_config(cfg))
    return base / "run"


def studio(run_dir: Path, tmp_path: Path, annotator: str = "ann", token: str | None = None):
    """A fresh copy of the run (each test writes its own studio/), its corpus, journal and a TestClient."""
    import shutil

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    s = cli.prepare(cli.parse([str(root), "--annotator", annotator]))
    cli.start(s)
    return root, s.corpus, s.journal, TestClient(create_app(s, token))


def post(client: TestClient, **body) -> dict:
    r = client.post("/api/action", json={"lang": "en", **body})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.integration
def test_the_view_lists_articles_sentences_and_the_runs_alignments(run_dir, tmp_path):
    _, corpus, _, client = studio(run_dir, tmp_path)
    info = client.get("/api/info").json()
    assert info["aligner"] == {"method": "symmetric", "threshold": 0.5}
    assert info["languages"] == [{"lang": "en", "articles": 2, "annotated": 0}]
    rows = client.get("/api/articles", params={"lang": "en"}).json()
    assert [(r["article_id"], r["predicted"], r["annotated"]) for r in rows] == [
        ("a1", 4, False),
        ("a2", 3, False),
    ]
    art = client.get("/api/article", params={"lang": "en", "id": "a1"}).json()
    assert art["complex"] == A1 and art["simple"] == A1  # document order, as segmented by the run
    assert [(p["complex"], p["simple"], p["status"]) for p in art["predicted"]] == [
        ([k], [k], "open") for k in range(4)
    ]
    assert all(p["score"] == pytest.approx(1.0, abs=1e-5) for p in art["predicted"])
    corpus.close()


def test_candidates_come_from_the_cached_embeddings_and_encode_nothing(run_dir, tmp_path, monkeypatch):
    def no_model(self, texts, prefix):
        raise AssertionError(f"encoded {len(texts)} sentences on a cached run")

    monkeypatch.setattr(Embedder, "_encode_batch", no_model)
    _, corpus, _, client = studio(run_dir, tmp_path)
    r = client.get("/api/candidates", params={"lang": "en", "id": "a1", "side": "simple", "idx": 2})
    ranked = r.json()["candidates"]
    assert ranked[0] == {"idx": 2, "cosine": pytest.approx(1.0, abs=1e-4)}  # itself first
    assert len(ranked) == 4 and ranked[1]["cosine"] <= ranked[0]["cosine"]
    assert client.get("/api/info").json()["sentences_encoded"] == 0 == corpus.n_encoded
    corpus.close()


@pytest.mark.integration
def test_without_cached_embeddings_the_projects_embedder_encodes(run_dir, tmp_path, monkeypatch):
    calls: list[int] = []
    real = Embedder._encode_batch

    def counting(self, texts, prefix):
        calls.append(len(texts))
        return real(self, texts, prefix)

    monkeypatch.setattr(Embedder, "_encode_batch", counting)
    _, corpus, _, client = studio(run_dir, tmp_path)
    corpus.cfg.cache_dir = str(tmp_path / "empty-cache")
    r = client.get("/api/candidates", params={"lang": "en", "id": "a2", "side": "complex", "idx": 0})
    assert r.json()["candidates"][0]["idx"] == 0
    assert sum(calls) == corpus.n_encoded == len(A2)  # each text once (both sides are the same texts)
    corpus.close()


# The gold file the actions below must produce, written by hand (align.py mode=gold's format).
EXPECTED = [
    {"article_id": "a1", "lang": "en", "complex": A1, "simple": A1, "gold": [[0, 0], [[1, 2], 1]]},
    {"article_id": "a2", "lang": "en", "complex": A2, "simple": A2, "gold": [[0, 0], [1, 1], [2, 2]]},
]


def act_session(client: TestClient) -> None:
    post(client, article_id="a1", action="accept", items=[[0, 0]])
    post(client, article_id="a1", action="link", items=[[[2, 1], 1]])  # n:m: 2 professional, 1 consumer
    post(client, article_id="a1", action="reject", items=[[3, 3]])
    post(client, article_id="a1", action="accept", items=[[2, 2]])
    post(client, article_id="a1", action="undo")  # takes back the accept of [2, 2]
    post(client, article_id="a2", action="accept_above", theta=0.5)
    post(client, article_id="a2", action="reject", items=[[1, 1]])
    post(client, article_id="a2", action="undo")


def test_actions_write_the_expected_gold_file_read_back_by_the_gold_reader(run_dir, tmp_path):
    root, corpus, journal, client = studio(run_dir, tmp_path)
    act_session(client)
    gold_file = root / "studio" / "gold-ann.jsonl"
    expected = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in EXPECTED)
    assert gold_file.read_text(encoding="utf-8") == expected
    docs = {d.article_id: d.gold for d in load_gold(gold_file)}
    assert docs == {
        "a1": {((0,), (0,)), ((1, 2), (1,))},
        "a2": {((0,), (0,)), ((1,), (1,)), ((2,), (2,))},
    }
    art = client.get("/api/article", params={"lang": "en", "id": "a1"}).json()
    assert [p["status"] for p in art["predicted"]] == ["accepted", "open", "open", "rejected"]
    assert client.get("/api/info").json()["languages"][0]["annotated"] == 2
    # Replayed from the journal alone (a restart), the state and the gold file are the same.
    gold_file.unlink()
    again = Journal(journal.path, journal.gold_path, "ann", journal.texts)
    again.start(None)
    assert gold_file.read_text(encoding="utf-8") == expected
    lines = [json.loads(x) for x in journal.path.read_text().splitlines()]
    assert [x["action"] for x in lines][:3] == ["accept", "link", "reject"]
    assert all(x["annotator"] == "ann" for x in lines)
    corpus.close()


def test_a_gold_file_given_with_gold_is_the_start_and_is_never_applied_twice(run_dir, tmp_path):
    start = tmp_path / "start.jsonl"
    start.write_text(json.dumps(EXPECTED[0]) + "\n", encoding="utf-8")
    root, corpus, journal, client = studio(run_dir, tmp_path)
    corpus.close()
    args = cli.parse([str(root), "--annotator", "b", "--gold", str(start)])
    for _restart in range(2):
        s = cli.prepare(args)
        cli.start(s)
        corpus, client = s.corpus, TestClient(create_app(s))
        art = client.get("/api/article", params={"lang": "en", "id": "a1"}).json()
        assert [(g["complex"], g["simple"]) for g in art["gold"]] == [([0], [0]), ([1, 2], [1])]
        corpus.close()
    post(client, article_id="a1", action="reject", items=[[0, 0]])
    assert load_gold(root / "studio" / "gold-b.jsonl")[0].gold == {((1, 2), (1,))}
    assert sum(json.loads(x)["action"] == "base" for x in (root / "studio/journal-b.jsonl").open()) == 1


def test_a_torn_last_journal_line_is_dropped_and_the_rest_kept(run_dir, tmp_path):
    root, corpus, journal, client = studio(run_dir, tmp_path)
    post(client, article_id="a1", action="accept", items=[[0, 0]])
    corpus.close()
    with open(journal.path, "a", encoding="utf-8") as f:
        f.write('{"seq": 2, "action": "acc')  # killed in the middle of an append: never acknowledged
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))
    cli.start(s)
    corpus, journal = s.corpus, s.journal
    assert journal.path.read_text().endswith("}\n")
    client = TestClient(create_app(s))
    post(client, article_id="a1", action="accept", items=[[1, 1]])
    assert load_gold(journal.gold_path)[0].gold == {((0,), (0,)), ((1,), (1,))}
    corpus.close()


def test_bad_actions_are_refused_and_write_nothing(run_dir, tmp_path):
    _, corpus, journal, client = studio(run_dir, tmp_path)
    for body in (
        {"article_id": "a1", "action": "accept", "items": [[0, 9]]},  # no sentence 9
        {"article_id": "a1", "action": "explode", "items": [[0, 0]]},
        {"article_id": "a1", "action": "accept", "items": []},
        {"article_id": "a1", "action": "accept_above", "theta": "high"},
    ):
        assert client.post("/api/action", json={"lang": "en", **body}).status_code == 400
    assert (
        client.post("/api/action", json={"lang": "en", "article_id": "zz", "action": "undo"}).status_code
        == 404
    )
    assert not journal.path.exists() or journal.path.read_text() == ""
    corpus.close()


TRAVERSAL = "../../../../../../etc/passwd"


def test_path_traversal_is_refused_everywhere(run_dir, tmp_path):
    _, corpus, journal, client = studio(run_dir, tmp_path)
    for url in (
        "/static/" + TRAVERSAL,
        "/static/..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/static/../app.py",
        "/static/" + str(Path(cli.__file__).resolve()),
        "/../../etc/passwd",
    ):
        r = client.get(url)
        assert r.status_code == 404, url
        assert "root:" not in r.text
    for params in ({"lang": "en", "id": TRAVERSAL}, {"lang": TRAVERSAL, "id": "a1"}):
        assert client.get("/api/article", params=params).status_code == 404
        assert (
            client.get("/api/candidates", params={**params, "side": "complex", "idx": 0}).status_code == 404
        )
    r = client.post("/api/action", json={"lang": "en", "article_id": TRAVERSAL, "action": "undo"})
    assert r.status_code == 404
    assert client.get("/api/articles", params={"lang": TRAVERSAL}).status_code == 404
    with pytest.raises(Exception, match="letters, digits"):
        cli.parse([str(tmp_path), "--annotator", "../../etc/x"])
    assert client.get("/static/studio.js").status_code == 200
    corpus.close()


def test_other_web_pages_cannot_act_on_a_loopback_studio(run_dir, tmp_path):
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))
    cli.start(s)
    corpus, journal = s.corpus, s.journal
    client = TestClient(create_app(s, check_host=True), base_url="http://127.0.0.1:8765")
    assert client.get("/api/info").status_code == 200
    assert client.get("/api/info", headers={"Host": "localhost:8765"}).status_code == 200
    # A DNS-rebinding page reaches the port under its own name.
    assert client.get("/api/info", headers={"Host": "evil.example:8765"}).status_code == 403
    # A cross-origin form or text/plain POST needs no CORS preflight: it is refused.
    body = json.dumps({"lang": "en", "article_id": "a1", "action": "accept", "items": [[0, 0]]})
    for ctype in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {"Content-Type": ctype} if ctype else {}
        assert client.post("/api/action", content=body, headers=headers).status_code == 415
    assert not journal.path.exists() or journal.path.read_text() == ""
    corpus.close()


def test_the_token_gate(run_dir, tmp_path):
    _, corpus, _, client = studio(run_dir, tmp_path, token="s3cret")
    assert client.get("/api/info").status_code == 403
    assert client.get("/").status_code == 403
    assert client.get("/static/studio.js").status_code == 403
    assert (
        client.post("/api/action", json={"lang": "en", "article_id": "a1", "action": "undo"}).status_code
        == 403
    )
    assert client.get("/api/info", params={"token": "wrong"}).status_code == 403
    assert client.get("/api/info", headers={"X-Studio-Token": "s3cret"}).status_code == 200
    page = client.get("/", params={"token": "s3cret"})
    assert page.status_code == 200 and "multimsd studio" in page.text
    assert client.get("/static/studio.css").status_code == 200  # the cookie the page set
    corpus.close()


# ---------------------------------------------------------------------------------------------- the command
def studio_main(argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    return e.value.code, capsys.readouterr().err


def test_bad_input_is_one_line_exit_2_and_writes_nothing(run_dir, tmp_path, capsys):
    import shutil

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    empty = tmp_path / "empty"
    empty.mkdir()
    bad_gold = tmp_path / "bad.jsonl"
    bad_gold.write_text("{not json\n")
    out_of_range = tmp_path / "range.jsonl"
    out_of_range.write_text(json.dumps({**EXPECTED[0], "gold": [[0, 99]]}) + "\n")
    other_sentences = tmp_path / "other.jsonl"
    other_sentences.write_text(json.dumps({**EXPECTED[0], "simple": ["Other."], "gold": [[0, 0]]}) + "\n")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    cases = {
        "no such directory": [str(tmp_path / "missing")],
        "no alignments found": [str(empty)],
        "cannot listen": [str(root), "--port", str(busy.getsockname()[1])],
        "bad.jsonl": [str(root), "--gold", str(bad_gold)],
        "out of range": [str(root), "--gold", str(out_of_range)],
        "other sentences": [str(root), "--gold", str(other_sentences)],
        "no such file": [str(root), "--gold", str(tmp_path / "nope.jsonl")],
        "letters, digits": [str(root), "--annotator", "a/b"],
        "unrecognized arguments": [str(root), "--colour"],
    }
    try:
        for needle, argv in cases.items():
            code, err = studio_main(argv, capsys)
            assert code == 2, (needle, err)
            assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
            assert not (root / "studio").exists() and not (empty / "studio").exists()
    finally:
        busy.close()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.mark.e2e
def test_a_real_server_killed_with_sigkill_loses_no_acknowledged_action(run_dir, tmp_path, studio_server):
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    # Not loopback: the printed URL carries the token, and a request without it is refused.
    server = studio_server(root, "--host", "0.0.0.0", "--annotator", "kim")
    assert "?token=" in server.url
    token = server.url.split("?token=")[1]
    base = f"http://127.0.0.1:{server.port}"
    assert _get(f"{base}/api/info")[0] == 403
    assert _get(f"{base}/api/info?token={token}")[0] == 200
    for item in ([[0, 1], 0], [3, 3]):
        body = {"lang": "en", "article_id": "a1", "action": "link", "items": [item]}
        req = urllib.request.Request(
            f"{base}/api/action",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-Studio-Token": token},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 200
    server.kill()  # right after the acknowledged action
    assert load_gold(root / "studio" / "gold-kim.jsonl")[0].gold == {((0, 1), (0,)), ((3,), (3,))}
    server = studio_server(root, "--annotator", "kim")  # loopback: no token
    assert "token" not in server.url
    status, body = _get(f"{server.url}api/article?lang=en&id=a1")
    assert status == 200
    gold = [(g["complex"], g["simple"]) for g in json.loads(body)["gold"]]
    assert gold == [([0, 1], [0]), ([3], [3])]


def test_the_multimsd_command_lists_studio(capsys):
    from multimsd.main import main

    main(["--help"])
    assert "studio" in capsys.readouterr().out
    cli.main(["--help"])
    assert "multimsd studio PATH" in capsys.readouterr().out


def test_an_align_output_keeps_its_studio_files_beside_it_and_changed_sentences_stop_the_replay(
    run_dir, tmp_path, capsys
):
    import shutil

    from omegaconf import OmegaConf

    shutil.copytree(run_dir / "align", tmp_path / "aligned")
    s = cli.prepare(cli.parse([str(tmp_path / "aligned"), "--annotator", "ann"]))
    cli.start(s)
    corpus, journal = s.corpus, s.journal
    # align.py replaces its output directory whole on a re-run: the journal must not live inside it.
    assert journal.path == tmp_path / "aligned-studio" / "journal-ann.jsonl"
    post(TestClient(create_app(s)), article_id="a1", action="accept", items=[[0, 0]])
    corpus.close()
    # The input is edited and aligned again (here: the config pointed at an edited copy): the journal's
    # indices would now point at other sentences.
    cfg_file = tmp_path / "aligned" / "align_config.yaml"
    cfg = OmegaConf.load(cfg_file)
    edited = tmp_path / "edited.jsonl"
    recs = [json.loads(x) for x in Path(cfg.data.path).read_text().splitlines()]
    recs[0]["simple"] = ["The heart pumps blood hard.", *A1[1:]]
    edited.write_text("".join(json.dumps(r) + "\n" for r in recs))
    cfg.data.path = str(edited)
    OmegaConf.save(cfg, cfg_file)
    before = journal.path.read_bytes()
    code, err = studio_main([str(tmp_path / "aligned"), "--annotator", "ann"], capsys)
    assert code == 2 and "other sentences now" in err and err.count("\n") == 1
    assert journal.path.read_bytes() == before


def test_align_gold_mode_scores_the_aligner_against_the_studios_gold_file(run_dir, tmp_path, monkeypatch):
    """The gold file is what ``align.py mode=gold gold.path=…`` reads: the gold mode of the run's own config
    scores its aligner on it (the predicted diagonal against the gold made above), encoding nothing."""
    from multimsd.alignment.goldmode import evaluate_gold
    from multimsd.gold import load_gold_docs

    def no_model(self, texts, prefix):
        raise AssertionError("encoded on a cached run")

    root, corpus, _, client = studio(run_dir, tmp_path)
    act_session(client)
    monkeypatch.setattr(Embedder, "_encode_batch", no_model)
    cfg = corpus.cfg
    cfg.gold.methods = ["symmetric"]
    results = evaluate_gold(cfg, load_gold_docs(str(root / "studio" / "gold-ann.jsonl")))
    en = results["methods"]["symmetric"]["en"]
    # a1: gold {0-0, 1+2-1}, a2: gold {0-0, 1-1, 2-2}; the aligner predicts each article's diagonal at θ 0.5
    expected = {"a1": (1, 4, 2), "a2": (3, 3, 3)}  # correct, predicted, gold
    test_id = results["test_articles"][0]
    got = en["test_articles"][test_id]
    assert (got["correct"], got["predicted"], got["gold"]) == expected[test_id]
    corpus.close()


@pytest.mark.e2e
def test_one_studio_per_annotator_and_other_annotators_side_by_side(run_dir, tmp_path, studio_server):
    """Issue #32's row: ``--annotator twin`` twice on one run. The second is one line, exit 2, having written
    nothing; another annotator's studio starts beside it; once the first is SIGKILLed the next one starts
    (the lock died with it) and sees every action the first acknowledged."""
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    first = studio_server(root, "--annotator", "twin")
    body = {"lang": "en", "article_id": "a1", "action": "link", "items": [[0, 1]]}
    req = urllib.request.Request(
        f"{first.url}api/action", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200
    studio_files = {p.name: p.stat().st_mtime_ns for p in (root / "studio").iterdir()}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "multimsd", "studio", str(root), "--port", "0"]
    second = subprocess.run(
        [*cmd, "--annotator", "twin"], capture_output=True, text=True, env=env, timeout=240
    )
    assert second.returncode == 2 and second.stdout == "", second
    assert second.stderr.count("\n") == 1, second.stderr
    assert second.stderr.startswith(
        f"error: annotator twin's journal {root / 'studio' / 'journal-twin.jsonl'} is being written by "
        f"pid {first.pid} on host "
    ), second.stderr
    assert f"(multimsd studio on port {first.port}); " in second.stderr
    assert "start this one with another --annotator" in second.stderr
    assert {p.name: p.stat().st_mtime_ns for p in (root / "studio").iterdir()} == studio_files
    studio_server(root, "--annotator", "other")  # another annotator: side by side, as before
    first.kill()
    again = studio_server(root, "--annotator", "twin")
    status, page = _get(f"{again.url}api/article?lang=en&id=a1")
    assert status == 200 and [(g["complex"], g["simple"]) for g in json.loads(page)["gold"]] == [([0], [1])]
    journal = [json.loads(ln) for ln in (root / "studio" / "journal-twin.jsonl").read_text().splitlines()]
    assert [r["seq"] for r in journal] == list(range(1, len(journal) + 1))


def test_the_journal_read_again_under_the_lock_has_what_another_studio_wrote(run_dir, tmp_path):
    """The studio reads the journal before it takes the annotator's lock; one that stopped in between may have
    written more: :meth:`Journal.reread` (called under the lock) sees it, so seq numbers never repeat."""
    root, corpus, early, _ = studio(run_dir, tmp_path, annotator="twin")
    other = early.reread()  # the other studio, which wrote until just now
    other.act("link", "en", "a1", [((0,), (1,))])
    other.act("link", "en", "a1", [((2,), (2,))])
    late = early.reread()
    assert (early.seq, late.seq) == (0, 2)
    assert late.act("link", "en", "a2", [((0,), (0,))])["seq"] == 3


def test_the_studio_reads_alignments_through_the_alignment_packages_public_interface():
    """Issue #31 item 3: the studio imports the alignment package through ``multimsd.alignment.api`` only (on
    main it reached into ``alignment.stage``, ``.encode``, ``.aligners.lexical``, ``.filters``, ``.goldmode``),
    and no module imports another's private (underscore) name (theta took ``corpus._input_path``)."""
    import ast

    from test_architecture import GRAPH, MODULES

    import multimsd.alignment.api as api

    deep = sorted(
        f"{name} -> {dep}"
        for name, deps in GRAPH.items()
        if name.startswith("multimsd.studio")
        for dep in deps
        if dep.startswith("multimsd.alignment") and dep != "multimsd.alignment.api"
    )
    assert not deep, deep
    private = []
    for name, path in MODULES.items():
        if not name.startswith("multimsd.studio"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("multimsd"):
                private += [f"{name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not private, private
    # small, and every name of it a documented function
    assert 5 <= len(api.__all__) <= 12
    assert all(callable(getattr(api, n)) and getattr(api, n).__doc__ for n in api.__all__)


# ---------------------------------------------------------------------------------------------- a view of your own
# A whole view, as a user writes one: a module that registers it (route, script, /api/info entry, option) and
# its script. Nothing in multimsd/studio is edited for it; ``--plugin toyview`` imports it.
TOY_VIEW = """
from starlette.responses import JSONResponse
from starlette.routing import Route

from multimsd.studio.registry import Option, View, register_view
from pathlib import Path


def routes(state):
    return [Route("/api/toy", lambda request: JSONResponse({"level": state["level"], "articles": state["n"]}))]


register_view(
    View(
        name="toy",
        title="toy",
        order=25,  # between the θ view (20) and the outputs (30): key 3
        script="toy.js",
        script_file=Path(__file__).with_name("toy.js"),
        routes=routes,
        info=lambda state: {"level": state["level"]},
        options=(Option("--toy-level", "N", "how much toy", default="1"),),
        prepare=lambda studio: {"level": int(studio.args.toy_level), "n": len(studio.corpus.articles)},
    )
)
"""
TOY_JS = """(() => {
  const main = document.createElement("main");
  main.id = "view-toy";
  const footer = document.createElement("footer");
  footer.id = "keys-toy";
  footer.textContent = "keys: 1, 2, … switch view";
  window.studio.register("toy", { main, footer, init(info) { main.textContent = `toy level ${info.toy.level}`; } });
})();
"""


@pytest.fixture
def toy_view(tmp_path, monkeypatch):
    """The directory of ``toyview.py`` and ``toy.js`` (importable); the view is unregistered afterwards."""
    from multimsd.studio.registry import VIEWS

    d = tmp_path / "toy-plugin"
    d.mkdir()
    (d / "toyview.py").write_text(TOY_VIEW, encoding="utf-8")
    (d / "toy.js").write_text(TOY_JS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(d))
    yield d
    VIEWS.pop("toy", None)
    sys.modules.pop("toyview", None)


def test_a_view_registers_once_and_gets_its_route_script_info_option_and_key(
    run_dir, tmp_path, toy_view, capsys
):
    """Issue #31 item 3: a view of your own is one module + its script and one ``register_view``; its route, its
    script (and ``<script>`` tag), its ``/api/info`` entry, its option (in ``--help`` too) and its number key
    (from its ``order``: the toy's 25 puts it 3rd, the outputs view moves to 4) all follow, with app.py, cli.py
    and index.html unedited."""
    from multimsd.studio import app as app_module

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    cli.main(["--plugin", "toyview", "--help"])
    usage = capsys.readouterr().out
    assert (
        "[--aligner M[:θ] ...] [--toy-level N]" in usage and "\n  --toy-level N     how much toy\n" in usage
    )
    argv = [str(root), "--annotator", "ann", "--plugin", "toyview", "--toy-level", "3"]
    cli.load_views(argv)
    s = cli.prepare(cli.parse(argv))
    client = TestClient(create_app(s))
    assert client.get("/api/toy").json() == {"level": 3, "articles": 2}
    assert client.get("/static/toy.js").text == TOY_JS
    info = client.get("/api/info").json()
    assert info["toy"] == {"level": 3}
    assert [(v["name"], v["key"], v["available"]) for v in info["views"]] == [
        ("align", "1", True),
        ("theta", "2", True),
        ("toy", "3", True),
        ("review", "4", False),  # this run has no test outputs
        ("simplify", "5", False),  # nor systems
    ]
    page = client.get("/").text
    assert '<button data-view="toy" data-key="3" title="3">toy</button>' in page
    assert page.index('src="static/theta.js"') < page.index('src="static/toy.js"') < page.index("review.js")
    for module in (app_module, cli):  # nothing of the toy written into the studio's own code
        assert "toy" not in Path(module.__file__).read_text(encoding="utf-8")
    assert "toy" not in (Path(cli.__file__).parent / "static" / "index.html").read_text(encoding="utf-8")
    s.corpus.close()


def test_a_view_that_would_clash_is_refused_at_registration():
    import multimsd.studio.views  # noqa: F401  (the built-in views)
    from multimsd.errors import MultimsdError
    from multimsd.studio.registry import VIEWS, View, register_view

    before = dict(VIEWS)
    for view, why in (
        (View("align", "again", "again.js", routes=list), "registered twice"),
        (View("languages", "l", "l.js", routes=list), "a name /api/info uses"),
        (View("page", "p", "studio.js", routes=list), "is taken"),
        (View("style", "s", "alignments.js", routes=list), "is taken"),
        (View("css", "c", "c.css", routes=list), "is a .js file"),
        (View("a b", "c", "c.js", routes=list), "letters, digits"),
    ):
        with pytest.raises(MultimsdError, match=why):
            register_view(view)
    assert before == VIEWS


def test_overlapping_gold_items_are_kept_with_a_warning_numbered_from_1(run_dir, tmp_path):
    """Issue #31 item 6: a 1:1 gold item inside a 1:2 one was kept without a word. Both are still kept (the gold
    file counts positions from 0), and the article's answer says so, numbering sentences from 1 as the page."""
    _, corpus, journal, client = studio(run_dir, tmp_path)
    post(client, article_id="a1", action="accept", items=[[0, 0]])  # 1 ↔ 1: shares nothing below
    post(client, article_id="a1", action="link", items=[[1, [2, 3]]])  # 2 ↔ 3+4
    art = post(client, article_id="a1", action="link", items=[[1, 2]])["article"]  # 2 ↔ 3, inside it
    assert [(g["label"], g["overlaps"]) for g in art["gold"]] == [
        ("1 ↔ 1", False),
        ("2 ↔ 3", True),
        ("2 ↔ 3+4", True),
    ]
    assert art["warnings"] == [
        {
            "items": [[1, 2], [1, [2, 3]]],
            "message": "gold items 2 ↔ 3 and 2 ↔ 3+4 overlap: they share professional sentence 2 and consumer "
            "sentence 3 (gold mode scores both; reject the one you did not mean)",
        }
    ]
    assert load_gold(journal.gold_path)[0].gold == {((0,), (0,)), ((1,), (2,)), ((1,), (2, 3))}  # all kept
    assert client.get("/api/article", params={"lang": "en", "id": "a1"}).json()["warnings"] == art["warnings"]
    assert [p["label"] for p in art["predicted"]] == ["1 ↔ 1", "2 ↔ 2", "3 ↔ 3", "4 ↔ 4"]
    art = post(client, article_id="a1", action="reject", items=[[1, 2]])["article"]  # the fix: no warning
    assert art["warnings"] == [] and [g["overlaps"] for g in art["gold"]] == [False, False]
    corpus.close()


def test_an_action_the_disk_cannot_take_is_a_507_with_the_line_and_nothing_kept(
    run_dir, tmp_path, monkeypatch
):
    """A full disk while the gold file is rebuilt: the page gets the one-line cause (HTTP 507), the journal and
    the state are as before, and the same action, once there is space, is applied once."""
    from multimsd.errors import MultimsdError

    root, corpus, journal, client = studio(run_dir, tmp_path)
    post(client, article_id="a1", action="accept", items=[[0, 0]])
    journal_before = journal.path.read_bytes()

    def full(path, *a, **k):
        raise MultimsdError(f"no space left on device writing {path} (free space and run the same command)")

    monkeypatch.setattr("multimsd.studio.journal.write_text_atomic", full)
    r = client.post(
        "/api/action", json={"lang": "en", "article_id": "a1", "action": "accept", "items": [[1, 1]]}
    )
    assert r.status_code == 507 and r.json()["error"].startswith("no space left on device writing ")
    assert journal.path.read_bytes() == journal_before
    art = client.get("/api/article", params={"lang": "en", "id": "a1"}).json()
    assert [g["complex"] for g in art["gold"]] == [[0]]
    monkeypatch.undo()
    assert post(client, article_id="a1", action="accept", items=[[1, 1]])["seq"] == 2
    corpus.close()
