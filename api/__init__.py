"""The graphmem HTTP API (FastAPI). Build it with :func:`api.main.create_app`.

Only HTTP concerns live here: routes, request/response models, dependencies and the mapping of
graphmem errors to statuses. The domain is in :mod:`graphmem`.
"""
