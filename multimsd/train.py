"""``multimsd train [hydra overrides]``, or on several processes ``accelerate launch -m multimsd.train …`` (the
checkout's ``train.py`` is the same command): :func:`multimsd.training.loop.run` as a command
(:func:`multimsd.commands.stage.stage_command`)."""

from __future__ import annotations

from multimsd.commands.stage import stage_command


def run(cfg) -> float | None:
    """The stage, imported when it runs; its return value is the one a Hydra sweeper optimises: the paper's
    model-selection criterion, the mean of validation SARI and BLEU after training."""
    from multimsd.training.loop import run

    results = run(cfg)
    return (results.get("after") or {}).get("mean_sari_bleu")


main = stage_command("train", run)

if __name__ == "__main__":
    main()
