"""Training pairs: loading, language selection (mono / multi), tokenisation and batching.

Rows everywhere are dicts with ``complex``, ``simple``, ``lang`` (and ``article_id`` when known).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import random
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import torch

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.fsutil import remove_dead_temporaries, temporary_prefix, write_text_atomic, writing
from multimsd.io import load_pair_records
from multimsd.split import SPLITS, SplitConfig, split_article_ids
from multimsd.training.config import TrainData
from multimsd.training.kinds import get_kind

log = logging.getLogger(__name__)


def sample_gold_pairs(split: SplitConfig | None = None) -> dict[str, list[dict]]:
    """The bundled sample's hand-aligned sentence pairs, split by article with align.py's rule and the settings
    ``split`` (None = ``data.sample_split``'s defaults: 2 validation + 2 test of the 12 articles, the split
    ``python align.py split.max_fraction=0.2`` makes of the sample)."""
    from multimsd.gold import load_gold
    from multimsd.io import sample_articles_path

    docs = load_gold(sample_articles_path())
    split = TrainData().sample_split if split is None else split
    assignment = split_article_ids((d.article_id for d in docs), split, key="data.sample_split")
    out: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for d in docs:
        for (i,), (j,) in sorted(g for g in d.gold if len(g[0]) == len(g[1]) == 1):
            row = {"complex": d.complex[i], "simple": d.simple[j], "lang": d.lang, "article_id": d.article_id}
            out[assignment[d.article_id]].append(row)
    return out


def _rows_from_records(records: list[dict], where: str, split: SplitConfig) -> dict[str, list[dict]]:
    for k, r in enumerate(records):
        missing = [
            c for c in ("complex", "simple", "lang") if not isinstance(r.get(c), str) or not r[c].strip()
        ]
        if missing:
            raise MultimsdError(f"{where}: row {k + 1} lacks {', '.join(missing)}")
    if all("split" in r for r in records):
        out = {s: [r for r in records if r["split"] == s] for s in SPLITS}
    elif all(r.get("article_id") for r in records):
        assignment = split_article_ids((str(r["article_id"]) for r in records), split, key="data.split")
        out = {s: [r for r in records if assignment[str(r["article_id"])] == s] for s in SPLITS}
    else:
        raise MultimsdError(f"{where}: rows need a 'split' or an 'article_id' column to split by article")
    return out


def _check_columns(rows: list[dict], where: str) -> None:
    missing = [c for c in ("complex", "simple", "lang") if rows and c not in rows[0]]
    if missing:
        raise MultimsdError(f"{where}: the dataset lacks column(s) {', '.join(missing)}")


def load_pairs(path: str | None, data: TrainData | None = None) -> dict[str, list[dict]]:
    """Train / validation / test rows from an align.py output (a directory or its Hub id ``owner/name``), a
    JSONL or TSV file, or the sample (None). Reading is :func:`multimsd.io.load_pair_records`, shared by
    every stage. Rows without a split are split by article id with ``data.split`` (the sample:
    ``data.sample_split``); ``data`` None = the defaults."""
    data = TrainData() if data is None else data
    if path is None:
        return sample_gold_pairs(data.sample_split)
    by_split = load_pair_records(path, what="training data")
    if None in by_split:  # a file (or a plain Dataset): split by article id, or by its own split column
        return _rows_from_records(by_split[None], str(Path(path).expanduser()), data.split)
    for split, rows in by_split.items():
        _check_columns(rows, f"{path} ({split})")
    return {s: by_split.get(s, []) for s in SPLITS}


def select(rows: dict[str, list[dict]], cfg: TrainData, seed: int) -> dict[str, list[dict]]:
    """Keep the configured languages; mono needs exactly one; multi shuffles the languages together."""
    bad = [lang for lang in cfg.languages if lang not in LANGUAGES]
    if bad:
        raise MultimsdError(f"unknown language(s) {', '.join(bad)} (supported: {', '.join(LANGUAGES)})")
    if cfg.mode not in ("mono", "multi"):
        raise MultimsdError(f"data.mode={cfg.mode!r}: choose mono or multi")
    if cfg.mode == "mono" and len(cfg.languages) != 1:
        raise MultimsdError(
            f"data.mode=mono trains on one language; got data.languages={list(cfg.languages)}"
        )
    langs = set(cfg.languages)
    out = {s: [r for r in rows.get(s, []) if r["lang"] in langs] for s in SPLITS}
    if cfg.paraphrase:
        out = paraphrase_splits(out)
    missing = langs - {r["lang"] for r in out["train"]}
    if missing:
        raise MultimsdError(f"no training pairs for language(s) {', '.join(sorted(missing))}")
    # Shuffle once here (seeded) so a multilingual corpus is interleaved; the sampler reshuffles per epoch.
    random.Random(seed).shuffle(out["train"])
    if cfg.max_train_examples and len(out["train"]) > cfg.max_train_examples:
        # said, so that a debug run's few examples are not taken for lost data
        log.info(
            "data.max_train_examples=%d: training on %d of %d pairs (a debug limit: `multimsd run debug=tiny` and "
            "`train.py debug=train_tiny` set it)",
            cfg.max_train_examples,
            cfg.max_train_examples,
            len(out["train"]),
        )
        out["train"] = out["train"][: cfg.max_train_examples]
    return out


def paraphrase_splits(rows: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Adduru et al.'s paraphrase data: every pair in both directions, and no sentence in two splits.

    Paraphrasing is symmetric, so each pair is added swapped (``simple -> complex``, marked
    ``swapped: True``), doubling the data; duplicates within a split are dropped. The paper then removes "the
    training sentence pairs that contain sentences from the source side of the test" set, repeats that for
    the validation set, and so makes sure "any sentence occurs as a source sentence in exactly one of the
    sets". With both directions present the source side of a split is all of its sentences, so: test keeps
    all its pairs; validation drops the pairs that contain (on either side) a sentence of test; training
    drops those that contain a sentence of test or of what validation kept. The existing split (by article,
    see multimsd.split) is the starting point, so nothing moves between splits: a split only loses the
    pairs that would leak. Sentences are compared per language after whitespace normalisation.
    """

    def key(lang: str, text: str) -> tuple[str, str]:
        return lang, " ".join(text.split())

    both: dict[str, list[dict]] = {}
    for split in SPLITS:
        seen: set[tuple] = set()
        both[split] = []
        for r in rows.get(split, []):
            for row in (r, {**r, "complex": r["simple"], "simple": r["complex"], "swapped": True}):
                k = (key(row["lang"], row["complex"]), key(row["lang"], row["simple"]))
                if k not in seen:
                    seen.add(k)
                    both[split].append(row)
    taken: set[tuple[str, str]] = set()  # sentences of the splits already settled
    out: dict[str, list[dict]] = {}
    for split in ("test", "validation", "train"):
        out[split] = [
            r
            for r in both[split]
            if key(r["lang"], r["complex"]) not in taken and key(r["lang"], r["simple"]) not in taken
        ]
        taken |= {key(r["lang"], r[side]) for r in out[split] for side in ("complex", "simple")}
    return {s: out[s] for s in SPLITS}


