"""A fourth cluster kind that lives only in the test tree, to prove the plug-in seam of docs/adding-a-backend.md.

It is no scheduler and pretends to be none: jobs are kept in memory (MemoryBackend), its templates are JSON
documents with {name} fields (FakeKind), and a test moves its jobs along. tests/test_fake_kind.py registers it
with clusters.kinds.register and drives it through the pages and the API, with nothing under jobs/ knowing it.
"""
