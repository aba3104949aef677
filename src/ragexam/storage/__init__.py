"""ragexam.storage: where ragexam keeps things on disk (the lowest shared layer).

- :mod:`ragexam.storage.sqlite`: how every SQLite store is opened (WAL, busy timeout, schema row)
- :mod:`ragexam.storage.paths`: the default cache directory and history path, and the one check of an
  output path made before any long or paid work starts

This package imports nothing of ragexam but :mod:`ragexam.errors`.
"""
