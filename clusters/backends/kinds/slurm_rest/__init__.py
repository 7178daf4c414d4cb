"""The `slurm-rest` kind: SLURM reached through slurmrestd with a JWT, instead of commands over SSH.

Everything this kind knows lives in this package; the registry (clusters/kinds.py) names it once.
Inputs and outputs are the plain dataclasses of clusters/backends/base.py; failures are this package's errors
(errors.py), each a subclass of the base error the jobs app already maps to what users see.
"""

from .backend import SlurmRestBackend

__all__ = ["SlurmRestBackend"]
