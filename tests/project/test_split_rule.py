"""One rule splits pairs by document (issue #23): align.py's ``split.*``, ``multimsd run``'s ``pairs.split.*``
and train.py's ``data.split.*`` are one :class:`multimsd.split.SplitConfig`, so the same document ids and
settings give the same train / validation / test assignment on every path.

Each path is driven through its own YAML (``conf/align.yaml``, ``conf/pipeline/run.yaml``, ``conf/train.yaml``,
composed as the entry points compose them) and its public function; align.py runs on a tiny random encoder.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import run_cli
from omegaconf import OmegaConf

from multimsd.errors import MultimsdError
from multimsd.paths import conf_dir
from multimsd.pipeline.run import compose
from multimsd.split import SplitConfig, check_split_config, split_article_ids

DOCS = [f"doc{k:02d}" for k in range(30)]
# A setting other than the defaults in every field (30 documents: 2 validation, 5 test).
OTHER = SplitConfig(validation=2, test=5, max_fraction=0.5, seed=7)


def overrides(prefix: str, split: SplitConfig | None) -> list[str]:
    return [f"{prefix}.{k}={v}" for k, v in asdict(split).items()] if split else []


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def by_document(rows_by_split: dict[str, list[dict]]) -> dict[str, str]:
    """article_id -> split, checking that no document has rows in two splits."""
    out: dict[str, str] = {}
    for split, rows in rows_by_split.items():
        for r in rows:
            assert out.setdefault(r["article_id"], split) == split, r["article_id"]
    return out


def load_dsd(out: Path) -> dict[str, list[dict]]:
    import datasets

    dsd = datasets.load_from_disk(str(out))
    return {s: dsd[s].to_list() for s in dsd}


# ------------------------------------------------------------------------------------------- the three paths
def align_assignment(tmp_path: Path, tiny_encoder: Path, split: SplitConfig | None) -> dict[str, str]:
    """python align.py on article pairs with the documents' ids (conf/align.yaml + split.* overrides)."""
    from multimsd.alignment.stage import run

    articles = write_jsonl(
        tmp_path / "articles.jsonl",
        [
            {
                "article_id": d,
                "lang": "en",
                "complex": [f"Complex {d} sentence."],
                "simple": [f"Simple {d} one."],
            }
            for d in DOCS
        ],
    )
    out = tmp_path / f"aligned-{split is not None}"
    cfg = compose(
        "align",
        [
            f"data.path={articles}",
            "data.languages=[en]",
            "embedder.name=tiny",
            f"embedder.model={tiny_encoder}",
            "embedder.backend=transformers",
            "aligner=asymmetric",
            "aligner.threshold=-1.0",  # keep every pair: each document shows up in the output
            f"output.dir={out}",
            "output.export_tsv=false",
            f"cache_dir={tmp_path / 'cache'}",
            *overrides("split", split),
        ],
    )
    stats = run(cfg)
    assignment = by_document(load_dsd(out))
    assert sorted(assignment) == DOCS
    assert stats["article_split"] == count(assignment)
    return assignment


def pair_records() -> list[dict]:
    return [
        {"article_id": d, "complex": f"Complex {d} sentence {k}.", "simple": f"Simple {d} {k}.", "lang": "en"}
        for d in DOCS
        for k in range(2)
    ]


def pairs_assignment(tmp_path: Path, split: SplitConfig | None) -> dict[str, str]:
    """multimsd run pairs.path=… (conf/pipeline/run.yaml + pairs.split.* overrides) on pairs with those ids."""
    from multimsd.pipeline.pairs import build_pairs

    corpus = write_jsonl(tmp_path / "pairs.jsonl", pair_records())
    cfg = compose("run", [f"pairs.path={corpus}", *overrides("pairs.split", split)], conf_dir() / "pipeline")
    out = tmp_path / f"pairs-{split is not None}"
    stats = build_pairs(cfg.pairs, out)
    assignment = by_document(load_dsd(out))
    assert stats["article_split"] == count(assignment)
    return assignment


def train_assignment(tmp_path: Path, split: SplitConfig | None) -> dict[str, str]:
    """train.py's data on a JSONL of pairs with those ids and no split column (conf/train.yaml + data.split.*)."""
    from multimsd.training.data import load_pairs
    from multimsd.training.loop import to_train_config

    corpus = write_jsonl(tmp_path / "train_pairs.jsonl", pair_records())
    cfg = to_train_config(compose("train", [f"data.path={corpus}", *overrides("data.split", split)]))
    return by_document(load_pairs(cfg.data.path, cfg.data))


