"""The evaluation stage: score simplification systems against a reference set, per language.

Read top to bottom, :func:`run` is the whole stage:

1. check the options (metric names, ``select_by``, tokenizer overrides, system names) before reading anything;
2. load the reference set: a directory saved with ``save_to_disk`` (``python align.py``'s output; split
   ``refs.split``), a JSONL file (``complex``, ``simple`` = a string or a list of strings, ``lang``) or plain
   text files (``refs.source`` + ``refs.references`` + ``refs.lang``). ``refs.path: null`` means align.py's
   default output directory (composed from ``conf/align.yaml``), which must exist;
3. load every system's predictions, aligned with the reference rows (see :func:`load_predictions`);
4. per language, with that language's tokenizer (``default_tokenizer(lang)`` unless ``tokenizer.<lang>``
   overrides it): SARI (+ add / keep / delete), BLEU, TER, chrF, METEOR (+ its mode), FKGL of the outputs
   (and of the sources and references, for comparison), EASSE quality features, and distinct medical-term
   types of sources, references and every system;
5. pool the languages ("all") where that is meaningful, rank the systems by ``select_by``;
6. write ``results.json``, ``table.md`` and ``scores.png`` into ``output.dir`` atomically, print the table.

Pooling across languages ("all"): SARI, BLEU and TER count tokens, and a corpus score over a mix of
tokenisations (13a words for English, MeCab morphemes for Japanese, characters for Chinese) is not a
meaningful number, so they are pooled (computed over the concatenation of all languages) **only when every
evaluated language uses the same tokenizer and the same number of references**; otherwise they are reported
per language only and ``results.json`` says why under ``pooled.skipped``. chrF works on characters and is
pooled whenever the number of references agrees. METEOR (a mean of sentence scores) is pooled as the
sentence-weighted mean when all languages share one tokenizer *and* one METEOR mode; the quality features
likewise when they share one tokenizer. FKGL is never pooled (its coefficients are English-fitted; grades are
comparable within one language only), and term types are summed (dictionaries are per language).

Ranking (``select_by``): ``sari``, ``bleu``, ``chrf``, ``meteor`` or ``mean(a,b,...)`` of those (default
``mean(sari,bleu)``, the MultiMSD paper's criterion for choosing θ). Per language, systems are ordered by that
score; overall, by its mean over the languages (macro average; defined even when nothing can be pooled).
Ties are broken by system name.

Translation of user mistakes into :class:`MultimsdError` (one line, no traceback, nothing written): missing
or empty files, non-UTF-8 bytes (file and line), prediction / reference row counts that differ (file and
both counts), unknown languages, tokenizers, metrics or baselines.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from multimsd import LANGUAGES, __version__
from multimsd.config import EvaluateConfig
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_replaceable
from multimsd.io import load_saved_split

log = logging.getLogger(__name__)

METRICS = ("sari", "bleu", "ter", "chrf", "meteor", "fkgl", "quality")
"""Metric names accepted by ``metrics.include``."""

RANKABLE = ("sari", "bleu", "chrf", "meteor")
"""Metrics ``select_by`` may name (all higher-is-better)."""

BASELINES = {"identity": "copy of the source sentence"}
"""Built-in systems, used as ``systems.<name>=@<baseline>``."""

RESERVED_NAMES = ("source", "reference", "all")
QUALITY_KEYS = (
    "compression_ratio",
    "levenshtein_similarity",
    "exact_copies",
    "additions_proportion",
    "deletions_proportion",
)
MARKER = "results.json"


# ---------------------------------------------------------------------------------------------- configuration
def to_config(cfg: EvaluateConfig | DictConfig | dict) -> EvaluateConfig:
    """Accept a Hydra DictConfig, a plain dict or an EvaluateConfig; return a validated EvaluateConfig."""
    if isinstance(cfg, EvaluateConfig):
        return cfg
    from omegaconf.errors import OmegaConfBaseException

    base = OmegaConf.structured(EvaluateConfig)
    try:
        user = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
        merged = OmegaConf.merge(base, user)
        # The name -> value maps given replace the defaults instead of being merged into them, so that
        # `~systems.identity` (Hydra) or run({"systems": {...}}) leaves out the identity baseline.
        for key in ("systems", "tokenizer"):
            if key in user:
                merged[key] = user[key]
    except OmegaConfBaseException as e:  # a misspelt key or a value of the wrong type
        raise MultimsdError(f"bad evaluation option: {str(e).splitlines()[0]}") from None
    return OmegaConf.to_object(merged)


def parse_select_by(select_by: str) -> list[str]:
    """``"sari"`` -> ``["sari"]``; ``"mean(sari, bleu)"`` -> ``["sari", "bleu"]``; raises on anything else."""
    s = select_by.strip().lower().replace(" ", "")
    m = re.fullmatch(r"mean\((.*)\)", s)
    names = m.group(1).split(",") if m else [s]
    bad = [n for n in names if n not in RANKABLE]
    if not names or bad:
        raise MultimsdError(
            f"select_by={select_by!r}: expected one of {', '.join(RANKABLE)} or mean(<metric>,...) of them"
        )
    return names


def resolve_tokenizers(langs: list[str], overrides: dict[str, str]) -> dict[str, str]:
    """The tokenizer of each language: ``tokenizer.<lang>`` if given, else the language's default."""
    from multimsd.metrics import default_tokenizer, get_tokenizer

    for lang, name in overrides.items():
        if lang not in LANGUAGES:
            raise MultimsdError(f"tokenizer.{lang}: unknown language (supported: {', '.join(LANGUAGES)})")
        get_tokenizer(name)  # one line naming the known tokenizers
    return {lang: overrides.get(lang) or default_tokenizer(lang) for lang in langs}


