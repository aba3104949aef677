"""ragexam.storage: where ragexam keeps things on disk (the lowest shared layer).

- :mod:`ragexam.storage.sqlite`: how every SQLite store is opened (WAL, busy timeout, schema row)
- :mod:`ragexam.storage.paths`: the default cache directory and history path, and the one check of an
  output path made before any long or paid work starts
- :mod:`ragexam.storage.runfolder`: the one reader and writer of run and score folders
  (``ragexam run --out``, ``ragexam score --out``) and their typed rows (``RunRow``, ``RunData``)
- :mod:`ragexam.storage.history`: the SQLite run history (``History``, ``resolve_run``: a folder or a
  recorded id)

This package imports nothing of ragexam but :mod:`ragexam.errors` (and :mod:`ragexam.signature`).
"""
