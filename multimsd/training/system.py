"""A system saved on disk, loaded again to generate: what ``multimsd simplify``, ``multimsd export`` and the
studio's simplify view share.

Every system the training stage decodes with leaves, beside its predictions, ``config.yaml``: the whole
resolved config, decoding settings included (:func:`multimsd.training.results.save_config`), and, when it was
trained, ``best/``: its best weights. So a system is loaded from its own directory, without the run that
planned it (the studio may not import the pipeline). A run directory (``run.json``) lists its systems with
their kinds; its ``results.json`` ranks them, and :func:`pick` chooses the best one by that ranking, the one
rule for "best" of :mod:`multimsd.metrics.best` that the report applied.

Read in this order: :class:`System` (name, config, weights), :func:`saved_config` / :func:`why_not` (can this
directory generate?), :func:`pick` (the run's best), :func:`load` (model, tokenizer, accelerator on the
device, the best weights checked against their manifest), :func:`simplify_sentences` (the evaluation's
decoding and the safety checks over documents' sentences).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.training.config import CONFIG_FILE, SHOTS_FILE, TrainConfig

log = logging.getLogger(__name__)

RUN_MARKER = "run.json"  # = pipeline.run.RUN_MARKER: a run directory holds it (read here, never imported)


@dataclass
class System:
    """The system that generates: its name, its config, its trained weights (None: the pretrained model as it
    is, a prompted system), the path written into every record (``model``) and a k-shot system's examples."""

    name: str
    config: TrainConfig
    weights: Path | None
    path: Path
    shots: dict[str, list] | None = None  # a k-shot system's examples per language (shots.json), else None


def read_json(path: Path, what: str) -> dict:
    """A JSON object from ``path``; one error line naming ``what`` it is when it is missing or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MultimsdError(f"{path}: missing ({what})") from None
    except (OSError, ValueError) as e:
        raise MultimsdError(f"{path}: cannot be read ({what}): {e}") from None
    if not isinstance(data, dict):
        raise MultimsdError(f"{path}: not a JSON object ({what})")
    return data


def saved_config(out: Path):
    """The whole config saved beside a system's outputs (``config.yaml``, a DictConfig), or None for outputs
    written before it was saved; a damaged one is one error line."""
    import yaml
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = Path(out) / CONFIG_FILE
    if not path.is_file():
        return None
    try:
        cfg = OmegaConf.load(path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, OmegaConfBaseException) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise MultimsdError(f"{path}: cannot be read: {first}") from None
    if not isinstance(cfg, DictConfig):
        raise MultimsdError(f"{path}: cannot be read: not a mapping of settings")
    return cfg


def why_not(sys_dir: Path, kind: str | None, cfg) -> str:
    """Why the system in ``sys_dir`` (of run kind ``kind``, config ``cfg``: None when there is none) cannot
    generate; empty when it can."""
    if kind == "copy":
        return "a copy baseline has no model"
    if cfg is None:
        return "no config.yaml beside its outputs (made by an older multimsd): train it again"
    if kind == "icl":
        shots = cfg.icl.shots
        if shots and not (sys_dir / SHOTS_FILE).is_file():
            return (
                f"{shots}-shot prompting: its examples were not saved ({SHOTS_FILE}, written since "
                "multimsd saves them): run it again"
            )
        return ""
    best = weights_of(sys_dir, cfg)
    return "" if best.is_dir() else f"no trained model ({best} is missing: its training did not finish)"


def weights_of(sys_dir: Path, cfg) -> Path:
    """Where a system's trained weights are: its ``best/``, or for a system that decodes another one again
    (mode=predict) that system's."""
    from omegaconf import OmegaConf

    if isinstance(cfg, TrainConfig):
        mode, start = cfg.mode, cfg.start
    else:  # a saved config.yaml (one written before these keys existed: trained, its own best/)
        mode, start = (
            OmegaConf.select(cfg, "mode", default="train"),
            OmegaConf.select(cfg, "start", default=None),
        )
    return Path(start) / "best" if mode == "predict" and start else Path(sys_dir) / "best"