def check_config(cfg: EvaluateConfig) -> None:
    import multimsd.metrics  # noqa: F401  (registers ja-mecab / zh-char)
    from multimsd.metrics.bleu import BLEU
    from multimsd.metrics.meteor import METEOR_MODES

    include = list(cfg.metrics.include)
    bad = [m for m in include if m not in METRICS]
    if bad or not include:
        raise MultimsdError(
            f"metrics.include: unknown metric(s) {', '.join(bad) or '(none given)'} "
            f"(known: {', '.join(METRICS)})"
        )
    missing = [m for m in parse_select_by(cfg.select_by) if m not in include]
    if missing:
        raise MultimsdError(f"select_by={cfg.select_by!r} needs {', '.join(missing)} in metrics.include")
    if cfg.metrics.meteor_mode not in ("auto", *METEOR_MODES):
        raise MultimsdError(
            f"metrics.meteor_mode={cfg.metrics.meteor_mode!r}: choose auto, {', '.join(METEOR_MODES)}"
        )
    if cfg.metrics.bleu_smooth not in BLEU.SMOOTH_DEFAULTS:
        raise MultimsdError(
            f"metrics.bleu_smooth={cfg.metrics.bleu_smooth!r}: choose {', '.join(BLEU.SMOOTH_DEFAULTS)}"
        )
    resolve_tokenizers([], dict(cfg.tokenizer))
    if not cfg.systems:
        raise MultimsdError("no systems to evaluate: add systems.<name>=<predictions path or @identity>")
    for name, spec in cfg.systems.items():
        if name in RESERVED_NAMES:
            raise MultimsdError(f"systems.{name}: {name!r} is reserved ({', '.join(RESERVED_NAMES)})")
        if not spec or not str(spec).strip():
            raise MultimsdError(f"systems.{name}: empty predictions path")
        if str(spec).startswith("@") and str(spec)[1:] not in BASELINES:
            raise MultimsdError(
                f"systems.{name}={spec}: unknown baseline (known: {', '.join('@' + b for b in BASELINES)})"
            )
    r = cfg.refs
    if r.source or r.references:
        if r.path:
            raise MultimsdError("give either refs.path or refs.source + refs.references, not both")
        if not (r.source and r.references and r.lang):
            raise MultimsdError("plain-text references need refs.source, refs.references=[...] and refs.lang")
    elif r.lang:
        raise MultimsdError(
            "refs.lang is for plain-text references (refs.source); select languages with refs.languages"
        )
    for lang in [*(r.languages or []), *([r.lang] if r.lang else [])]:
        if lang not in LANGUAGES:
            raise MultimsdError(f"unknown language {lang!r} (supported: {', '.join(LANGUAGES)})")
    if r.languages is not None and not r.languages:
        raise MultimsdError("refs.languages is empty (null = every language of the reference set)")


