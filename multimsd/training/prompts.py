"""The simplification instruction of the MultiMSD paper (section 5.2), in all nine languages, and chat prompts.

The English text is the paper's own wording (grammar included); the other eight are our translations.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from multimsd.errors import MultimsdError

INSTRUCTIONS: dict[str, str] = {
    "en": "You are an expert in paraphrasing complex sentence into simple sentence. Please rephrase the "
    "following sentence into simple sentence while keeping their original meaning.",
    "de": "Sie sind Experte darin, komplexe Sätze in einfache Sätze umzuformulieren. Bitte formulieren Sie "
    "den folgenden Satz in einen einfachen Satz um und behalten Sie dabei seine ursprüngliche Bedeutung bei.",
    "es": "Eres un experto en parafrasear oraciones complejas como oraciones sencillas. Reformula la "
    "siguiente oración como una oración sencilla, manteniendo su significado original.",
    "fr": "Vous êtes expert dans la reformulation de phrases complexes en phrases simples. Veuillez "
    "reformuler la phrase suivante en une phrase simple tout en conservant son sens d'origine.",
    "it": "Sei un esperto nel parafrasare frasi complesse in frasi semplici. Riformula la frase seguente in "
    "una frase semplice mantenendone il significato originale.",
    "ja": "あなたは複雑な文を平易な文に言い換える専門家です。次の文を、元の意味を保ったまま平易な文に言い換えてください。",
    "pt": "Você é especialista em parafrasear frases complexas como frases simples. Reescreva a frase a "
    "seguir como uma frase simples, mantendo o seu significado original.",
    "ru": "Вы эксперт по перефразированию сложных предложений в простые. Перефразируйте следующее "
    "предложение простым языком, сохранив его исходный смысл.",
    "zh": "你是将复杂句子改写为简单句子的专家。请将下面的句子改写成简单的句子，同时保持其原意。",
}


def instruction(lang: str) -> str:
    try:
        return INSTRUCTIONS[lang]
    except KeyError:
        raise MultimsdError(
            f"no instruction for language {lang!r} (have {', '.join(INSTRUCTIONS)})"
        ) from None


def chat_messages(
    complex_sentence: str,
    lang: str,
    simple_sentence: str | None = None,
    shots: Sequence[tuple[str, str]] = (),
) -> list[dict[str, str]]:
    """Chat messages for one example: the instruction and the sentence as the user turn.

    ``shots`` (in-context examples, complex -> simple) come first as earlier user/assistant turns, so the
    model sees the exact format it must answer in. With ``simple_sentence`` the assistant answer is
    appended (training); without it the prompt ends at the user turn (generation).
    """
    messages: list[dict[str, str]] = []
    for c, s in shots:
        messages.append({"role": "user", "content": f"{instruction(lang)}\n\n{c}"})
        messages.append({"role": "assistant", "content": s})
    messages.append({"role": "user", "content": f"{instruction(lang)}\n\n{complex_sentence}"})
    if simple_sentence is not None:
        messages.append({"role": "assistant", "content": simple_sentence})
    return messages


def sample_shots(pool: Sequence[tuple[str, str]], k: int, seed: int) -> list[tuple[str, str]]:
    """``k`` seeded random (complex, simple) examples from ``pool`` (the paper: 5 validation examples)."""
    if k > len(pool):
        raise MultimsdError(f"{k}-shot prompting needs {k} examples, the pool has {len(pool)}")
    return random.Random(seed).sample(list(pool), k)
