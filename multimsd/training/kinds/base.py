"""The model-kind interface and its registry: everything the training stage does differently per model family.

A *kind* (``model.kind`` in the config) is one class: it checks its own settings, loads model and tokenizer,
encodes a training row, builds the forward arguments and the loss, generates, and saves / reloads the best
model. The training loop (:mod:`multimsd.training.loop`) never asks which kind it runs: it calls the methods
of ``get_kind(cfg.model.kind)``. The built-in kinds are ``causal`` (chat LMs, LoRA), ``seq2seq`` (mBART-50)
and ``lstm`` (the word-level encoder-decoder of Adduru et al. 2018); a new one is a subclass registered under
a new name, in a module the CLI imports with ``plugins=[my_module]``::

    @dataclass
    class ToyOptions(TransformerModelSettings):   # or ModelSettings: what every kind shares
        temperature: float = 1.0                  # model.temperature=0.5 on the command line

    @register_kind("toy")
    class ToyKind(Seq2SeqKind):
        options = ToyOptions
        ...                                       # self.settings(cfg.model).temperature

A kind's options (``options``, a dataclass extending :class:`~multimsd.training.config.ModelSettings`) are
registered with it as the config group option ``model=<kind>`` (Hydra's ConfigStore), so ``model=toy`` selects
them and a misspelt key fails at start-up; the presets in ``conf/model/`` start from such an option
(``defaults: [causal, _self_]``).

Torch and transformers are imported inside the methods, so importing a kind module stays cheap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from multimsd.errors import MultimsdError
from multimsd.training.config import ModelSettings

if TYPE_CHECKING:
    from multimsd.training.decode import Generated

DTYPE_NAMES = ("float32", "bfloat16", "float16")


def torch_dtype(name: str):
    """``model.dtype`` -> the torch dtype (``float32`` / ``bfloat16`` / ``float16``)."""
    import torch

    if name not in DTYPE_NAMES:
        raise MultimsdError(f"model.dtype={name!r}: choose {', '.join(DTYPE_NAMES)}")
    return getattr(torch, name)


@dataclass
class Tokenized:
    """One encoded training row: model input, labels (-100 = not learned) and novel-token flags per label."""

    input_ids: list[int]
    labels: list[int]
    novel: list[int]


def novel_flags(labels: list[int], source_ids: set[int], special: set[int]) -> list[int]:
    # A label token is "novel" when it does not occur in the input sentence (paper, section 4).
    return [int(t != -100 and t not in source_ids and t not in special) for t in labels]


def sampling(cfg) -> dict:
    """🤗 generate's sampling settings of ``cfg.eval`` (``do_sample``; one beam when sampling), or greedy."""
    e = cfg.eval
    if not getattr(e, "do_sample", False):  # a config saved before the key existed decodes greedily
        return {"do_sample": False}
    return {"do_sample": True, "temperature": e.temperature, "top_p": e.top_p, "num_beams": 1}


