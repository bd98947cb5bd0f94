"""One interface for every sentence aligner, and one registry the alignment stage dispatches through.

An aligner turns article pairs into *candidate* sentence pairs (:class:`~multimsd.alignment.match.Match`)
without a threshold: θ (``aligner.threshold``) is applied afterwards as a filter on ``Match.score``, by the
stage in align mode and over a whole grid in gold mode. So one aligner serves both modes unchanged.

To add one: subclass :class:`Aligner`, give it a ``name`` and a :meth:`Aligner.score_article` (or a bulk
:meth:`Aligner.candidates`), and register it. Options of its own are a dataclass that extends
:class:`~multimsd.config.AlignerConfig`, named as its ``options``; registering the aligner registers them as
the config group option ``aligner=<name>`` (Hydra's ConfigStore), so they are typed and a misspelt one fails at
start-up::

    @dataclass
    class MyOptions(AlignerConfig):
        window: int = 2                       # aligner.window=3 on the command line
        threshold_grid: list[float] = ...     # its θ grid for gold mode, over its own score

    @register_aligner
    class MyAligner(Aligner):
        name = "mine"
        options = MyOptions

        def score_article(self, complex_side, simple_side, lang, cfg):
            window = self.settings(cfg).window
            ...

``align.py aligner=mine plugins=[my_module]`` then uses it in align mode, and ``gold.methods=[mine]`` in gold
mode (with its default options unless ``aligner=mine``). Options are registered when the module is imported,
so a plugin with options is named on the command line (``plugins=[my_module]``, read before the config is
composed) or installed with a ``multimsd.plugins`` entry point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from omegaconf import DictConfig, OmegaConf

from multimsd.config import AlignerConfig
from multimsd.errors import MultimsdError

if TYPE_CHECKING:
    from multimsd.alignment.match import Match
    from multimsd.config import AlignConfig
    from multimsd.gold import GoldDoc

# What an aligner reads: each side's sentence embeddings (L2-normalised rows, computed and cached by the stage)
# or the raw sentences.
Input = Literal["embeddings", "sentences"]
# Modes the stage itself runs; every other ``mode=`` belongs to an aligner (Aligner.modes).
STAGE_MODES = ("align", "gold")


class Aligner:
    """A sentence aligner. Subclasses set ``name`` and override :meth:`score_article` or :meth:`candidates`."""

    name: str = ""
    # The dataclass of its options (aligner=<name>): AlignerConfig, or a subclass of it with the aligner's own
    # keys and defaults (its threshold, its θ grid).
    options: type[AlignerConfig] = AlignerConfig
    # "embeddings": score_article / candidates receive (complex vectors, simple vectors) per article pair;
    # "sentences": (complex sentences, simple sentences). The stage only loads an embedder when an aligner it
    # runs needs embeddings.
    needs: Input = "sentences"
    # True: its Matches may be n:m blocks (Match.n_c / n_s > 1; aligner=nm). Gold scoring counts exact items.
    emits_n_to_m: bool = False
    # True: θ keeps ``score > θ`` (the MultiMSD authors' rule for their cosine aligners); False: ``score >= θ``.
    strict_threshold: bool = False
    # Texts a "sentences" aligner ran through an encoder itself in its last candidates() call (aligner=nm
    # embeds blocks of sentences); the stage reports it as ``sentences_encoded`` (0 = all from the cache).
    n_encoded: int = 0

    def score_article(self, complex_side: Any, simple_side: Any, lang: str, cfg: AlignConfig) -> list[Match]:
        """Threshold-free candidates of one article pair, sorted by (complex index, simple index)."""
        raise NotImplementedError(f"aligner {self.name!r} implements neither score_article nor candidates")

    def candidates(
        self,
        docs: Sequence[tuple[Any, Any]],
        langs: Sequence[str],
        cfg: AlignConfig,
        *,
        gold_train: list[GoldDoc] | None = None,
        min_score: float | None = None,
    ) -> list[list[Match]]:
        """Threshold-free candidates of every article pair (one list per pair, in the order of ``docs``).

        Override this instead of :meth:`score_article` when work is shared across articles (a model trained
        once, bulk scoring). ``gold_train``: in gold mode, the validation half of the gold, which a trainable
        aligner may learn from (the test half is never passed). ``min_score``: in align mode θ — an aligner may
        drop candidates below it early to save memory; None keeps every candidate.
        """
        return [self.score_article(c, s, lang, cfg) for (c, s), lang in zip(docs, langs)]

    def keeps(self, score: float, threshold: float) -> bool:
        """Whether θ keeps a candidate of this score (align mode and every point of the gold sweep)."""
        return score > threshold if self.strict_threshold else score >= threshold

    def default_options(self) -> AlignerConfig:
        """Its options with their defaults: the config group option ``aligner=<name>``."""
        return self.options(method=self.name)

    def settings(self, cfg: AlignConfig) -> Any:
        """Its options in this run: ``cfg.aligner`` when that holds them (``aligner=<name>``, or an aligner of
        the same options class: symmetric and asymmetric share theirs), else its defaults with the run's θ
        (another method of ``gold.methods``, or ``aligner.method=<name>`` set without ``aligner=<name>``)."""
        node = cfg.aligner
        kind = OmegaConf.get_type(node) if isinstance(node, DictConfig) else type(node)
        if kind is self.options:
            return node
        return dataclasses.replace(self.default_options(), threshold=node.threshold)

    def thresholds(self, cfg: AlignConfig) -> list[float]:
        """The θ grid gold mode tunes over: its options' ``threshold_grid``."""
        return list(self.settings(cfg).threshold_grid)

    def check_threshold(self, threshold: float) -> None:
        """Raise :class:`MultimsdError` if ``threshold`` can never be a sensible θ for this score."""

    def check_options(self, cfg: AlignConfig) -> None:
        """Raise :class:`MultimsdError` for a bad option of this aligner; called at start-up, before any work."""

    def modes(self) -> dict[str, Callable[[AlignConfig], dict]]:
        """Extra ``mode=`` values this aligner owns (e.g. training its model), each run with the config."""
        return {}


