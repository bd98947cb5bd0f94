"""``multimsd run sweep.parameter=KEY sweep.values=[…]``: one trained system per value of any train.py key.

Why names are made here and not written as ``<system>_<key><value>``: a system's name is a directory name
(``systems/<name>/``), a key of the evaluation's ``systems`` map, a word of ``compare=[a:b]`` and of the
report. A value's own text breaks them: ``1.5`` puts a dot in a key (OmegaConf reads ``systems.x_theta1.5`` as
a nested key), ``1e-4`` (which Hydra hands over as ``0.0001``) is no Hydra key at all, a string may hold spaces
or slashes. So the name holds a *token* of the value (:func:`value_token`) made of letters, digits, ``_`` and
``-`` only, and the run records the real key and value per system (``run.json`` ``systems.<name>.sweep``):
the report and anything else read those, never the name.

Tokens (:func:`value_token`), the default sweep's ``1`` and ``4`` unchanged:

* integers as written, a minus as ``m``: ``4`` → ``4``, ``-2`` → ``m2``;
* other numbers in their shortest exact form, ``.`` as ``p`` and ``e-`` as ``em``; ``2.0`` → ``2``, ``1.5`` →
  ``1p5``, ``0.05`` → ``0p05``, below 0.01 or from a million up in powers of ten: ``1e-4`` → ``1em4``,
  ``3e-4`` → ``3em4``, ``1e10`` → ``1e10``;
* booleans ``true`` / ``false``; strings lower-cased, every run of characters other than letters, digits and
  ``_`` as one ``-`` (``Cosine With Restarts`` → ``cosine-with-restarts``).

A token that starts with a letter is joined to the key's last part with ``_`` (``finetuned_scheduler_linear``),
a number without (``finetuned_theta1p5``, ``finetuned_lr1em4``). Two values that give one name (``2`` and
``2.0``, ``Linear`` and ``linear``), or a made name that another system already has, are one error line.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from multimsd.errors import MultimsdError

INT = re.compile(r"[+-]?\d+")
# A value Hydra reads unquoted as itself: a number, a bool, a word (with . - + within). Anything else is quoted.
PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*|[+-][A-Za-z0-9_.]+")


def parse_value(text: Any) -> Any:
    """A ``sweep.values`` entry (OmegaConf hands them over as strings: ``1.5``, ``0.0001``, ``True``, ``linear``)
    as the typed value it stands for: int, float, bool or str."""
    if not isinstance(text, str):
        return text
    s = text.strip()
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    if INT.fullmatch(s):
        return int(s)
    try:
        return float(s)
    except ValueError:
        return text


def _number_token(x: float) -> str:
    """The shortest exact spelling of a float, positional from 0.01 to below a million, else a power of ten."""
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("minf" if x < 0 else "inf")
    d = Decimal(repr(x)).normalize()
    exp = d.adjusted()  # the power of ten of the first digit
    if -2 <= exp < 6:
        text = format(d, "f")
    else:
        digits = "".join(str(g) for g in d.as_tuple().digits)
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{'-' if d < 0 else ''}{mantissa}e{exp}"
    return text.replace("-", "m").replace(".", "p")


def value_token(value: Any) -> str:
    """A value as the part of a system name that stands for it: letters, digits and ``_`` / ``-`` only."""
    v = parse_value(value)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v).replace("-", "m")
    if isinstance(v, float):
        return _number_token(v)
    return re.sub(r"[^a-z0-9_]+", "-", str(v).lower()).strip("-")


def value_text(value: Any) -> str:
    """A value as a label shows it: ``1``, ``1.5``, ``0.0001``, ``true``, ``linear`` (floats without a
    spurious ``.0``, exact otherwise)."""
    v = parse_value(value)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isfinite(v):
        return str(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v)
    return str(v)


def key_short(parameter: str) -> str:
    """The last part of a swept key, as names use it (``optim.lr`` → ``lr``)."""
    return re.sub(r"[^A-Za-z0-9_]", "", parameter.rsplit(".", 1)[-1].rsplit("/", 1)[-1])


def swept_name(system: str, parameter: str, value: Any) -> str:
    """``<system>_<last part of the key><token>`` (``finetuned_theta4``, ``finetuned_lr1em4``), with a ``_``
    before a token that starts with a letter (``finetuned_scheduler_linear``)."""
    token = value_token(value)
    if not token:
        raise MultimsdError(
            f"sweep.values: {value!r} gives no name (use letters or digits in a swept value of {parameter})"
        )
    short = key_short(parameter)
    return f"{system}_{short}{token}" if token[0].isdigit() else f"{system}_{short}_{token}"


def override(parameter: str, value: Any) -> str:
    """train.py's override setting ``parameter`` to the value: as written when Hydra reads it unquoted as
    itself (``loss.theta=4``, ``optim.lr=0.0001``, ``optim.scheduler=linear``), quoted otherwise."""
    text = str(value)
    return f"{parameter}={text if PLAIN.fullmatch(text) else quote(text)}"


def quote(text: str) -> str:
    """``text`` as a quoted string of Hydra's override grammar (read back as exactly ``text``)."""
    # Hydra reads a backslash literally unless backslashes run up to a quote (or the closing quote): double
    # those runs, and escape the quote.
    body = re.sub(r"(\\*)('|$)", lambda m: m[1] * 2 + ("\\'" if m[2] else ""), text)
    return f"'{body}'"


