"""How well the safety flags work, per language and per check (issue #47).

From real sentences of every language (the bundled sample's articles; CLARA-MeD's professional sentences for
Spanish when ../shared/data has them) benchmarks/safety_perturb.py makes outputs that must be flagged (a number,
a unit, a range, a number or frequency word changed; a number dropped or added; a negation dropped or added; a
term removed; a loop) and faithful rewrites that must not be (a number as a word or the reverse, a unit spelled
out, a limit said another way, a lexical negation for a syntactic one, a clause moved, a thousands separator).
benchmarks/safety_cases.tsv adds the cases a generator cannot make, written by hand per language (a changed
dose in context, "avoid" for "do not", "only if" for "never … unless", an echoed instruction, an unrelated or
generic sentence, a loop). Every case goes through :func:`multimsd.metrics.safety.check_sentences`, the one
function the product uses.

Per language and check it prints the **recall** (the share of must-flag cases of that check that the check
flags) and the **false-alarm rate** (the share of all faithful cases that the check flags), with the number
of cases. The meaning check runs on its own cases (echoes, unrelated and generic outputs; faithful rewrites
and the hand-written faithful simplifications), and on held-out real pairs where ../shared/data has them
(CLARA-MeD, DEplain): their flag rate is a false-alarm rate on human simplifications.

    python benchmarks/safety_bench.py [--langs de,en] [--no-meaning] [--kinds] [--json FILE] [--calibrate]

``--kinds`` adds a table per kind of case (where the misses and false alarms are); ``--calibrate`` prints the
meaning thresholds again from the bundled sample's aligned pairs (the 1st percentile of their similarity,
multimsd.metrics.meaning.THRESHOLDS). docs/evaluation.md shows the table with the commit it was made at.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import safety_perturb as sp  # noqa: E402

from multimsd import LANGUAGES  # noqa: E402
from multimsd.metrics.safety import check_sentences  # noqa: E402
from multimsd.metrics.terms import sample_dictionary  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
CASES = ROOT / "benchmarks" / "safety_cases.tsv"
LEXICAL = ("numbers", "negation", "degenerate")
COLUMNS = ("numbers", "negation", "meaning", "degenerate", "terms")
TARGET = {"recall": 0.95, "false alarms": 0.05}  # numbers and negation, every language


@dataclass
class Case:
    lang: str
    check: str  # the check that must flag it; for a faithful case, what kind of rewrite it is about
    expect: str  # flag | pass
    kind: str
    source: str
    output: str
    origin: str  # generated | hand | held-out
    fired: tuple[str, ...] = ()
    meaning_checked: bool = False


# ------------------------------------------------------------------------------------------------ sources
def sample_articles() -> list[dict]:
    path = ROOT / "multimsd" / "sample_data" / "articles.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def sentences(lang: str, articles: list[dict], clara: int) -> list[tuple[str, str]]:
    """(article id, sentence) of the sample's articles in ``lang``; for es also ``clara`` CLARA-MeD sources."""
    out = [(a["article_id"], s) for a in articles if a["lang"] == lang for s in a["complex"] + a["simple"]]
    path = SHARED / "clara-med" / "aligned.tsv"
    if lang == "es" and clara and path.is_file():
        rows = [r.split("\t") for r in path.read_text(encoding="utf-8").splitlines()[1:]]
        srcs = sorted({r[1].strip() for r in rows if len(r) == 3 and 20 < len(r[1]) < 400})
        out += [("clara-med", s) for s in random.Random(0).sample(srcs, min(clara, len(srcs)))]
    return out


def generated(lang: str, sents: list[tuple[str, str]], rng: random.Random) -> list[Case]:
    from multimsd.training.prompts import INSTRUCTIONS

    dictionary = sample_dictionary(lang)
    cases = []
    for _, s in sents:
        for check, kind, out in sp.must_flag(s, lang, rng):
            cases.append(Case(lang, check, "flag", kind, s, out, "generated"))
        for kind, src, out in sp.faithful(s, lang, rng):
            check = "negation" if "negation" in kind else "numbers" if kind != "clause moved" else "any"
            cases.append(Case(lang, check, "pass", kind, src, out, "generated"))
        if (removed := sp.term_removed(s, lang, dictionary)) is not None:
            cases.append(Case(lang, "terms", "flag", "term removed", s, removed, "generated"))
    # the meaning check: echoes and unrelated sentences of the same language and register
    for article, s in rng.sample(sents, min(40, len(sents))):
        cases.append(Case(lang, "meaning", "flag", "instruction echoed", s, INSTRUCTIONS[lang], "generated"))
        cases.append(Case(lang, "meaning", "flag", "preamble only", s, sp.ECHO[lang], "generated"))
        unrelated = rng.choice([o for a, o in sents if a != article])
        cases.append(Case(lang, "meaning", "flag", "unrelated sentence", s, unrelated, "generated"))
    return cases


