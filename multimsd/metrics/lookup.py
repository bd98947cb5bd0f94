"""One cache of term dictionaries and novel-word spans, with the evaluation's settings: what the term check of
``multimsd simplify`` looks for, and what its ``--format`` view and the studio's outputs and simplify views mark.

A :class:`TermLookup` is built from explicit settings: the terms directory (``terms.dir``; None: the bundled
demo lists) and whether terms are looked up at all (``terms.enabled``, ``--terms none``), ``metrics.lowercase``
and the per-language ``tokenizer`` names of the novelty metric, and how a terms directory that is not there is
reported (``missing``: one error line naming it, as ``--terms`` is; None: no term list, silently, as the studio
highlights without one). :meth:`TermLookup.of_evaluation` reads them from an evaluation's config (a run's
``evaluation/evaluate_config.yaml``, :func:`evaluation_settings`), the evaluation's defaults
(:class:`multimsd.config.MetricsConfig`, :class:`~multimsd.config.TermsConfig`) where it says nothing.
Each language's dictionary is loaded once (:func:`multimsd.metrics.terms.dictionary_for`), and a note per
language used says what it is (:func:`~multimsd.metrics.terms.dictionary_note`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from multimsd.errors import MultimsdError

EVALUATION_CONFIG = (
    Path("evaluation") / "evaluate_config.yaml"
)  # a run's evaluation config (evaluation.report)


def evaluation_settings(run_dir: str | Path) -> dict:
    """The config of the evaluation of the run in ``run_dir`` (``evaluation/evaluate_config.yaml``) as a plain
    mapping; {} where there is none. A damaged one only costs its settings: {} (the defaults are used)."""
    p = Path(run_dir).expanduser() / EVALUATION_CONFIG
    if not p.is_file():
        return {}
    from omegaconf import OmegaConf

    try:
        cfg = OmegaConf.to_container(OmegaConf.load(p), resolve=False)
    except Exception:  # noqa: BLE001 (a damaged config: the defaults)
        return {}
    return cfg if isinstance(cfg, dict) else {}


class TermLookup:
    """``lang -> TermDictionary or None`` (call it, or :meth:`dictionary`), each language's loaded once; the
    notes on the lists used; term spans and novel-word spans with the evaluation's lowercasing and tokenizers."""

    def __init__(
        self,
        terms_dir: str | Path | None = None,
        use_terms: bool = True,
        lowercase: bool = True,
        tokenizers: Mapping[str, str] | None = None,
        missing: str | None = "terms directory",
    ):
        self.terms_dir, self.use_terms, self.lowercase = terms_dir, use_terms, lowercase
        self.tokenizers = dict(tokenizers or {})
        self.missing = missing
        self._found: dict[str, tuple] = {}

    @classmethod
    def of_evaluation(cls, cfg: Mapping | None = None, **explicit) -> TermLookup:
        """The settings of the evaluation config ``cfg`` (a plain mapping: ``metrics.lowercase``, ``tokenizer``,
        ``terms.enabled``, ``terms.dir``; None or {}: the evaluation's defaults), ``explicit`` keyword settings of
        :class:`TermLookup` over them (``missing`` among them)."""
        from multimsd.config import MetricsConfig, TermsConfig

        cfg = cfg or {}
        metrics, terms = cfg.get("metrics") or {}, cfg.get("terms") or {}
        settings = {
            "terms_dir": terms.get("dir", TermsConfig.dir),
            "use_terms": terms.get("enabled", TermsConfig.enabled) is not False,
            "lowercase": bool(metrics.get("lowercase", MetricsConfig.lowercase)),
            "tokenizers": dict(cfg.get("tokenizer") or {}),
        }
        return cls(**{**settings, **explicit})

    def found(self, lang: str) -> tuple:
        """(dictionary, its file) of ``lang``: (None, None) without terms or a list for the language."""
        if lang not in self._found:
            from multimsd.metrics.terms import dictionary_for

            found: tuple = (None, None)
            if self.use_terms and self.missing is None:
                with contextlib.suppress(MultimsdError):  # no list there: no term marks, silently
                    found = dictionary_for(lang, self.terms_dir)
            elif self.use_terms:
                found = dictionary_for(lang, self.terms_dir, what=self.missing)
            self._found[lang] = found
        return self._found[lang]

    def dictionary(self, lang: str):
        return self.found(lang)[0]

    __call__ = (
        dictionary  # ``terms(lang)`` of the safety checks (multimsd.training.system.simplify_sentences)
    )

    def note(self, lang: str) -> str:
        """What the term list of ``lang`` is (the bundled ones say they are a demo)."""
        from multimsd.metrics.terms import dictionary_note

        return dictionary_note(lang, *self.found(lang))

    def notes(self, langs: Iterable[str] | None = None) -> list[str]:
        """A note per language looked up so far (of ``langs`` only, when given), in order of the language."""
        wanted = None if langs is None else set(langs)
        return [self.note(lang) for lang in sorted(self._found) if wanted is None or lang in wanted]

    def term_spans(self, lang: str, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, term)`` of the dictionary's terms in ``text``; none without a dictionary."""
        d = self.dictionary(lang)
        return [] if d is None else list(d.find_spans(text))

    def novel_spans(self, lang: str, source: str, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of the words of ``text`` that are not in ``source``, as the novelty metric tokenises
        and lowercases them (:func:`multimsd.metrics.novelty.novel_spans`); none with an unknown tokenizer."""
        from multimsd.metrics.novelty import novel_spans
        from multimsd.metrics.tokenize import resolve_tokenizer

        try:
            tok = resolve_tokenizer(lang, self.tokenizers.get(lang))
        except MultimsdError:
            return []
        return novel_spans(source, text, lowercase=self.lowercase, tokenizer=tok)


__all__ = ["EVALUATION_CONFIG", "TermLookup", "evaluation_settings"]
