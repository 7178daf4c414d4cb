"""The template language: typed parameters, the resource table, rendering a body into a script, and the checks that
keep a student's values out of code. It imports nothing from the portal's apps, so the kinds that render templates
(clusters/backends/) and the jobs app that launches them both stand on it."""
