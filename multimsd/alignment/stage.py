"""The alignment stage: article pairs -> sentences -> embeddings -> matches -> filters -> split -> DatasetDict.

Read top to bottom, :func:`run` is the whole stage (MultiMSD sections 3.1-3.5):

1. load and validate article pairs (JSONL, saved dataset, Hub id, or the bundled sample);
2. segment each side into sentences (lists given in the input are used as given);
3. if the aligner works on embeddings, embed every sentence once (cached on disk), complex and simple sides
   with their own prefixes;
4. the aligner (``aligner.method``, looked up in :data:`multimsd.alignment.aligners.ALIGNERS`: symmetric /
   asymmetric / margin k-NN matching, lexical, classifier, or a plugin's) proposes candidate pairs per article
   pair; θ keeps those whose score reaches it;
5. post-filters (short sides, identical sides, duplicates);
6. split by article id, identically in every language;
7. write the DatasetDict atomically, with TSV exports, Table-4 statistics and a dataset card.

``mode=gold`` instead scores the aligners against human gold alignments and tunes θ
(:mod:`multimsd.alignment.goldmode`); any other mode belongs to an aligner (``Aligner.modes``).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from multimsd import LANGUAGES, interrupts, runlock
from multimsd.alignment.aligners import ALIGNERS, aligner_candidates, all_modes, check_threshold, get_aligner
from multimsd.alignment.aligners.registry import STAGE_MODES, Aligner
from multimsd.alignment.embed.shard import current_shard
from multimsd.alignment.encode import embed_documents, make_embedder, segment_pairs
from multimsd.alignment.filters import filter_pairs
from multimsd.alignment.stats import corpus_statistics, statistics_markdown
from multimsd.config import ALIGN_CONFIG_FILE, AlignConfig
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_replaceable, check_writable_dir
from multimsd.io import ArticlePair, check_languages, load_article_pairs
from multimsd.split import SPLITS, check_split_config, split_article_ids

log = logging.getLogger(__name__)


def to_config(cfg: AlignConfig | DictConfig | dict) -> AlignConfig:
    """Accept a Hydra DictConfig, a plain dict or an AlignConfig; return a validated AlignConfig.

    ``aligner`` holds the options of the aligner it names: a Hydra config already has them (``aligner=nm``);
    for a plain dict (``{"aligner": {"method": "nm", "nm": {...}}}``) the named aligner's options are the
    schema its keys are merged into, so they are checked like on the command line."""
    if isinstance(cfg, AlignConfig):
        return cfg
    user = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
    base = OmegaConf.structured(AlignConfig)
    typed = isinstance(user.get("aligner"), DictConfig) and OmegaConf.get_type(user.aligner) not in (
        None,
        dict,
    )
    if not typed:
        method = OmegaConf.select(user, "aligner.method", default=None) or base.aligner.method
        if method in ALIGNERS:
            base.aligner = ALIGNERS[method].default_options()
    try:
        return OmegaConf.to_object(OmegaConf.merge(base, user))
    except OmegaConfBaseException as e:  # a key outside the schema, a value of the wrong type
        raise MultimsdError(f"align config: {str(e).strip().splitlines()[0]}") from None


def check_config(cfg: AlignConfig) -> None:
    modes = (*STAGE_MODES, *all_modes())  # align, gold, and the modes the registered aligners own
    if cfg.mode not in modes:
        raise MultimsdError(f"mode={cfg.mode!r}: choose {', '.join(modes)}")
    check_threshold(cfg.aligner.method, cfg.aligner.threshold)
    methods = [cfg.aligner.method, *(cfg.gold.methods if cfg.mode == "gold" else [])]
    for method in dict.fromkeys(methods):  # every aligner this run will use, each once
        get_aligner(method).check_options(cfg)
    if any(get_aligner(method).needs == "embeddings" for method in methods):
        from multimsd.alignment.embed import check_available

        check_available(cfg.embedder)  # (aligner=nm, which embeds for itself, checks in its check_options)
    if cfg.gold.folds is not None and cfg.gold.folds < 1:
        raise MultimsdError(
            f"gold.folds={cfg.gold.folds}: a number of folds >= 2 (null or 1: no cross-validation)"
        )
    check_languages(list(cfg.data.languages))
    check_split_config(cfg.split, "split")
    if cfg.output.push_to_hub and not cfg.output.hub_repo_id:
        raise MultimsdError("output.push_to_hub=true needs output.hub_repo_id=<user>/<name>")
    if cfg.mode != "align" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # Only align mode shards its work; N processes of another mode would each write the same outputs.
        raise MultimsdError(f"mode={cfg.mode} runs in one process: start it with `multimsd align`")


# ---------------------------------------------------------------------------------------------- the stage
def run(cfg: AlignConfig | DictConfig | dict) -> dict:
    """Run the alignment stage (or gold evaluation with ``mode=gold``); return the statistics.

    Under ``accelerate launch --num_processes N`` the sentence encoding is split across the processes; the
    main process does everything else and returns the statistics, the others return an empty dict.
    """
    cfg = to_config(cfg)
    check_config(cfg)
    # One writer per output directory (multimsd.runlock); an aligner's own mode writes where its options say.
    written = {"align": ("output.dir", cfg.output.dir), "gold": ("gold.report_dir", cfg.gold.report_dir)}
    key, directory = written.get(cfg.mode, ("", None))
    with runlock.hold(directory, f"align mode={cfg.mode}", key):
        if cfg.mode == "gold":
            from multimsd.alignment.goldmode import run_gold

            return run_gold(cfg)
        if cfg.mode != "align":  # an aligner's own mode (e.g. training its model)
            return all_modes()[cfg.mode](cfg)
        out_dir = Path(cfg.output.dir)
        _check_output_dir(out_dir)
        started = time.time()
        # An interrupt (Ctrl-C, SIGTERM) prints one line: the output is written whole at the end, or not at all.
        with interrupts.note(state=lambda: interrupts.output_state(out_dir, started)):
            return _align(cfg, out_dir)


def _align(cfg: AlignConfig, out_dir: Path) -> dict:
    # 1. input
    read = _read_pairs(cfg)
    pairs = first_articles(read, cfg.data.max_articles)
    # Under `accelerate launch` every process got this far on the same input (so bad input fails the same
    # way everywhere); they share the encoding, then the main process alone goes on.
    shard = current_shard()
    main = shard is None or shard.is_main
    if not main:
        logging.getLogger("multimsd").setLevel(logging.WARNING)  # one progress log, the main process's
    log.info("%s", input_line(read, pairs, cfg.data.max_articles))

    # 2. sentences
    docs = segment_pairs(pairs, cfg.segment.cleanup, cfg.segment.boilerplate_fraction, show_progress=main)

    # 3.-4. the aligner's threshold-free candidates (on embeddings, computed once and cached, if it needs
    # them), then θ as a filter on their scores
    a = cfg.aligner
    aligner = get_aligner(a.method)
    inputs, n_encoded = docs, 0
    if aligner.needs == "embeddings":
        embedder = make_embedder(cfg, shard)
        inputs = embed_documents(embedder, docs, cfg)
        n_encoded = embedder.n_encoded
    if not main:
        # Its share of the vectors is with the main process, which matches and writes everything.
        return {}
    matches = aligner_candidates(aligner, inputs, [p.lang for p in pairs], cfg, min_score=a.threshold)
    if aligner.needs != "embeddings":
        n_encoded = aligner.n_encoded  # an aligner that embeds for itself (aligner=nm: blocks of sentences)
    rows = _pair_rows(pairs, docs, matches, aligner, a.threshold)

    # 5. filters
    rows, dropped = filter_pairs(rows, cfg.filters)

    # 6. split: one assignment over all article ids of the input, shared by every language
    assignment = split_article_ids((p.article_id for p in pairs), cfg.split)
    for r in rows:
        r["split"] = assignment[r["article_id"]]

    # 7. statistics and output
    stats = corpus_statistics(pairs, docs, rows, assignment)
    stats["dropped"] = dict(dropped)
    stats["embedder"] = cfg.embedder.name
    stats["aligner"] = {"method": a.method, "threshold": a.threshold}
    stats["sentences_encoded"] = n_encoded
    markdown = statistics_markdown(stats)
    write_output(out_dir, rows, stats, markdown, cfg)
    if cfg.output.push_to_hub:
        push_to_hub(out_dir, cfg)
    print(markdown)
    print(f"\naligned dataset saved to {out_dir.resolve()}  (datasets.load_from_disk)")
    stats["output_dir"] = str(out_dir.resolve())
    return stats


def _read_pairs(cfg: AlignConfig) -> list[ArticlePair]:
    """The input's article pairs in ``data.languages``; an article twice in one language is an error."""
    langs = list(cfg.data.languages)
    pairs = [p for p in load_article_pairs(cfg.data.path, cfg.data.hub_split) if p.lang in langs]
    if not pairs:
        raise MultimsdError(f"no article pairs in languages {', '.join(langs)}")
    seen = set()
    for p in pairs:
        if (p.article_id, p.lang) in seen:
            raise MultimsdError(f"article {p.article_id!r} ({p.lang}) appears twice in the input")
        seen.add((p.article_id, p.lang))
    return pairs