def count(assignment: dict[str, str]) -> dict[str, int]:
    return {s: sum(1 for v in assignment.values() if v == s) for s in ("train", "validation", "test")}


@pytest.mark.integration
@pytest.mark.parametrize("split", [None, OTHER], ids=["defaults", "other_setting"])
def test_same_documents_and_seed_give_the_same_split_on_every_path(tmp_path, tiny_encoder, split):
    aligned = align_assignment(tmp_path, tiny_encoder, split)
    pairs = pairs_assignment(tmp_path, split)
    trained = train_assignment(tmp_path, split)
    assert aligned == pairs == trained == split_article_ids(DOCS, split)
    if split is None:  # the defaults: the paper's rule, 10 % of 30 documents held out each
        assert count(aligned) == {"train": 24, "validation": 3, "test": 3}
    else:  # every path follows the setting the same way
        assert count(aligned) == {"train": 23, "validation": 2, "test": 5}
        assert aligned != split_article_ids(DOCS)


@pytest.mark.integration
def test_one_schema_with_the_same_defaults_everywhere():
    from multimsd.training.loop import to_train_config

    align = OmegaConf.to_container(compose("align", []).split)
    pairs = OmegaConf.to_container(compose("run", [], conf_dir() / "pipeline").pairs.split)
    train = to_train_config(compose("train", []))
    assert align == pairs == asdict(train.data.split) == asdict(SplitConfig())
    assert asdict(SplitConfig()) == {"validation": 128, "test": 128, "max_fraction": 0.1, "seed": 42}
    # the bundled sample (12 articles) keeps its 2 + 2 held-out articles: the same schema, max_fraction 0.2
    assert asdict(train.data.sample_split) == {**asdict(SplitConfig()), "max_fraction": 0.2}


@pytest.mark.integration
def test_the_sample_split_is_align_pys_rule(tmp_path, tiny_encoder):
    """train.py's default data (the sample's gold pairs) is what align.py split.max_fraction=0.2 makes of the
    sample, and data.sample_split.* moves it."""
    from multimsd.alignment.stage import run
    from multimsd.training.data import load_pairs
    from multimsd.training.loop import to_train_config

    out = tmp_path / "sample"
    run(
        compose(
            "align",
            [
                "data.languages=[en]",
                "embedder.name=tiny",
                f"embedder.model={tiny_encoder}",
                "embedder.backend=transformers",
                "aligner=asymmetric",
                "aligner.threshold=-1.0",
                f"output.dir={out}",
                "output.export_tsv=false",
                f"cache_dir={tmp_path / 'cache'}",
                "split.max_fraction=0.2",
            ],
        )
    )
    aligned = by_document(load_dsd(out))
    data = to_train_config(compose("train", [])).data
    sample = by_document(load_pairs(None, data))
    assert sample == aligned
    assert count(sample) == {"train": 8, "validation": 2, "test": 2}
    moved = to_train_config(compose("train", ["data.sample_split.seed=7"])).data
    assert (
        by_document(load_pairs(None, moved)) == split_article_ids(sample, seed=7, max_fraction=0.2) != sample
    )


# ------------------------------------------------------------------------------------------- bad settings
BAD = [
    ("validation", "-1", r"validation=-1: a number of documents, must be an integer >= 0"),
    ("test", "-5", r"test=-5: a number of documents, must be an integer >= 0"),
    ("max_fraction", "0", r"max_fraction=0\.0: .* must be in \(0, 1\]"),
    ("max_fraction", "1.5", r"max_fraction=1\.5: .* must be in \(0, 1\]"),
]


@pytest.mark.integration
@pytest.mark.parametrize("field,value,message", BAD)
def test_a_bad_setting_is_one_error_naming_its_key_on_every_path(tmp_path, field, value, message):
    from multimsd.alignment.stage import run as align_run
    from multimsd.pipeline.pairs import build_pairs
    from multimsd.training.loop import run as train_run

    corpus = write_jsonl(tmp_path / "pairs.jsonl", pair_records())
    with pytest.raises(MultimsdError, match=rf"^split\.{message}"):
        align_run(compose("align", [f"split.{field}={value}", f"output.dir={tmp_path / 'a'}"]))
    run_cfg = compose(
        "run", [f"pairs.path={corpus}", f"pairs.split.{field}={value}"], conf_dir() / "pipeline"
    )
    with pytest.raises(MultimsdError, match=rf"^pairs\.split\.{message}"):
        build_pairs(run_cfg.pairs, tmp_path / "p")
    for key in ("split", "sample_split"):
        train_cfg = compose("train", [f"data.path={corpus}", f"data.{key}.{field}={value}"])
        with pytest.raises(MultimsdError, match=rf"^data\.{key}\.{message}"):
            train_run(OmegaConf.merge(train_cfg, {"output_dir": str(tmp_path / "t")}))
    with pytest.raises(MultimsdError, match=rf"^split\.{message}"):  # the function itself, keyword form
        split_article_ids(DOCS, **{field: float(value) if field == "max_fraction" else int(value)})
    assert not any((tmp_path / d).exists() for d in ("a", "p", "t"))


