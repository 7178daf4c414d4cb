"""The SLURM family's batch-script language: a template body with the portal's #SBATCH header (header.py), its
placeholders rendered as shell-quoted words (rendering.py), and the checks that keep a student's values out of code
(safety.py, with the command tables in command_rules.py). The typed parameters and the placeholder grammar it reads
are kind-neutral and stay in core/templating/."""