def _pair_rows(
    pairs: list[ArticlePair],
    docs: list[tuple[list[str], list[str]]],
    matches: list,
    aligner: Aligner,
    threshold: float | None,
) -> list[dict]:
    """One row (the COLUMNS) per match the aligner keeps at θ = ``threshold``, in article and match order."""
    rows = []
    for p, (c_sents, s_sents), ms in zip(pairs, docs, matches):
        for m in ms:
            if aligner.keeps(m.score, threshold):
                rows.append(
                    {
                        # An n:m match's side is its member sentences joined by a space, in document order.
                        "complex": " ".join(c_sents[k] for k in m.complex_members),
                        "simple": " ".join(s_sents[k] for k in m.simple_members),
                        "lang": p.lang,
                        "article_id": p.article_id,
                        "score": m.score,
                        "cosine": m.cosine,
                        "complex_idx": m.i,
                        "simple_idx": m.j,
                        "complex_members": list(m.complex_members),
                        "simple_members": list(m.simple_members),
                    }
                )
    return rows


# ---------------------------------------------------------------------------------------------- output
# complex_idx / simple_idx: the first member (the only one of a 1:1 pair, so older readers keep working);
# complex_members / simple_members: every member index (several for aligner=nm's n:m pairs).
COLUMNS = (
    "complex",
    "simple",
    "lang",
    "article_id",
    "score",
    "cosine",
    "complex_idx",
    "simple_idx",
    "complex_members",
    "simple_members",
)