ALIGNERS: dict[str, Aligner] = {}

A = TypeVar("A", bound="Aligner | type[Aligner]")


def register_aligner(aligner: A, *, replace: bool = False) -> A:
    """Register an aligner instance, or an :class:`Aligner` subclass (instantiated without arguments).

    Usable as a class decorator; returns its argument unchanged. A name (or an extra mode) that is already
    taken is an error unless ``replace=True``: a plugin silently shadowing a built-in would be hard to notice.
    """
    instance = aligner() if isinstance(aligner, type) else aligner
    if not isinstance(instance, Aligner) or not instance.name:
        raise MultimsdError(f"register_aligner: {aligner!r} is not an Aligner with a name")
    opts = instance.options
    if not (isinstance(opts, type) and issubclass(opts, AlignerConfig) and dataclasses.is_dataclass(opts)):
        raise MultimsdError(
            f"aligner {instance.name!r}: options={opts!r}; use a dataclass that extends multimsd.config.AlignerConfig"
        )
    if instance.needs not in ("embeddings", "sentences"):
        raise MultimsdError(
            f"aligner {instance.name!r}: needs={instance.needs!r}; choose embeddings or sentences"
        )
    if instance.name in ALIGNERS and not replace:
        raise MultimsdError(f"an aligner named {instance.name!r} is already registered")
    taken = {mode for a in ALIGNERS.values() if a.name != instance.name for mode in a.modes()}
    for mode in instance.modes():
        if mode in STAGE_MODES or mode in taken:
            raise MultimsdError(f"aligner {instance.name!r}: mode={mode} is already taken")
    ALIGNERS[instance.name] = instance
    _store_options(instance)
    return aligner


def _store_options(aligner: Aligner) -> None:
    """``aligner=<name>``: the aligner's options as a config group option of Hydra's ConfigStore."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group="aligner", name=aligner.name, node=aligner.default_options())


def registered_names() -> str:
    return ", ".join(sorted(ALIGNERS))


def get_aligners(names: Sequence[str], key: str = "aligner.method") -> list[Aligner]:
    """The registered aligners called ``names``; unknown names are one error that lists the registered ones."""
    unknown = [repr(n) for n in names if n not in ALIGNERS]
    if unknown:
        raise MultimsdError(
            f"{key}: unknown aligner method{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(registered: {registered_names()}; an aligner of your own also needs plugins=[its_module])"
        )
    return [ALIGNERS[n] for n in names]


def get_aligner(name: str) -> Aligner:
    """The registered aligner called ``name`` (``aligner.method``)."""
    return get_aligners([name])[0]


def check_threshold(method: str, threshold: float) -> None:
    """``aligner.method`` must be registered and ``threshold`` valid for its score."""
    get_aligner(method).check_threshold(threshold)


def check_unit_threshold(name: str, threshold: float) -> None:
    """θ check of aligners whose score is a probability or a mean similarity, both in [0, 1]."""
    if not 0.0 <= threshold <= 1.0:
        raise MultimsdError(f"aligner.threshold={threshold}: the {name} aligner's score lies in [0, 1]")


def all_modes() -> dict[str, Callable[[AlignConfig], dict]]:
    """Every aligner-owned ``mode=`` and the function that runs it."""
    return {mode: run for a in ALIGNERS.values() for mode, run in a.modes().items()}


def aligner_candidates(
    aligner: Aligner,
    inputs: Sequence[tuple[Any, Any]],
    langs: Sequence[str],
    cfg: AlignConfig,
    **kwargs: Any,
) -> list[list[Match]]:
    """``aligner.candidates(...)``, checked: a plugin's off-by-one should be one clear error, not a bad corpus."""
    out = aligner.candidates(inputs, langs, cfg, **kwargs)
    if len(out) != len(inputs):
        raise MultimsdError(
            f"aligner {aligner.name!r} returned candidates for {len(out)} article pairs, expected {len(inputs)}"
        )
    for (c_side, s_side), matches in zip(inputs, out):
        for m in matches:
            if not (0 <= m.i <= m.i + m.n_c <= len(c_side) and 0 <= m.j <= m.j + m.n_s <= len(s_side)):
                raise MultimsdError(
                    f"aligner {aligner.name!r} returned pair ({m.i}, {m.j}) for an article pair of "
                    f"{len(c_side)} x {len(s_side)} sentences"
                )
    return out