# ---------------------------------------------------------------------------------------------- reading files
def read_lines(path: str | Path, what: str) -> list[str]:
    """Lines of a UTF-8 text file (one sentence a line; ``\\r\\n`` accepted, a final newline optional)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise MultimsdError(f"{what} not found: {p}")
    if not p.is_file():
        raise MultimsdError(f"{what} is not a file: {p}")
    data = p.read_bytes()
    if not data.strip():
        raise MultimsdError(f"{p}: empty file ({what})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1)
        raise MultimsdError(f"{p}:{line}: not valid UTF-8 (byte {col} of the line)") from None
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    from multimsd.io import read_jsonl

    if path.is_file() and not path.read_bytes().strip():
        raise MultimsdError(f"{path}: empty file")
    return read_jsonl(path)


def _is_saved_dataset(p: Path) -> bool:
    return any((p / f).is_file() for f in ("dataset_dict.json", "dataset_info.json", "state.json"))


# ---------------------------------------------------------------------------------------------- references
@dataclass
class ReferenceSet:
    """The rows to evaluate: ``complex[i]`` (source), ``refs[i]`` (its references), ``lang[i]``."""

    name: str  # where it came from (for messages and results.json)
    complex: list[str]
    refs: list[list[str]]
    lang: list[str]

    def __len__(self) -> int:
        return len(self.complex)


def _check_row(where: str, complex_, simple, lang) -> tuple[str, list[str], str]:
    if not isinstance(complex_, str) or not complex_.strip():
        raise MultimsdError(f"{where}: `complex` must be a non-empty string")
    refs = [simple] if isinstance(simple, str) else simple
    if not isinstance(refs, list | tuple) or not refs or not all(isinstance(s, str) for s in refs):
        raise MultimsdError(f"{where}: `simple` must be a string or a non-empty list of strings")
    if not all(s.strip() for s in refs):
        raise MultimsdError(f"{where}: empty reference in `simple`")
    if not isinstance(lang, str) or lang not in LANGUAGES:
        raise MultimsdError(f"{where}: unknown language {lang!r} (supported: {', '.join(LANGUAGES)})")
    return complex_, list(refs), lang


def default_refs_path() -> Path:
    """align.py's default output directory, composed from ``conf/align.yaml`` (relative to the cwd)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from multimsd.config import register_configs

    register_configs()
    try:
        if GlobalHydra.instance().is_initialized():  # inside evaluate.py: conf/ is on the search path
            cfg = compose(config_name="align")
        else:
            conf = Path(__file__).resolve().parents[1] / "conf"
            if not (conf / "align.yaml").is_file():
                raise FileNotFoundError(conf / "align.yaml")
            with initialize_config_dir(str(conf), version_base="1.3"):
                cfg = compose(config_name="align")
        return Path(str(cfg.output.dir))
    except Exception as e:
        raise MultimsdError(
            f"refs.path is not set and align.py's default output directory cannot be determined "
            f"({type(e).__name__}); pass refs.path=<aligned dataset dir or JSONL>"
        ) from None


def load_references(cfg: EvaluateConfig) -> ReferenceSet:
    r = cfg.refs
    if r.source:
        src = read_lines(r.source, "refs.source")
        streams = [read_lines(f, "reference file") for f in r.references]
        for f, stream in zip(r.references, streams):
            if len(stream) != len(src):
                raise MultimsdError(
                    f"{f}: {len(stream)} lines but refs.source {r.source} has {len(src)} lines"
                )
        refs = [list(row) for row in zip(*streams)]
        for i, (c, rs) in enumerate(zip(src, refs), start=1):
            _check_row(f"{r.source}:{i}", c, rs, r.lang)
        return ReferenceSet(f"{r.source} (+{len(streams)} reference file(s))", src, refs, [r.lang] * len(src))

    if r.path:
        p = Path(r.path).expanduser()
    else:
        p = default_refs_path()
        if not p.exists():
            raise MultimsdError(
                f"no reference set: refs.path is not set and align.py's default output {p.resolve()} does not "
                "exist; "
                "run `python align.py` first, or pass refs.path=<aligned dataset dir or JSONL>"
            )
    if p.is_dir():
        ds = load_saved_split(p, r.split, "; set refs.split")
        missing = [c for c in ("complex", "simple", "lang") if c not in ds.column_names]
        if missing:
            raise MultimsdError(f"{p}: dataset lacks column(s) {', '.join(missing)}")
        cols = ds.select_columns(["complex", "simple", "lang"]).to_dict()
        rows = [
            _check_row(f"{p} ({r.split}) row {i}", c, s, lang)
            for i, (c, s, lang) in enumerate(zip(cols["complex"], cols["simple"], cols["lang"]))
        ]
        name = f"{p} ({r.split})" if (p / "dataset_dict.json").is_file() else str(p)
    elif p.is_file():
        if p.suffix in (".txt", ".tsv"):
            raise MultimsdError(
                f"{p}: refs.path takes a saved dataset or JSONL; for plain text use "
                "refs.source=<file> refs.references=[<file>,...] refs.lang=<lang>"
            )
        rows = []
        for lineno, rec in _read_jsonl(p):
            where = f"{p}:{lineno}"
            if not isinstance(rec, dict):
                raise MultimsdError(f"{where}: expected a JSON object, got {type(rec).__name__}")
            missing = [k for k in ("complex", "simple", "lang") if k not in rec]
            if missing:
                raise MultimsdError(f"{where}: missing field(s) {', '.join(missing)}")
            rows.append(_check_row(where, rec["complex"], rec["simple"], rec["lang"]))
        name = str(p)
    else:
        raise MultimsdError(f"reference set not found: {p}")
    if not rows:
        raise MultimsdError(
            f"{p}: the reference set has no rows" + (f" in split {r.split!r}" if p.is_dir() else "")
        )
    return ReferenceSet(name, [x[0] for x in rows], [x[1] for x in rows], [x[2] for x in rows])


# ---------------------------------------------------------------------------------------------- predictions
def _count_error(name: str, where: Path | str, n_pred: int, n_ref: int, what: str = "reference rows") -> None:
    if n_pred != n_ref:
        raise MultimsdError(
            f"system {name!r}: {where} has {n_pred} predictions but there are {n_ref} {what}; "
            "predictions must be one per reference row, in the reference order"
        )


