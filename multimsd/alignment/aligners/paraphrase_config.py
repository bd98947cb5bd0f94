"""The options of the Siamese BiLSTM paraphrase identifier (``aligner.lexical.paraphrase.*``).

Apart from :mod:`multimsd.alignment.aligners.paraphrase` because that module imports torch at the top, and the
lexical aligner's options (which hold these) must be importable without it.
"""

from __future__ import annotations

from dataclasses import dataclass


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
