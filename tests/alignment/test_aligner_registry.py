"""The aligner registry: built-ins dispatch by name, unknown names fail clearly, and a plugin's aligner
registered with the public call works end to end through the real CLI (align.py ... plugins=[module])."""

import json
import os

import datasets
import pytest
from conftest import run_cli

from multimsd.alignment.aligners import ALIGNERS, Aligner, get_aligner, register_aligner
from multimsd.alignment.aligners.classifier import ClassifierAligner
from multimsd.alignment.aligners.embedding import EmbeddingAligner
from multimsd.alignment.aligners.lexical import LexicalAligner
from multimsd.alignment.aligners.registry import all_modes, check_threshold
from multimsd.alignment.goldmode import evaluate_gold
from multimsd.alignment.match import Match
from multimsd.alignment.stage import run, to_config
from multimsd.config import AlignConfig, AlignerConfig
from multimsd.errors import MultimsdError
from multimsd.gold import load_gold_docs

BUILTINS = {"symmetric", "asymmetric", "margin", "lexical", "classifier"}


@pytest.fixture
def registry():
    """Registrations made by a test are undone afterwards: ALIGNERS is process-wide."""
    saved = dict(ALIGNERS)
    yield ALIGNERS
    ALIGNERS.clear()
    ALIGNERS.update(saved)


class Diagonal(Aligner):
    """Pairs (i, i); even i score 0.9, odd i 0.1. Needs raw sentences only, so no embedder is loaded."""

    name = "diagonal"

    def score_article(self, complex_side, simple_side, lang, cfg):
        n = min(len(complex_side), len(simple_side))
        return [Match(i, i, 0.9 if i % 2 == 0 else 0.1, float("nan")) for i in range(n)]


