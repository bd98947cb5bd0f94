"""A system saved on disk, loaded again to generate: what ``multimsd simplify``, ``multimsd export`` and the
studio's simplify view share.

Every system the training stage decodes with leaves, beside its predictions, ``config.yaml``: the whole
resolved config, decoding settings included (:func:`multimsd.training.results.save_config`), and, when it was
trained, ``best/``: its best weights. So a system is loaded from its own directory, without the run that
planned it (the studio may not import the pipeline). A run directory (``run.json``) lists its systems with
their kinds; its ``results.json`` ranks them, and :func:`pick` chooses the best one by that ranking, the one
rule for "best" of :mod:`multimsd.metrics.best` that the report applied.

A run that has not finished (still running, or interrupted) is a run directory too: ``run.json`` and
``results.json`` are written at its end, its stage records (``.stages/``) from its first stage on. Its systems
are then the directories under ``systems/``; one has *finished* when its training wrote ``config.yaml`` and
``all_results.json``, its last writes (a half-trained system may hold a ``best/`` of an early epoch: it is not
offered). Such a run has no ranking yet, nor its sweep's selection: no system is its best, one is named.

Read in this order: :class:`System` (name, config, weights), :func:`saved_config` / :func:`why_not` (can this
directory generate?), :func:`read_run` / :class:`RunSystems` (a run's systems, finished or not), :func:`choose`
(the one system lookup of ``multimsd simplify`` and the studio: a named system, or :func:`pick`, the run's
best), :func:`check_languages` (does the system know the text's language?), :func:`load` (model, tokenizer,
accelerator on the device, the best weights checked against their manifest),
:func:`simplify_sentences` (the evaluation's decoding and the safety checks over documents' sentences).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.training.config import CONFIG_FILE, SHOTS_FILE, TrainConfig

log = logging.getLogger(__name__)

RUN_MARKER = "run.json"  # = pipeline.run.RUN_MARKER: a run directory holds it (read here, never imported)
STAGES_DIR = ".stages"  # = pipeline.records.STAGES_DIR: a run's stage records, from its first stage on
RESULTS_FILE = "all_results.json"  # a training's last write (training.results.write_predictions)


@dataclass
class System:
    """The system that generates: its name, its config, its trained weights (None: the pretrained model as it
    is, a prompted system), the path written into every record (``model``) and a k-shot system's examples."""

    name: str
    config: TrainConfig
    weights: Path | None
    path: Path
    shots: dict[str, list] | None = None  # a k-shot system's examples per language (shots.json), else None

    @property
    def languages(self) -> list[str]:
        """The languages it was trained or prompted on (:func:`known_languages`)."""
        return known_languages(self.config, self.shots)


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


def is_run_dir(path: Path) -> bool:
    """A ``multimsd run`` directory, finished (``run.json``) or not (its stage records, ``.stages/``)."""
    return (path / RUN_MARKER).is_file() or (path / STAGES_DIR).is_dir()


def finished(sys_dir: Path) -> bool:
    """Whether the training (or prompting) of the system in ``sys_dir`` got to its end: its last writes are
    there. ``all_results.json`` alone: a system of an older multimsd, which wrote no ``config.yaml``."""
    return (sys_dir / CONFIG_FILE).is_file() or (sys_dir / RESULTS_FILE).is_file()


def why_not(sys_dir: Path, kind: str | None, cfg) -> str:
    """Why the system in ``sys_dir`` (of run kind ``kind``, config ``cfg``: None when there is none) cannot
    generate; empty when it can."""
    if kind == "copy":
        return "a copy baseline has no model"
    if cfg is None:
        if not sys_dir.is_dir():
            return f"not trained yet (no {sys_dir.name}/ under systems/)"
        if not finished(sys_dir):
            return "its training has not finished yet, or was interrupted"
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