def first_articles(pairs: list[ArticlePair], max_articles: int | None) -> list[ArticlePair]:
    """The pairs of the first ``max_articles`` article ids (sorted: the same ones on every machine), every
    language of each; all of them when ``max_articles`` is null (``data.max_articles``: a debug run's limit)."""
    if not max_articles:
        return pairs
    keep = set(sorted({p.article_id for p in pairs})[:max_articles])
    return [p for p in pairs if p.article_id in keep]


def input_line(read: list[ArticlePair], kept: list[ArticlePair], max_articles: int | None) -> str:
    """The log line of the stage's input; when ``data.max_articles`` left articles out it says how many of how
    many, so that a debug run's small corpus is not taken for lost data."""
    langs = len({p.lang for p in kept})
    if len(kept) == len(read):
        return f"{len(kept)} article pairs in {langs} language(s)"
    articles = len({p.article_id for p in read})
    return (
        f"{len(kept)} of {len(read)} article pairs in {langs} language(s): data.max_articles={max_articles} "
        f"keeps the first {max_articles} of {articles} articles (a debug limit: debug=tiny sets it)"
    )


def build_dataset_dict(rows: list[dict]):
    import datasets

    features = datasets.Features(
        {
            "complex": datasets.Value("string"),
            "simple": datasets.Value("string"),
            "lang": datasets.Value("string"),
            "article_id": datasets.Value("string"),
            "score": datasets.Value("float32"),
            "cosine": datasets.Value("float32"),
            "complex_idx": datasets.Value("int32"),
            "simple_idx": datasets.Value("int32"),
            "complex_members": datasets.Sequence(datasets.Value("int32")),
            "simple_members": datasets.Sequence(datasets.Value("int32")),
        }
    )
    order = {lang: k for k, lang in enumerate(LANGUAGES)}
    rows = sorted(rows, key=lambda r: (order[r["lang"]], r["article_id"], r["complex_idx"], r["simple_idx"]))
    return datasets.DatasetDict(
        {
            split: datasets.Dataset.from_dict(
                {c: [r[c] for r in rows if r["split"] == split] for c in COLUMNS}, features=features
            )
            for split in SPLITS
        }
    )


