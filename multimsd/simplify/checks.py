"""What ``multimsd simplify`` and ``multimsd export`` check before any work: their ``eval.KEY=VALUE``
overrides and that MODEL is there.

A mistyped override or MODEL costs a second at most, not the seconds of importing torch and transformers nor
the minutes of loading a model, so these checks import neither: the decoding settings are
:class:`~multimsd.training.config.EvalSettings`' fields, a path is looked at on the disk, and the Hub is asked
about only when MODEL is spelt as a Hub id that no directory here and no Hugging Face cache holds (the same
bounded probe as the training's, :func:`multimsd.io.hub_reachable`; nothing is downloaded). Each problem is
one :class:`~multimsd.errors.MultimsdError` line, with a "did you mean" where a close match exists:

* an override of another section (``optim.lr=1``, ``num_beams=4``): what can be overridden (the decoding
  settings, ``eval.KEY=VALUE``);
* ``eval.num_beam=4``: not a decoding setting; did you mean ``eval.num_beams``? (and the keys there are);
* ``eval.num_beams=abc``: the key and the type it takes; a value the settings refuse (``eval.backend=x``):
  their own line;
* a MODEL path that is not there: ``MODEL outputs/de-tinyy: no such directory (did you mean
  outputs/de-tiny?)``; one spelt as a Hub id (``owner/name``): neither a directory here nor a model in the
  Hugging Face cache, and why the Hub cannot be asked.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import sys
from collections.abc import Callable
from pathlib import Path

from multimsd.errors import MultimsdError

SECTION = "eval"  # the only overridable section: the decoding (the rest is the system's, as it was trained)
ONLY = "only the decoding settings can be overridden, as eval.KEY=VALUE"
EXAMPLE = " (e.g. eval.num_beams=4)"
TYPES = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string"}
MAX_LISTED = 10_000  # entries of MODEL's parent looked at for a "did you mean" (a huge directory: the first)


def decoding_keys() -> dict[str, str]:
    """``eval.*``'s keys and their types as written in the dataclass (``"int"``, ``"float | None"``)."""
    from multimsd.training.config import EvalSettings

    return {f.name: str(f.type) for f in dataclasses.fields(EvalSettings)}


def takes(type_name: str) -> str:
    """``"int | None"`` -> ``"an integer or null"``: what a key takes, in words."""
    parts = [p.strip() for p in type_name.split("|")]
    words = [TYPES.get(p, p) for p in parts if p != "None"]
    return " or ".join(words + (["null"] if "None" in parts else []))


def check_overrides(overrides: list[str]) -> None:
    """Each of ``overrides`` is ``eval.KEY=VALUE`` with a decoding setting's key and a value of its type, and
    together they are settings :class:`EvalSettings` accepts; else one error line (see the module)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from multimsd.training.config import EvalSettings

    keys = decoding_keys()
    settings = OmegaConf.structured(EvalSettings)
    for o in overrides:
        key, eq, value = o.partition("=")
        section, dot, name = key.partition(".")
        if not eq:
            raise MultimsdError(f"{o}: not KEY=VALUE; {ONLY}{EXAMPLE}")
        if section != SECTION or not dot:
            raise MultimsdError(f"{o}: {ONLY}{meant_section(key, value, keys) or EXAMPLE}")
        if name not in keys:
            close = difflib.get_close_matches(name, keys, n=1)
            meant = f"; did you mean {SECTION}.{close[0]}?" if close else ""
            raise MultimsdError(
                f"{o}: not a decoding setting{meant} (the {SECTION}.* keys: {', '.join(sorted(keys))})"
            )
        try:
            settings.merge_with_dotlist([f"{name}={value}"])
        except OmegaConfBaseException:
            raise MultimsdError(f"{o}: {key} takes {takes(keys[name])}, not {value!r}") from None
    OmegaConf.to_object(settings)  # the settings' own checks (eval.backend=x, eval.length_ratio=0, …)


def meant_section(key: str, value: str, keys: dict[str, str]) -> str:
    """``"; did you mean eval.num_beams=4?"`` for ``num_beams`` / ``evl.num_beams`` / ``+eval.num_beams``;
    "" when the key is no decoding setting's (``optim.lr``)."""
    bare = key.lstrip("+~")
    section, _, name = bare.rpartition(".")
    if name in keys and (not section or difflib.get_close_matches(section, [SECTION], n=1)):
        return f"; did you mean {SECTION}.{name}={value}?"
    return ""


# ------------------------------------------------------------------------------------------- MODEL
def check_model(model: str) -> None:
    """MODEL is a directory here, a built-in model's name (``offline:smollm2``, ``tiny:llama``: checked when
    built), or spelt as a Hub id that the Hugging Face cache holds or a reachable Hub may; else one error line:
    ``no such directory`` for a path, with the closest name in its parent directory where there is one."""
    path = Path(model).expanduser()
    if path.is_dir():
        return
    if path.exists():
        raise MultimsdError(f"MODEL {model}: a file, not a directory (a run, a training's output or a model)")
    if is_path(model):
        raise MultimsdError(f"MODEL {model}: no such directory{closest(model)}")
    if ":" in model:  # offline:smollm2, tiny:llama: the project's own, built on first use
        return
    from multimsd.io import model_unavailable

    if why := model_unavailable(model, "a local run or model directory"):
        raise MultimsdError(f"MODEL {model}: {why}{closest(model)}")


def is_path(model: str) -> bool:
    """Whether ``model`` (which is not there) can only be a path, not a Hub id: absolute, ``./``, ``../``,
    ``~``, more than one ``/``, not spelt as a repository id, or under a directory that is here
    (``outputs/de-tinyy``, ``outputs/`` being the project's output directory even where it is not)."""
    from multimsd.io import looks_like_path

    if looks_like_path(model) or model.startswith("outputs/"):
        return True
    first, slash, _ = model.partition("/")
    if slash and Path(first).is_dir():
        return True
    if ":" in model:
        return False
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(model)
    except HFValidationError:
        return True
    return False


def closest(model: str) -> str:
    """``" (did you mean outputs/de-tiny?)"``: the directory of ``model``'s parent whose name is closest to its
    last part, spelt as the user spelt the parent; "" when none is close."""
    path = Path(model).expanduser()
    parent = path.parent
    try:
        names = [p.name for p in itertools.islice(parent.iterdir(), MAX_LISTED) if p.is_dir()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1)
    if not close:
        return ""
    head = model.rstrip("/").rpartition("/")[0]
    return f" (did you mean {head + '/' if head else ''}{close[0]}?)"


def before_work(check: Callable[..., None], *args) -> None:
    """``check(*args)`` as a command's first step, before its set-up imports transformers: its error is the
    commands' one ``error:`` line and exit status 2 (:func:`multimsd.commands.stage.run_stage`'s contract)."""
    try:
        check(*args)
    except MultimsdError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
