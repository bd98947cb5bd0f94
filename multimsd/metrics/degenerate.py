"""Degenerate outputs: what a score cannot vouch for (``degenerate.*`` options).

Per system and language the evaluation counts three kinds of output that make a corpus score misleading:

* **empty**: nothing but white space (an all-empty system gets FKGL 0.00, the "best" readability, and a SARI
  of about 30 from the deletions alone);
* **cut**: generation stopped because it reached ``eval.max_new_tokens`` rather than at an end-of-sequence
  token (``…People who have a``). Known only for predictions written by the training stage, which records it
  per output in ``generation.json`` beside the ``<lang>.txt`` files
  (:func:`multimsd.training.predict.write_generation_info`); for any other predictions the share is unknown
  (``null``), never 0. A built-in baseline generates nothing and is never cut;
* **identical to the input**: the output equals its source after white space is normalised (a model that
  copies scores the copy baseline's BLEU). Not counted against a copy baseline (``@identity``), which copies
  by design.

Each share is the count over the language's sentences (``cut``: over the outputs whose flag is known).
A system whose share of any of them is above ``degenerate.max_share`` is *flagged* in that language:
``results.json`` says so (``systems.<name>.<lang>.outputs``, ``degenerate``), ``table.md`` and the run's
report print a warning line, and by the one rule for "best" (:mod:`multimsd.metrics.best`, which reads
:func:`demotions`) none of that system's scores in that language (nor its average / pooled scores) is set in
bold as the best, and the ranking lists it after the systems that are not flagged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from multimsd.config import EvaluateConfig
from multimsd.errors import MultimsdError

__all__ = [
    "GENERATION_INFO",
    "check_degenerate",
    "check_max_safety",
    "degenerate_summary",
    "demotions",
    "flag_text",
    "load_cut_flags",
    "mark_unsafe",
    "output_shares",
    "warning_lines",
]

GENERATION_INFO = "generation.json"
"""The training stage's record of cut outputs, beside a predictions directory's ``<lang>.txt`` files."""

KINDS = ("empty", "cut", "identical")
WHAT = {
    "empty": "empty",
    "cut": "cut at the length cap",
    "identical": "identical to the input",
    "unsafe": "flagged by the safety checks, above select.max_safety",
}
DEMOTIONS = (*KINDS, "unsafe")
"""Why a system cannot be best in a language: its degenerate kinds, and ``unsafe`` (:func:`mark_unsafe`)."""


def check_degenerate(cfg: EvaluateConfig) -> None:
    m = cfg.degenerate.max_share
    if not 0.0 <= m <= 1.0:
        raise MultimsdError(f"degenerate.max_share={m}: must lie between 0 and 1 (a share; e.g. 0.1)")


def _norm(text: str) -> str:
    return " ".join(str(text).split())


def load_cut_flags(spec: str, refs_lang: list[str], langs: list[str]) -> list[bool | None]:
    """Per reference row, whether the system's output was cut at the token cap (None: unknown).

    Read from ``generation.json`` in a predictions directory of ``<lang>.txt`` files; every other kind of
    predictions (and a directory without the file, or a language it lacks) gives None; a baseline False.
    """
    if spec.startswith("@"):  # a built-in baseline generates nothing: never cut
        return [False] * len(refs_lang)
    flags: list[bool | None] = [None] * len(refs_lang)
    p = Path(spec).expanduser()
    if not (p / GENERATION_INFO).is_file():
        return flags
    try:
        info = json.loads((p / GENERATION_INFO).read_text(encoding="utf-8"))
        cut = info["cut"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MultimsdError(f"{p / GENERATION_INFO}: not a generation record ({type(e).__name__})") from None
    for lang in langs:
        values = cut.get(lang) if isinstance(cut, dict) else None
        rows = [i for i, g in enumerate(refs_lang) if g == lang]
        if values is None:
            continue
        if not isinstance(values, list) or len(values) != len(rows):
            raise MultimsdError(
                f"{p / GENERATION_INFO}: {lang} has {len(values) if isinstance(values, list) else '?'} flags "
                f"but there are {len(rows)} {lang} reference rows"
            )
        for i, v in zip(rows, values):
            flags[i] = None if v is None else bool(v)
    return flags


def output_shares(
    sources: list[str],
    outputs: list[str],
    cut: list[bool | None],
    max_share: float,
    copies_by_design: bool = False,
) -> dict[str, Any]:
    """The shares of empty, cut and input-identical outputs of one system in one language, and the flag."""
    n = len(outputs)
    empty = sum(1 for o in outputs if not str(o).strip())
    identical = 0 if copies_by_design else sum(1 for s, o in zip(sources, outputs) if _norm(s) == _norm(o))
    known = [c for c in cut if c is not None]
    res: dict[str, Any] = {
        "n": n,
        "empty": empty / n if n else 0.0,
        "cut": sum(known) / len(known) if known else None,
        "cut_known": len(known),
        "identical": identical / n if n else 0.0,
    }
    if copies_by_design:
        res["identical_note"] = "not counted: a copy baseline copies by design"
    res["flagged"] = [k for k in KINDS if res[k] is not None and res[k] > max_share]
    return res


def check_max_safety(cfg: EvaluateConfig) -> None:
    """``select.max_safety``: null, ``reference`` or a percentage, and the ``safety`` metric computed."""
    value = cfg.select.max_safety
    if value is None:
        return
    if str(value) != "reference":
        try:
            ok = 0.0 <= float(value) <= 100.0
        except ValueError:
            ok = False
        if not ok:
            raise MultimsdError(
                f"select.max_safety={value}: choose reference (the references' own share) or a percentage "
                "between 0 and 100"
            )
    if "safety" not in cfg.metrics.include:
        raise MultimsdError("select.max_safety needs the safety metric: add safety to metrics.include")


def mark_unsafe(outputs: dict, safety: float | None, interval, reference: float | None, setting) -> None:
    """Flag one system's outputs in one language ``unsafe`` when its safety share (percent) is significantly
    above ``select.max_safety``: the lower end of its bootstrap ``interval`` (its share without one) above the
    limit, which is ``reference`` (the references' own share) or the setting as a percentage. Records the share
    and the limit beside the other shares, for the warning."""
    if setting is None or safety is None:
        return
    limit = reference if str(setting) == "reference" else float(setting)
    if limit is None:
        return
    outputs["unsafe"], outputs["unsafe_limit"] = safety / 100.0, limit / 100.0
    if (interval[0] if interval else safety) > limit:
        outputs["flagged"] = [*outputs.get("flagged", []), "unsafe"]


def demotions(results: dict, system: str, column: str) -> list[str]:
    """Why ``system``'s score in ``column`` cannot be the best (:mod:`multimsd.metrics.best`): the kinds its
    outputs are flagged for there (``column`` a language; "avg", "all" or "overall": any language), and
    "empty" where its outputs there are all empty, whatever ``degenerate.max_share`` says: an empty output is
    no simplification, and an all-empty system must never rank above the copy baseline."""
    per = results.get("systems", {}).get(system, {})
    langs = results.get("languages") or []
    found: set[str] = set()
    for g in langs if column not in langs else [column]:
        o = (per.get(g) or {}).get("outputs") or {}
        found.update(o.get("flagged") or [])
        if o.get("n") and o.get("empty") == 1.0:
            found.add("empty")
    return [k for k in DEMOTIONS if k in found]


def degenerate_summary(results_systems: dict, langs: list[str], max_share: float) -> dict[str, Any]:
    """The top-level ``degenerate`` entry of results.json: the threshold and every flagged system."""
    flagged: dict[str, dict[str, list[str]]] = {}
    for name, per in results_systems.items():
        for g in langs:
            kinds = ((per.get(g) or {}).get("outputs") or {}).get("flagged") or []
            if kinds:
                flagged.setdefault(name, {})[g] = list(kinds)
    return {"max_share": max_share, "kinds": dict(WHAT), "flagged": flagged}


def flag_text(flags: dict[str, dict]) -> str:
    """``en 14 % cut at the length cap, de 30 % identical to the input``: per language, the kinds an
    :func:`output_shares` record is flagged for, with their shares."""
    return ", ".join(
        f"{lang} {round(100 * shares[kind])} % {WHAT[kind]}"
        for lang, shares in sorted(flags.items())
        for kind in shares["flagged"]
    )


def warning_lines(results: dict, label=lambda s: s) -> list[str]:
    """One warning per flagged system and language (for table.md and the report)."""
    deg = results.get("degenerate") or {}
    limit = deg.get("max_share", 0.1)
    out = []
    for name, per_lang in (deg.get("flagged") or {}).items():
        for g, kinds in per_lang.items():
            o = results["systems"][name][g]["outputs"]
            if kinds := [k for k in kinds if k in KINDS]:
                what = ", ".join(f"{100 * o[k]:.0f} % {WHAT[k]}" for k in kinds)
                out.append(
                    f"Warning: {label(name)} ({g}): {what} (above {100 * limit:g} %, degenerate.max_share); its "
                    f"{g} scores measure degenerate outputs and none of them is marked best."
                )
            if "unsafe" in per_lang[g]:
                out.append(
                    f"Warning: {label(name)} ({g}): {100 * o['unsafe']:.1f} % of its sentences flagged by the "
                    f"safety checks, significantly above the limit of {100 * o['unsafe_limit']:.1f} % "
                    "(select.max_safety); none of its scores there is marked best."
                )
    return out