def tokenize_rows(tokenizer, rows: list[dict], kind: str, max_length: int) -> list[dict]:
    """Encode rows for training with the model kind called ``kind`` (its ``encode``); rows with no label token
    left (a prompt longer than max_length) are dropped."""
    encoder = get_kind(kind)
    out = []
    for r in rows:
        t = encoder.encode(tokenizer, r, max_length)
        if any(x != -100 for x in t.labels):  # a prompt longer than max_length leaves nothing to learn
            out.append({"input_ids": t.input_ids, "labels": t.labels, "novel": t.novel, "lang": r["lang"]})
    return out


TOKENIZED_COLUMNS = ("input_ids", "labels", "novel", "lang")


def tokenizer_fingerprint(tokenizer) -> str:
    """A hash of the tokenizer's whole state that is the same in every process that loads the same files.

    ``datasets``' own ``Hasher.hash(tokenizer)`` gives the same guarantee but pickles in pure Python, which takes
    ~3 s for mBART-50's 250k-piece vocabulary (held twice: in the Rust backend and as a Python list of scores),
    and ``Dataset.map`` would hash it again with every call. Here the large vocabulary lists (plain strings
    and numbers, so C pickle is exact and deterministic) and the backend's JSON are digested directly; the rest
    of the Python state still goes through ``Hasher``, which orders sets and other unordered state for us.
    Backend truncation / padding are left out: transformers sets them per call, they are not the tokenizer's
    identity (the same rule as ``datasets``)."""
    from datasets.fingerprint import Hasher

    skip = {"_tokenizer", "cache", "deprecation_warnings"}
    state = {k: v for k, v in vars(tokenizer).items() if k not in skip}
    for k, v in state.items():
        if isinstance(v, list) and len(v) > 1000:  # a vocabulary
            state[k] = hashlib.sha256(pickle.dumps(v, protocol=5)).hexdigest()
    backend = vars(tokenizer).get("_tokenizer")
    spec = None
    if backend is not None:
        truncation, padding = backend.truncation, backend.padding
        backend.no_truncation()
        backend.no_padding()
        try:
            spec = hashlib.sha256(backend.to_str().encode()).hexdigest()
        finally:
            if truncation is not None:
                backend.enable_truncation(**truncation)
            if padding is not None:
                backend.enable_padding(**padding)
    return Hasher.hash([type(tokenizer).__module__, type(tokenizer).__qualname__, state, spec])