# ---------------------------------------------------------------------------------------------- dispatch
def test_builtins_are_registered_with_their_grids_and_inputs():
    assert set(ALIGNERS) >= BUILTINS
    cfg = AlignConfig()  # the shared options only: each aligner's grid is its own default
    for name in ("symmetric", "asymmetric"):
        assert isinstance(get_aligner(name), EmbeddingAligner) and get_aligner(name).name == name
        assert get_aligner(name).thresholds(cfg) == [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    margin = get_aligner("margin").thresholds(cfg)
    assert len(margin) == 17 and margin[:3] == [0.9, 0.925, 0.95] and margin[-1] == 1.3
    assert isinstance(get_aligner("lexical"), LexicalAligner)
    assert isinstance(get_aligner("classifier"), ClassifierAligner)
    for name in ("lexical", "classifier"):
        assert get_aligner(name).thresholds(cfg) == [round(0.05 * i, 2) for i in range(1, 20)]
        assert get_aligner(name).needs == "sentences"
    assert {get_aligner(n).needs for n in ("symmetric", "asymmetric", "margin")} == {"embeddings"}
    assert [a.name for a in ALIGNERS.values() if a.emits_n_to_m] == ["nm"]
    # the extra modes belong to their aligners
    modes = all_modes()
    assert modes["imbalance"].__module__.endswith("aligners.classifier")
    assert modes["train_paraphrase"].__module__.endswith("aligners.lexical")


@pytest.mark.parametrize(
    ("method", "theta", "ok"),
    [
        ("symmetric", 0.7, True),
        ("asymmetric", -1.0, True),
        ("symmetric", 1.01, False),
        ("margin", 1.3, True),
        ("margin", -0.1, False),
        ("lexical", 0.5, True),
        ("lexical", 1.2, False),
        ("classifier", -0.2, False),
    ],
)
def test_threshold_checks_go_to_the_aligner(method, theta, ok):
    if ok:
        check_threshold(method, theta)
    else:
        with pytest.raises(MultimsdError, match="aligner.threshold="):
            check_threshold(method, theta)


def test_unknown_method_lists_the_registered_names(tmp_path):
    registered = ", ".join(sorted(ALIGNERS))
    with pytest.raises(MultimsdError, match=f"unknown aligner method 'nearest' \\(registered: {registered};"):
        get_aligner("nearest")
    with pytest.raises(MultimsdError, match="unknown aligner method 'nearest'"):
        run({"aligner": {"method": "nearest"}, "output": {"dir": str(tmp_path / "out")}})
    cfg = to_config({"gold": {"methods": ["symmetric", "nearest", "fuzzy"]}})
    with pytest.raises(
        MultimsdError, match=r"gold.methods: unknown aligner methods 'nearest', 'fuzzy' \(registered"
    ):
        evaluate_gold(cfg, [])
    assert not (tmp_path / "out").exists()


def test_registration_rules(registry):
    assert register_aligner(Diagonal) is Diagonal  # a decorator returns the class unchanged
    assert isinstance(registry["diagonal"], Diagonal)
    with pytest.raises(MultimsdError, match="already registered"):
        register_aligner(Diagonal())
    register_aligner(Diagonal(), replace=True)

    class Nameless(Aligner):
        pass

    with pytest.raises(MultimsdError, match="not an Aligner with a name"):
        register_aligner(Nameless)

    class Thief(Diagonal):
        name = "thief"

        def modes(self):
            return {"imbalance": lambda cfg: {}}

    with pytest.raises(MultimsdError, match="mode=imbalance is already taken"):
        register_aligner(Thief)
    assert "thief" not in registry


def test_an_aligners_mode_is_dispatched_by_the_stage(registry, tmp_path):
    calls = []

    class WithMode(Diagonal):
        name = "withmode"

        def modes(self):
            return {"toy_experiment": lambda cfg: calls.append(cfg.aligner.method) or {"ran": True}}

    register_aligner(WithMode)
    assert run({"mode": "toy_experiment", "output": {"dir": str(tmp_path / "out")}}) == {"ran": True}
    assert calls == ["symmetric"]  # the mode runs whatever aligner.method is; the owner checks it if it cares
    with pytest.raises(MultimsdError, match="mode='nope': choose align, gold, .*toy_experiment"):
        run({"mode": "nope"})


def test_gold_mode_runs_a_registered_aligner_without_an_embedder(registry):
    register_aligner(Diagonal)
    seen = {}

    class Recorder(Diagonal):
        name = "recorder"

        def candidates(self, docs, langs, cfg, *, gold_train=None, min_score=None):
            seen["gold_train"] = {d.article_id for d in gold_train}
            return super().candidates(docs, langs, cfg)

    register_aligner(Recorder)
    cfg = to_config(
        {
            "data": {"languages": ["en"]},
            "gold": {"methods": ["diagonal", "recorder"]},
            "embedder": {"model": "/nonexistent/model"},  # never loaded: neither aligner needs embeddings
        }
    )
    res = evaluate_gold(cfg, load_gold_docs(None))
    assert list(res["methods"]) == ["diagonal", "recorder"]
    curve = res["methods"]["diagonal"]["en"]["valid_curve"]
    # an aligner without options of its own: AlignerConfig's grid over a [0, 1] score
    assert (
        [p["threshold"] for p in curve]
        == AlignerConfig().threshold_grid
        == [round(0.05 * i, 2) for i in range(1, 20)]
    )
    assert seen["gold_train"] == set(res["valid_articles"])  # the validation half only, never the test half


def test_bad_candidates_are_one_clear_error(registry, tmp_path):
    class OffByOne(Diagonal):
        name = "offbyone"

        def score_article(self, complex_side, simple_side, lang, cfg):
            return [Match(len(complex_side), 0, 1.0, 1.0)]

    register_aligner(OffByOne)
    cfg = {
        "aligner": {"method": "offbyone", "threshold": 0.5},
        "data": {"languages": ["en"], "max_articles": 1},
        "output": {"dir": str(tmp_path / "out")},
    }
    with pytest.raises(MultimsdError, match="aligner 'offbyone' returned pair"):
        run(cfg)


# ---------------------------------------------------------------------------------------------- the real CLI
TOY_MODULE = '''
"""A plugin aligner: pairs (i, i) of each article pair, even i scored 0.9, odd i 0.1."""

import json
import os

from multimsd.alignment.aligners import Aligner, register_aligner
from multimsd.alignment.match import Match


@register_aligner
class ToyAligner(Aligner):
    name = "toy"
    needs = "sentences"

    def score_article(self, complex_side, simple_side, lang, cfg):
        n = min(len(complex_side), len(simple_side))
        out = [Match(i, i, 0.9 if i % 2 == 0 else 0.1, float("nan")) for i in range(n)]
        # Record what was emitted, so the test can compare the saved corpus with it.
        with open(os.environ["TOY_LOG"], "a", encoding="utf-8") as f:
            for m in out:
                f.write(json.dumps([lang, complex_side[m.i], simple_side[m.j], m.score]) + "\\n")
        return out
'''


@pytest.mark.e2e
def test_plugin_aligner_through_the_cli(tmp_path, python, repo_root):
    (tmp_path / "toy_aligner.py").write_text(TOY_MODULE, encoding="utf-8")
    (tmp_path / "conf" / "aligner").mkdir(parents=True)
    (tmp_path / "conf" / "aligner" / "toy.yaml").write_text("method: toy\nthreshold: 0.5\n", encoding="utf-8")
    log = tmp_path / "emitted.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo_root)]),
        "TOY_LOG": str(log),
        "HF_HUB_OFFLINE": "1",
    }
    out = tmp_path / "out"
    proc = run_cli(
        python,
        repo_root,
        "aligner=toy",
        "plugins=[toy_aligner]",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"output.dir={out}",
        "data.max_articles=2",
        "data.languages=[en,de]",
        "embedder.model=/nonexistent/model",  # a sentence aligner must not load the embedder
        # no post-filter may drop a pair: the corpus must be exactly what the aligner kept
        "filters.min_chars=0",
        "filters.drop_identical=false",
        "filters.drop_duplicates=false",
        f"cache_dir={tmp_path / 'cache'}",
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    emitted = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert any(score < 0.5 for *_, score in emitted)  # θ had something to remove
    expected = sorted((lang, c, s, score) for lang, c, s, score in emitted if score >= 0.5)
    dsd = datasets.load_from_disk(str(out))
    rows = sorted(
        (r["lang"], r["complex"], r["simple"], round(r["score"], 4))
        for ds in dsd.values()
        for r in ds.to_list()
    )
    assert rows == [(lang, c, s, round(score, 4)) for lang, c, s, score in expected]
    assert {r[0] for r in rows} == {"en", "de"}
    assert all(
        r["complex_idx"] == r["simple_idx"] and r["complex_idx"] % 2 == 0 for r in dsd["train"].to_list()
    )
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert stats["aligner"] == {"method": "toy", "threshold": 0.5}
    assert stats["sentences_encoded"] == 0


@pytest.mark.integration
def test_unknown_cli_aligner_without_its_plugin(tmp_path, python, repo_root):
    (tmp_path / "conf" / "aligner").mkdir(parents=True)
    (tmp_path / "conf" / "aligner" / "toy.yaml").write_text("method: toy\nthreshold: 0.5\n", encoding="utf-8")
    proc = run_cli(
        python,
        repo_root,
        "aligner=toy",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"output.dir={tmp_path / 'out'}",
        env={**os.environ, "PYTHONPATH": str(repo_root)},
        timeout=300,
    )
    assert proc.returncode == 2
    assert "error: aligner.method: unknown aligner method 'toy' (registered: " in proc.stderr
    assert "plugins=[its_module]" in proc.stderr


SHIFT_MODULE = '''
"""A plugin aligner with an option of its own: complex sentence i with simple sentence i + aligner.shift."""

from dataclasses import dataclass

from multimsd.alignment.aligners import Aligner, register_aligner
from multimsd.alignment.match import Match
from multimsd.config import AlignerConfig


@dataclass
class ShiftOptions(AlignerConfig):
    threshold: float = 0.5
    shift: int = 0  # pair complex i with simple i + shift


@register_aligner
class ShiftAligner(Aligner):
    name = "shift"
    options = ShiftOptions
    needs = "sentences"

    def score_article(self, complex_side, simple_side, lang, cfg):
        k = self.settings(cfg).shift
        return [Match(i, i + k, 1.0, float("nan")) for i in range(len(complex_side)) if 0 <= i + k < len(simple_side)]
'''


@pytest.mark.e2e
def test_plugin_aligner_options_are_typed_and_checked_through_the_cli(tmp_path, python, repo_root):
    """aligner=shift comes from the plugin's registration alone (no YAML); its option reaches the aligner, and a
    misspelt option or a value of the wrong type is one error line, exit 2, nothing written."""
    (tmp_path / "shift_aligner.py").write_text(SHIFT_MODULE, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo_root)]),
        "HF_HUB_OFFLINE": "1",
    }
    out = tmp_path / "out"
    common = [
        "plugins=[shift_aligner]",
        "aligner=shift",
        f"output.dir={out}",
        "data.max_articles=2",
        "data.languages=[en]",
        "filters.min_chars=0",
        "filters.drop_identical=false",
        "filters.drop_duplicates=false",
    ]
    shown = run_cli(python, repo_root, *common, "aligner.shift=2", "--cfg", "job", env=env, timeout=300)
    assert shown.returncode == 0 and "shift: 2" in shown.stdout and "threshold: 0.5" in shown.stdout
    proc = run_cli(python, repo_root, *common, "aligner.shift=1", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [r for ds in datasets.load_from_disk(str(out)).values() for r in ds.to_list()]
    assert rows and all(r["simple_idx"] == r["complex_idx"] + 1 for r in rows)
    assert json.loads((out / "stats.json").read_text())["aligner"]["method"] == "shift"
    for bad, message in [
        ("aligner.shfit=1", "aligner.shfit: no such key (did you mean aligner.shift?)"),
        ("+aligner.shfit=1", "aligner.shfit (did you mean aligner.shift?)"),
        ("aligner.shift=one", "aligner.shift: Value 'one'"),
    ]:
        out2 = tmp_path / "out2"
        proc = run_cli(python, repo_root, *common[:2], bad, f"output.dir={out2}", env=env, timeout=300)
        errors = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(errors) == 1 and message in errors[0], proc.stderr[-2000:]
        assert not out2.exists()
    # without the plugin the option group does not exist: one line naming the registered ones
    proc = run_cli(python, repo_root, "aligner=shift", f"output.dir={out}", env=env, timeout=300)
    assert (
        proc.returncode == 2
        and "Could not find 'aligner/shift'" in proc.stderr
        and "symmetric" in proc.stderr
    )


def test_an_aligners_options_live_with_it():
    from dataclasses import fields

    names = {f.name for f in fields(AlignerConfig)}
    assert names == {"method", "threshold", "threshold_grid"}  # what every aligner shares, nothing else
    nm = get_aligner("nm")
    assert type(nm.settings(AlignConfig())).__name__ == "NmAlignerConfig"  # defaults when aligner= is another
    cfg = to_config({"aligner": {"method": "nm", "threshold": 0.05, "nm": {"floor": 0.1}}})
    assert nm.settings(cfg) is cfg.aligner and cfg.aligner.nm.floor == 0.1
    assert (
        get_aligner("margin").settings(cfg).margin_k == 4
        and get_aligner("margin").settings(cfg).threshold == 0.05
    )
    with pytest.raises(MultimsdError, match="Key 'nm' not in 'EmbeddingAlignerConfig'"):
        to_config({"aligner": {"method": "symmetric", "nm": {"floor": 0.1}}})
    with pytest.raises(MultimsdError, match="options="):
        register_aligner(type("Bad", (Aligner,), {"name": "bad_options", "options": dict}))
