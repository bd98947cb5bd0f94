"""``model.kind=lstm``: the word-level LSTM encoder-decoder of Adduru et al. 2018, trained from scratch.

The model and its word tokenizer are in :mod:`multimsd.training.models.lstm`; with
``model.lstm.num_sampled > 0`` the loss is the paper's sampled softmax (:mod:`multimsd.training.sampled_softmax`),
otherwise the full-softmax weighted cross-entropy every kind uses.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.training.config import ModelSettings
from multimsd.training.decode import Generated, cut_at_cap, decode_batches
from multimsd.training.kinds.base import LossFunction, ModelKind, Tokenized, register_kind, torch_dtype

log = logging.getLogger(__name__)


@dataclass
class LstmSettings:
    """The word-level LSTM encoder-decoder (``model.kind=lstm``; Adduru et al. 2018, see multimsd.training.models.lstm)."""

    embedding_size: int = 1024
    hidden_size: int = 1024  # units per layer (per direction in the BiLSTM encoder); paper: 1024
    encoder_layers: int = 3  # bidirectional
    decoder_layers: int = 3
    attention: str = "bahdanau"  # bahdanau (additive, TF's legacy attention_decoder) | luong (general)
    input_feeding: bool = True
    # Sampled softmax (Jean et al. 2015) in training: candidates per batch; 0 = full softmax. Validation loss
    # and decoding always use the full softmax.
    num_sampled: int = 512
    sampler: str = "log_uniform"  # log_uniform (Zipfian over frequency-sorted ids, TF's default) | unigram
    # Vocabularies: built from the training split; ids sorted by frequency; max_vocab_size includes the 4
    # specials (<pad> <unk> <s> </s>).
    lowercase: bool = False
    max_vocab_size: int = 40000
    min_count: int = 1
    shared_vocab: bool | None = None  # null: shared when data.paraphrase (paper), separate otherwise


@dataclass
class LstmModelSettings(ModelSettings):
    """``model=lstm`` (and the presets lstm_seq2seq, tiny_lstm): the word-level encoder-decoder of Adduru et al.
    (2018), trained from scratch."""

    pretrained: str = "scratch"
    lstm: LstmSettings = field(default_factory=LstmSettings)


def check_lstm_settings(cfg) -> None:
    """Settings of ``model.kind=lstm`` that are wrong before any data is read (a TrainConfig)."""
    from multimsd.training.models.lstm import ATTENTIONS

    lora = getattr(cfg.model, "lora", None)  # a transformers preset with model.kind=lstm set on top
    if lora is not None and lora.enabled:
        raise MultimsdError(
            "model.lora.enabled=true: LoRA adapts pretrained transformers, not model.kind=lstm"
        )
    s = LstmKind().settings(cfg.model).lstm
    if s.attention not in ATTENTIONS:
        raise MultimsdError(f"model.lstm.attention={s.attention!r}: choose {' or '.join(ATTENTIONS)}")
    if s.sampler not in ("log_uniform", "unigram"):
        raise MultimsdError(f"model.lstm.sampler={s.sampler!r}: choose log_uniform or unigram")
    if s.num_sampled < 0:
        raise MultimsdError(f"model.lstm.num_sampled={s.num_sampled}: must be >= 0 (0 = full softmax)")
    if s.num_sampled and cfg.loss.label_smoothing:
        raise MultimsdError("loss.label_smoothing needs the full softmax: set model.lstm.num_sampled=0")
    sizes = (
        "embedding_size",
        "hidden_size",
        "encoder_layers",
        "decoder_layers",
        "max_vocab_size",
        "min_count",
    )
    bad = [f"model.lstm.{k}={getattr(s, k)}" for k in sizes if getattr(s, k) < 1]
    if bad:
        raise MultimsdError(f"must be >= 1: {', '.join(bad)}")


def load_lstm(ms, train_rows: list[dict] | None, paraphrase: bool = False):
    """The word-level LSTM encoder-decoder (Adduru et al. 2018) and its word tokenizer.

    ``model.pretrained=scratch``: vocabularies built from ``train_rows`` (the training split after language
    selection; deterministic, so a resumed run rebuilds the same ids) and random weights drawn from the
    already seeded global RNG. Otherwise a directory saved by an LSTM run (its ``best/``): architecture and
    vocabularies come from there and the size settings in ``model.lstm`` are not used.
    """
    from multimsd.training.models.lstm import LstmSeq2Seq, LstmSeq2SeqConfig, WordTokenizer

    s = LstmKind().settings(ms).lstm
    if ms.pretrained == "scratch":
        if not train_rows:
            raise MultimsdError(
                "model.kind=lstm builds its vocabularies from the training split, which is empty"
            )
        shared = paraphrase if s.shared_vocab is None else s.shared_vocab
        tokenizer = WordTokenizer.build(
            train_rows,
            lowercase=s.lowercase,
            max_vocab_size=s.max_vocab_size,
            min_count=s.min_count,
            shared=shared,
        )
        config = LstmSeq2SeqConfig(
            src_vocab_size=tokenizer.source_vocab_size,
            tgt_vocab_size=tokenizer.target_vocab_size,
            embedding_size=s.embedding_size,
            hidden_size=s.hidden_size,
            encoder_layers=s.encoder_layers,
            decoder_layers=s.decoder_layers,
            attention=s.attention,
            input_feeding=s.input_feeding,
            dropout=ms.dropout or 0.0,
        )
        model = LstmSeq2Seq(config)
    else:
        path = Path(ms.pretrained).expanduser()
        if not path.is_dir():
            raise MultimsdError(
                f"model.pretrained={ms.pretrained!r}: model.kind=lstm takes 'scratch' or the directory of a saved "
                f"LSTM model (an LSTM run's best/)"
            )
        model, tokenizer = LstmSeq2Seq.from_pretrained(path), WordTokenizer.from_pretrained(path)
    if s.num_sampled and s.num_sampled >= tokenizer.target_vocab_size:
        raise MultimsdError(
            f"model.lstm.num_sampled={s.num_sampled} must be smaller than the target vocabulary "
            f"({tokenizer.target_vocab_size} words with the specials); lower it, or 0 for the full softmax"
        )
    n = sum(p.numel() for p in model.parameters())
    log.info(
        "LSTM seq2seq: %s parameters, vocabularies %d (source) / %d (target)%s",
        f"{n:,}",
        tokenizer.source_vocab_size,
        tokenizer.target_vocab_size,
        " shared" if tokenizer.shared else "",
    )
    return model.to(torch_dtype(ms.dtype)), tokenizer


@register_kind("lstm")
class LstmKind(ModelKind):
    options = LstmModelSettings

    def check(self, cfg) -> None:
        super().check(cfg)
        check_lstm_settings(cfg)

    def load(self, ms, path: str, train_rows: list[dict] | None = None, paraphrase: bool = False):
        return load_lstm(ms, train_rows, paraphrase)

    def encode(self, tokenizer, row: dict, max_length: int) -> Tokenized:
        """Source words -> target words + ``</s>``, novelty by word."""
        return Tokenized(*tokenizer.encode_pair(row, max_length))

    def own_loss(self, cfg) -> bool:
        return bool(self.settings(cfg.model).lstm.num_sampled)  # the sampled softmax; else the weighted CE

    def loss_function(self, settings, model, tokenizer, cfg) -> LossFunction:
        s = self.settings(cfg.model).lstm
        if not s.num_sampled:
            return super().loss_function(settings, model, tokenizer, cfg)
        from multimsd.training.sampled_softmax import SampledSoftmax

        sampled = SampledSoftmax.from_sampler_name(
            s.sampler,
            model.output_projection,
            tokenizer.target_counts,
            s.num_sampled,
            cfg.seed,
        )

        def loss(outputs, batch: dict, start: int, *, step: int, micro_batch: int):
            # the same weighting and normalisation as the full softmax, over k + 1 classes per token
            return sampled(
                outputs.hidden,
                batch["labels"],
                step=step,
                micro_batch=micro_batch,
                novel_mask=batch["novel"],
                theta=settings.theta,
                num_items=1,  # the sum: the step divides it by its label tokens
            )

        return loss

    def generate(self, cfg, model, tokenizer, rows: list[dict], shots: dict) -> list[Generated]:
        """Greedy (``eval.num_beams=1``) or beam search, at most ``eval.max_new_tokens`` words."""
        import torch

        pad = tokenizer.pad_token_id
        device = next(model.parameters()).device
        ids = [
            tokenizer.encode_source(r["complex"], r["lang"], cfg.data.max_length) or [tokenizer.unk_token_id]
            for r in rows
        ]

        def decode(idx: list[int]) -> list[Generated]:
            n = max(len(ids[k]) for k in idx)
            input_ids = torch.tensor([ids[k] + [pad] * (n - len(ids[k])) for k in idx], device=device)
            gen = model.generate(
                input_ids,
                attention_mask=input_ids != pad,
                max_new_tokens=cfg.eval.max_new_tokens,
                num_beams=cfg.eval.num_beams,
            )
            texts = tokenizer.batch_decode(gen, [rows[k]["lang"] for k in idx])
            cut = cut_at_cap(gen, [tokenizer.eos_token_id], cfg.eval.max_new_tokens)
            return [Generated(t, c) for t, c in zip(texts, cut)]

        return decode_batches([len(i) for i in ids], cfg.eval, decode)

    def load_best(self, cfg, path: Path, model):
        from multimsd.training.models.lstm import LstmSeq2Seq

        model.load_state_dict(LstmSeq2Seq.from_pretrained(path).state_dict())
        return model