def tokenize_dataset(tokenizer, rows: list[dict], kind: str, max_length: int, cache_dir: Path | None = None):
    """:func:`tokenize_rows` as a ``Dataset.map``, cached on disk when ``cache_dir`` is given.

    The cache file is named by a fingerprint of everything the result depends on (the rows, the tokenizer's
    full state, the model kind and its source, max_length, and the source of this module and of the prompts),
    so a re-run, a resumed run, a sweep over θ or learning rate, and the other processes of a distributed run
    (called under ``main_process_first``) read the main process's result instead of tokenising again; any
    change to those inputs gives a new file.
    """
    import datasets
    from datasets.fingerprint import Hasher

    columns = ("complex", "simple", "lang")
    if not rows:
        return datasets.Dataset.from_dict({k: [] for k in TOKENIZED_COLUMNS})
    ds = datasets.Dataset.from_list([{c: r[c] for c in columns} for r in rows])

    def encode(batch: dict) -> dict:
        # Batched, so rows without labels can simply be left out of the result.
        encoded = tokenize_rows(
            tokenizer, [dict(zip(columns, v)) for v in zip(*(batch[c] for c in columns))], kind, max_length
        )
        return {k: [e[k] for e in encoded] for k in TOKENIZED_COLUMNS}

    def tokenize(fingerprint: str, **cache) -> datasets.Dataset:
        # A fingerprint of our own (the cache key below, or a fresh one): without one datasets hashes `encode`,
        # the tokenizer inside it, on every call.
        return ds.map(
            encode,
            batched=True,
            remove_columns=list(columns),
            desc="tokenising",
            new_fingerprint=fingerprint,
            **cache,
        )

    if cache_dir is None:
        return tokenize(uuid.uuid4().hex)
    from multimsd.training import prompts

    # The kind's encoder lives in its class and the classes it derives from (a plugin's too).
    modules = {
        sys.modules[__name__],
        prompts,
        *(sys.modules[c.__module__] for c in type(get_kind(kind)).__mro__[:-1]),
    }
    code = [Path(m.__file__).read_bytes() for m in sorted(modules, key=lambda m: m.__name__)]
    key = Hasher.hash([ds._fingerprint, tokenizer_fingerprint(tokenizer), kind, max_length, code])
    target = cache_dir / f"tokenized-{key}.arrow"

    if not target.is_file():
        # Written in a temporary directory of our own, then renamed into place: datasets' own temporary file
        # stays behind when its clean-up fails too (a full disk), and other runs share this cache directory.
        # A full disk is one line naming the cache file (multimsd.fsutil.writing).
        with writing(target):
            cache_dir.mkdir(parents=True, exist_ok=True)
            remove_dead_temporaries(cache_dir, target.name)  # a killed run's
            tmp = Path(tempfile.mkdtemp(prefix=temporary_prefix(target.name), dir=cache_dir))
        try:
            with writing(target, tmp):
                tokenize(key, cache_file_name=str(tmp / target.name))
                os.replace(tmp / target.name, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return tokenize(key, cache_file_name=str(target), load_from_cache_file=True)  # read back from the file


def shift_targets(labels: list[int], novel: list[int]) -> tuple[list[int], list[int]]:
    """The causal shift, the one place labels are shifted: a decoder-only LM's output at position ``t`` predicts
    the token at ``t + 1``, so its target at ``t`` is ``labels[t + 1]`` (and that token's novel flag); the last
    position predicts nothing (``-100``). transformers' ``ForCausalLMLoss`` shifts the same way inside the model;
    here the collator does it once, and everything after it (the losses, the label counts, the validation
    cross-entropy) reads ``labels[:, t]`` as the target of output ``t`` for every kind."""
    return [*labels[1:], -100], [*novel[1:], 0]


def target_index(labels: list[list[int]], ignore_index: int = -100) -> torch.Tensor:
    """The flat, row-major positions ``b * T + t`` of a padded ``[B, T]`` batch of targets (labels already
    aligned with the outputs: :func:`shift_targets`) whose target is a label.

    Computed on the host while the batch is collated: the loss picks its rows with it
    (:func:`multimsd.training.chunked_loss.labelled_token_losses`), where a boolean mask made on the device would
    make the host wait for the forward to finish (a ``nonzero``) in every micro-batch, and its length is the
    micro-batch's label count, known without asking the device."""
    width = max((len(row) for row in labels), default=0)
    return torch.tensor(
        [b * width + t for b, row in enumerate(labels) for t, y in enumerate(row) if y != ignore_index],
        dtype=torch.long,
    )


class Collator:
    """Right-pads a batch: input_ids with the pad id, labels with -100, novel flags with 0; with ``shift`` (the
    kind's ``shift_labels``: a decoder-only LM) the labels and novel flags become the targets of the outputs
    (:func:`shift_targets`); adds the positions the loss reads (:func:`target_index`). One layout per kind: the
    kind is named where the collator is built (``shift`` has no default)."""

    def __init__(self, pad_id: int, *, shift: bool):
        self.pad_id, self.shift = pad_id, shift

    def __call__(self, batch: list[dict]) -> dict[str, torch.Tensor]:
        n = max(len(b["input_ids"]) for b in batch)
        m = max(len(b["labels"]) for b in batch)

        def pad(seq, length, value):
            return seq + [value] * (length - len(seq))

        labels = [pad(b["labels"], m, -100) for b in batch]
        novel = [pad(b["novel"], m, 0) for b in batch]
        if self.shift:
            labels, novel = map(list, zip(*(shift_targets(y, v) for y, v in zip(labels, novel))))
        return {
            "input_ids": torch.tensor([pad(b["input_ids"], n, self.pad_id) for b in batch]),
            "attention_mask": torch.tensor([pad([1] * len(b["input_ids"]), n, 0) for b in batch]),
            "labels": torch.tensor(labels),
            "novel": torch.tensor(novel, dtype=torch.bool),
            "target_index": target_index(labels),
        }


class PackingCollator:
    """A decoder-only LM's micro-batch as one row with no padding (``data.packing``): the examples concatenated.

    ``position_ids`` restart at 0 for each example and there is no attention mask, from which transformers
    derives attention within each example only (``masking_utils.find_packed_sequence_indices``; flash-attention's
    varlen kernels on GPU use the same position_ids), with the positions (RoPE) each example has unpacked. The
    label and novel flag of each example's *first* token are cleared: under the causal shift it would be the
    target of the previous example's last token, and unpacked it is never a target (nothing precedes it), so
    the packed row holds exactly the padded batch's (position, target) pairs: the same examples, the same loss.
    Then the row is shifted (:func:`shift_targets`): packing is for decoder-only LMs only.
    """

    def __call__(self, batch: list[dict]) -> dict[str, torch.Tensor]:
        ids: list[int] = []
        positions: list[int] = []
        labels: list[int] = []
        novel: list[int] = []
        for b in batch:
            n = len(b["input_ids"])
            if len(b["labels"]) != n:
                raise MultimsdError("data.packing needs labels aligned with input_ids (a decoder-only model)")
            ids += b["input_ids"]
            positions += range(n)
            labels += [-100, *b["labels"][1:]]
            novel += [0, *b["novel"][1:]]
        labels, novel = shift_targets(labels, novel)
        return {
            "input_ids": torch.tensor([ids]),
            "position_ids": torch.tensor([positions]),
            "labels": torch.tensor([labels]),
            "novel": torch.tensor([novel], dtype=torch.bool),
            "target_index": target_index([labels]),
        }


class LengthGroupedSampler(torch.utils.data.Sampler):
    """The training order of ``data.group_by_length``: batches of examples of similar length, in random order.

    Each epoch the examples are shuffled with a generator seeded by ``seed + epoch`` (``set_epoch``, which
    Accelerate's prepared loader calls every epoch and keeps in ``skip_first_batches``, so a resumed run sees the
    same batches), cut into mega-batches of a few batches, each sorted by length, cut into batches, and the
    batches shuffled again: a batch holds neighbours in length (little padding) while the batches' order stays
    random rather than running from long to short. A last, smaller batch stays last, so the ``DataLoader``,
    cutting this order every ``batch_size`` examples, gets exactly these batches. ``shuffle=False``: one fixed
    order (mega-batches in the data's order), the same every epoch.

    The mega-batch is ``min(n // (4 * batch_size), 50)`` batches (at least 1), as in 🤗 transformers'
    ``LengthGroupedSampler``: sorting within small groups keeps each epoch's batches varied.
    """

    def __init__(self, lengths: list[int], batch_size: int, seed: int, shuffle: bool = True):
        self.lengths, self.batch_size, self.seed, self.shuffle = list(lengths), batch_size, seed, shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths)

    def batches(self) -> list[list[int]]:
        """This epoch's batches (lists of example indices), in order."""
        n, size = len(self.lengths), self.batch_size
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(n, generator=g).tolist() if self.shuffle else list(range(n))
        mega = size * max(min(n // (4 * size), 50), 1)
        batches = []
        for start in range(0, n, mega):
            group = sorted(order[start : start + mega], key=lambda i: -self.lengths[i])
            batches += [group[k : k + size] for k in range(0, len(group), size)]
        last = [batches.pop()] if batches and len(batches[-1]) < size else []
        if self.shuffle:
            batches = [batches[k] for k in torch.randperm(len(batches), generator=g).tolist()]
        return batches + last

    def __iter__(self):
        return (i for batch in self.batches() for i in batch)


def train_dataloader(dataset, data: TrainData, batch_size: int, seed: int, collate_fn):
    """The training ``DataLoader``: examples in (seeded) random order, or grouped by length
    (``data.group_by_length``, :class:`LengthGroupedSampler`). The length of an example is the longer of its
    input and labels: an encoder-decoder pads both sides, and in the sample's pairs the two lengths correlate
    weakly (r = 0.2), so grouping by their sum leaves more padding (mBART, 9 languages, batch 8: 19.5 % vs
    14.2 % of positions)."""
    sampler, shuffle = None, data.shuffle
    if data.group_by_length:
        lengths = [max(len(i), len(lab)) for i, lab in zip(dataset["input_ids"], dataset["labels"])]
        sampler, shuffle = LengthGroupedSampler(lengths, batch_size, seed, data.shuffle), False
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        sampler=sampler,
        collate_fn=collate_fn,
        num_workers=data.num_workers,
        generator=loader_generator(seed),
    )


def eval_dataloader(dataset, batch_size: int, seed: int, collate_fn):
    """The validation ``DataLoader``: the data's order, and (:func:`loader_generator`) no global RNG draw."""
    return torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, collate_fn=collate_fn, generator=loader_generator(seed)
    )


def loader_generator(seed: int) -> torch.Generator:
    """A ``DataLoader``'s own random generator, so that iterating it never draws from the global torch RNG.

    Every ``iter(DataLoader)`` draws a base seed for its workers from ``generator``, or from the global torch
    generator when there is none. The global generator also draws the dropout masks (LoRA's, mBART's, the
    LSTM's), and a checkpoint restores it as it was after the last step saved; a run resumed mid-epoch then
    starts a fresh iterator over the rest of the epoch, whose extra draw shifted every later mask: the steps
    after a resume differed from the uninterrupted run's (tiny Llama + LoRA dropout: by up to 8e-4). With
    its own generator the loader leaves the global one to the model. The shuffle is not affected: Accelerate's
    seedable sampler reseeds this generator with ``seed + epoch`` at the start of every epoch, and
    :class:`LengthGroupedSampler` has its own.
    """
    return torch.Generator().manual_seed(seed)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    """One JSON object a line, written aside and renamed into place (never a half-written file)."""
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
