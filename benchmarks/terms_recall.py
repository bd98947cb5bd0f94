"""How many medical terms of a real leaflet the term check can see (issue #47 item 4).

Two real patient texts about the same drug (benchmarks/data/leaflets/: FDA consumer pages on acetaminophen in
English and Spanish, public domain) with their medical terms marked by hand below (drugs, diseases, symptoms,
body parts, medical products and roles). For each leaflet it prints the share of those terms that a term
dictionary finds in the text (a dictionary term overlapping the marked term counts): the recall of the safety
check "terms", which can only flag a dropped term it can see.

    python benchmarks/terms_recall.py [--terms DIR]

Without ``--terms`` the dictionaries are the bundled demo lists (multimsd/sample_data/terms/), which is what
``multimsd simplify`` and the evaluation use unless told otherwise; docs/evaluation.md ("Terms") has the result.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.metrics.terms import dictionary_for

LEAFLETS = Path(__file__).resolve().parent / "data" / "leaflets"
GOLD = {
    "fda-acetaminophen.en.txt": (
        "en",
        ["acetaminophen", "pain reliever", "liver damage", "liver", "cough", "cold", "sleep aids", "prescription",
         "over-the-counter", "suspension", "medicine", "medications", "overdosing", "dose", "drug",
         "health care provider"],
    ),
    "fda-acetaminofen.es.txt": (
        "es",
        ["síntomas", "gripe", "medicamento", "tos", "dolor", "dolor de cabeza", "acetaminofén", "tylenol",
         "paracetamol", "panadol", "receta", "venta libre", "fiebre", "garganta", "muelas", "espalda",
         "sobredosis", "hígado", "náuseas", "vómitos", "dolor abdominal", "confusión", "ictericia", "piel", "ojos",
         "influenza", "resfriado", "trasplante de hígado", "muerte"],
    ),
}  # fmt: skip


def recall(text: str, gold: list[str], dictionary) -> tuple[list[str], list[str]]:
    """(found, missed): a marked term is found when a dictionary term overlaps one of its occurrences."""
    low = text.lower()
    spans = dictionary.find_spans(text) if dictionary is not None else []
    found, missed = [], []
    for term in gold:
        at = [i for i in range(len(low)) if low.startswith(term, i)]
        if not at:
            raise SystemExit(f"marked term {term!r} is not in the leaflet")
        hit = any(s < i + len(term) and i < e for i in at for s, e, *_ in spans)
        (found if hit else missed).append(term)
    return found, missed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--terms", help="a directory of <lang>.txt|xml|bin|csv|tsv term lists (default: the bundled ones)"
    )
    args = p.parse_args(argv)
    if args.terms is not None and not Path(args.terms).expanduser().is_dir():
        p.error(f"--terms {args.terms}: not a directory")
    print("| leaflet | language | dictionary | terms marked | found | recall | missed |")
    print("|---|---|---|---:|---:|---:|---|")
    for name, (lang, gold) in GOLD.items():
        text = "\n".join(
            line
            for line in (LEAFLETS / name).read_text(encoding="utf-8").splitlines()
            if not line.startswith("#")
        )
        try:
            dictionary, path = dictionary_for(lang, args.terms, what="--terms")
        except MultimsdError as e:
            p.exit(2, f"error: {e}\n")
        found, missed = recall(text, gold, dictionary)
        where = f"{path.name}, {len(dictionary):,} terms" if dictionary is not None else "none"
        print(
            f"| {name} | {lang} | {where} | {len(gold)} | {len(found)} | {len(found) / len(gold):.2f} | "
            f"{', '.join(missed)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
