"""Word-level LSTM encoder-decoder with attention: the Adduru et al. (2018) simplification baseline.

What the paper specifies (section 3, "Paraphrase generation and simplification"): an encoder of three stacked
bidirectional LSTM layers and a decoder of three stacked LSTM layers with attention (they cite Vinyals et al.
2015), 1024 units in every layer, sentences of at most 50 words, "one-hot" word inputs, a dense layer with a
softmax onto the output vocabulary, trained with a sampled softmax (:mod:`multimsd.training.sampled_softmax`)
by SGD (batch 128, learning rate 0.5 decayed by 0.99 every step, gradients clipped to global norm 1), in
TensorFlow 1.2. For simplification the source and target vocabularies are separate; for paraphrasing (where
pairs are used in both directions) they are one.

What the paper leaves open, and what this module does (all configurable through
:class:`LstmSeq2SeqConfig`):

* **Inputs.** A one-hot vector times a weight matrix is an embedding lookup, so words enter through
  ``nn.Embedding`` (``embedding_size``, 1024 in the preset), one table per vocabulary.
* **Encoder.** ``encoder_layers`` bidirectional ``nn.LSTM`` layers of ``hidden_size`` units *per direction*
  (the paper's "cell depth of 1024 for all the layers"); padded positions are packed away so the backward
  direction starts at each sentence's real end.
* **Bridge.** Decoder layer ``l`` starts from encoder layer ``min(l, encoder_layers - 1)``'s final forward and
  backward states, concatenated and projected (``tanh`` for ``h``, linear for ``c``); one projection shared
  by all layers.
* **Attention.** ``"bahdanau"`` (default): additive scores ``v . tanh(W_k m_s + W_q q_t)``, the form of
  Vinyals et al. and of TF's legacy ``attention_decoder`` that the paper's TF 1.2 setup provided;
  ``"luong"``: Luong et al.'s "general" bilinear score ``q_t . W_k m_s`` (cheaper: no ``[B, T, S, H]``
  tensor). In both the query ``q_t`` is the top decoder layer's output *at* step ``t`` (Luong timing, as in
  TF's decoder, which attends after the cell), ``m_s`` are the encoder outputs, and the attentional output is
  ``o_t = tanh(W_c [q_t; c_t])``.
* **Input feeding** (``input_feeding=True``, as TF's ``attention_decoder``): ``o_{t-1}`` is concatenated to
  the word embedding at step ``t``, so the decoder knows what it attended to. This makes the decoder a loop
  over time steps even under teacher forcing; with ``input_feeding=False`` the decoder LSTM runs over the
  whole sequence in one call and attention is computed for all steps at once.
* **Output.** ``output_projection`` (``[V_target, hidden_size]`` + bias) maps ``o_t`` to logits; training
  uses it through the sampled softmax, validation loss and decoding through the full softmax.
* **Decoding.** :meth:`LstmSeq2Seq.generate`: greedy (``num_beams=1``) or beam search; ``<pad>`` and ``<s>``
  are never generated; the beam's hypotheses are ranked by ``log p / length ** length_penalty`` (1.0, as 🤗
  ``generate``). A hypothesis that emits ``</s>`` stays in the beam with its final score.

The tokenizer (:class:`WordTokenizer`) splits words with :func:`multimsd.text.word_tokenize` (regex words for
space-delimited languages, MeCab for Japanese, Han characters for Chinese), builds the vocabularies from the
*training* split only (most frequent first, which the log-uniform sampler assumes), and mirrors the parts of
the 🤗 tokenizer interface the training loop uses (``pad_token_id``, ``all_special_ids``, ``save_pretrained``,
``from_pretrained``, ``batch_decode``). Both objects save to / load from a directory like 🤗 models do
(``config.json`` + ``model.safetensors``; ``vocab.json``).

Why this module is long: it is one model with its own word tokenizer (vocabularies, detokenisation per
language), encoder, attention, input-feeding decoder, beam search and save/load; they share the vocabulary's
ids and the special-token conventions, and the model is unusable without the tokenizer.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from multimsd.errors import MultimsdError
from multimsd.text import word_tokenize

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)  # ids 0..3 in both vocabularies
ATTENTIONS = ("bahdanau", "luong")
MODEL_TYPE = "multimsd-lstm-seq2seq"

# Languages written without spaces between words: tokens are joined with nothing (but ASCII words keep a space).
_UNSPACED = {"ja", "zh"}
_ASCII_WORD = re.compile(r"[A-Za-z0-9]")


# =============================================================================================== tokenizer
class WordTokenizer:
    """Word vocabularies for the source (complex) and the target (simple) side.

    ``source == target`` (one shared list) when built with ``shared=True`` (paraphrase mode). Ids 0-3 are
    ``<pad> <unk> <s> </s>`` on both sides; the words follow by decreasing training frequency (ties by the
    word), so id order is frequency order. ``target_counts[i]`` is how often target id ``i`` occurs in the
    training targets (``</s>`` once per sentence, ``<unk>`` once per out-of-vocabulary word): the unigram
    proposal of the sampled softmax.
    """

    pad_token_id, unk_token_id, bos_token_id, eos_token_id = 0, 1, 2, 3
    all_special_ids = [0, 1, 2, 3]

    def __init__(
        self,
        source_vocab: Sequence[str],
        target_vocab: Sequence[str],
        *,
        lowercase: bool = False,
        target_counts: Sequence[int] | None = None,
    ):
        for side, vocab in (("source", source_vocab), ("target", target_vocab)):
            if tuple(vocab[:4]) != SPECIALS:
                raise ValueError(f"the {side} vocabulary must start with {SPECIALS}")
        self.source_vocab = list(source_vocab)
        self.target_vocab = list(target_vocab)
        self.lowercase = lowercase
        self.target_counts = list(target_counts) if target_counts is not None else [0] * len(target_vocab)
        self._src_index = {w: i for i, w in enumerate(self.source_vocab)}
        self._tgt_index = {w: i for i, w in enumerate(self.target_vocab)}

    # ----------------------------------------------------------------------------------------- building
    @classmethod
    def build(
        cls,
        rows: Iterable[dict],
        *,
        lowercase: bool = False,
        max_vocab_size: int = 40000,
        min_count: int = 1,
        shared: bool = False,
    ) -> WordTokenizer:
        """Vocabularies from training rows (``complex``, ``simple``, ``lang``).

        ``max_vocab_size`` counts the four special tokens; words seen fewer than ``min_count`` times become
        ``<unk>``. ``shared``: one vocabulary from both sides (the paper's paraphrase setting).
        """
        if max_vocab_size <= len(SPECIALS):
            raise MultimsdError(f"max_vocab_size={max_vocab_size}: must be > {len(SPECIALS)}")
        rows = list(rows)
        src_counts: Counter[str] = Counter()
        tgt_counts: Counter[str] = Counter()
        tok = cls(SPECIALS, SPECIALS, lowercase=lowercase)
        for r in rows:
            src_counts.update(tok.words(r["complex"], r["lang"]))
            tgt_counts.update(tok.words(r["simple"], r["lang"]))
        if shared:
            src_counts = tgt_counts = src_counts + tgt_counts

        def vocab(counts: Counter[str]) -> list[str]:
            kept = [w for w, n in counts.items() if n >= min_count and w not in SPECIALS]
            words = sorted(kept, key=lambda w: (-counts[w], w))  # most frequent first, ties by the word
            return list(SPECIALS) + words[: max_vocab_size - len(SPECIALS)]

        source, target = vocab(src_counts), vocab(tgt_counts)
        index = {w: i for i, w in enumerate(target)}
        counts = [0] * len(target)
        for w, n in tgt_counts.items():
            counts[index.get(w, 1)] += n  # 1 = <unk>
        counts[3] += len(rows)  # </s> ends every target
        return cls(source, target, lowercase=lowercase, target_counts=counts)

    # ------------------------------------------------------------------------------------- properties
    @property
    def shared(self) -> bool:
        return self.source_vocab == self.target_vocab

    @property
    def source_vocab_size(self) -> int:
        return len(self.source_vocab)

    @property
    def target_vocab_size(self) -> int:
        return len(self.target_vocab)

    def __len__(self) -> int:
        return self.target_vocab_size

    # -------------------------------------------------------------------------------------- encoding
    def words(self, text: str, lang: str) -> list[str]:
        """The language-aware word split, lowercased when the tokenizer is."""
        words = word_tokenize(text, lang)
        return [w.lower() for w in words] if self.lowercase else words

    def encode_source(self, text: str, lang: str, max_length: int) -> list[int]:
        """Source word ids, truncated to ``max_length`` words (no ``</s>``: the encoder needs no end mark)."""
        return [self._src_index.get(w, self.unk_token_id) for w in self.words(text, lang)[:max_length]]

    def encode_target(self, text: str, lang: str, max_length: int) -> list[int]:
        """Target word ids + ``</s>``, at most ``max_length`` ids in all."""
        words = self.words(text, lang)[: max_length - 1]
        return [self._tgt_index.get(w, self.unk_token_id) for w in words] + [self.eos_token_id]

    def encode_pair(self, row: dict, max_length: int) -> tuple[list[int], list[int], list[int]]:
        """``(input_ids, labels, novel)`` of one training row.

        The vocabularies differ, so novelty (MultiMSD's weighted loss) is decided on the *words*, not the ids:
        a label word is novel when it is not among the source words (before ``<unk>`` mapping, so an
        out-of-vocabulary word copied from the input is not novel). ``</s>`` is never novel.
        """
        source_words = set(self.words(row["complex"], row["lang"]))
        target_words = self.words(row["simple"], row["lang"])[: max_length - 1]
        labels = self.encode_target(row["simple"], row["lang"], max_length)
        novel = [int(w not in source_words) for w in target_words] + [0]
        return self.encode_source(row["complex"], row["lang"], max_length), labels, novel

    # -------------------------------------------------------------------------------------- decoding
    def convert_ids_to_tokens(self, ids: Iterable[int], skip_special_tokens: bool = True) -> list[str]:
        out = []
        for i in ids:
            i = int(i)
            if i == self.eos_token_id and skip_special_tokens:
                break
            if skip_special_tokens and i in (self.pad_token_id, self.bos_token_id):
                continue
            out.append(self.target_vocab[i])
        return out

    def decode(self, ids: Iterable[int], lang: str, skip_special_tokens: bool = True) -> str:
        """Target ids to text: stops at ``</s>``; ``<unk>`` stays visible as ``<unk>``; see :func:`detokenize`."""
        return detokenize(self.convert_ids_to_tokens(ids, skip_special_tokens), lang)

    def batch_decode(
        self, sequences: torch.Tensor | Sequence[Sequence[int]], langs: Sequence[str] | str = "en", **kw
    ) -> list[str]:
        langs = [langs] * len(sequences) if isinstance(langs, str) else list(langs)
        return [
            self.decode(s.tolist() if torch.is_tensor(s) else s, lang, **kw)
            for s, lang in zip(sequences, langs)
        ]

    # ------------------------------------------------------------------------------------- save / load
    def save_pretrained(self, path: str | Path) -> None:
        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        data = {
            "lowercase": self.lowercase,
            "shared": self.shared,
            "source": self.source_vocab,
            "target": self.target_vocab,
            "target_counts": self.target_counts,
        }
        (p / "vocab.json").write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def from_pretrained(cls, path: str | Path) -> WordTokenizer:
        f = Path(path) / "vocab.json"
        if not f.is_file():
            raise MultimsdError(f"{path}: no vocab.json (not a directory saved by the LSTM model)")
        d = json.loads(f.read_text(encoding="utf-8"))
        return cls(d["source"], d["target"], lowercase=d["lowercase"], target_counts=d["target_counts"])


def detokenize(tokens: Sequence[str], lang: str) -> str:
    """Join word tokens back into text (heuristic; the metrics re-tokenise anyway).

    Japanese and Chinese: no spaces, except between two ASCII words. Other languages: spaces, then no space
    before closing punctuation or after opening brackets, and ``' - . , /`` between two word characters
    rejoin their neighbours (``don't``, ``l'asthme``, ``anti-inflammatory``, ``2.5``).
    """
    if lang in _UNSPACED:
        out = ""
        for t in tokens:
            if out and _ASCII_WORD.match(t) and _ASCII_WORD.match(out[-1]):
                out += " "
            out += t
        return out
    text = " ".join(tokens)
    text = re.sub(r" ([.,;:!?%)\]}»])", r"\1", text)
    text = re.sub(r"([(\[{«¿¡]) ", r"\1", text)
    text = re.sub(r"(\w) ?(['’\-/]) ?(?=\w)", r"\1\2", text)
    text = re.sub(r"(\d)([.,]) (?=\d)", r"\1\2", text)
    return text


# =============================================================================================== the model
@dataclass
class LstmSeq2SeqConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    embedding_size: int = 1024
    hidden_size: int = 1024
    encoder_layers: int = 3
    decoder_layers: int = 3
    attention: str = "bahdanau"  # bahdanau (additive) | luong (general)
    input_feeding: bool = True
    dropout: float = 0.0
    pad_token_id: int = 0
    bos_token_id: int = 2
    eos_token_id: int = 3

    def __post_init__(self) -> None:
        if self.attention not in ATTENTIONS:
            raise MultimsdError(f"attention={self.attention!r}: choose {' or '.join(ATTENTIONS)}")
        sizes = ("embedding_size", "hidden_size", "encoder_layers", "decoder_layers")
        bad = [f"{k}={getattr(self, k)}" for k in sizes if getattr(self, k) < 1]
        if bad:
            raise MultimsdError(f"LSTM sizes must be >= 1: {', '.join(bad)}")
        if not 0 <= self.dropout < 1:
            raise MultimsdError(f"dropout={self.dropout}: must be in [0, 1)")


class LstmSeq2SeqOutput:
    """Like a 🤗 ``Seq2SeqLMOutput``: ``.hidden`` (``[B, T, H]``, before the output projection) and ``.logits``.

    ``.logits`` (``[B, T, V]``, full softmax) is computed on first access only, so training with the sampled
    softmax never materialises the full-vocabulary logits.
    """

    def __init__(self, hidden: torch.Tensor, projection: nn.Linear):
        self.hidden = hidden
        self._projection = projection

    @functools.cached_property
    def logits(self) -> torch.Tensor:
        return self._projection(self.hidden)


@dataclass
class _Memory:
    """What the decoder attends to: encoder outputs (values), their projections (keys), the source mask."""

    values: torch.Tensor  # [B, S, 2H]
    keys: torch.Tensor  # [B, S, H]
    mask: torch.Tensor  # [B, S] bool, True = a real token

    def repeat(self, k: int) -> _Memory:
        return _Memory(*(t.repeat_interleave(k, dim=0) for t in (self.values, self.keys, self.mask)))


State = tuple[torch.Tensor, torch.Tensor]  # LSTM (h, c), each [layers, B, H]


class LstmSeq2Seq(nn.Module):
    """Embeddings, a BiLSTM encoder, an attentional LSTM decoder and an output projection (see the module)."""

    def __init__(self, config: LstmSeq2SeqConfig):
        super().__init__()
        self.config = c = config
        H, E = c.hidden_size, c.embedding_size
        self.src_embed = nn.Embedding(c.src_vocab_size, E, padding_idx=c.pad_token_id)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, E, padding_idx=c.pad_token_id)
        inter = c.dropout if c.encoder_layers > 1 else 0.0  # nn.LSTM warns about dropout with one layer
        self.encoder = nn.LSTM(E, H, c.encoder_layers, batch_first=True, bidirectional=True, dropout=inter)
        self.bridge_h = nn.Linear(2 * H, H)
        self.bridge_c = nn.Linear(2 * H, H)
        inter = c.dropout if c.decoder_layers > 1 else 0.0
        self.decoder = nn.LSTM(
            E + (H if c.input_feeding else 0), H, c.decoder_layers, batch_first=True, dropout=inter
        )
        self.attn_key = nn.Linear(2 * H, H, bias=False)
        if c.attention == "bahdanau":
            self.attn_query = nn.Linear(H, H)
            self.attn_v = nn.Linear(H, 1, bias=False)
        self.combine = nn.Linear(3 * H, H)  # [decoder output; context (2H)] -> attentional output
        self.output_projection = nn.Linear(H, c.tgt_vocab_size)
        self.drop = nn.Dropout(c.dropout)

    # ------------------------------------------------------------------------------------ encoder side
    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[_Memory, State]:
        c = self.config
        B, H = input_ids.shape[0], c.hidden_size
        mask = attention_mask.bool()
        lengths = mask.sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(
            self.drop(self.src_embed(input_ids)), lengths, batch_first=True, enforce_sorted=False
        )
        out, (h, cell) = self.encoder(packed)
        values, _ = pad_packed_sequence(out, batch_first=True, total_length=input_ids.shape[1])

        def per_layer(s: torch.Tensor) -> torch.Tensor:  # [2L, B, H] -> [L, B, 2H] ([fwd; bwd] per layer)
            return s.view(c.encoder_layers, 2, B, H).permute(0, 2, 1, 3).reshape(c.encoder_layers, B, 2 * H)

        pick = [min(layer, c.encoder_layers - 1) for layer in range(c.decoder_layers)]
        h0 = torch.tanh(self.bridge_h(per_layer(h)[pick])).contiguous()
        c0 = self.bridge_c(per_layer(cell)[pick]).contiguous()
        return _Memory(values, self.attn_key(values), mask), (h0, c0)

    # ------------------------------------------------------------------------------------ decoder side
    def _attend(self, query: torch.Tensor, mem: _Memory) -> torch.Tensor:
        """Attentional output ``o_t = tanh(W_c [q_t; c_t])`` for queries ``[B, T, H]``."""
        if self.config.attention == "bahdanau":
            scores = self.attn_v(torch.tanh(mem.keys[:, None] + self.attn_query(query)[:, :, None])).squeeze(
                -1
            )
        else:
            scores = query @ mem.keys.transpose(1, 2)  # [B, T, S]
        scores = scores.masked_fill(~mem.mask[:, None, :], float("-inf"))
        context = torch.softmax(scores, dim=-1) @ mem.values  # [B, T, 2H]
        return self.drop(torch.tanh(self.combine(torch.cat([query, context], dim=-1))))

    def _step(
        self, y_emb: torch.Tensor, state: State, feed: torch.Tensor, mem: _Memory
    ) -> tuple[torch.Tensor, State]:
        """One decoder time step: word embedding ``[B, E]`` (+ previous attentional output) -> ``o_t [B, H]``."""
        x = torch.cat([y_emb, feed], dim=-1) if self.config.input_feeding else y_emb
        out, state = self.decoder(x[:, None], state)
        return self._attend(out, mem)[:, 0], state

    def shift_right(self, labels: torch.Tensor) -> torch.Tensor:
        """Decoder inputs for teacher forcing: ``<s>`` then the labels, ``-100`` replaced by ``<pad>``."""
        c = self.config
        dec = labels.new_full(labels.shape, c.pad_token_id)
        dec[:, 0] = c.bos_token_id
        dec[:, 1:] = labels[:, :-1].masked_fill(labels[:, :-1] == -100, c.pad_token_id)
        return dec

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
    ) -> LstmSeq2SeqOutput:
        """Teacher-forced decoder outputs; ``labels[:, t]`` is the target of ``logits[:, t]`` (no shift)."""
        if attention_mask is None:
            attention_mask = input_ids != self.config.pad_token_id
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("give labels or decoder_input_ids")
            decoder_input_ids = self.shift_right(labels)
        mem, state = self.encode(input_ids, attention_mask)
        emb = self.drop(self.tgt_embed(decoder_input_ids))
        if self.config.input_feeding:
            feed = emb.new_zeros(emb.shape[0], self.config.hidden_size)
            outs = []
            for t in range(emb.shape[1]):
                feed, state = self._step(emb[:, t], state, feed, mem)
                outs.append(feed)
            hidden = torch.stack(outs, dim=1)
        else:
            out, _ = self.decoder(emb, state)
            hidden = self._attend(out, mem)
        return LstmSeq2SeqOutput(hidden, self.output_projection)

    # -------------------------------------------------------------------------------------- decoding
    def _next_logits(self, o: torch.Tensor) -> torch.Tensor:
        logits = self.output_projection(o).float()
        # <pad> and <s> are never outputs; masking them keeps an untrained model from emitting them.
        logits[:, [self.config.pad_token_id, self.config.bos_token_id]] = float("-inf")
        return logits

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        max_new_tokens: int = 50,
        num_beams: int = 1,
        length_penalty: float = 1.0,
    ) -> torch.LongTensor:
        """``LongTensor[B, L]`` of target ids (``L <= max_new_tokens``), ``</s>`` then ``<pad>`` after an end."""
        if attention_mask is None:
            attention_mask = input_ids != self.config.pad_token_id
        if num_beams <= 1:
            return self._greedy(input_ids, attention_mask, max_new_tokens)
        return self._beam_search(input_ids, attention_mask, max_new_tokens, num_beams, length_penalty)

    def _greedy(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, max_new_tokens: int
    ) -> torch.Tensor:
        c = self.config
        mem, state = self.encode(input_ids, attention_mask)
        B = input_ids.shape[0]
        y = input_ids.new_full((B,), c.bos_token_id)
        feed = mem.values.new_zeros(B, c.hidden_size)
        done = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
        out = []
        for _ in range(max_new_tokens):
            feed, state = self._step(self.tgt_embed(y), state, feed, mem)
            y = self._next_logits(feed).argmax(-1).masked_fill(done, c.pad_token_id)
            out.append(y)
            done |= y == c.eos_token_id
            if done.all():
                break
        return torch.stack(out, dim=1) if out else input_ids.new_zeros(B, 0)

    def _beam_search(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        max_new_tokens: int,
        K: int,
        length_penalty: float,
    ) -> torch.Tensor:
        """Batched beam search: ``K`` hypotheses per sentence, scored by the sum of log-probabilities.

        Finished hypotheses stay in the beam (continued by ``<pad>`` at log-probability 0) and compete with
        the running ones; the search stops when every hypothesis has finished or after ``max_new_tokens``.
        The final choice divides each score by ``length ** length_penalty``.
        """
        c = self.config
        B, dev = input_ids.shape[0], input_ids.device
        mem, (h, cell) = self.encode(input_ids, attention_mask)
        mem, state = mem.repeat(K), (h.repeat_interleave(K, dim=1), cell.repeat_interleave(K, dim=1))
        scores = torch.zeros(B, K, device=dev)
        scores[:, 1:] = float("-inf")  # K identical beams at the start: expand the first one only
        tokens = input_ids.new_zeros(B * K, 0)
        finished = torch.zeros(B * K, dtype=torch.bool, device=dev)
        y = input_ids.new_full((B * K,), c.bos_token_id)
        feed = mem.values.new_zeros(B * K, c.hidden_size)
        base = (torch.arange(B, device=dev) * K)[:, None]
        for _ in range(max_new_tokens):
            feed, state = self._step(self.tgt_embed(y), state, feed, mem)
            logp = torch.log_softmax(self._next_logits(feed), dim=-1)
            logp[finished] = float("-inf")
            logp[finished, c.pad_token_id] = 0.0
            V = logp.shape[-1]
            top, idx = (scores.view(-1, 1) + logp).view(B, K * V).topk(K, dim=1)
            origin = (base + idx // V).view(-1)
            y = (idx % V).view(-1)
            tokens = torch.cat([tokens[origin], y[:, None]], dim=1)
            state = (state[0][:, origin], state[1][:, origin])
            feed, finished = feed[origin], finished[origin] | (y == c.eos_token_id)
            scores = top
            if finished.all():
                break
        lengths = (tokens != c.pad_token_id).sum(1).clamp(min=1).view(B, K).float()
        best = (scores / lengths**length_penalty).argmax(dim=1)
        return tokens.view(B, K, -1)[torch.arange(B, device=dev), best]

    # ------------------------------------------------------------------------------------- save / load
    def save_pretrained(self, path: str | Path, **_: object) -> None:
        """``config.json`` + ``model.safetensors`` (extra keyword arguments, e.g. 🤗's ``save_function``, are ignored)."""
        from safetensors.torch import save_file

        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        (p / "config.json").write_text(
            json.dumps({"model_type": MODEL_TYPE, **asdict(self.config)}, indent=2) + "\n", encoding="utf-8"
        )
        save_file(
            {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()},
            str(p / "model.safetensors"),
        )

    @classmethod
    def from_pretrained(cls, path: str | Path) -> LstmSeq2Seq:
        from safetensors.torch import load_file

        p = Path(path)
        try:
            cfg = json.loads((p / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise MultimsdError(f"{p}: no readable config.json of an LSTM model") from None
        if cfg.pop("model_type", None) != MODEL_TYPE:
            raise MultimsdError(f"{p}: not an LSTM seq2seq model directory (model_type != {MODEL_TYPE!r})")
        model = cls(LstmSeq2SeqConfig(**cfg))
        model.load_state_dict(load_file(str(p / "model.safetensors")))
        return model