def load_predictions(
    name: str, spec: str, refs: ReferenceSet, langs: list[str], split: str = "test"
) -> tuple[list, dict]:
    """Predictions of one system, aligned with the reference rows, and a description for results.json.

    ``spec`` is ``@identity``; a text file (one line per reference row, in reference order); a directory of
    ``<lang>.txt`` files (the rows of that language, in reference order; only the evaluated languages are
    read); a JSONL file or a saved dataset (split ``split`` of a DatasetDict) with a ``prediction`` column
    (a ``lang`` column, when present, must agree with the references). Rows of languages not evaluated may
    be None.
    """
    if spec.startswith("@"):
        baseline = spec[1:]
        if baseline == "identity":
            return list(refs.complex), {"baseline": baseline, "description": BASELINES[baseline]}
        raise MultimsdError(f"systems.{name}={spec}: unknown baseline")  # caught in check_config already
    p = Path(spec).expanduser()
    if not p.exists():
        raise MultimsdError(f"system {name!r}: predictions not found: {p}")
    if p.is_dir() and not _is_saved_dataset(p):
        preds: list[str | None] = [None] * len(refs)
        for lang in langs:
            f = p / f"{lang}.txt"
            if not f.is_file():
                raise MultimsdError(
                    f"system {name!r}: {f} not found (a predictions directory holds one <lang>.txt per "
                    "evaluated language)"
                )
            lines = read_lines(f, f"predictions of system {name!r}")
            rows = [i for i, x in enumerate(refs.lang) if x == lang]
            _count_error(name, f, len(lines), len(rows), f"{lang} reference rows")
            for i, line in zip(rows, lines):
                preds[i] = line
        return preds, {"path": str(p.resolve()), "format": "directory of <lang>.txt"}
    if p.is_dir():
        ds = load_saved_split(p, split, "; set refs.split")
        if "prediction" not in ds.column_names:
            raise MultimsdError(f"system {name!r}: {p} has no `prediction` column")
        cols = ds.to_dict()
        preds = cols["prediction"]
        langs_col = cols.get("lang")
        fmt, where = "saved dataset", lambda i: f"{p} row {i}"
    elif p.suffix in (".jsonl", ".json"):
        preds, langs_col = [], []
        lines = {}
        for lineno, rec in _read_jsonl(p):
            if not isinstance(rec, dict) or "prediction" not in rec:
                raise MultimsdError(f"{p}:{lineno}: expected a JSON object with a `prediction` field")
            lines[len(preds)] = lineno
            preds.append(rec["prediction"])
            langs_col.append(rec.get("lang"))
        fmt, where = "jsonl", lambda i: f"{p}:{lines[i]}"
    else:
        preds = read_lines(p, f"predictions of system {name!r}")
        _count_error(name, p, len(preds), len(refs))
        return preds, {"path": str(p.resolve()), "format": "text"}
    _count_error(name, p, len(preds), len(refs))
    for i, (pred, ref_lang) in enumerate(zip(preds, refs.lang)):
        if not isinstance(pred, str):
            raise MultimsdError(f"{where(i)}: `prediction` must be a string, got {type(pred).__name__}")
        if langs_col and langs_col[i] is not None and langs_col[i] != ref_lang:
            raise MultimsdError(
                f"{where(i)}: lang {langs_col[i]!r} but reference row {i} is {ref_lang!r} "
                "(predictions must follow the reference order)"
            )
    return list(preds), {"path": str(p.resolve()), "format": fmt}


# ---------------------------------------------------------------------------------------------- metrics
def _streams(refs: list[list[str]], where: str) -> list[list[str]]:
    """Per-row reference lists -> reference streams (all rows must have the same number of references)."""
    k = len(refs[0])
    for i, rs in enumerate(refs):
        if len(rs) != k:
            raise MultimsdError(
                f"{where}: row {i} has {len(rs)} references but the first row has {k}; every row of a "
                "language needs the same number of references"
            )
    return [list(s) for s in zip(*refs)]


def _ter(lc: bool, k: int):
    from sacrebleu.metrics import TER

    ter = TER(case_sensitive=True)  # input is lowercased (or not) and tokenized by us
    ter.num_refs = k
    return ter


def _chrf(lc: bool, k: int):
    from sacrebleu.metrics import CHRF

    chrf = CHRF(lowercase=lc)
    chrf.num_refs = k
    return chrf


def signatures(k: int, tok: str, cfg: EvaluateConfig) -> dict[str, str]:
    """sacrebleu signatures of BLEU, TER and chrF as computed here (``tok``: our pre-tokenisation)."""
    from multimsd.metrics import bleu_signature

    lc = cfg.metrics.lowercase
    out = {}
    include = cfg.metrics.include
    if "bleu" in include:
        out["bleu"] = bleu_signature(k, lowercase=lc, tokenizer=tok, smooth_method=cfg.metrics.bleu_smooth)
    if "ter" in include:
        sig = _ter(lc, k).get_signature()
        sig.update("case", "lc" if lc else "mixed")
        sig.update("tok", tok)
        out["ter"] = sig.format()
    if "chrf" in include:
        out["chrf"] = _chrf(lc, k).get_signature().format()
    return out


