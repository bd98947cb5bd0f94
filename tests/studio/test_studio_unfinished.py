"""Issue #49 for the studio: a run that has not finished (no run.json yet, a training interrupted) still gets
the simplify view with its finished systems; a view with nothing to show says why (page, /api/info, its
routes); every /api/ error is JSON; a language the system was not trained on is refused before its model is
loaded (``any_lang``: a warning); a server stopped by SIGTERM says it stopped and exits 0."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402
from test_studio import run_dir  # noqa: E402, F401  (run_dir: the fixture)
from test_studio_simplify import save  # noqa: E402

from multimsd.studio import cli  # noqa: E402
from multimsd.studio.app import create_app  # noqa: E402

HALF = "its training has not finished yet, or was interrupted"


def unfinished(run_dir: Path, tmp_path: Path, german: bool = True) -> Path:  # noqa: F811
    """The aligned run, interrupted in its training stage: its stage records, no run.json; a 0-shot system
    prompted in German only (finished) and a fine-tuning killed after its first epoch (best/, no config.yaml).
    The 0-shot system is wrapped in LoRA as a run's is (peft's wrapping asks transformers a deprecated
    question: a FutureWarning the studio must not print)."""
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    (root / ".stages").mkdir()
    if german:
        model = {"kind": "causal", "pretrained": "tiny:llama", "lora": {"enabled": True}}
        settings = {"model": model, "mode": "icl", "icl": {"shots": 0}, "data": {"languages": ["de"]}}
        save(root, "german", {**settings, "eval": {"max_new_tokens": 4}})
    (root / "systems" / "half" / "best").mkdir(parents=True)
    return root


def studio_of(root: Path, token: str | None = None):
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann"]))
    cli.start(s)
    return s, TestClient(create_app(s, token), raise_server_exceptions=False)


def test_an_unfinished_run_offers_its_finished_systems_and_says_why_the_first_is_selected(
    run_dir,  # noqa: F811
    tmp_path,
):
    s, c = studio_of(unfinished(run_dir, tmp_path))
    info = c.get("/api/info").json()
    assert next(v for v in info["views"] if v["name"] == "simplify") == {
        "name": "simplify",
        "title": "simplify",
        "key": "4",
        "available": True,
        "why": "",
    }
    v = info["simplify"]
    assert v["finished"] is False and v["default"] == "german"
    assert v["note"].startswith("the run has not finished (still running, or interrupted): the systems whose")
    systems = {x["name"]: x for x in v["systems"]}
    assert systems["german"] == {"name": "german", "usable": True, "why": "", "languages": ["de"]}
    assert systems["half"] == {"name": "half", "usable": False, "why": HALF, "languages": []}
    # a method the route does not take: JSON, with the one it takes
    r = c.get("/api/simplify")
    assert r.status_code == 405 and r.json() == {"error": "GET /api/simplify: not allowed, use POST"}
    s.corpus.close()


def test_a_view_with_nothing_to_show_says_why_and_every_api_error_is_json(
    run_dir,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    s, c = studio_of(unfinished(run_dir, tmp_path, german=False))
    why = f"the run has not finished, and none of its systems has yet (half: {HALF})"
    assert s.states["simplify"] is None and s.unavailable["simplify"] == why
    entry = next(v for v in c.get("/api/info").json()["views"] if v["name"] == "simplify")
    assert entry["available"] is False and entry["why"] == why
    assert f'class="unavailable" aria-disabled="true" data-why="{why}">simplify</button>' in c.get("/").text
    r = c.post("/api/simplify", json={"text": "Nimm 5 mg.", "lang": "de"})
    assert r.status_code == 404 and r.json() == {"error": f"the simplify view is not available here: {why}"}
    r = c.get("/api/nope")
    assert r.status_code == 404 and r.json() == {"error": "no such route: GET /api/nope"}
    assert c.get("/nope").text == "Not Found"  # outside /api/: Starlette's plain text

    monkeypatch.setattr(s.journal, "state", lambda *k: 1 / 0)  # a bug behind /api/info
    r = c.get("/api/info")
    assert r.status_code == 500 and r.json() == {
        "error": "internal error: ZeroDivisionError: division by zero"
    }

    gated = TestClient(create_app(s, token="secret"))
    r = gated.get("/api/info")
    assert r.status_code == 403 and r.json() == {
        "error": "forbidden: this studio needs its token (see the URL it printed)"
    }
    assert gated.get("/").text.startswith("forbidden: ")  # the page: plain text
    s.corpus.close()


@pytest.mark.integration  # the tiny Llama is built and generates
def test_a_language_the_system_was_not_trained_on_is_refused_unless_any_lang(run_dir, tmp_path):  # noqa: F811
    s, c = studio_of(unfinished(run_dir, tmp_path))
    state = s.states["simplify"]
    r = c.post("/api/simplify", json={"text": "Take 5 mg.", "lang": "en", "system": "german"})
    assert r.status_code == 400 and r.json() == {
        "error": 'system german was prompted in de only, not en ("any_lang": true to simplify anyway)'
    }
    r = c.post("/api/simplify", json={"text": "Take 5 mg.", "lang": "en", "any_lang": "yes"})
    assert r.status_code == 400 and r.json() == {"error": "any_lang: true or false"}
    assert state.loaded is None  # refused before the model is loaded
    r = c.post("/api/simplify", json={"text": "Take 5 mg.", "lang": "en", "any_lang": True})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["system"] == "german" and got["warning"] == "system german was prompted in de only, not en"
    r = c.post("/api/simplify", json={"text": "Nimm 5 mg.", "lang": "de"})
    assert r.status_code == 200 and "warning" not in r.json()
    s.corpus.close()


def post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=240) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.e2e  # a studio in its own process (a server), whose simplify view loads the tiny Llama
def test_sigterm_stops_the_studio_with_one_line_and_status_0(run_dir, tmp_path, studio_server):  # noqa: F811
    root = unfinished(run_dir, tmp_path)
    server = studio_server(root, "--annotator", "ann")
    status, got = post(server.url + "api/simplify", {"text": "Nimm 5 mg.", "lang": "de"})
    assert status == 200 and got["system"] == "german", got  # a model loaded: its library warnings are quiet
    server.proc.send_signal(signal.SIGTERM)
    out, err = server.proc.communicate(timeout=60)
    assert server.proc.returncode == 0, err
    assert err.strip().splitlines()[-1] == "studio: stopped (SIGTERM)", err
    assert "run the same command" not in err and "Warning" not in err, err
    with socket.socket() as sock:  # the port is free again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", server.port))