def expand_sweep(system: str, base: dict, parameter: str, values: list, taken: set[str]) -> dict[str, dict]:
    """One system per value of a trained system: name -> its entry (``base`` plus the override, the label's
    suffix, the value given and the key). ``taken``: the run's other system names; a clash is one line."""
    short = key_short(parameter)
    shown = "θ" if short == "theta" else short
    out: dict[str, dict] = {}
    given: dict[str, Any] = {}
    for v in values:
        name = swept_name(system, parameter, v)
        if name in given:
            raise MultimsdError(
                f"sweep.values: {given[name]} and {v} both name the system {name}; give each value once"
            )
        if name in taken:
            raise MultimsdError(
                f"sweep: {name} ({parameter}={v} of systems.{system}) is also the name of another system; "
                "rename one"
            )
        given[name] = v
        out[name] = {
            **base,
            "train": [*base["train"], override(parameter, v)],
            "suffix": f", {shown} = {value_text(v)}",
            "sweep": v,
            "parameter": parameter,
        }
    return out


def recorded_value(composed: Any, given: Any) -> Any:
    """What run.json records as a system's swept value: the value in its composed train.py config (typed by
    the schema: ``loss.theta=1`` is 1.0), or the value given when the key is not a plain value there (a config
    group such as ``model``)."""
    return composed if isinstance(composed, (bool, int, float, str)) else parse_value(given)


def validation_flags(system_dirs: dict[str, Path], max_share: float) -> dict[str, dict[str, dict]]:
    """Per swept system, the languages whose *validation* outputs are degenerate by the evaluation's rule
    (:func:`multimsd.metrics.degenerate.output_shares`: above ``max_share`` empty, cut at the length cap or
    identical to the input), with their shares; systems with no such language are left out.

    Why: the selection reads validation mean(SARI, BLEU) only, as the paper does, and the evaluation checks
    the test outputs only. A value whose outputs on validation are mostly cut or copies could be selected
    without a word; the selection stays the paper's, and the report says so beside it."""
    from multimsd.metrics.degenerate import load_cut_flags, output_shares

    found: dict[str, dict[str, dict]] = {}
    for name, d in system_dirs.items():
        pred = d / "predictions" / "validation"
        try:
            refs = [json.loads(line) for line in (pred / "references.jsonl").read_text("utf-8").splitlines()]
        except (OSError, ValueError):
            continue  # no validation predictions (an older run, a training stage that wrote none)
        langs = sorted({r["lang"] for r in refs})
        try:
            cut = load_cut_flags(str(pred), [r["lang"] for r in refs], langs)
        except MultimsdError:
            cut = [None] * len(refs)  # a damaged record: cut shares unknown, the other shares still count
        for lang in langs:
            rows = [i for i, r in enumerate(refs) if r["lang"] == lang]
            try:
                outputs = (pred / f"{lang}.txt").read_text("utf-8").split("\n")[: len(rows)]
            except OSError:
                continue
            if len(outputs) != len(rows):
                continue
            shares = output_shares(
                [refs[i]["complex"] for i in rows], outputs, [cut[i] for i in rows], max_share
            )
            if shares["flagged"]:
                found.setdefault(name, {})[lang] = shares
    return found


def selection_lines(sweep: dict) -> list[str]:
    """The sweep's selection, and a tie with the rule that broke it (:func:`multimsd.report.sweep.tie_text`):
    ``sweep over loss.theta: finetuned_theta1 selected by mean(sari,bleu) on validation (30.12) — a tie: …``."""
    from multimsd.report.sweep import tie_text

    selected = sweep.get("selected")
    if not selected:
        return []
    score = (sweep.get("validation") or {}).get(selected, {}).get("mean_sari_bleu")
    shown = f" ({score:.2f})" if isinstance(score, (int, float)) else ""
    by = sweep.get("selected_by") or "validation"
    return [f"sweep over {sweep.get('parameter')}: {selected} selected by {by}{shown}{tie_text(sweep)}"]
