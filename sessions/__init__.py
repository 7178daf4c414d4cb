"""The student's workspace on a cluster: files and artefacts, a shell in a running job, JupyterLab on a GPU node.

Every page, endpoint and WebSocket here asks jobs/access.py who may see what; another student's file,
terminal or notebook is a 404.
"""
