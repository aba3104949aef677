"""Build script for the one compiled part: ragexam.data._trecfast, the reader of plain TREC files.

Everything else is in pyproject.toml.  The extension is optional: without a C compiler the install goes on and
ragexam reads TREC files with pyarrow and Python (same results, slower; see ragexam.data.trec).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ragexam.data._trecfast", ["src/ragexam/data/_trecfast.c"], optional=True,
                             extra_compile_args=["-O2"])])
