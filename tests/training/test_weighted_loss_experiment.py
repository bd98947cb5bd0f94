"""Issue #15's experiment on any sentence-pair corpus: ``multimsd run experiment=weighted_loss pairs.path=…``.

Synthetic rows only (the real corpus, CLARA-MeD, is research-only and never enters the repository): the corpus
is read with bad rows skipped and counted, split by document with no document in two splits, capped per split;
the novel-token share and the SARI parts get bootstrap intervals that match a hand computation; θ is selected
on validation; and the command runs end to end on a tiny model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from multimsd.errors import MultimsdError
from multimsd.pipeline.config import PairsConfig
from multimsd.pipeline.pairs import build_pairs
from multimsd.split import SplitConfig

HEADER = "FILE_ID\tSOURCE\tTARGET"
COLUMNS = {"article_id": "FILE_ID", "complex": "SOURCE", "simple": "TARGET"}


def write_corpus(path: Path, docs: int = 40, per_doc: int = 3) -> Path:
    """A CLARA-MeD-shaped TSV: ``docs`` documents of ``per_doc`` pairs, then two rows with a stray tab (lines
    ``docs * per_doc + 2`` and ``+ 3``) and one with an empty simple side (``+ 4``)."""
    lines = [HEADER]
    for d in range(docs):
        for k in range(per_doc):
            lines.append(
                f"D{d:03d}\tLa hipertensión arterial {d} del paciente {k}.\tTiene la tensión alta {k}."
            )
    lines += ["DX\tuno\tdos\ttres", "DY\ta\tb\tc\td", "DZ\tsolo la fuente\t"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def pairs_cfg(path: Path, **kw) -> PairsConfig:
    cfg = OmegaConf.structured(PairsConfig)
    cfg.path = str(path)
    cfg.columns = dict(COLUMNS)
    cfg.lang = "es"
    for k, v in kw.items():
        cfg[k] = v
    return cfg


def load(out: Path) -> dict[str, list[dict]]:
    import datasets

    dsd = datasets.load_from_disk(str(out))
    return {s: dsd[s].to_list() for s in dsd}


# ---------------------------------------------------------------------------------------------- the corpus
def test_bad_rows_are_skipped_and_counted_with_their_lines(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    stats = build_pairs(pairs_cfg(tsv, bad_rows="skip"), tmp_path / "out")
    assert stats["dropped"]["bad rows"] == 3
    # 120 good rows on lines 2..121; the stray tabs on 122 and 123; the empty side is the 123rd record read
    assert stats["skipped_rows"][:2] == [
        "line 122: field count differs from the header's",
        "line 123: field count differs from the header's",
    ]
    assert "empty simple" in stats["skipped_rows"][2]
    rows = load(tmp_path / "out")
    assert sum(len(r) for r in rows.values()) == stats["total_sentence_pairs"] == 120
    assert all(r["lang"] == "es" for split in rows.values() for r in split)


def test_bad_rows_error_names_the_line(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    with pytest.raises(MultimsdError, match=r"c\.tsv:122: 4 tab-separated fields, the header has 3"):
        build_pairs(pairs_cfg(tsv), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_split_by_document_is_leak_free_seeded_and_sized(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    stats = build_pairs(pairs_cfg(tsv, bad_rows="skip"), tmp_path / "a")
    rows = load(tmp_path / "a")
    docs = {s: {r["article_id"] for r in rows[s]} for s in rows}
    assert not docs["train"] & docs["validation"]
    assert not docs["train"] & docs["test"]
    assert not docs["validation"] & docs["test"]
    # 40 documents: at most 10 % (4) held out per split, every pair of a document in its document's split
    assert {s: len(d) for s, d in docs.items()} == {"train": 32, "validation": 4, "test": 4}
    assert stats["article_split"] == {"train": 32, "validation": 4, "test": 4}
    assert {s: len(r) for s, r in rows.items()} == {"train": 96, "validation": 12, "test": 12}
    # the same seed gives the same split; another seed another one
    build_pairs(pairs_cfg(tsv, bad_rows="skip"), tmp_path / "b")
    assert load(tmp_path / "b") == rows
    build_pairs(pairs_cfg(tsv, bad_rows="skip", split=SplitConfig(seed=7)), tmp_path / "c")
    assert {r["article_id"] for r in load(tmp_path / "c")["test"]} != docs["test"]


def test_max_pairs_samples_within_each_split(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    build_pairs(pairs_cfg(tsv, bad_rows="skip"), tmp_path / "full")
    full = load(tmp_path / "full")
    stats = build_pairs(
        pairs_cfg(tsv, bad_rows="skip", max_pairs={"train": 10, "test": 5}), tmp_path / "capped"
    )
    capped = load(tmp_path / "capped")
    assert {s: len(r) for s, r in capped.items()} == {"train": 10, "validation": 12, "test": 5}
    for split in capped:  # a sample of the split's own rows: nothing moves between splits
        assert all(r in full[split] for r in capped[split])
    assert stats["dropped"] == {"bad rows": 3, "over max_pairs.train": 86, "over max_pairs.test": 7}


def test_split_column_is_used_and_a_document_in_two_splits_is_refused(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    recs = [
        {"doc": "a", "complex": "x y", "simple": "x", "lang": "en", "split": "train"},
        {"doc": "b", "complex": "z w", "simple": "z", "lang": "en", "split": "test"},
        {"doc": "c", "complex": "u v", "simple": "u", "lang": "en", "split": "validation"},
    ]
    jsonl.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    cfg = pairs_cfg(jsonl, columns={"article_id": "doc"}, lang=None)
    build_pairs(cfg, tmp_path / "out")
    assert {s: [r["article_id"] for r in v] for s, v in load(tmp_path / "out").items()} == {
        "train": ["a"],
        "validation": ["c"],
        "test": ["b"],
    }
    recs.append({"doc": "a", "complex": "q r", "simple": "q", "lang": "en", "split": "test"})
    jsonl.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    with pytest.raises(MultimsdError, match="document 'a' has rows in two splits"):
        build_pairs(cfg, tmp_path / "out2")


def test_a_missing_column_is_named(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    with pytest.raises(MultimsdError, match=r"no column complex \(columns: FILE_ID, SOURCE, TARGET\)"):
        build_pairs(pairs_cfg(tsv, bad_rows="skip", columns={"article_id": "FILE_ID"}), tmp_path / "o")


# ---------------------------------------------------------------------------------------------- metrics
def test_novelty_and_its_interval_match_a_hand_computation():
    from multimsd.metrics.bootstrap import bootstrap_ci
    from multimsd.metrics.novelty import corpus_novelty, novelty_from_totals, novelty_statistics

    sources = ["the patient has high blood pressure", "take one pill"]
    # sentence A: "the patient has hypertension" -> 1 novel word of 4; B: "swallow a tablet" -> 3 of 3
    outputs = ["The patient has hypertension", "swallow a tablet"]
    stats = novelty_statistics(sources, outputs)
    assert stats.tolist() == [[1, 4], [3, 3]]
    assert corpus_novelty(sources, outputs) == pytest.approx(100 * 4 / 7)
    assert corpus_novelty(sources, sources) == 0.0
    # Resampling 2 sentences: AA (p 1/4) -> 25 %, AB/BA (1/2) -> 4/7, BB (1/4) -> 100 %. Both tails hold more
    # than 2.5 % of the mass, so the 95 % percentile interval is exactly [25, 100].
    lo, hi = bootstrap_ci(stats, novelty_from_totals, samples=4000, seed=3)
    assert (lo, hi) == (pytest.approx(25.0), pytest.approx(100.0))


def test_sari_parts_from_statistics_equal_the_reported_parts():
    from multimsd.metrics.bootstrap import sari_part_from_totals, sari_statistics
    from multimsd.metrics.sari import corpus_sari_operation_scores

    src = ["About 95 species are currently accepted .", "The cat perched on the mat ."]
    out = ["About 95 species are now accepted .", "Cat on mat ."]
    refs = [["About 95 species are currently known .", "The cat sat on the mat ."]]
    totals = sari_statistics(src, out, refs).sum(0)
    expected = corpus_sari_operation_scores(src, out, refs)
    got = [float(sari_part_from_totals(totals, p)) for p in ("add", "keep", "delete")]
    assert got == pytest.approx(list(expected), abs=1e-9)


def test_theta_is_selected_on_validation_not_test(tmp_path):
    from multimsd.pipeline.run import select_swept

    def system(name, val_mean, test_sari):
        d = tmp_path / "systems" / name
        d.mkdir(parents=True)
        res = {
            "validation": {"sari": val_mean, "bleu": val_mean, "mean_sari_bleu": val_mean},
            "test": {"sari": test_sari, "bleu": 0.0, "mean_sari_bleu": test_sari / 2},
        }
        (d / "all_results.json").write_text(json.dumps(res))

    system("ft_theta1", 30.0, 50.0)  # best on test, not on validation
    system("ft_theta2", 31.0, 40.0)
    system("ft_theta4", 31.0, 20.0)  # ties with theta2: the first one wins
    sel = select_swept(tmp_path, ["ft_theta1", "ft_theta2", "ft_theta4"])
    assert sel["selected"] == "ft_theta2"
    assert sel["validation"]["ft_theta1"]["mean_sari_bleu"] == 30.0


# ---------------------------------------------------------------------------------------------- end to end
def run_cli(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "multimsd", "run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def corpus_args(tsv: Path, run_dir: Path) -> list[str]:
    return [
        "experiment=weighted_loss",
        f"dir={run_dir}",
        f"pairs.path={tsv}",
        "pairs.lang=es",
        "pairs.columns={article_id: FILE_ID, complex: SOURCE, simple: TARGET}",
        "train.data.languages=[es]",
        # seconds on a CPU: the tiny random Llama, 2 optimizer steps; θ ∈ {1, 4}; no 5-shot
        "train.model=tiny_llama",
        "train.debug=train_tiny",
        "sweep.values=[1,4]",
        "systems.five_shot.enabled=false",
        "compare=[finetuned_theta4:finetuned_theta1]",
        "evaluate.bootstrap.samples=200",
    ]


@pytest.mark.e2e
def test_experiment_runs_end_to_end_on_a_tiny_model(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    run_dir = tmp_path / "run"
    proc = run_cli(*corpus_args(tsv, run_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "skipped 3 bad row(s)" in proc.stderr
    results = json.loads((run_dir / "results.json").read_text())
    assert set(results["systems"]) == {"copy", "zero_shot", "finetuned_theta1", "finetuned_theta4"}
    es = results["systems"]["finetuned_theta4"]["es"]
    for key in ("sari", "sari_add", "sari_keep", "sari_delete", "bleu", "fkgl", "novelty"):
        assert key in es and key in es["ci"], key
        lo, hi = es["ci"][key]
        assert lo <= es[key] + 1e-9 and es[key] <= hi + 1e-9
    assert results["systems"]["copy"]["es"]["novelty"] == 0.0
    # θ selected by validation mean(SARI, BLEU), from the systems' own validation predictions
    sweep = results["sweep"]
    vals = {n: v["mean_sari_bleu"] for n, v in sweep["validation"].items()}
    assert set(vals) == {"finetuned_theta1", "finetuned_theta4"}
    assert sweep["selected"] == max(vals, key=vals.get)
    comps = {(c["a"], c["b"], c["metric"]) for c in results["comparisons"]}
    assert ("finetuned_theta4", "finetuned_theta1", "novelty") in comps
    stats = json.loads((run_dir / "align" / "stats.json").read_text())
    assert stats["dropped"]["bad rows"] == 3
    report = (run_dir / "report.md").read_text()
    assert "Novel tokens" in report and "val mean(SARI, BLEU)" in report
    # the corpus never needs aligning: no embedder ran, the dataset is the split corpus
    assert not (run_dir / "align" / "gold").exists()


@pytest.mark.e2e
def test_bad_corpus_fails_in_one_line_and_writes_nothing(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    run_dir = tmp_path / "run"
    args = [a for a in corpus_args(tsv, run_dir) if not a.startswith("pairs.columns")]
    proc = run_cli(*args, "pairs.columns={article_id: FILE_ID}", "pairs.bad_rows=skip", timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "no column complex" in proc.stderr
    assert not (run_dir / "align").exists()
    proc = run_cli(*corpus_args(tsv, run_dir), "pairs.bad_rows=maybe", timeout=300)
    assert proc.returncode == 2 and "pairs.bad_rows='maybe': choose error or skip" in proc.stderr
    assert not run_dir.exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    "name, text, message",
    [("h.tsv", HEADER + "\n", "no rows after the header"), ("e.jsonl", "", "empty file")],
)
def test_empty_corpus_fails_before_any_work(tmp_path, name, text, message):
    corpus = tmp_path / name
    corpus.write_text(text)
    run_dir = tmp_path / "run"
    proc = run_cli(*corpus_args(corpus, run_dir), timeout=300)
    assert proc.returncode == 2 and f"{corpus}: {message}" in proc.stderr.strip().splitlines()[-1]
    assert not run_dir.exists()


@pytest.mark.integration
def test_preset_composes_every_stage(tmp_path):
    tsv = write_corpus(tmp_path / "c.tsv")
    keep = ("experiment", "dir", "pairs.", "train.data")
    args = [a for a in corpus_args(tsv, tmp_path / "r") if a.startswith(keep)]
    proc = run_cli(*args, "--cfg", "job", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    stages = [ln.split()[2].rstrip(":") for ln in proc.stdout.splitlines() if ln.startswith("# stage ")]
    thetas = [f"train/finetuned_theta{t}" for t in (1, 2, 4, 8)]
    assert stages == ["pairs", "train/zero_shot", *thetas, "train/five_shot", "evaluate"]
    assert not (tmp_path / "r").exists()


def test_novelty_statistics_shape_on_empty_input():
    from multimsd.metrics.novelty import novelty_from_totals, novelty_statistics

    st = novelty_statistics(["a b"], [""])
    assert st.tolist() == [[0, 0]] and float(novelty_from_totals(st.sum(0))) == 0.0
    assert np.asarray(novelty_from_totals(np.zeros((3, 2)))).tolist() == [0.0, 0.0, 0.0]
