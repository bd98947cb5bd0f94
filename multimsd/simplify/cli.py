"""``multimsd simplify MODEL INPUT --out OUT [--system NAME] [--lang LANG] [--any-lang] [eval.KEY=VALUE ...]``.

Not a Hydra command: MODEL already holds the config (the run's, or the training's), so the command takes
paths and a few options, and ``eval.*`` overrides of the decoding. Its error contract is the stage commands'
(:func:`multimsd.commands.stage.run_stage`): a problem with MODEL, INPUT or an option is one ``error:`` line
and exit 2, before the model is loaded and with no OUT written (so is a document in a language the system was
not trained or prompted on, unless ``--any-lang``: then a warning); the overrides (with a "did you mean"), a
MODEL that is not there, --out and --terms are checked first, before torch or transformers is imported
(:mod:`multimsd.simplify.checks`). Ctrl-C / SIGTERM is one ``interrupted …`` line saying how many documents
are done (run the same command to continue).
"""

from __future__ import annotations

import argparse
import sys

USAGE = """\
usage: multimsd simplify MODEL INPUT --out OUT [--system NAME] [--lang LANG] [--any-lang]
                         [--terms DIR|none] [--format md|html] [eval.KEY=VALUE ...]

Simplifies documents with a trained system: each document is cut into sentences (the alignment's segmenter),
each sentence rewritten with the evaluation's decoding and checked by the safety checks (numbers, units and
limits; negation; meaning far from the source; an empty, cut or looping output: the `safety` metric's; the
source's medical terms), and one JSON record per document appended to OUT:
  {"id", "lang", "text": the simplified document, "sentences": [{"source", "output", "flags": [...]}],
   "flagged": flagged sentences, "system": NAME, "model": PATH}

  MODEL          a `multimsd run` directory: its best system that has a model, by the evaluation's ranking
                 (copy baselines skipped; of a sweep, the system selected on validation); of a run that
                 has not finished (running or interrupted: no ranking yet) name one of the systems whose
                 training finished with --system (the error line lists them); or a `multimsd train`
                 output directory (train_config.json and best/); or a model (a 🤗 model directory, a Hub id,
                 offline:smollm2) prompted 0-shot with the project's instruction
  INPUT          FILE.txt (one document, id = FILE), FILE.jsonl (one {"id", "lang", "text"} a line;
                 "complex" for "text" works too) or - (stdin: JSONL if it starts with {, else one document)
  --out OUT      the JSONL written, a record per document, each written whole (flushed, fsynced);
                 when OUT exists the documents already in it are skipped: a killed run continues
  --system NAME  this system of the run instead of the best (those under systems/ whose training finished)
  --lang LANG    the language of a document that names none (de en es fr it ja pt ru zh)
  --any-lang     simplify documents in a language the system was not trained or prompted on, with a
                 warning (without it: an error naming the languages it knows, before the model is loaded)
  --terms DIR    the medical term lists the checks use, <lang>.txt|xml|bin|csv|tsv[.gz] (the evaluation's
                 terms.dir); default: the bundled demo lists (about 200 terms a language: most terms of a
                 real text are not in them, the summary says so); none: no term check
  --format FMT   also write OUT's documents side by side as OUT.md or OUT.html: novel words and terms
                 marked, flagged sentences highlighted with their reasons
  eval.KEY=VALUE the decoding's settings over the system's (eval.num_beams=4, eval.max_new_tokens=128,
                 eval.max_batch_tokens=16384); other keys, and values of the wrong type, are refused
                 with the closest key, before anything is loaded

Example:
  multimsd simplify outputs/run leaflets.jsonl --out simplified.jsonl
Errors in the arguments or the input print one line and exit with status 2.
"""


def parse(argv: list[str]) -> argparse.Namespace:
    from multimsd.commands.stage import CommandParser

    p = CommandParser("simplify")
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("overrides", nargs="*")
    p.add_argument("--out", required=True)
    p.add_argument("--system")
    p.add_argument("--lang")
    p.add_argument("--any-lang", action="store_true")
    p.add_argument("--terms")
    p.add_argument("--format", choices=("md", "html"))
    return p.parse_intermixed_args(argv)


def main(argv: list[str] | None = None) -> None:
    """``multimsd simplify …`` (``argv``: the arguments after ``simplify``; default ``sys.argv[1:]``)."""
    from multimsd.commands.stage import path_command

    path_command(list(sys.argv[1:] if argv is None else argv), USAGE, checked, go)