@dataclass
class RunSystems:
    """A run directory's systems as far as the run got (:func:`read_run`): the run's record, each system's kind,
    saved config and why it cannot generate."""

    run_dir: Path
    info: dict  # run.json; {} while the run has not finished (it is written at the run's end)
    kinds: dict[str, str | None]  # run.json's kind; of a system only found under systems/: its config's
    configs: dict  # name -> its saved config (a DictConfig), None where there is none (yet)
    why: dict[str, str]  # name -> why it cannot generate; "" when it can

    @property
    def finished(self) -> bool:
        """Whether the run got to its end (its record, ranking and sweep selection are written)."""
        return bool(self.info)

    @property
    def usable(self) -> list[str]:
        return [n for n, w in self.why.items() if not w]

    def listing(self) -> str:
        """Which systems can generate and why the others cannot, in one line."""
        usable = ", ".join(self.usable) or "none"
        return f"systems with a model: {usable}" + "".join(
            f"; not {n}: {w}" for n, w in self.why.items() if w
        )


def read_run(run_dir: Path, replan: Callable[[dict], dict] | None = None) -> RunSystems:
    """The systems of a run directory, finished or not: those ``run.json`` lists and those found under
    ``systems/`` (a run still running or interrupted has no ``run.json`` yet; one continued with more systems
    has new directories). A damaged ``config.yaml`` costs its system (its reason), not the run.
    ``replan(run.json)``: name -> config of the systems an older multimsd finished without ``config.yaml``
    (the caller's planner; the studio has none: those systems say why)."""
    info = read_json(run_dir / RUN_MARKER, "the run's record") if (run_dir / RUN_MARKER).exists() else {}
    listed = info.get("systems") or {}
    if not isinstance(listed, dict):
        raise MultimsdError(f"{run_dir / RUN_MARKER}: its systems are not a JSON object")
    kinds: dict[str, str | None] = {n: (sc or {}).get("kind") for n, sc in listed.items()}
    found = sorted(
        p.name for p in (run_dir / "systems").glob("*") if p.is_dir() and not p.name.startswith(".")
    )
    kinds.update({n: None for n in found if n not in kinds})
    configs, why = {}, {}
    for n in kinds:
        try:
            configs[n] = saved_config(run_dir / "systems" / n)
        except MultimsdError as e:
            configs[n], why[n] = None, str(e)
    older = [
        n
        for n, kind in kinds.items()
        if configs[n] is None
        and n not in why
        and kind not in ("copy", None)
        and finished(run_dir / "systems" / n)
    ]
    if older and replan is not None:
        planned = replan(info)
        configs.update({n: planned[n] for n in older if n in planned})
    for n, kind in kinds.items():
        if kind is None and configs[n] is not None:  # found under systems/: its config says what it is
            kinds[n] = "icl" if configs[n].get("mode") == "icl" else "train"
        if n not in why:
            why[n] = why_not(run_dir / "systems" / n, kinds[n], configs[n])
    return RunSystems(run_dir, info, kinds, configs, why)


@dataclass
class Choice:
    """The system :func:`choose` chose of a run, or why none (one line)."""

    name: str | None  # None: none is chosen (``why`` says why)
    why: str = ""  # why none, or why ``name`` is not the run's best (it has no ranking): one line
    unknown: bool = False  # the system asked for is not one of the run's


UNRANKED_NOTE = (
    "the run has not finished (still running, or interrupted): the systems whose training finished can "
    "simplify; no ranking yet, so the first by name is selected"
)
NO_RANKING_NOTE = "the run has no ranking of these systems: the first by name is selected"


def choose(
    run: RunSystems,
    name: str | None = None,
    *,
    first_if_unranked: bool = False,
    quiet: bool = False,
) -> Choice:
    """The one system lookup of ``multimsd simplify`` (and export) and the studio's simplify view: ``name`` when
    it is a system of the run that can generate (else why not, with the systems that can), or without a name the
    run's best (:func:`pick`; why none is, with how to name one, ``--system NAME``). ``first_if_unranked``: a run
    without a ranking of them (not finished) gives the first usable system by name, and says so in ``why``."""
    if name is not None:
        if name not in run.why:
            return Choice(None, f"no such system in {run.run_dir} ({', '.join(run.why) or 'none yet'})", True)
        if run.why[name]:
            usable = ", ".join(run.usable)
            return Choice(None, run.why[name] + (f" (systems with a model: {usable})" if usable else ""))
        return Choice(name)
    try:
        return Choice(pick(run, quiet=quiet))
    except MultimsdError as e:
        if not (first_if_unranked and run.usable):
            return Choice(None, str(e))
        return Choice(sorted(run.usable)[0], UNRANKED_NOTE if not run.finished else NO_RANKING_NOTE)


