"""What every app shares and that imports nothing from the project: the job-state vocabulary (choices.py), the
log context (logs.py), the measurements /metrics reads (measurements.py), test failpoints, the API schema's
refusals and who is an admin (roles.py).

It is the bottom floor (contract "layers" in pyproject.toml), so a lower app that must name a job state (a
scheduler backend mapping its own words, the course page counting active jobs) never imports `jobs`.
"""
