"""The `kubernetes` kind: jobs as labelled objects in a course's namespace, created through the Kubernetes API.

Everything this kind knows lives in this package: the backend (backend.py, api.py, status.py), templates as
objects (manifests.py, launch.py), namespaces and quotas (namespaces.py), and what a student does with a running
server (endpoints.py, views.py). clusters/kinds.py names it once.
"""
