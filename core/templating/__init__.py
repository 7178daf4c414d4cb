"""The kind-neutral template language: typed parameters (params.py), the placeholder grammar (placeholders.py) and the
resource table (resources.py). It imports nothing from the portal's apps, so the kinds that render templates
(clusters/backends/: the SLURM family's batch script in slurm_family/script/, Kubernetes objects) and the jobs app
that launches them both stand on it."""
