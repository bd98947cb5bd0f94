"""Corpus statistics in the shape of MultiMSD's Table 4."""

from __future__ import annotations

from collections import Counter, defaultdict

from multimsd import LANGUAGES
from multimsd.io import ArticlePair
from multimsd.split import SPLITS
from multimsd.text import word_tokenize


def corpus_statistics(
    pairs: list[ArticlePair],
    docs: list[tuple[list[str], list[str]]],
    rows: list[dict],
    assignment: dict[str, str],
) -> dict:
    """Per-language statistics of the aligned corpus (Table 4) plus the input's sentence counts."""
    langs = sorted({p.lang for p in pairs}, key=LANGUAGES.index)
    per_lang: dict[str, dict] = {}
    articles = Counter(p.lang for p in pairs)
    sentences = defaultdict(lambda: [0, 0])
    for p, (c, s) in zip(pairs, docs):
        sentences[p.lang][0] += len(c)
        sentences[p.lang][1] += len(s)
    per_rows = pair_statistics(rows, langs)
    for lang in langs:
        per_lang[lang] = {
            "article_pairs": articles[lang],
            "complex_sentences_in": sentences[lang][0],
            "simple_sentences_in": sentences[lang][1],
            **per_rows[lang],
        }
    split_articles = Counter(assignment.values())
    return {
        "languages": langs,
        "per_language": per_lang,
        "article_split": {s: split_articles.get(s, 0) for s in SPLITS},
        "total_sentence_pairs": len(rows),
    }


def statistics_markdown(stats: dict) -> str:
    """Table 4 as Markdown: one column per language; complex / simple in one cell where the paper stacks them."""
    langs = stats["languages"]
    pl = stats["per_language"]

    def row(label: str, fn) -> str:
        return f"| {label} | " + " | ".join(fn(pl[lang]) for lang in langs) + " |"

    lines = [
        "| | " + " | ".join(langs) + " |",
        "|---|" + "---:|" * len(langs),
        row("Article pairs", lambda e: f"{e['article_pairs']:,}"),
        row(
            "Sentences (complex / simple)",
            lambda e: f"{e['complex_sentences_in']:,} / {e['simple_sentences_in']:,}",
        ),
        row("Sentence pairs", lambda e: f"{e['sentence_pairs']:,}"),
        row("Vocab size (complex / simple)", lambda e: f"{e['vocab_complex']:,} / {e['vocab_simple']:,}"),
        row(
            "Avg. characters (c / s)", lambda e: f"{e['avg_chars_complex']:.2f} / {e['avg_chars_simple']:.2f}"
        ),
        row("Avg. words (c / s)", lambda e: f"{e['avg_words_complex']:.2f} / {e['avg_words_simple']:.2f}"),
        row("Train", lambda e: f"{e['train']:,}"),
        row("Valid", lambda e: f"{e['validation']:,}"),
        row("Test", lambda e: f"{e['test']:,}"),
    ]
    a = stats["article_split"]
    lines.append("")
    lines.append(
        f"Article ids per split (same in every language): train {a['train']}, "
        f"validation {a['validation']}, test {a['test']}. Words: UniDic morphemes (ja), Han characters (zh), "
        f"regex words and punctuation (others)."
    )
    return "\n".join(lines)


def pair_statistics(rows: list[dict], langs: list[str]) -> dict[str, dict]:
    """Per language: sentence pairs, vocabulary and mean sentence length per side, pairs per split."""
    by_lang = defaultdict(list)
    for r in rows:
        by_lang[r["lang"]].append(r)
    out: dict[str, dict] = {}
    for lang in langs:
        lrows = by_lang[lang]
        entry: dict = {"sentence_pairs": len(lrows)}
        for side in ("complex", "simple"):
            texts = [r[side] for r in lrows]
            words = [word_tokenize(t, lang) for t in texts]
            n = max(len(texts), 1)
            entry[f"vocab_{side}"] = len({w for ws in words for w in ws})
            entry[f"avg_chars_{side}"] = sum(len(t) for t in texts) / n
            entry[f"avg_words_{side}"] = sum(len(ws) for ws in words) / n
        for split in SPLITS:
            entry[split] = sum(1 for r in lrows if r["split"] == split)
        out[lang] = entry
    return out
