"""The `slurm` kind: SLURM reached over SSH (sbatch, squeue/sacct, scancel, SFTP for scripts and logs).

Everything this kind knows lives in this package; clusters/kinds.py names it once.
"""
