"""Hydra looks for launchers only inside the ``hydra_plugins`` namespace: multimsd's SLURM launcher is
registered here. The logic lives in :mod:`multimsd.training.slurm_launcher`."""
