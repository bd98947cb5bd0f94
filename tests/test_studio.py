"""``multimsd studio``: the alignment view's API, gold written as you go (journal + atomic gold file), the token
gate, path traversal, bad input, and a real server killed with SIGKILL that loses no acknowledged action."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
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

ROOT = Path(__file__).resolve().parents[1]
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
    args = cli.parse([str(root), "--annotator", annotator])
    corpus, journal, base = cli.prepare(args)
    journal.start(base)
    return root, corpus, journal, TestClient(create_app(corpus, journal, token))


def post(client: TestClient, **body) -> dict:
    r = client.post("/api/action", json={"lang": "en", **body})
    assert r.status_code == 200, r.text
    return r.json()


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
        corpus, journal, base = cli.prepare(args)
        journal.start(base)
        client = TestClient(create_app(corpus, journal))
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
    corpus, journal, base = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))
    journal.start(base)
    assert journal.path.read_text().endswith("}\n")
    client = TestClient(create_app(corpus, journal))
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
    root, corpus, journal, _ = studio(run_dir, tmp_path)
    client = TestClient(create_app(corpus, journal, check_host=True), base_url="http://127.0.0.1:8765")
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


def _read_line(proc: subprocess.Popen, timeout: float = 240) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 1)[0]:
            return proc.stdout.readline()
        if proc.poll() is not None:
            raise AssertionError(f"studio exited {proc.returncode}: {proc.stderr.read()}")
    raise AssertionError("studio printed no URL")


def _start(root: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "multimsd", "studio", str(root), "--port", "0", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = _read_line(proc)
    assert line.startswith("multimsd studio: http://"), line
    return proc, line.split(": ", 1)[1].strip()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_a_real_server_killed_with_sigkill_loses_no_acknowledged_action(run_dir, tmp_path):
    import shutil

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    # Not loopback: the printed URL carries the token, and a request without it is refused.
    proc, url = _start(root, "--host", "0.0.0.0", "--annotator", "kim")
    try:
        assert "?token=" in url
        token = url.split("?token=")[1]
        port = url.split(":")[2].split("/")[0]
        base = f"http://127.0.0.1:{port}"
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
        proc.send_signal(signal.SIGKILL)  # right after the acknowledged action
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert load_gold(root / "studio" / "gold-kim.jsonl")[0].gold == {((0, 1), (0,)), ((3,), (3,))}
    proc, url = _start(root, "--annotator", "kim")  # loopback: no token
    try:
        assert "token" not in url
        status, body = _get(f"{url}api/article?lang=en&id=a1")
        assert status == 200
        gold = [(g["complex"], g["simple"]) for g in json.loads(body)["gold"]]
        assert gold == [([0, 1], [0]), ([3], [3])]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()


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
    args = cli.parse([str(tmp_path / "aligned"), "--annotator", "ann"])
    corpus, journal, base = cli.prepare(args)
    journal.start(base)
    # align.py replaces its output directory whole on a re-run: the journal must not live inside it.
    assert journal.path == tmp_path / "aligned-studio" / "journal-ann.jsonl"
    post(TestClient(create_app(corpus, journal)), article_id="a1", action="accept", items=[[0, 0]])
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


def test_one_studio_per_annotator_and_other_annotators_side_by_side(run_dir, tmp_path):
    """Issue #32's row: ``--annotator twin`` twice on one run. The second is one line, exit 2, having written
    nothing; another annotator's studio starts beside it; once the first is SIGKILLed the next one starts
    (the lock died with it) and sees every action the first acknowledged."""
    import shutil

    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    first, url = _start(root, "--annotator", "twin")
    others = []
    try:
        body = {"lang": "en", "article_id": "a1", "action": "link", "items": [[0, 1]]}
        req = urllib.request.Request(
            f"{url}api/action", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
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
        assert f"(multimsd studio on port {url.split(':')[2].split('/')[0]}); " in second.stderr
        assert "start this one with another --annotator" in second.stderr
        assert {p.name: p.stat().st_mtime_ns for p in (root / "studio").iterdir()} == studio_files
        others.append(_start(root, "--annotator", "other")[0])  # another annotator: side by side, as before
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        again, url = _start(root, "--annotator", "twin")
        others.append(again)
        status, page = _get(f"{url}api/article?lang=en&id=a1")
        assert status == 200 and [(g["complex"], g["simple"]) for g in json.loads(page)["gold"]] == [
            ([0], [1])
        ]
    finally:
        for proc in (first, *others):
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            proc.stdout.close()
            proc.stderr.close()
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