def checked(argv: list[str]) -> argparse.Namespace:
    """The parsed arguments, checked as far as they can be without reading INPUT or MODEL (the overrides, that
    MODEL is there, --out, --terms): a problem is one error line, exit 2, before torch or transformers is
    imported (:mod:`multimsd.simplify.checks`)."""
    from multimsd.simplify.checks import before_work

    args = parse(argv)
    before_work(check_arguments, args)
    return args


def check_arguments(args: argparse.Namespace) -> None:
    from pathlib import Path

    from multimsd.errors import MultimsdError
    from multimsd.simplify.checks import check_model, check_overrides

    check_overrides(args.overrides)
    check_model(args.model)
    out = Path(args.out).expanduser()
    if out.is_dir():
        raise MultimsdError(f"--out {out}: a directory; name a file (e.g. {out / 'simplified.jsonl'})")
    if args.input != "-" and out.resolve() == Path(args.input).expanduser().resolve():
        raise MultimsdError(f"--out {out}: that is INPUT")
    if args.terms not in (None, "none") and not Path(args.terms).expanduser().is_dir():
        raise MultimsdError(f"--terms {args.terms}: not a directory")


def go(args: argparse.Namespace):
    import logging
    from pathlib import Path

    from multimsd.simplify.documents import Input
    from multimsd.simplify.run import simplify
    from multimsd.simplify.source import resolve
    from multimsd.training.system import check_languages

    out = Path(args.out).expanduser()
    lookup = term_lookup(args)
    terms = None if args.terms == "none" else lookup
    with Input(args.input, args.lang) as inp:
        ids = inp.check()  # every record read and checked before the model is loaded
        source = resolve(args.model, args.system, args.overrides)
        if warning := check_languages(
            source.name, source.config, source.shots, inp.langs, args.any_lang, "--any-lang"
        ):
            logging.getLogger("multimsd.simplify").warning("%s; simplified anyway (--any-lang)", warning)
        t = simplify(source, inp, out, ids, terms=terms)
    lines = summary_lines(t, out)
    if terms is not None:  # what the term check could see: the bundled lists are a demo
        lines += [f"terms: {note}" for note in terms.notes()]
    else:
        lines.append("terms: no term check (--terms none)")
    if args.format and out.exists():
        from multimsd.simplify.view import write_view

        lines.append(f"view: {write_view(out, args.format, lookup)}")
    print("\n".join(lines))
    return t


def term_lookup(args: argparse.Namespace):
    """The term lists of --terms (the bundled ones without it; ``none``: no term check), and the evaluation's
    lowercasing and tokenizers for the view's novel words: those of MODEL's evaluation when MODEL is a run
    directory (``evaluation/evaluate_config.yaml``, as the studio reads them), else the evaluation's defaults
    (:class:`multimsd.metrics.lookup.TermLookup`)."""
    from pathlib import Path

    from multimsd.metrics.lookup import TermLookup, evaluation_settings
    from multimsd.training.system import is_run_dir

    model = Path(args.model).expanduser()
    settings = evaluation_settings(model) if model.is_dir() and is_run_dir(model) else {}
    return TermLookup.of_evaluation(
        settings,
        terms_dir=None if args.terms in (None, "none") else args.terms,
        use_terms=args.terms != "none",
        missing="--terms",
    )


def by_check(counts) -> str:
    """`` (numbers 2, negation 1)``: flagged sentences per check, in the order of the checks."""
    from multimsd.metrics.safety import CHECKS

    parts = [f"{c} {counts[c]}" for c in CHECKS if counts.get(c)]
    return f" ({', '.join(parts)})" if parts else ""


def summary_lines(t, out) -> list[str]:
    """What the command prints at the end."""
    share = f" ({100 * t.flagged / t.sentences:.1f} %)" if t.sentences else ""
    speed = (
        f"{t.tokens / t.seconds:.1f} output tokens/s, {t.sentences / t.seconds:.2f} sentences/s, "
        if t.seconds
        else ""
    )
    return [
        f"documents: {t.documents}" + (f" ({t.skipped} skipped: already in --out)" if t.skipped else ""),
        f"sentences: {t.sentences}, flagged: {t.flagged}{share}" + by_check(t.by_check),
        f"speed: {speed}{t.seconds:.1f} s",
        f"output: {out}",
    ]