def run_systems(run_dir: Path) -> tuple[dict, dict[str, dict]]:
    """(run.json, its systems: name -> {"kind": …}) of a run directory."""
    info = read_json(run_dir / RUN_MARKER, "the run's record")
    systems = info.get("systems") or {}
    if not isinstance(systems, dict):
        raise MultimsdError(f"{run_dir / RUN_MARKER}: its systems are not a JSON object")
    return info, systems


def pick(run_dir: Path, info: dict, usable: set[str], why: dict[str, str], quiet: bool = False) -> str:
    """The best usable system of the run by the evaluation's ranking; of a sweep only its selected system
    competes (validation chose θ; the test split does not choose again). ``why``: each system's reason it
    cannot generate, for the error when none can."""
    if not usable:
        reasons = "; ".join(f"{n}: {w}" for n, w in why.items())
        raise MultimsdError(f"{run_dir}: no system with a model to simplify with ({reasons})")
    sweep = info.get("sweep") or {}
    if sweep.get("selected"):
        chosen = sweep["selected"]
        keep = {chosen, *((sweep.get("seed_systems") or {}).get(chosen) or [])}
        swept = set(sweep.get("systems") or []) | {
            m for ms in (sweep.get("seed_systems") or {}).values() for m in ms
        }
        usable = {n for n in usable if n not in swept or n in keep}
    results = run_dir / "results.json"
    ranking = (
        (read_json(results, "the run's results") if results.exists() else {}).get("ranking") or {}
    ).get("overall")
    if not ranking:
        raise MultimsdError(
            f"{results}: no ranking (the run's evaluation did not finish); name one with --system"
        )
    placed = [p for p in ranking if p.get("system") in usable]
    if not placed:
        raise MultimsdError(
            f"{results}: none of {', '.join(sorted(usable))} is ranked; name one with --system"
        )
    first = next((p for p in placed if not p.get("flagged")), None)
    if first is None:
        first = placed[0]
        if not quiet:
            log.warning(
                "every system with a model is flagged in the ranking; %s flagged (%s) is used",
                first["system"],
                ", ".join(first["flagged"]),
            )
    if not quiet:
        log.info(
            "system: %s (best by the ranking of %s)", first["system"], ", ".join(p["system"] for p in placed)
        )
    return first["system"]


def load(system: System):
    """(model, tokenizer, accelerator) of ``system``: the base model as the training built it, then its best
    weights (:func:`multimsd.training.results.load_best`, which checks the manifest), in eval mode on the
    accelerator's device."""
    from accelerate import Accelerator

    from multimsd.training.kinds import get_kind
    from multimsd.training.modeling import load_model_and_tokenizer, model_path
    from multimsd.training.results import load_best

    cfg = system.config
    kind = get_kind(cfg.model.kind)
    if cfg.model.kind == "lstm" and system.weights is not None:
        # a scratch LSTM builds its vocabularies from the training split: its best/ holds them, load that
        cfg.model.pretrained = str(system.weights)
    model_path(cfg.model)  # a local model is built before Accelerator() (multimsd.training.modeling)
    accelerator = Accelerator()
    model, tokenizer = load_model_and_tokenizer(cfg.model)
    if system.weights is not None:
        model = load_best(cfg, kind, system.weights, accelerator, model)
    model = model.to(accelerator.device)
    model.eval()
    return model, tokenizer, accelerator


NO_SPACE = ("ja", "zh")  # sentences joined without a space


