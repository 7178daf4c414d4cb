"""The cluster kinds, one package each: `slurm` (over SSH), `slurm_rest` (slurmrestd) and `kubernetes`. Every package
under a `kinds` namespace is held to the kind contracts in pyproject.toml by wildcard (`**.kinds.*`): kinds never
import each other, the apps reach them only through the registry (clusters/kinds.py), and they read plain data, never
the jobs app. The SLURM family's shared wing (clusters/backends/slurm_family/) stands beside them, outside."""