def hand(langs: list[str]) -> list[Case]:
    with CASES.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        Case(r["lang"], r["check"], r["expect"], r["note"].split(":")[0], r["source"], r["output"], "hand")
        for r in rows
        if r["lang"] in langs
    ]


def held_out(langs: list[str], n: int = 600) -> list[Case]:
    """Real aligned pairs not used to calibrate anything: CLARA-MeD (es) and DEplain-web's 1:1 gold (de)."""
    cases = []
    clara = SHARED / "clara-med" / "aligned.tsv"
    if "es" in langs and clara.is_file():
        rows = [r.split("\t") for r in clara.read_text(encoding="utf-8").splitlines()[1:]]
        pairs = [(r[1], r[2]) for r in rows if len(r) == 3 and r[1].strip() and r[2].strip()]
        for s, o in random.Random(0).sample(pairs, min(n, len(pairs))):
            cases.append(Case("es", "meaning", "pass", "CLARA-MeD pair", s, o, "held-out"))
    deplain = SHARED / "deplain-dev" / "gold.tsv"
    if "de" in langs and deplain.is_file():
        with deplain.open(encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                if r["type"] == "1:1" and r["alignment"] == "aligned":
                    cases.append(
                        Case("de", "meaning", "pass", "DEplain pair", r["complex"], r["simple"], "held-out")
                    )
    return cases


# -------------------------------------------------------------------------------------------------- checks
def run_checks(cases: list[Case], meaning: bool) -> None:
    """Fill each case's ``fired``: the lexical checks (and terms, with the bundled lists) on every case; the
    meaning check on the meaning cases, the hand-written faithful ones and 40 generated faithful ones a language."""
    by_lang: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by_lang[c.lang].append(c)
    for lang, cs in by_lang.items():
        print(f"{lang}: {len(cs)} cases", file=sys.stderr, flush=True)
        dictionary = sample_dictionary(lang)
        flags = check_sentences(
            [c.source for c in cs], [c.output for c in cs], lang, dictionary, checks=LEXICAL
        )
        for c, fl in zip(cs, flags):
            c.fired = tuple(sorted({f.check for f in fl}))
        if not meaning:
            continue
        gen_pass = [c for c in cs if c.expect == "pass" and c.origin == "generated"]
        chosen = [c for c in cs if c.check == "meaning" or (c.expect == "pass" and c.origin == "hand")]
        chosen += random.Random(1).sample(gen_pass, min(40, len(gen_pass)))
        flags = check_sentences(
            [c.source for c in chosen], [c.output for c in chosen], lang, checks=("meaning",)
        )
        for c, fl in zip(chosen, flags):
            c.fired = tuple(sorted(set(c.fired) | {f.check for f in fl}))
            c.meaning_checked = True


def rates(cases: list[Case], lang: str, check: str) -> dict[str, tuple[float, int]]:
    """{"recall": (rate, n), "false alarms": (rate, n)} of ``check`` in ``lang`` (what has cases)."""
    must = [c for c in cases if c.lang == lang and c.expect == "flag" and c.check == check]
    ok = [c for c in cases if c.lang == lang and c.expect == "pass" and c.origin != "held-out"]
    if check == "meaning":
        must = [c for c in must if c.meaning_checked]
        ok = [c for c in ok if c.meaning_checked]
    out = {}
    if must:
        out["recall"] = (sum(check in c.fired for c in must) / len(must), len(must))
    if ok:
        out["false alarms"] = (sum(check in c.fired for c in ok) / len(ok), len(ok))
    return out


def cell(value: tuple[float, int] | None, target: str | None = None) -> str:
    if value is None:
        return "–"
    rate, n = value
    miss = (
        target == "recall"
        and rate < TARGET["recall"]
        or target == "false alarms"
        and rate > TARGET["false alarms"]
    )
    return f"{'**' if miss else ''}{rate:.2f}{'**' if miss else ''} ({n})"


def table(cases: list[Case], langs: list[str]) -> str:
    head = ["language"]
    for check in COLUMNS:
        head += [f"{check} recall"] + (
            [f"{check} false alarms"] if check not in ("degenerate", "terms") else []
        )
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for lang in langs:
        row = [lang]
        for check in COLUMNS:
            r = rates(cases, lang, check)
            target = check in ("numbers", "negation")
            row.append(cell(r.get("recall"), "recall" if target else None))
            if check not in ("degenerate", "terms"):
                row.append(cell(r.get("false alarms"), "false alarms" if target else None))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def kinds_table(cases: list[Case], langs: list[str]) -> str:
    """Per kind of case: the share that the expected check flagged (must-flag) or that any check flagged
    (faithful), per language."""
    kinds = sorted({(c.expect, c.check if c.expect == "flag" else "-", c.kind) for c in cases})
    lines = ["| expect | check | kind | " + " | ".join(langs) + " |", "|---|---|---|" + "---:|" * len(langs)]
    for expect, check, kind in kinds:
        row = [expect, check, kind]
        for lang in langs:
            cs = [
                c
                for c in cases
                if (c.expect, c.check if c.expect == "flag" else "-", c.kind, c.lang)
                == (expect, check, kind, lang)
            ]
            hit = [c for c in cs if (check in c.fired if expect == "flag" else bool(c.fired))]
            row.append(f"{len(hit)}/{len(cs)}" if cs else "")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def held_out_table(cases: list[Case]) -> str:
    lines = []
    for kind in sorted({c.kind for c in cases if c.origin == "held-out"}):
        cs = [c for c in cases if c.kind == kind]
        rate = sum("meaning" in c.fired for c in cs) / len(cs)
        lines.append(
            f'- {kind}s ({cs[0].lang}, human simplifications): {rate:.3f} flagged "meaning" ({len(cs)} pairs)'
        )
    return "\n".join(lines)


def calibrate(langs: list[str]) -> dict[str, float]:
    """Per language the 1st percentile of the cosine of the sample's aligned (gold) pairs."""
    from multimsd.metrics.meaning import similarities

    out = {}
    for lang in langs:
        pairs = [
            (a["complex"][i], a["simple"][j])
            for a in sample_articles()
            if a["lang"] == lang
            for i, j in a["gold"]
        ]
        sims = similarities([p[0] for p in pairs], [p[1] for p in pairs])
        out[lang] = round(float(np.percentile(sims, 1)), 3)
        print(
            f"{lang}: {len(pairs)} pairs, 1st percentile {out[lang]:.3f}, min {sims.min():.3f}, median {np.median(sims):.3f}",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--langs", default=",".join(LANGUAGES))
    p.add_argument("--no-meaning", action="store_true", help="leave the meaning check out (no encoder)")
    p.add_argument("--kinds", action="store_true", help="also a table per kind of case")
    p.add_argument(
        "--clara", type=int, default=300, help="CLARA-MeD sentences added to Spanish (when present)"
    )
    p.add_argument("--json", help="write every case with the checks that fired")
    p.add_argument("--calibrate", action="store_true", help="print the meaning thresholds and stop")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    langs = [x for x in args.langs.split(",") if x]
    if bad := sorted(set(langs) - set(LANGUAGES)):
        p.error(f"--langs: unknown {', '.join(bad)} (have {', '.join(LANGUAGES)})")
    if args.calibrate:
        print(json.dumps(calibrate(langs)))
        return 0
    t0 = time.perf_counter()
    rng = random.Random(args.seed)
    articles = sample_articles()
    cases = []
    for lang in langs:
        cases += generated(lang, sentences(lang, articles, args.clara), rng)
    cases += hand(langs)
    if not args.no_meaning:
        cases += held_out(langs)
    print(f"{len(cases)} cases in {', '.join(langs)}; checking…", file=sys.stderr, flush=True)
    run_checks(cases, not args.no_meaning)
    print(table(cases, langs))
    print(
        f"\ntarget (numbers, negation): recall ≥ {TARGET['recall']}, false alarms ≤ {TARGET['false alarms']}; "
        "bold: missed. (n) = cases."
    )
    if not args.no_meaning and (h := held_out_table(cases)):
        print("\nHeld-out real pairs (not used to calibrate):\n" + h)
    if args.kinds:
        print("\n" + kinds_table(cases, langs))
    if args.json:
        Path(args.json).write_text(
            json.dumps([asdict(c) for c in cases], ensure_ascii=False, indent=1), encoding="utf-8"
        )
    print(f"\n{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