@pytest.mark.integration
@pytest.mark.parametrize(
    "args,message",
    [
        (["pairs.split.max_fraction=1.5"], "pairs.split.max_fraction=1.5: "),
        (["align.split.validation=-1"], "align.split.validation=-1: "),
        (["train.data.split.test=-2"], "train.data.split.test=-2: "),
    ],
)
def test_multimsd_run_refuses_a_bad_split_before_any_work(tmp_path, capsys, args, message):
    from multimsd.main import main

    corpus = write_jsonl(tmp_path / "pairs.jsonl", pair_records())
    source = [f"pairs.path={corpus}"] if args[0].startswith("pairs.") else []
    with pytest.raises(SystemExit) as e:
        main(["run", f"output.dir={tmp_path / 'run'}", *source, *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {message}"), err
    assert not (tmp_path / "run").exists()


@pytest.mark.e2e
@pytest.mark.parametrize(
    "script,arg,message",
    [
        ("align.py", "split.max_fraction=0", "error: split.max_fraction=0.0: "),
        ("train.py", "data.split.validation=-1", "error: data.split.validation=-1: "),
    ],
)
def test_the_entry_points_print_one_line(tmp_path, python, repo_root, script, arg, message):
    proc = run_cli(python, repo_root, arg, f"output.dir={tmp_path / 'o'}", script=script, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines


# ------------------------------------------------------------------------------------------- the pipeline
@pytest.mark.e2e
def test_a_changed_split_setting_re_runs_its_stage(tmp_path):
    """The stage fingerprints of ``multimsd run`` hold the resolved split settings."""
    from multimsd.pipeline.cli import route
    from multimsd.pipeline.run import plan

    corpus = write_jsonl(tmp_path / "pairs.jsonl", pair_records())
    run_dir = tmp_path / "run"

    def fps(*args: str) -> dict[str, str]:
        own, staged, _ = route(["gold=false", *args])  # as `multimsd run` routes align.* / train.* keys
        cfg = compose("run", own, conf_dir() / "pipeline")
        for stage, extra in staged.items():
            cfg[stage] = [*cfg[stage], *extra]
        return {s.name: s.fp for s in plan(cfg, run_dir)}

    base = fps()
    assert fps() == base  # unchanged settings: every stage would be skipped
    moved = fps("align.split.seed=7")
    assert moved["align"] != base["align"]
    assert all(moved[n] != base[n] for n in base)  # and everything after it runs again
    trained = fps("train.data.split.seed=7")  # train.py's own split (of a pair file) is part of its config
    assert trained["align"] == base["align"]
    assert all(trained[n] != base[n] for n in base if n.startswith("train/"))
    pairs = fps(f"pairs.path={corpus}")
    for arg in ("pairs.split.seed=7", "pairs.split.validation=2", "pairs.split.max_fraction=0.5"):
        assert fps(f"pairs.path={corpus}", arg)["pairs"] != pairs["pairs"], arg


# ------------------------------------------------------------------------------ the rule itself (unit tier)
# No composition, no model: what make mutation runs against multimsd/split.py (docs/development.md).
def test_three_documents_are_split_fewer_are_all_training():
    # 3 documents: cap = max(1, round(3 * 0.1)) = 1, so one validation, one test, one training document
    assert sorted(split_article_ids(["a", "b", "c"]).values()) == ["test", "train", "validation"]
    assert split_article_ids(["b", "a", "b"]) == {"a": "train", "b": "train"}  # 2 distinct ids
    assert split_article_ids([]) == {}


@pytest.mark.parametrize(
    "settings,sizes",
    [
        (OTHER, {"train": 23, "validation": 2, "test": 5}),  # no cap: 30 * 0.5 = 15 each at most
        (SplitConfig(validation=1, test=128, seed=3), {"train": 26, "validation": 1, "test": 3}),  # cap 3
        (SplitConfig(validation=0, test=0), {"train": 30}),
        (SplitConfig(validation=20, test=20, max_fraction=1), {"train": 0, "validation": 20, "test": 10}),
    ],
)
def test_the_sizes_of_the_splits(settings, sizes):
    assignment = split_article_ids(DOCS, settings)
    assert {s: n for s, n in count(assignment).items() if n or s in sizes} == sizes
    # validation takes the first ids of the seeded shuffle, test the next ones
    if sizes.get("validation") and sizes.get("test"):
        shuffled = sorted(DOCS)
        random.Random(settings.seed).shuffle(shuffled)
        k = sizes["validation"]
        assert {assignment[d] for d in shuffled[:k]} == {"validation"}
        assert {assignment[d] for d in shuffled[k : k + sizes["test"]]} == {"test"}


def test_a_config_node_a_mapping_and_keywords_give_the_same_split():
    expected = split_article_ids(DOCS, OTHER)
    assert split_article_ids(DOCS, asdict(OTHER)) == expected
    assert split_article_ids(DOCS, OmegaConf.structured(OTHER)) == expected
    assert split_article_ids(DOCS, validation=2, test=5, max_fraction=0.5, seed=7) == expected
    # a keyword overrides one field of the config and keeps the others
    assert split_article_ids(DOCS, OTHER, seed=42) == split_article_ids(
        DOCS, validation=2, test=5, max_fraction=0.5
    )
    assert split_article_ids(DOCS, None) == split_article_ids(DOCS, SplitConfig())
    assert split_article_ids(DOCS, OTHER, seed=8) != expected


def test_an_unknown_keyword_is_refused():
    with pytest.raises(TypeError) as exc:
        split_article_ids(DOCS, valid=2, seeds=1)
    assert str(exc.value) == "split_article_ids: unknown setting(s) seeds, valid"


def test_the_error_names_the_key_given():
    with pytest.raises(MultimsdError) as exc:
        split_article_ids(DOCS, validation=-1, key="pairs.split")
    assert str(exc.value) == "pairs.split.validation=-1: a number of documents, must be an integer >= 0"
    with pytest.raises(MultimsdError) as exc:
        split_article_ids(DOCS, seed=1.5)
    assert str(exc.value) == "split.seed=1.5: must be an integer"


FRACTION = ": the share of the documents each held-out split may take, must be in (0, 1]"


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("validation", -1, "validation=-1: a number of documents, must be an integer >= 0"),
        ("test", -1, "test=-1: a number of documents, must be an integer >= 0"),
        ("validation", True, "validation=True: a number of documents, must be an integer >= 0"),
        ("test", 2.0, "test=2.0: a number of documents, must be an integer >= 0"),
        ("test", "2", "test=2: a number of documents, must be an integer >= 0"),
        ("max_fraction", 0, "max_fraction=0" + FRACTION),
        ("max_fraction", 0.0, "max_fraction=0.0" + FRACTION),
        ("max_fraction", 1.0001, "max_fraction=1.0001" + FRACTION),
        ("max_fraction", -0.5, "max_fraction=-0.5" + FRACTION),
        ("max_fraction", float("nan"), "max_fraction=nan" + FRACTION),
        ("max_fraction", float("inf"), "max_fraction=inf" + FRACTION),
        ("max_fraction", True, "max_fraction=True" + FRACTION),
        ("max_fraction", "0.5", "max_fraction=0.5" + FRACTION),
        ("seed", True, "seed=True: must be an integer"),
        ("seed", 7.0, "seed=7.0: must be an integer"),
        ("seed", "7", "seed=7: must be an integer"),
    ],
)
def test_check_split_config_refuses(field, value, message):
    cfg = SplitConfig(**{field: value})
    with pytest.raises(MultimsdError) as exc:
        check_split_config(cfg)
    assert str(exc.value) == f"split.{message}"
    with pytest.raises(MultimsdError) as exc:
        check_split_config(cfg, "data.sample_split")
    assert str(exc.value) == f"data.sample_split.{message}"


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"validation": 0, "test": 0},
        {"max_fraction": 1},
        {"max_fraction": 1.0},
        {"max_fraction": 1e-9},
        {"seed": 0},
        {"seed": -3},
    ],
)
def test_check_split_config_accepts(settings):
    check_split_config(SplitConfig(**settings))
    check_split_config(OmegaConf.structured(SplitConfig(**settings)), "pairs.split")