def token_scores(
    sources: list[str], outputs: list[str], streams: list[list[str]], tok: str, cfg: EvaluateConfig
) -> dict[str, float]:
    """SARI (+ parts), BLEU, TER and chrF of one output stream (the metrics that can be pooled)."""
    from multimsd.metrics import corpus_bleu, corpus_sari_operation_scores, normalize

    lc, include, res = cfg.metrics.lowercase, cfg.metrics.include, {}
    if "sari" in include:
        add, keep, dele = corpus_sari_operation_scores(sources, outputs, streams, lowercase=lc, tokenizer=tok)
        res.update(sari=(add + keep + dele) / 3, sari_add=add, sari_keep=keep, sari_delete=dele)
    if "bleu" in include:
        bleu = corpus_bleu(
            outputs, streams, lowercase=lc, tokenizer=tok, smooth_method=cfg.metrics.bleu_smooth
        )
        res["bleu"] = bleu.score
    if "ter" in include:
        norm = [normalize(s, lowercase=lc, tokenizer=tok) for s in outputs]
        refs_norm = [[normalize(s, lowercase=lc, tokenizer=tok) for s in stream] for stream in streams]
        res["ter"] = _ter(lc, len(streams)).corpus_score(norm, refs_norm).score
    if "chrf" in include:
        res["chrf"] = _chrf(lc, len(streams)).corpus_score(outputs, streams).score
    return res


def term_dictionary(lang: str, cfg: EvaluateConfig):
    """(TermDictionary, its path) for ``lang``, or (None, None) when ``terms.dir`` has no file for it."""
    from multimsd.metrics.terms import TermDictionary, load_terms, sample_dictionary, sample_dictionary_path

    if cfg.terms.dir is None:
        try:
            path = sample_dictionary_path(lang)
        except MultimsdError:
            return None, None
        return sample_dictionary(lang), path
    d = Path(cfg.terms.dir).expanduser()
    if not d.is_dir():
        raise MultimsdError(f"terms.dir not found (or not a directory): {d}")
    exts = (".txt", ".xml", ".bin", ".csv", ".tsv")
    files = sorted(f for f in d.iterdir() if f.is_file() and f.name.startswith(lang + "."))
    files = [f for f in files if f.name.removesuffix(".gz")[len(lang) :] in exts]
    if not files:
        return None, None
    return TermDictionary(load_terms(files[0]), lang), files[0]


def evaluate_language(
    lang: str, tok: str, rows: list[int], refs: ReferenceSet, systems: dict[str, list], cfg: EvaluateConfig
) -> tuple[dict, dict[str, dict]]:
    """(reference-side facts, per-system scores) for one language."""
    from multimsd.metrics import TOKENIZER_DESCRIPTIONS, corpus_fkgl, corpus_meteor, quality_features
    from multimsd.metrics.meteor import meteor_mode
    from multimsd.metrics.terms import term_type_table

    include, lc = cfg.metrics.include, cfg.metrics.lowercase
    sources = [refs.complex[i] for i in rows]
    streams = _streams([refs.refs[i] for i in rows], f"{refs.name} ({lang})")
    outputs = {name: [preds[i] for i in rows] for name, preds in systems.items()}
    info: dict[str, Any] = {
        "n_sentences": len(rows),
        "n_references": len(streams),
        "tokenizer": tok,
        "tokenizer_description": TOKENIZER_DESCRIPTIONS.get(tok, "registered tokenizer"),
        "signatures": signatures(len(streams), tok, cfg),
    }
    if "meteor" in include:
        info["meteor_mode"] = meteor_mode(lang, cfg.metrics.meteor_mode)
    if "fkgl" in include:
        info["fkgl_source"] = corpus_fkgl(sources, lang)
        info["fkgl_reference"] = corpus_fkgl([s for stream in streams for s in stream], lang)
    term_table = None
    if cfg.terms.enabled:
        dictionary, path = term_dictionary(lang, cfg)
        if dictionary is not None:
            term_table = term_type_table(sources, streams, outputs, dictionary)
            info["term_types"] = {"source": term_table["source"], "reference": term_table["reference"]}
            info["terms_dictionary"] = {"path": str(path), "n_terms": len(dictionary)}
        else:
            info["term_types"] = None
            info["terms_dictionary"] = None
    scores = {}
    for name, outs in outputs.items():
        res: dict[str, Any] = {"n_sentences": len(rows), "tokenizer": tok}
        res.update(token_scores(sources, outs, streams, tok, cfg))
        if "meteor" in include:
            met = corpus_meteor(
                outs, streams, lang=lang, tokenizer=tok, mode=cfg.metrics.meteor_mode, lowercase=lc
            )
            res.update(meteor=met["meteor"], meteor_mode=met["mode"])
        if "fkgl" in include:
            res["fkgl"] = corpus_fkgl(outs, lang)
        if "quality" in include:
            q = quality_features(sources, outs, lang=lang, tokenizer=tok, lowercase=lc)
            res["quality"] = {k: q[k] for k in QUALITY_KEYS}
        if term_table is not None:
            res["term_types"] = term_table[name]
        scores[name] = res
    return info, scores


