"""The kind-neutral template language: typed parameters (params.py), the placeholder grammar (placeholders.py), the
resource table (resources.py) and the shell checker that keeps a student's values out of a bash script's code
(shell_safety.py, with its command tables in shell_rules.py). It imports nothing from the portal's apps, so every kind
that renders templates (a batch script, a RayJob's entrypoint, Kubernetes objects) and the jobs app that launches them
stand on it; what a kind's scripts add (a scheduler's header, its directive comments, its environment) is the kind's."""
