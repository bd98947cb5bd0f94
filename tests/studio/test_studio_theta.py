"""The studio's θ view and agreement: ``/api/theta`` gives the numbers the real ``align.py mode=gold`` gives for
the studio's gold file (every θ of every aligner and language, the picked θ, the test half), its override
composes to the run's own config with the new θ, only annotated articles count, the empty state; the agreement
between annotators (item F1 and Cohen's κ, computed by hand here) from the journals beside each other."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from omegaconf import OmegaConf  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402
from test_studio import post, run_dir, studio  # noqa: E402, F401  (run_dir: the fixture)

from multimsd.alignment.embed import Embedder  # noqa: E402
from multimsd.alignment.stage import run as align_run  # noqa: E402
from multimsd.alignment.stage import to_config  # noqa: E402
from multimsd.studio import cli  # noqa: E402
from multimsd.studio.app import create_app  # noqa: E402
from multimsd.studio.theta import hydra_value  # noqa: E402

# Three article pairs in two languages; the consumer side is reworded, so scores spread over θ.
ARTICLES = {
    "a1": (
        ["The heart pumps blood.", "Aspirin thins the blood.", "Sleep helps the brain.", "Water is vital."],
        ["The heart moves blood.", "Aspirin makes blood thin.", "Sleep is good.", "Drink water."],
    ),
    "a2": (
        ["Asthma narrows the airways.", "Inhalers open them.", "Smoke makes it worse."],
        ["Asthma makes airways small.", "Inhalers help.", "Avoid smoke."],
    ),
    "a3": (
        ["Flu spreads in winter.", "Vaccines prevent it.", "Rest and fluids help."],
        ["Flu is common in winter.", "Get a vaccine.", "Rest."],
    ),
    "a4": (["Burns need cool water.", "Do not use ice."], ["Cool a burn with water.", "No ice."]),
}
LANGS = ("en", "de")


@pytest.fixture(scope="module")
def theta_run(tmp_path_factory, tiny_encoder) -> Path:
    """A ``multimsd run``-like directory over ARTICLES in en and de, aligned by the real stage (cached)."""
    base = tmp_path_factory.mktemp("studio-theta")
    corpus = base / "corpus.jsonl"
    with open(corpus, "w", encoding="utf-8") as f:
        for lang in LANGS:
            for aid, (c, s) in ARTICLES.items():
                f.write(json.dumps({"article_id": aid, "lang": lang, "complex": c, "simple": s}) + "\n")
    cfg = {
        "data": {"path": str(corpus), "languages": list(LANGS)},
        "embedder": {"name": "tiny", "model": str(tiny_encoder), "backend": "transformers", "batch_size": 4},
        "aligner": {"method": "symmetric", "threshold": 0.5},
        "filters": {"drop_identical": False},
        "cache_dir": str(base / "cache"),
        "seed": 7,
        "output": {"dir": str(base / "run" / "align")},
    }
    align_run(to_config(cfg))
    return base / "run"


def annotate(client: TestClient) -> None:
    """Gold for a1..a3 in both languages (a4 never touched: not gold)."""
    for lang in LANGS:
        post(client, lang=lang, article_id="a1", action="accept", items=[[0, 0], [1, 1], [3, 3]])
        post(client, lang=lang, article_id="a1", action="link", items=[[[2, 3], 2]])
        post(client, lang=lang, article_id="a2", action="accept", items=[[0, 0], [2, 2]])
        post(client, lang=lang, article_id="a2", action="reject", items=[[1, 1]])
        post(client, lang=lang, article_id="a3", action="accept", items=[[0, 0], [1, 1], [2, 2], [2, 1]])


def real_gold_mode(command: str, report_dir: Path, monkeypatch, capsys) -> tuple[dict, str]:
    """``multimsd align …`` run in-process through its real entry point; its gold_results.json and output."""
    from multimsd import align

    args = shlex.split(command)
    assert args[:2] == ["multimsd", "align"]
    monkeypatch.setattr(sys, "argv", ["multimsd align", *args[2:], f"gold.report_dir={report_dir}"])
    capsys.readouterr()
    align.main()
    printed = capsys.readouterr().out
    return json.loads((report_dir / "gold_results.json").read_text(encoding="utf-8")), printed


@pytest.mark.integration
def test_no_gold_yet_is_an_empty_state_not_an_error(run_dir, tmp_path):  # noqa: F811
    _, corpus, _, client = studio(run_dir, tmp_path)
    r = client.get("/api/theta")
    assert r.status_code == 200
    d = r.json()
    assert d["state"] == "empty" and d["gold_articles"] == 0 and "needs at least 2" in d["message"]
    post(client, article_id="a1", action="accept", items=[[0, 0]])
    d = client.get("/api/theta").json()  # one annotated article pair: still nothing to tune on
    assert d["state"] == "empty" and d["gold_articles"] == 1
    a = client.get("/api/agreement").json()
    assert a == {"annotators": [{"name": "ann", "articles": 1}], "pairs": [], "errors": []}
    corpus.close()


@pytest.mark.integration
def test_theta_view_equals_the_real_align_gold_mode(theta_run, tmp_path, monkeypatch, capsys):
    def no_model(self, texts, prefix):
        raise AssertionError(f"encoded {len(texts)} sentences on a cached run")

    root, corpus, journal, client = studio(theta_run, tmp_path)
    annotate(client)
    monkeypatch.setattr(Embedder, "_encode_batch", no_model)  # scored from the cached vectors
    d = client.get("/api/theta").json()
    assert d["state"] == "ok" and d["methods"] == ["symmetric", "asymmetric", "margin"]
    # Only annotated article pairs are gold: a4 was never touched.
    assert d["gold_articles"] == 6 and sorted(d["valid_articles"] + d["test_articles"]) == ["a1", "a2", "a3"]
    assert str(journal.gold_path) in d["gold_command"]

    results, printed = real_gold_mode(d["gold_command"], tmp_path / "report", monkeypatch, capsys)
    assert results["valid_articles"] == d["valid_articles"] and results["test_articles"] == d["test_articles"]
    rows = {(r["aligner"], r["lang"], r["theta"]): r for r in d["rows"]}
    n = 0
    for method, per_lang in results["methods"].items():
        assert set(per_lang) == {"en", "de", "all"}
        for lang, e in per_lang.items():
            for p in e["valid_curve"]:  # every θ: the same P / R / F1 and counts, exactly
                r = rows[(method, lang, p["threshold"])]
                assert (r["precision"], r["recall"], r["f1"]) == (p["precision"], p["recall"], p["f1"])
                assert (r["n_gold"], r["n_pred"], r["correct"]) == (p["gold"], p["predicted"], p["correct"])
                n += 1
            pick = next(x for x in d["picked"] if (x["aligner"], x["lang"]) == (method, lang))
            assert pick["theta"] == e["threshold"]  # gold mode's own pick
            assert pick["valid"] == e["valid"] and pick["test"] == e["test"]
    assert n == len(d["rows"]) > 30
    # What the command prints: the test half at the picked θ, per language (3 decimals).
    for pick in d["picked"]:
        if pick["aligner"] == "symmetric":
            t = pick["test"]
            cells = f"{pick['theta']:g} | {t['precision']:.3f} | {t['recall']:.3f} | {t['f1']:.3f}"
            assert f"| {pick['lang']} | {cells} |" in printed
    rec = d["recommended"]
    assert rec["lang"] == "all"
    best = max(
        (p for p in d["picked"] if p["lang"] == "all"),
        key=lambda p: (p["valid"]["f1"], p["aligner"] == "symmetric"),
    )
    assert (rec["aligner"], rec["theta"]) == (best["aligner"], best["theta"])
    corpus.close()


@pytest.mark.integration
def test_the_override_re_aligns_the_run_with_the_picked_theta(theta_run, tmp_path):
    from multimsd.commands.compose import compose

    root, corpus, _, client = studio(theta_run, tmp_path)
    annotate(client)
    d = client.get("/api/theta").json()
    run = OmegaConf.to_container(OmegaConf.structured(corpus.cfg), resolve=True)
    for pick in d["picked"]:
        args = shlex.split(pick["override"])
        assert args[:2] == ["multimsd", "align"] and args[-1] == f"aligner.threshold={pick['theta']}"
        got = to_config(compose("align", args[2:]))
        assert got.aligner.method == pick["aligner"] and got.aligner.threshold == pick["theta"]
        got = OmegaConf.to_container(OmegaConf.structured(got), resolve=True)
        if pick["aligner"] == "symmetric":  # the run's own aligner: the run's config, θ apart
            want = json.loads(json.dumps(run))
            want["aligner"]["threshold"] = pick["theta"]
            want["output"]["dir"] = str(root / "align")  # the run's alignments, where the studio found them
            for k in ("gold",):  # gold.* never changes what align.py aligns: not in the override
                got.pop(k), want.pop(k)
            assert got == want
        else:  # another aligner: its default options, everything else the run's
            assert {k: v for k, v in got.items() if k not in ("aligner", "gold", "output")} == {
                k: v for k, v in run.items() if k not in ("aligner", "gold", "output")
            }
    corpus.close()


def test_agreement_between_two_annotators_by_hand(run_dir, tmp_path):  # noqa: F811
    root, corpus, journal, client = studio(run_dir, tmp_path)
    post(client, article_id="a1", action="accept", items=[[0, 0]])
    post(client, article_id="a1", action="link", items=[[[1, 2], 1]])
    post(client, article_id="a1", action="reject", items=[[3, 3]])
    post(client, article_id="a2", action="accept", items=[[0, 0], [1, 1]])
    corpus.close()
    # bob, in the same studio directory: his own journal
    s_b = cli.prepare(cli.parse([str(root), "--annotator", "bob"]))
    cli.start(s_b)
    corpus_b, bob = s_b.corpus, TestClient(create_app(s_b))
    post(bob, article_id="a1", action="accept", items=[[0, 0], [1, 1]])
    post(bob, article_id="a1", action="reject", items=[[2, 2]])
    corpus_b.close()
    assert s_b.journal.path == journal.path.with_name("journal-bob.jsonl")
    before = {p.name: p.read_bytes() for p in journal.path.parent.iterdir()}

    a = client.get("/api/agreement").json()
    assert a["annotators"] == [{"name": "ann", "articles": 2}, {"name": "bob", "articles": 1}]
    (pair,) = a["pairs"]
    # Shared: a1 only. ann {0-0, 2+3-2}, bob {0-0, 2-2}: F1 = 2·1 / (2 + 2).
    assert (pair["a"], pair["b"], pair["articles"]) == ("ann", "bob", 1)
    assert (pair["items_a"], pair["items_b"], pair["both"], pair["f1"]) == (2, 2, 1, 0.5)
    # Decisions on a1: 0-0, 1-1, 2-2, 3-3 (predicted; rejected), 1+2-1 (ann's link).
    # ann 1 0 0 0 1, bob 1 1 0 0 0: po = 3/5, pe = .4·.4 + .6·.6 = .52, κ = (.6 - .52) / .48 = 1/6
    assert (pair["decisions"], pair["agree"]) == (5, 3)
    assert pair["kappa"] == pytest.approx(1 / 6)
    # bob's side from his own server: the same numbers
    s_b = cli.prepare(cli.parse([str(root), "--annotator", "bob"]))
    corpus_b, b = s_b.corpus, TestClient(create_app(s_b)).get("/api/agreement").json()
    assert b["pairs"][0]["kappa"] == pytest.approx(1 / 6) and b["pairs"][0]["a"] == "bob"
    corpus_b.close()
    # A damaged journal of a third annotator is named, not fatal; the others' files are only read.
    (journal.path.parent / "journal-zed.jsonl").write_text("not json\n", encoding="utf-8")
    a = client.get("/api/agreement").json()
    assert len(a["pairs"]) == 1 and a["errors"][0].startswith("zed: ") and "not a JSON line" in a["errors"][0]
    after = {p.name: p.read_bytes() for p in journal.path.parent.iterdir() if p.name != "journal-zed.jsonl"}
    assert after == before


@pytest.mark.parametrize(
    "value", ["query: ", "", "a b", 'say "hi"', "null", "0.5", "/tmp/x-1/y.jsonl", "passage:"]
)
def test_override_values_survive_hydras_parser(value):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (ov,) = OverridesParser.create().parse_overrides([f"k={hydra_value(value)}"])
    assert ov.value() == value
    (ov,) = OverridesParser.create().parse_overrides([f"k={hydra_value(['en', 'ja'])}"])
    assert ov.value() == ["en", "ja"]
    assert hydra_value(None) == "null" and hydra_value(False) == "false" and hydra_value(0.71) == "0.71"