def pool_languages(
    langs: list[str],
    info: dict[str, dict],
    per_lang: dict[str, dict[str, dict]],
    refs: ReferenceSet,
    systems: dict[str, list],
    cfg: EvaluateConfig,
) -> tuple[dict[str, dict], dict]:
    """Scores over all languages together where meaningful (module docstring); (per-system, report)."""
    include = cfg.metrics.include
    toks = {info[lang]["tokenizer"] for lang in langs}
    ks = {info[lang]["n_references"] for lang in langs}
    one_tok = len(toks) == 1
    by_tok: dict[str, list[str]] = {}
    for g in langs:
        by_tok.setdefault(info[g]["tokenizer"], []).append(g)
    why_tok = (
        "languages use different tokenizers ("
        + "; ".join(f"{t}: {' '.join(gs)}" for t, gs in by_tok.items())
        + ")"
    )
    why_k = "languages have different numbers of references"
    computed, skipped = [], {}
    rows = [i for i, lang in enumerate(refs.lang) if lang in langs]
    n = len(rows)
    pooled: dict[str, dict] = {name: {"n_sentences": n} for name in systems}

    corpus_metrics = [m for m in ("sari", "bleu", "ter") if m in include]
    if corpus_metrics and not (one_tok and len(ks) == 1):
        for m in corpus_metrics:
            skipped[m] = why_tok if not one_tok else why_k
        corpus_metrics = []
    chrf = "chrf" in include and len(ks) == 1
    if "chrf" in include and not chrf:
        skipped["chrf"] = why_k
    if corpus_metrics or chrf:
        sources = [refs.complex[i] for i in rows]
        streams = _streams([refs.refs[i] for i in rows], refs.name)
        tok = next(iter(toks)) if one_tok else "13a"  # chrF alone ignores the tokenizer
        include_now = corpus_metrics + (["chrf"] if chrf else [])
        sub = OmegaConf.to_object(
            OmegaConf.merge(OmegaConf.structured(cfg), {"metrics": {"include": include_now}})
        )
        for name, preds in systems.items():
            pooled[name].update(token_scores(sources, [preds[i] for i in rows], streams, tok, sub))
            if one_tok:
                pooled[name]["tokenizer"] = tok
        computed += include_now

    def weighted(get) -> float:
        return sum(get(lang) * info[lang]["n_sentences"] for lang in langs) / n

    if "meteor" in include:
        modes = {info[lang]["meteor_mode"] for lang in langs}
        if one_tok and len(modes) == 1:
            for name in systems:
                pooled[name]["meteor"] = weighted(lambda g, s=name: per_lang[g][s]["meteor"])
                pooled[name]["meteor_mode"] = next(iter(modes))
            computed.append("meteor")
        else:
            skipped["meteor"] = why_tok if not one_tok else "languages use different METEOR modes"
    if "quality" in include:
        if one_tok:
            for name in systems:
                pooled[name]["quality"] = {
                    k: weighted(lambda g, s=name, k=k: per_lang[g][s]["quality"][k]) for k in QUALITY_KEYS
                }
            computed.append("quality")
        else:
            skipped["quality"] = why_tok
    if "fkgl" in include:
        skipped["fkgl"] = "FKGL is only comparable within one language"
    if cfg.terms.enabled:
        counted = [lang for lang in langs if info[lang].get("term_types")]
        if counted:
            for name in systems:
                pooled[name]["term_types"] = sum(per_lang[g][name]["term_types"] for g in counted)
            computed.append("term_types (sum over languages with a dictionary)")
    return pooled, {"computed": computed, "skipped": skipped}


# ---------------------------------------------------------------------------------------------- ranking
def rank_systems(langs: list[str], per_lang: dict[str, dict[str, dict]], select_by: str) -> dict[str, Any]:
    """Systems ordered by the ``select_by`` score, per language and overall (mean over languages)."""
    names = parse_select_by(select_by)

    def score(res: dict) -> float:
        return sum(res[m] for m in names) / len(names)

    def order(scored: dict[str, float]) -> list[dict]:
        return [{"system": s, "score": v} for s, v in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))]

    per_language = {lang: order({s: score(r) for s, r in per_lang[lang].items()}) for lang in langs}
    systems = list(per_lang[langs[0]])
    overall = order({s: sum(score(per_lang[lang][s]) for lang in langs) / len(langs) for s in systems})
    return {
        "select_by": select_by,
        "metrics": names,
        "overall_is": "mean over languages of the per-language score",
        "per_language": per_language,
        "overall": overall,
        "best": {
            **{lang: per_language[lang][0]["system"] for lang in langs},
            "overall": overall[0]["system"],
        },
    }


