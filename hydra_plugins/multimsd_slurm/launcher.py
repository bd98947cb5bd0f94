"""``hydra/launcher=slurm_local`` / ``slurm_gpu``: :class:`ResilientSlurmLauncher` (see
:mod:`multimsd.training.slurm_launcher`). Hydra imports every module of ``hydra_plugins`` at start-up, so this
one stays cheap, and stays silent when hydra-submitit-launcher (the ``sweep`` extra) is not installed."""

try:
    from multimsd.training.slurm_launcher import ResilientSlurmLauncher as _Launcher
except ImportError:  # no hydra-submitit-launcher: no SLURM launcher (the presets then fail to load, by name)
    _Launcher = None

if _Launcher is not None:

    class ResilientSlurmLauncher(_Launcher):
        """Registered under ``hydra_plugins`` as Hydra requires; behaviour as its base class."""
