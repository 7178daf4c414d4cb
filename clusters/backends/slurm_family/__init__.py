"""The SLURM family's wing: what both SLURM kinds share (slurm/ over SSH, slurm_rest/ through slurmrestd).

SLURM's job states and reasons (states.py), accounting read from sacct (accounting.py), job arrays (arrays.py) and
host lists (hostlist.py). The kinds' transports stand beside the wing and read it; nothing outside the clusters app
imports it: the rest of the portal asks a kind through the registry (clusters/kinds.py).
"""