def pick(run: RunSystems, quiet: bool = False) -> str:
    """The best usable system of the run by the evaluation's ranking; of a sweep only its selected system
    competes (validation chose θ; the test split does not choose again). A run that has not finished has no
    ranking yet: one error line saying which systems can be named instead (``--system NAME``)."""
    run_dir, info = run.run_dir, run.info
    usable = set(run.usable)
    name_one = f"name one with --system NAME (e.g. --system {sorted(usable)[0]})" if usable else ""
    reasons = "; ".join(f"{n}: {w}" for n, w in run.why.items()) or "no systems/ yet"
    unfinished = f"the run has not finished (no {RUN_MARKER} yet: still running, or interrupted)"
    if not run.finished:
        if not usable:
            raise MultimsdError(
                f"{run_dir}: {unfinished} and none of its systems has a model yet ({reasons}); wait for it, "
                "or run its command again to continue it"
            )
        raise MultimsdError(
            f"{run_dir}: {unfinished}, so it has no ranking to choose its best system by; {run.listing()}; "
            f"{name_one}"
        )
    if not usable:
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
            f"{results}: no ranking (the run's evaluation did not finish); {run.listing()}; {name_one}"
        )
    placed = [p for p in ranking if p.get("system") in usable]
    if not placed:
        raise MultimsdError(f"{results}: none of {', '.join(sorted(usable))} is ranked; {name_one}")
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
        # a system the ranking puts higher that cannot generate now (its training runs again): said, not hidden
        for p in ranking[: ranking.index(first)]:
            name = p.get("system")
            if name in run.why and run.why[name] and run.kinds.get(name) != "copy":
                log.warning("%s ranks higher but cannot simplify: %s", name, run.why[name])
    return first["system"]


def known_languages(cfg, shot_langs: Iterable[str] | None = None) -> list[str]:
    """The languages a system was trained or prompted on: those of a k-shot system's examples
    (``shot_langs``: they are all it can be prompted with), else its config's ``data.languages`` (a
    :class:`TrainConfig` or a saved config)."""
    from multimsd import LANGUAGES

    if shot_langs is not None:
        return sorted(shot_langs)
    langs = getattr(getattr(cfg, "data", None), "languages", None) or []  # a saved config may lack the key
    return [lang for lang in langs if lang in LANGUAGES]


def check_languages(
    name: str, cfg, shot_langs: Iterable[str] | None, langs: Iterable[str], any_lang: bool, anyway: str
) -> str:
    """Whether system ``name`` (its config ``cfg``, a k-shot system's example languages ``shot_langs``) knows
    every language of ``langs``; checked before a model is loaded. One that it was not trained or prompted on is
    an error naming those it knows, ending with ``anyway`` (how to go on: ``--any-lang``); with ``any_lang`` that
    line is returned instead, for a warning. A k-shot system has no examples to prompt another language with:
    an error even then. Returns "" when every language is known."""
    shot_langs = None if shot_langs is None else list(shot_langs)
    known = known_languages(cfg, shot_langs)
    missing = sorted(set(langs) - set(known))
    if not missing:
        return ""
    if shot_langs is not None:
        raise MultimsdError(
            f"system {name} is k-shot with examples in {', '.join(known) or 'no language'} only; "
            f"none for {', '.join(missing)}"
        )
    how = "prompted in" if getattr(cfg, "mode", "train") == "icl" else "trained on"
    line = f"system {name} was {how} {', '.join(known) or 'no language'} only, not {', '.join(missing)}"
    if not any_lang:
        raise MultimsdError(f"{line} ({anyway} to simplify anyway)")
    return line


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
        generate(
            system.config,
            model,
            tokenizer,
            rows,
            accelerator,
            final=True,
            shots=system.shots or {},
            desc="simplifying",
        )
        if rows
        else []
    )
    texts = [o.text for o in outputs]
    cut = [bool(o.cut) for o in outputs]
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
    "STAGES_DIR",
    "Choice",
    "RunSystems",
    "System",
    "check_languages",
    "choose",
    "finished",
    "is_run_dir",
    "joined",
    "known_languages",
    "load",
    "pick",
    "read_json",
    "read_run",
    "read_shots",
    "saved_config",
    "simplify_sentences",
    "to_system",
    "why_not",
]