# ---------------------------------------------------------------------------------------------- reports
def _fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _metric_table(metric: str, title: str, results: dict) -> str:
    langs = results["languages"]
    systems = list(results["systems"])
    has_all = any(metric in results["systems"][s].get("all", {}) for s in systems)
    cols = [*langs, "avg", *(["all"] if has_all else [])]
    lower_better = metric == "ter"

    def value(s: str, col: str) -> float | None:
        r = results["systems"][s]
        if col == "avg":
            return sum(r[g][metric] for g in langs) / len(langs)
        return r.get(col, {}).get(metric)

    best = {}
    for col in cols:
        vals = [v for s in systems if (v := value(s, col)) is not None]
        if vals:
            best[col] = min(vals) if lower_better else max(vals)
    lines = [f"## {title}", "", "| system | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for s in systems:
        cells = []
        for col in cols:
            v = value(s, col)
            cell = _fmt(v)
            cells.append(f"**{cell}**" if v is not None and len(systems) > 1 and v == best.get(col) else cell)
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_report(results: dict) -> str:
    include = results["settings"]["metrics"]["include"]
    langs = results["languages"]
    rk = results["ranking"]
    out = [
        f"# Evaluation: {results['references']['name']}",
        "",
        f"{results['references']['n_sentences']} sentences in {len(langs)} language(s); tokenizers: "
        + ", ".join(f"{g} {results['per_language'][g]['tokenizer']}" for g in langs)
        + f"; lowercase={str(results['settings']['metrics']['lowercase']).lower()}. "
        "`avg` = mean over languages; `all` = pooled corpus score (only where every language shares a "
        "tokenizer).",
        "",
        f"Ranking by {rk['select_by']}: "
        + "; ".join(f"{g}: {' > '.join(e['system'] for e in rk['per_language'][g])}" for g in langs)
        + f"; overall (mean over languages): {' > '.join(e['system'] for e in rk['overall'])}",
    ]
    for metric, title in (("sari", "SARI"), ("bleu", "BLEU")):
        if metric in include:
            out += ["", _metric_table(metric, title, results)]
    cols: list[tuple[str, str]] = []  # (header, result key; q:<key> = a quality feature)
    if "sari" in include:
        cols += [("SARI", "sari"), ("add", "sari_add"), ("keep", "sari_keep"), ("del", "sari_delete")]
    for m, h in (("bleu", "BLEU"), ("ter", "TER"), ("chrf", "chrF"), ("meteor", "METEOR"), ("fkgl", "FKGL")):
        if m in include:
            cols.append((h, m))
    has_terms = any(results["per_language"][g].get("term_types") for g in langs)
    if has_terms:
        cols.append(("terms", "term_types"))
    if "quality" in include:
        cols += [
            ("compr.", "q:compression_ratio"),
            ("Lev. sim", "q:levenshtein_similarity"),
            ("copies", "q:exact_copies"),
            ("added", "q:additions_proportion"),
            ("deleted", "q:deletions_proportion"),
        ]

    def get(res: dict, key: str):
        if key.startswith("q:"):
            return res.get("quality", {}).get(key[2:])
        return res.get(key)

    out += ["", "## Per language"]
    for g in langs + (["all"] if "all" in results["pooled"]["languages"] else []):
        if g == "all":
            head = f"### all (pooled: {', '.join(results['pooled']['computed']) or 'nothing'})"
        else:
            info = results["per_language"][g]
            mode = f"; METEOR {info['meteor_mode']}" if "meteor_mode" in info else ""
            head = (
                f"### {g} — tokenizer {info['tokenizer']}, {info['n_sentences']} sentences, "
                f"{info['n_references']} reference(s){mode}"
            )
        out += [
            "",
            head,
            "",
            "| system | " + " | ".join(h for h, _ in cols) + " |",
            "|---|" + "---:|" * len(cols),
        ]
        if g != "all":
            tt = info.get("term_types") or {}
            for side in ("source", "reference"):
                row = {"fkgl": info.get(f"fkgl_{side}"), "term_types": tt.get(side)}
                out.append(
                    f"| *{side}* | "
                    + " | ".join(_fmt(row.get(k)) if k in row else "" for _, k in cols)
                    + " |"
                )
        for s, per in results["systems"].items():
            res = per.get(g, {})
            out.append(
                f"| {s} | "
                + " | ".join(_fmt(get(res, k), 3 if k.startswith("q:") else 2) for _, k in cols)
                + " |"
            )
    skipped = results["pooled"]["skipped"]
    if skipped and len(langs) > 1:
        reasons: dict[str, list[str]] = {}
        for m, why in skipped.items():
            reasons.setdefault(why, []).append(m)
        out += [
            "",
            "Not pooled over languages: "
            + "; ".join(f"{', '.join(ms)}: {why}" for why, ms in reasons.items()),
        ]
    return "\n".join(out) + "\n"


def plot_scores(results: dict, path: Path) -> None:
    """Grouped bar chart: SARI (or the first ranked metric) per language, one bar per system."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metric = (
        "sari" if "sari" in results["settings"]["metrics"]["include"] else results["ranking"]["metrics"][0]
    )
    langs = results["languages"]
    cols = [*langs, "avg"] if len(langs) > 1 else langs
    systems = list(results["systems"])
    width = 0.8 / len(systems)
    fig = Figure(figsize=(max(5.0, 1.0 + 0.9 * len(cols) * max(1, len(systems) / 2)), 3.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for k, s in enumerate(systems):
        r = results["systems"][s]
        vals = [
            sum(r[g][metric] for g in langs) / len(langs) if col == "avg" else r[col][metric] for col in cols
        ]
        xs = [j - 0.4 + width * (k + 0.5) for j in range(len(cols))]
        bars = ax.bar(xs, vals, width, label=s)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
    ax.set_xticks(range(len(cols)), cols)
    ax.set_ylabel(metric.upper())
    ax.set_title(f"{metric.upper()} per language ({results['references']['n_sentences']} sentences)")
    ax.legend(fontsize=8, ncols=min(len(systems), 4), loc="upper center", bbox_to_anchor=(0.5, -0.12))
    ax.margins(y=0.15)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# ---------------------------------------------------------------------------------------------- the stage
def run(cfg: EvaluateConfig | DictConfig | dict) -> dict:
    """Run the evaluation stage; return the results (also written to ``output.dir/results.json``)."""
    import sacrebleu

    cfg = to_config(cfg)
    check_config(cfg)
    out_dir = Path(cfg.output.dir)
    check_replaceable(out_dir, MARKER, "a multimsd evaluation output")

    # 1. references and predictions
    refs = load_references(cfg)
    present = [g for g in LANGUAGES if g in set(refs.lang)]
    langs = [g for g in present if g in cfg.refs.languages] if cfg.refs.languages else present
    if not langs:
        raise MultimsdError(
            f"{refs.name}: no rows in refs.languages={list(cfg.refs.languages or [])} "
            f"(it has {', '.join(present)})"
        )
    tokenizers = resolve_tokenizers(langs, dict(cfg.tokenizer))
    systems, system_info = {}, {}
    for name, spec in cfg.systems.items():
        systems[name], system_info[name] = load_predictions(name, str(spec), refs, langs, cfg.refs.split)
        system_info[name]["spec"] = str(spec)
    log.info("%d reference rows in %s; %d system(s)", len(refs), ", ".join(langs), len(systems))

    # 2. scores per language, then pooled
    per_language, per_lang_scores = {}, {}
    for lang in langs:
        rows = [i for i, x in enumerate(refs.lang) if x == lang]
        per_language[lang], per_lang_scores[lang] = evaluate_language(
            lang, tokenizers[lang], rows, refs, systems, cfg
        )
    results_systems = {name: {lang: per_lang_scores[lang][name] for lang in langs} for name in systems}
    pooled_report: dict[str, Any] = {"languages": [], "computed": [], "skipped": {}}
    if len(langs) > 1:
        pooled, report = pool_languages(langs, per_language, per_lang_scores, refs, systems, cfg)
        pooled_report = {"languages": ["all"], **report}
        for name in systems:
            results_systems[name]["all"] = pooled[name]

    results = {
        "multimsd_version": __version__,
        "sacrebleu_version": sacrebleu.__version__,
        "settings": {
            **OmegaConf.to_container(OmegaConf.structured(cfg)),
            "tokenizers": tokenizers,
        },
        "references": {
            "name": refs.name,
            "n_sentences": sum(per_language[g]["n_sentences"] for g in langs),
            "languages": langs,
        },
        "languages": langs,
        "tokenizers": tokenizers,
        "per_language": per_language,
        "systems_info": system_info,
        "systems": results_systems,
        "pooled": pooled_report,
        "ranking": rank_systems(langs, per_lang_scores, cfg.select_by),
    }
    markdown = markdown_report(results)

    # 3. output, atomically
    with atomic_directory(out_dir) as tmp:
        (tmp / "results.json").write_text(
            json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (tmp / "table.md").write_text(markdown, encoding="utf-8")
        (tmp / "evaluate_config.yaml").write_text(
            OmegaConf.to_yaml(OmegaConf.structured(cfg)), encoding="utf-8"
        )
        if cfg.output.plot:
            plot_scores(results, tmp / "scores.png")
    if cfg.output.print_table:
        print(markdown)
        print(
            f"results written to {out_dir.resolve()}  (results.json, table.md"
            + (", scores.png)" if cfg.output.plot else ")")
        )
    results["output_dir"] = str(out_dir.resolve())
    return results


__all__ = ["METRICS", "RANKABLE", "BASELINES", "load_predictions", "load_references", "run", "to_config"]