def simplify_sentences(
    system: System, loaded, docs: list[tuple[str, list[str]]], terms=None
) -> list[list[dict]]:
    """Per document ``(lang, sentences)``: per sentence ``{"source", "output", "flags": [...]}`` (and ``"cut":
    true`` where generation stopped at ``eval.max_new_tokens``, not at an end token). The sentences of every
    document go to one call of the evaluation's decoding (:func:`multimsd.training.predict.generate`, the
    system's ``eval.*``, batched by ``eval.max_batch_tokens``), so short documents fill the batches a GPU
    wants. ``loaded``: :func:`load`'s (model, tokenizer, accelerator); ``terms(lang)``: the dictionary whose
    terms the safety checks look for (None: no term check)."""
    from multimsd.metrics.safety import check_sentences
    from multimsd.training.predict import generate

    model, tokenizer, accelerator = loaded
    if system.shots is not None and (missing := sorted({lang for lang, _ in docs} - set(system.shots))):
        raise MultimsdError(
            f"system {system.name} is {system.config.icl.shots}-shot with examples in "
            f"{', '.join(sorted(system.shots))} only; no examples for {', '.join(missing)}"
        )
    rows = [{"complex": s, "lang": lang} for lang, ss in docs for s in ss]
    outputs = (
        generate(system.config, model, tokenizer, rows, accelerator, final=True, shots=system.shots or {})
        if rows
        else []
    )
    texts = [str(o) for o in outputs]
    cut = [bool(getattr(o, "cut", None)) for o in outputs]
    langs = [lang for lang, ss in docs for _ in ss]
    flags: list = [None] * len(rows)
    for lang in dict.fromkeys(langs):  # one call per language: the meaning check encodes them in one go
        idx = [k for k, x in enumerate(langs) if x == lang]
        got = check_sentences(
            [rows[k]["complex"] for k in idx],
            [texts[k] for k in idx],
            lang,
            terms(lang) if terms else None,
            cut=[cut[k] for k in idx],
        )
        for k, fl in zip(idx, got):
            flags[k] = [f"{f.check}: {f.reason}" for f in fl]
    out, k = [], 0
    for _, ss in docs:
        checked = []
        for j in range(k, k + len(ss)):
            row = {"source": rows[j]["complex"], "output": texts[j], "flags": flags[j]}
            if cut[j]:
                row["cut"] = True
            checked.append(row)
        out.append(checked)
        k += len(ss)
    return out


def joined(lang: str, rows: list[dict]) -> str:
    """A document's simplified text: its sentences' outputs, joined as the language writes them."""
    return ("" if lang in NO_SPACE else " ").join(o for o in (r["output"].strip() for r in rows) if o)


def to_system(name: str, cfg, sys_dir: Path) -> System:
    """``cfg`` (a config from :func:`saved_config`, ``eval.*`` overrides merged) of the system in ``sys_dir`` as
    a checked :class:`System`: trained weights from ``best/``, or for a prompted system the base as it is and,
    when it is k-shot, the examples it was evaluated with (``shots.json``)."""
    from multimsd.training.loop import to_train_config

    tc = to_train_config(cfg)
    if tc.mode != "icl":
        best = weights_of(sys_dir, tc)
        return System(name, tc, best, best)
    return System(name, tc, None, sys_dir, read_shots(sys_dir, tc.icl.shots) if tc.icl.shots else None)


def read_shots(sys_dir: Path, k: int) -> dict[str, list[tuple[str, str]]]:
    """A k-shot system's examples (``shots.json``: per language ``k`` [complex, simple] pairs, in the order its
    prompt shows them); anything else is one error line."""
    path = sys_dir / SHOTS_FILE
    saved = read_json(path, f"the examples of a {k}-shot system")
    shots = {}
    for lang, pairs in saved.items():
        if not (
            isinstance(pairs, list)
            and len(pairs) == k
            and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs)
        ):
            raise MultimsdError(f"{path}: {lang}: not {k} [complex, simple] pairs of text")
        shots[lang] = [(c, simple) for c, simple in pairs]
    return shots


__all__ = [
    "CONFIG_FILE",
    "RUN_MARKER",
    "SHOTS_FILE",
    "System",
    "joined",
    "load",
    "pick",
    "read_json",
    "read_shots",
    "run_systems",
    "saved_config",
    "simplify_sentences",
    "to_system",
    "why_not",
]
