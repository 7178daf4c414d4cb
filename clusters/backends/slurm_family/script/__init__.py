"""The SLURM family's batch-script language: a template body with the portal's #SBATCH header (header.py), its
placeholders rendered as shell-quoted words (rendering.py). What it reads is kind-neutral and stays in core/templating/:
the typed parameters, the placeholder grammar, and the bash checker that keeps a student's values out of code
(shell_safety.py, with its command tables in shell_rules.py), which Kubernetes uses for a RayJob's entrypoint too."""
