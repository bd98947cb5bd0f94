"""Which languages a run's systems train (and so are evaluated) on: the languages the run aligned, unless told.

``train.py`` alone defaults to English (``data.languages: [en]``, one model per language). Inside ``multimsd
run`` that default would ask a Spanish corpus for English pairs and fail after the alignment, so a system
whose languages were not set on the command line (``train.data.languages=…``, a system's or a sweep's own
``data.languages``) trains on the aligned ones instead. A language the user did set that the run does not
align is one error line naming both keys, before anything runs. The evaluation reads the first system's test
references, so it follows the systems.
"""

from __future__ import annotations

from omegaconf import DictConfig

from multimsd.errors import MultimsdError


def aligned_languages(cfg: DictConfig, align_cfg: DictConfig | None) -> tuple[str, list[str]] | None:
    """(the key that says so, the languages) the run's corpus is in; None when only reading it would tell
    (``pairs.path`` with a ``lang`` column and no ``pairs.lang``)."""
    if cfg.pairs.path:
        return ("pairs.lang", [cfg.pairs.lang]) if cfg.pairs.lang else None
    return ("align.data.languages", list(align_cfg.data.languages))


def _set_on_command_line(overrides: list[str]) -> bool:
    return any(str(o).split("=", 1)[0].lstrip("+~") == "data.languages" for o in overrides)


def _shown(langs: list[str]) -> str:
    return f"[{','.join(langs)}]"


def follow_aligned(
    system: str, train_cfg: DictConfig, overrides: list[str], aligned: tuple[str, list[str]] | None
) -> str | None:
    """The override that makes ``system`` train on the aligned languages, or None when its languages are among
    them (the default run: English out of the nine aligned). Raises one line when the user set languages the
    run does not align, or when a one-language training (``data.mode=mono``) would have several to pick from."""
    if aligned is None:
        return None
    key, langs = aligned
    wanted = list(train_cfg.data.languages)
    missing = [lang for lang in wanted if lang not in langs]
    if not missing:
        return None
    if _set_on_command_line(overrides):
        raise MultimsdError(
            f"system {system!r} trains on train.data.languages={_shown(wanted)}, but the run's corpus is "
            f"{key}={_shown(langs)} (no {', '.join(missing)}): set one to match the other"
        )
    if train_cfg.data.mode == "mono" and len(langs) > 1:
        raise MultimsdError(
            f"system {system!r} trains one language (train.data.mode=mono) and its default "
            f"{_shown(wanted)} is not in {key}={_shown(langs)}: choose one with "
            f"train.data.languages=[{langs[0]}], or train.data.mode=multi for all of them"
        )
    return f"data.languages={_shown(langs)}"
