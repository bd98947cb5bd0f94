"""Structured config of the training stage (``conf/train.yaml``); see multimsd/config.py for the pattern."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from multimsd import LANGUAGES
from multimsd.split import SplitConfig

# Beside a system's outputs (multimsd.training.results writes them, multimsd.training.system reads them). Named
# here, in a module that imports no torch: the studio lists a run's systems at start-up.
CONFIG_FILE = "config.yaml"  # the whole resolved config, decoding settings included
SHOTS_FILE = "shots.json"  # a k-shot system's examples per language: {lang: [[complex, simple], ...]}


@dataclass
class ModelSettings:
    """What every model kind shares. A kind's own options are a subclass of this dataclass in the kind's module
    (LoRA for the transformers kinds, the LSTM's sizes), registered with the kind as the config group option
    ``model=<kind>``; the presets in conf/model/ start from one of them (multimsd.training.kinds.base)."""

    name: str = "smollm2_lora"  # names the output directory of the default config
    # causal: decoder-only chat model (Llama, SmolLM2) with the instruction prompt, prompt masked from the
    # loss; seq2seq: mBART-50 with the language code on both sides; lstm: the word-level LSTM encoder-decoder
    # trained from scratch. Set by model=<preset or kind>.
    kind: str = "causal"  # any registered model kind (multimsd.training.kinds), a plugin's too
    # A Hub id, a local directory, or an offline builder: "offline:smollm2", "tiny:llama", "tiny:mbart".
    # kind=lstm: "scratch" (vocabularies from the training split, random weights) or a saved LSTM directory.
    pretrained: str = "offline:smollm2"
    dtype: str = "float32"  # float32 | bfloat16 | float16 (weights); mixed precision is Accelerate's
    dropout: float | None = None  # override the model's dropout (mBART in the paper: 0.1)


@dataclass
class TrainData:
    # An align.py output directory (DatasetDict), a JSONL/TSV of pairs (complex, simple, lang[, article_id,
    # split]), or null: the bundled sample's hand-made gold pairs, split by article like align.py does.
    path: str | None = None
    # The split by article id (multimsd.split.SplitConfig: validation / test documents held out, max_fraction,
    # seed; align.py's split.*, multimsd run's pairs.split.*) of a pair file without a split column: the same
    # rule and defaults, so the same ids get the same assignment.
    split: SplitConfig = field(default_factory=SplitConfig)
    # The same rule for the bundled sample (path null). Its 12 articles keep 2 + 2 held out (max_fraction 0.2;
    # align.py's default 0.1 would hold out 1 + 1): the split of the demo's numbers.
    sample_split: SplitConfig = field(default_factory=lambda: SplitConfig(max_fraction=0.2))
    languages: list[str] = field(default_factory=lambda: list(LANGUAGES))
    # mono: exactly one language; multi: all chosen languages concatenated and shuffled together.
    mode: str = "multi"
    max_length: int = 256
    max_train_examples: int | None = None
    max_eval_examples: int | None = None  # per language and split, for generation-based metrics
    # Adduru et al.'s paraphrase setting: add every pair swapped (simple -> complex) and drop pairs so that no
    # sentence occurs in two splits (see multimsd.training.data.paraphrase_splits).
    paraphrase: bool = False
    # Reshuffle the training examples every epoch (seeded: the same order after a resume). false = keep the
    # order fixed (already shuffled once, seeded); the benchmark uses it to feed 🤗 Trainer identical batches.
    shuffle: bool = True
    num_workers: int = 0
    # Decoder-only (causal) LMs: each micro-batch's examples concatenated into one row with no padding,
    # position_ids restarting per example so attention stays within each (multimsd.training.data.PackingCollator).
    # The same examples per step and the same losses (to float rounding; LoRA dropout draws other masks). Other
    # kinds keep padded batches. See README (Training throughput) for what it gains.
    packing: bool = False
    # Batches of examples of similar length (less padding; seq2seq, LSTM), in a random order seeded by
    # (seed, epoch) and resumed exactly (multimsd.training.data.LengthGroupedSampler). Changes which examples
    # share a batch, hence the losses; with data.packing the padding is gone anyway.
    group_by_length: bool = False


@dataclass
class LossSettings:
    theta: float = 1.0  # novel-token weight; 1 = plain cross-entropy (paper: 2, 4, 8)
    label_smoothing: float = 0.0
    # Compute the loss from the final hidden states at labelled positions only, chunk_size tokens at a time,
    # never materialising the [tokens, vocabulary] logits (multimsd.training.chunked_loss); the same loss to
    # float rounding. It needs a plain lm_head and the weighted cross-entropy as the kind's loss (causal,
    # seq2seq; not the LSTM, not under FSDP / ZeRO-3). auto: where it can (else the full logits, the reason
    # logged); true: it must (else an error naming the reason); false: the full logits.
    chunked: str = "auto"
    chunk_size: int = (
        4096  # labelled tokens per chunk: at most chunk_size x vocabulary float32 logits at once
    )

    def chunked_mode(self) -> str:
        """``chunked`` as one of auto / true / false (a YAML or command-line boolean reads as its word)."""
        from multimsd.errors import MultimsdError

        mode = str(self.chunked).lower()
        if mode not in ("auto", "true", "false"):
            raise MultimsdError(f"loss.chunked={self.chunked!r}: choose auto | true | false")
        return mode


@dataclass
class OptimSettings:
    lr: float = 1e-4
    weight_decay: float = 0.0
    batch_size: int = 8  # per device
    grad_accum: int = 1
    epochs: int = 3
    max_steps: int | None = None  # optimizer steps; stops early when reached
    warmup_ratio: float = 0.0
    # adamw | sgd (plain mini-batch gradient descent, Adduru et al.) | paged_adamw_8bit (bitsandbytes, QLoRA's;
    # the qlora extra) (multimsd.training.optimizers)
    optimizer: str = "adamw"
    scheduler: str = "linear"  # linear | constant | cosine | exponential (lr * gamma ** step)
    gamma: float = 0.99  # decay per optimizer step of scheduler=exponential (Adduru et al.: 0.99)
    max_grad_norm: float = 1.0


@dataclass
class EvalSettings:
    # SARI / BLEU on generated validation outputs each epoch (optional: the paper early-stops on the validation
    # loss, and generating a paper-sized validation split every epoch costs more than the epoch's training).
    generate: bool = True
    # Rows per language generated for those per-epoch metrics (null = all). The final validation and test
    # predictions always come from the best model, once, on every row (up to data.max_eval_examples).
    generate_max_rows: int | None = 200
    max_new_tokens: int = 256
    # A simplification is not much longer than its source: each output is also capped at
    # ceil(length_ratio x its source's tokens) + length_margin new tokens (causal and seq2seq kinds), so an
    # output that loops costs little and is marked cut (multimsd.training.decode.row_caps). null: max_new_tokens
    # alone. 2 x + 32 cuts 1.8 % of CLARA-MeD's references that 64 tokens would not (they explain at length).
    length_ratio: float | None = 2.0
    length_margin: int = 32
    num_beams: int = 1  # mBART: 5 (paper); causal LMs: greedy
    # Decoding batches (multimsd.training.decode): rows sorted by input length, longest first, and a batch
    # filled while rows * (longest input + max_new_tokens) <= max_batch_tokens (the batch's KV cache at the
    # end, in tokens; Llama-3.1-8B: 128 KiB a token in bf16, so 8192 = 1 GiB). auto: on CUDA, what the device's
    # free memory holds (90 % of it less 1 GiB, over a token's KV cache, x num_beams, and prefill activations;
    # on a GPU decoding is memory-bound and the biggest batch is the fastest); on a CPU 8192, because on the
    # 2-core CPU (SmolLM2 + LoRA, 111 sample rows, 64 new tokens) budgets of 4096 / 8192 / 16384 / 32768 took
    # 56 / 46 / 46 / 54 s: bigger batches amortise the weights over more rows until rows that finished early but
    # still ride along cost more. A number sets the budget. batch_size does not cap a budgeted batch. With a
    # budget, greedy causal LMs (backend generate) also compute the prompt head that a language's rows share
    # (chat template + instruction) once. 0 = the old way: input order, batch_size rows a batch, every prompt
    # computed whole.
    max_batch_tokens: Any = "auto"  # auto | tokens >= 0
    batch_size: int = 8  # rows a decoding batch when max_batch_tokens=0
    # How the causal kind decodes (other kinds: generate only). generate: model.generate on each batch.
    # static: transformers' static KV cache; on CUDA generate then compiles the decoding step (torch.compile,
    # CUDA graphs), batch sizes rounded down to powers of two so that few graphs are compiled. continuous:
    # transformers' continuous batching (model.generate_batch, paged KV cache; it schedules the rows itself).
    # continuous is greedy only. All give the same greedy outputs in float32 (tests/training/test_decode_backends.py).
    backend: str = "generate"  # generate | static | continuous
    # Merge a LoRA adapter into the base weights while decoding (one matmul a layer instead of three); the
    # base weights are copied aside first and restored bit for bit after (on the device when the copy takes at
    # most half its free memory, else in host memory: Llama-8B ~14 GiB); the final predictions merge with no copy.
    merge_lora: bool = True
    # Sampling instead of greedy / beam search: 🤗 generate's do_sample with temperature and top_p (one beam).
    # The preference stage (mode=dpo) samples its candidate outputs this way; an evaluation normally decodes
    # deterministically. causal and seq2seq kinds; eval.backend=continuous is greedy only.
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    # Never write a digit sequence the source does not have: tokens with other digits are banned while decoding
    # (a logits processor, multimsd.training.number_guard; causal and seq2seq kinds): a cheap baseline for the
    # safety of numbers, with no training. Number words and CJK numerals are not covered.
    number_guard: bool = False
    # loss: the validation cross-entropy (paper); under mode=dpo, the DPO loss of the validation pairs | sari
    early_stopping_metric: str = "loss"
    patience: int = 1
    before_training: bool = True  # also evaluate the untrained model (for a before/after comparison)

    def __post_init__(self) -> None:
        from multimsd.errors import MultimsdError
        from multimsd.training.decode import check_backend, check_max_batch_tokens

        check_max_batch_tokens(self.max_batch_tokens)
        check_backend(self.backend)
        if self.length_ratio is not None and not self.length_ratio > 0:
            raise MultimsdError(f"eval.length_ratio={self.length_ratio}: must be > 0, or null for no bound")
        if self.length_margin < 0:
            raise MultimsdError(f"eval.length_margin={self.length_margin}: must be >= 0")


@dataclass
class IclSettings:
    shots: int = 0  # 0-shot or k-shot (paper: 5) prompting with no training
    seed: int = 42


@dataclass
class DpoSettings:
    """mode=dpo: direct preference optimisation from a trained system (multimsd.training.preference).

    Per training source the start system samples ``samples`` outputs; each is scored with ``reward``
    (multimsd.metrics.rewards: terms added, gates multiplied); a *pair* keeps the best output that passes every
    gate (chosen) and the most tempting one that fails a gate (rejected: a changed number or negation, a copy,
    a loop). Sources with no failing sample give no pair. The pairs (train and validation) are a 🤗 DatasetDict
    in output.dir/pairs, with the start system's log-probabilities of both outputs: the frozen reference of
    the DPO loss, computed once, so no second model is held while training."""

    beta: float = 0.1  # how far the policy may move from the start (the KL's weight): 0.1 as Rafailov et al.
    label_smoothing: float = 0.0  # conservative DPO for noisy preferences, in [0, 0.5)
    samples: int = 4  # outputs sampled per source (temperature / top_p below)
    temperature: float = 1.0
    top_p: float = 1.0
    reward: dict[str, float] = field(
        default_factory=lambda: {"sari": 1.0, "safety_gate": 1.0, "guardrails": 1.0}
    )
    # When no sample passes the gates: reference = the source's reference simplification is the chosen output
    # (when it passes them itself); skip = no pair from that source.
    fallback: str = "reference"
    max_sources: int | None = None  # a seeded subset of the training sources (reduced-scale runs); null = all


@dataclass
class GrpoSettings:
    """mode=grpo: group relative policy optimisation from a trained system, through TRL's GRPOTrainer
    (multimsd.training.grpo; the rl extra). Causal models with a LoRA adapter only.

    Per training prompt (the project's instruction around a source) the policy samples ``num_generations``
    outputs; each is scored with ``reward`` (multimsd.metrics.rewards: terms added, gates multiplied) and its
    advantage is its reward less its group's mean, over the group's standard deviation. The loss pushes the
    adapter towards the better outputs of each group, with ``beta`` × the KL to the start system (the start's
    adapter, kept frozen beside the trained one). Steps, learning rate, batch and schedule are ``optim.*``;
    the completions' length is ``eval.max_new_tokens``."""

    beta: float = 0.04  # the KL's weight (TRL's default is 0: no KL); must be > 0 here
    num_generations: int = 4  # outputs sampled per prompt: the group the advantages are relative to (>= 2)
    temperature: float = 1.0
    top_p: float = 1.0
    reward: dict[str, float] = field(
        default_factory=lambda: {"sari": 1.0, "safety_gate": 1.0, "guardrails": 1.0}
    )
    max_sources: int | None = None  # a seeded subset of the training sources (reduced-scale runs); null = all


@dataclass
class HubSettings:
    push: bool = False
    repo_id: str | None = None
    private: bool = True
    merge_lora: bool = False


@dataclass
class TrainOutput:
    # Checkpoints, the best model (best/), predictions/<split>/ and all_results.json; conf/train.yaml names one
    # per model, mode and θ. The key align.py, evaluate.py and multimsd run use too.
    dir: str = "outputs/train"


@dataclass
class TrainConfig:
    # train | icl | dpo (preference optimisation of the trained system `start`) | grpo (GRPO from `start`
    # through TRL: causal models with LoRA, the rl extra) | predict (decode `start`'s model again, e.g. with
    # eval.number_guard=true or other beams; no training)
    mode: str = "train"
    # mode=dpo / grpo / predict: the trained system to start from, its directory (config.yaml and best/), e.g. a
    # run's systems/finetuned or a train.py output.dir. Its model settings must be this run's.
    start: str | None = None
    model: ModelSettings = field(default_factory=ModelSettings)
    data: TrainData = field(default_factory=TrainData)
    loss: LossSettings = field(default_factory=LossSettings)
    optim: OptimSettings = field(default_factory=OptimSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)
    icl: IclSettings = field(default_factory=IclSettings)
    dpo: DpoSettings = field(default_factory=DpoSettings)
    grpo: GrpoSettings = field(default_factory=GrpoSettings)
    hub: HubSettings = field(default_factory=HubSettings)
    output: TrainOutput = field(default_factory=TrainOutput)
    # Deprecated: the old name of output.dir, still read (copied to output.dir, with a one-line note).
    output_dir: str | None = None
    resume: bool = True  # continue from the last checkpoint in output.dir when there is one
    checkpoint_every: int = 0  # optimizer steps between checkpoints; 0 = end of each epoch only
    report_to: list[str] = field(default_factory=list)  # tensorboard, wandb, mlflow (Accelerate trackers)
    seed: int = 42
    # Modules imported before the stage runs, so their register_* calls (aligners, model kinds, metrics) take
    # effect: plugins=[my_package.my_aligner] (see README, Extending multimsd).
    plugins: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The deprecated name, in the config of a Hydra job or a dict given to multimsd.training.loop.run: copied
        # to output.dir (a command line setting both differently failed at start-up: multimsd.outdir).
        if self.output_dir is not None:
            from multimsd.outdir import note_deprecated

            note_deprecated("output_dir")
            self.output.dir = self.output_dir
            self.output_dir = None