def _check_output_dir(out_dir: Path) -> None:
    # Never clobber something that is not an earlier output of ours.
    check_replaceable(out_dir, "dataset_dict.json", "a multimsd aligned dataset")
    check_writable_dir(out_dir, "output.dir")


def write_output(out_dir: Path, rows: list[dict], stats: dict, markdown: str, cfg: AlignConfig) -> None:
    """Write everything into a temporary sibling directory, then swap it into place.

    A failure at any point leaves the previous output untouched and no partial directory behind.
    """
    import datasets

    datasets.disable_progress_bars()  # one bar per split and shard is noise for a few-MB corpus
    with atomic_directory(out_dir) as tmp:
        dsd = build_dataset_dict(rows)
        # One shard per split, always: datasets writes *no* shard for an empty split unless told to, and
        # then cannot load it back (a small corpus can have an empty validation or test split).
        dsd.save_to_disk(str(tmp), num_shards=dict.fromkeys(dsd, 1))
        if cfg.output.export_tsv:
            (tmp / "tsv").mkdir()
            write_tsv(dsd, tmp / "tsv")
        (tmp / "stats.md").write_text(markdown + "\n", encoding="utf-8")
        (tmp / "stats.json").write_text(
            json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (tmp / ALIGN_CONFIG_FILE).write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)), encoding="utf-8")
        (tmp / "README.md").write_text(dataset_card(stats, markdown, cfg), encoding="utf-8")


def write_tsv(dsd, directory: Path) -> None:
    """One ``<lang>.<split>.tsv`` per language and split: complex, simple, article_id, score."""
    from itertools import groupby

    for split, ds in dsd.items():
        # Rows are sorted by language already (build_dataset_dict).
        for lang, rows in groupby(ds.to_list(), key=lambda r: r["lang"]):
            with open(directory / f"{lang}.{split}.tsv", "w", encoding="utf-8") as f:
                f.write("complex\tsimple\tarticle_id\tscore\n")
                for r in rows:
                    c, s = (x.replace("\t", " ").replace("\n", " ") for x in (r["complex"], r["simple"]))
                    f.write(f"{c}\t{s}\t{r['article_id']}\t{r['score']:.4f}\n")


def dataset_card(stats: dict, markdown: str, cfg: AlignConfig) -> str:
    langs = "\n".join(f"- {lang}" for lang in stats["languages"])
    return f"""---
language:
{langs}
task_categories:
- text2text-generation
tags:
- medical
- text-simplification
- multimsd
---
# Aligned medical text simplification corpus

Sentence pairs (professional "complex" -> consumer "simple") aligned with multimsd: embedder
`{cfg.embedder.model}` ({cfg.embedder.name}), {cfg.aligner.method} matching, θ = {cfg.aligner.threshold}.
Splits are by article: the same article ids are in the same split in every language.

Columns: `complex`, `simple`, `lang`, `article_id`, `score` (the value θ was applied to), `cosine`,
`complex_idx`, `simple_idx` (sentence indices in the source articles; the first member of an n:m pair),
`complex_members`, `simple_members` (every member sentence index; one each for a 1:1 pair).

## Statistics

{markdown}
"""


def push_to_hub(out_dir: Path, cfg: AlignConfig) -> None:
    """Push the saved DatasetDict and its card. The token comes from HF_TOKEN or `huggingface-cli login`."""
    import datasets
    from huggingface_hub import HfApi

    if not cfg.output.hub_repo_id:
        raise MultimsdError("output.push_to_hub=true needs output.hub_repo_id=<user>/<name>")
    try:
        dsd = datasets.load_from_disk(str(out_dir))
        dsd.push_to_hub(cfg.output.hub_repo_id, private=cfg.output.hub_private)
        HfApi().upload_file(
            path_or_fileobj=str(out_dir / "README.md"),
            path_in_repo="README.md",
            repo_id=cfg.output.hub_repo_id,
            repo_type="dataset",
        )
    except Exception as e:  # never echo the token: report the type and repo only
        raise MultimsdError(
            f"push to {cfg.output.hub_repo_id!r} failed ({type(e).__name__}); the local copy is in {out_dir}"
        ) from None
    log.info("pushed to https://huggingface.co/datasets/%s", cfg.output.hub_repo_id)


__all__ = ["run", "to_config"]
