"""The portal's shared vocabulary: modules every app may import, that import nothing from the project.

It sits below every app (courses, clusters, jobs, telemetry, ops), so a lower app that must name a job state
(a scheduler backend mapping its own words, the course page counting active jobs) never imports `jobs`.
"""