@contextmanager
def tokenizer_set(tokenizer, **settings) -> Iterator[None]:
    """The tokenizer with ``settings`` (``src_lang``, ``padding_side``, …) for the block, and as it was after:
    a kind encodes and generates with its own settings without changing the caller's tokenizer behind its back
    (a later encode of another language, or of a batch padded on the other side, would read them)."""
    before = {key: getattr(tokenizer, key, None) for key in settings}
    for key, value in settings.items():
        setattr(tokenizer, key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if (
                value is not None
            ):  # mBART's src_lang setter refuses None: a tokenizer that had none keeps ours
                setattr(tokenizer, key, value)


# (outputs, batch, start, *, step, micro_batch) -> the micro-batch's summed loss
LossFunction = Callable[..., Any]


class ModelKind:
    """A model family. The defaults suit an encoder-decoder that takes ``labels`` and returns ``logits``."""

    name: str = ""  # set by register_kind
    # The dataclass of its options (model=<kind>): ModelSettings, or a subclass with the kind's own keys.
    options: type[ModelSettings] = ModelSettings
    # model=<kind> on its own loads this model (None: the options' default pretrained).
    default_pretrained: str | None = None
    supports_icl = False  # mode=icl prompts a chat model
    supports_sampling = False  # eval.do_sample (and mode=dpo, which samples its candidates): 🤗 generate's
    # True where the output at t predicts the token at t + 1 (a decoder-only LM): the collator then shifts the
    # labels once (multimsd.training.data.shift_targets), and the losses read labels[:, t] as the target of t
    shift_labels = False
    # data.packing: the model takes a micro-batch's examples as one row, told apart by restarting position_ids
    supports_packing = False

    # ------------------------------------------------------------------ configuration and loading
    def default_options(self) -> ModelSettings:
        """Its options with their defaults: the config group option ``model=<kind>``."""
        opts = self.options(name=self.name, kind=self.name)
        return (
            dataclasses.replace(opts, pretrained=self.default_pretrained) if self.default_pretrained else opts
        )

    def settings(self, ms: ModelSettings | Any) -> Any:
        """Its options in this run: ``ms`` (``cfg.model``) when it holds them (``model=<kind>`` or a preset
        built on it), else its options' defaults with the shared settings of ``ms`` (the model, dtype, ...)."""
        kind = OmegaConf.get_type(ms) if isinstance(ms, DictConfig) else type(ms)
        if kind is self.options:
            return ms
        shared = {f.name: getattr(ms, f.name) for f in dataclasses.fields(ModelSettings)}
        return self.options(**shared)

    def check(self, cfg) -> None:
        """Raise a MultimsdError for settings (a TrainConfig) that cannot work with this kind."""
        if cfg.mode == "icl" and not self.supports_icl:
            raise MultimsdError("mode=icl prompts a chat model: use a causal model (e.g. model=smollm2_lora)")

    def load(self, ms, path: str, train_rows: list[dict] | None = None, paraphrase: bool = False):
        """The model and tokenizer of ``ms`` (ModelSettings); ``path`` is ``ms.pretrained`` resolved."""
        raise NotImplementedError

    # ------------------------------------------------------------------ data
    def encode(self, tokenizer, row: dict, max_length: int) -> Tokenized:
        """One ``{complex, simple, lang}`` row as model input, labels and novel flags."""
        raise NotImplementedError

    # ------------------------------------------------------------------ forward and loss
    def can_trim(self, model) -> bool:
        """Whether :meth:`logits_forward_kw` may skip the logits of unlabelled positions (the causal kind)."""
        return False

    def logits_forward_kw(self, model, batch: dict, trim: bool) -> tuple[dict, int]:
        """What the logits path (``loss.chunked=false``, or a model the chunked loss cannot serve) passes besides
        the token inputs, and the first position the loss needs; ``model`` is the unwrapped model. By default the
        labels (the LSTM builds its decoder inputs from them); a kind whose model would compute a loss of its own
        from ``labels`` (a vocabulary-wide cross-entropy that the step then throws away) passes the decoder
        inputs instead (seq2seq), a decoder-only LM nothing but ``logits_to_keep`` (causal)."""
        return {"labels": batch["labels"]}, 0

    def output_head(self, model):
        """The model's output projection (a :class:`multimsd.training.output_head.OutputHead`) for the chunked
        loss (``loss.chunked``), or None: this kind's model makes its logits in another way (the default)."""
        return None

    def hidden_forward_kw(self, model, batch: dict) -> dict:
        """The keyword arguments besides the token inputs when the output head returns hidden states (chunked
        loss): never ``labels``, from which the model would compute its own loss over those "logits". An
        encoder-decoder gets the decoder inputs it would have built from the labels (``model``: unwrapped)."""
        from multimsd.training.output_head import base_model

        return {
            "decoder_input_ids": base_model(model).prepare_decoder_input_ids_from_labels(
                labels=batch["labels"]
            )
        }

    def build_loss(self, cfg, model, tokenizer, accelerator, probe: dict | None = None):
        """The run's training loss (a :class:`multimsd.training.forward.MicroBatchLoss`), built once: the one
        place where ``cfg.loss`` is read. The chunked path (from the hidden states) or the logits path is chosen
        inside it; ``model`` is the prepared model, ``probe`` a small batch on its device that checks the chunked
        path against the model's logits."""
        from multimsd.training.forward import MicroBatchLoss

        settings = cfg.loss
        return MicroBatchLoss(
            settings,
            self,
            model,
            accelerator,
            self.loss_function(settings, accelerator.unwrap_model(model), tokenizer, cfg),
            own_loss=self.own_loss(cfg),
            probe=probe,
        )

    def own_loss(self, cfg) -> bool:
        """Whether :meth:`loss_function` is a loss of the kind's own rather than the novel-token weighted
        cross-entropy, which the chunked path computes from the hidden states instead: then the logits path is
        taken (said, not guessed from an override; the LSTM's sampled softmax)."""
        return False

    def loss_function(self, settings, model, tokenizer, cfg) -> LossFunction:
        """The training loss over the logits, ``loss(outputs, batch, start, *, step, micro_batch)``: the
        micro-batch's novel-token weighted cross-entropy (multimsd.training.loss) *summed* over its label tokens
        (the step divides), with ``settings`` (``cfg.loss``, a :class:`multimsd.training.config.LossSettings`). A kind that overrides it
        (the LSTM's sampled softmax) keeps the logits path; ``cfg`` serves for its other settings."""
        from multimsd.training.loss import weighted_cross_entropy

        def loss(outputs, batch: dict, start: int, *, step: int, micro_batch: int):
            return weighted_cross_entropy(
                outputs.logits,
                batch["labels"][:, start:],
                novel_mask=batch["novel"][:, start:],
                theta=settings.theta,
                num_items=1,  # the sum: the step divides it by its label tokens
                label_smoothing=settings.label_smoothing,
            )

        return loss

    # ------------------------------------------------------------------ generation, saving
    def generate(self, cfg, model, tokenizer, rows: list[dict], shots: dict) -> list[Generated]:
        """One output per row, in order (``shots``: k-shot examples per language, mode=icl): its text and
        whether it was cut at the length cap (:class:`~multimsd.training.decode.Generated`; a plain string is
        taken as its text, cut unknown)."""
        raise NotImplementedError

    def generation_settings(self, cfg) -> dict:
        """The settings of ``generate`` the evaluation decodes with, as 🤗 ``GenerationConfig`` keys: what
        :meth:`generate` passes, and what ``multimsd export`` writes into ``generation_config.json``."""
        return {"num_beams": cfg.eval.num_beams, "max_new_tokens": cfg.eval.max_new_tokens, **sampling(cfg)}

    def save_pretrained(self, model, tokenizer, path: Path, save_function: Callable) -> None:
        """Write the (unwrapped) model and its tokenizer into the directory ``path``."""
        model.save_pretrained(str(path), save_function=save_function)
        tokenizer.save_pretrained(str(path))

    def load_best(self, cfg, path: Path, model):
        """Load the weights saved by :meth:`save_pretrained` at ``path`` into ``model``; return it."""
        raise NotImplementedError

    def peft_auto_class(self):
        """The ``peft.AutoPeftModelFor…`` class that reloads a LoRA adapter of this kind (Hub upload)."""
        raise MultimsdError(f"model.kind={self.name}: no LoRA adapter to merge")


MODEL_KINDS: dict[str, ModelKind] = {}
"""Registered kinds by name (``model.kind``); the built-ins are registered by ``import multimsd.training.kinds``."""


def register_kind(name: str) -> Callable[[type[ModelKind]], type[ModelKind]]:
    """Class decorator: ``@register_kind("toy")`` makes ``model.kind=toy`` use the class (a later one replaces)."""

    def register(cls: type[ModelKind]) -> type[ModelKind]:
        if not (isinstance(cls, type) and issubclass(cls, ModelKind)):
            raise TypeError(f"register_kind({name!r}) takes a ModelKind subclass, not {cls!r}")
        opts = cls.options
        if not (
            isinstance(opts, type) and issubclass(opts, ModelSettings) and dataclasses.is_dataclass(opts)
        ):
            raise MultimsdError(
                f"model kind {name!r}: options={opts!r}; use a dataclass that extends "
                "multimsd.training.config.ModelSettings"
            )
        cls.name = name
        MODEL_KINDS[name] = kind = cls()
        _store_options(kind)
        return cls

    return register


def _store_options(kind: ModelKind) -> None:
    """``model=<kind>``: the kind's options as a config group option of Hydra's ConfigStore."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group="model", name=kind.name, node=kind.default_options())


def get_kind(name: str) -> ModelKind:
    """The registered kind called ``name``; an unknown name is one error line listing the registered ones."""
    try:
        return MODEL_KINDS[name]
    except KeyError:
        raise MultimsdError(
            f"model.kind={name!r} is not a registered model kind (registered: {', '.join(sorted(MODEL_KINDS))}); "
            f"a new kind is registered with @register_kind in a module named in plugins=[...]"
        ) from None
