"""The three TREC readers of :mod:`ragexam.data.trec`, for tests that run a file through each of them.

``compiled`` is the one-pass C reader (``ragexam.data._trecfast``, built at install time), ``pyarrow`` the CSV
reader of files of 1 MiB and more, ``python`` the line-by-line parser; ``reader(name)`` makes the named one read
every file (the others are turned off).  The compiled reader must have been built wherever a C compiler is.
"""

from __future__ import annotations

import contextlib
import shutil
import sysconfig
from unittest import mock

import pytest

from ragexam.data import trec

READERS = ("compiled", "pyarrow", "python")


def require_compiled() -> None:
    """Fail when the compiled reader is missing on a machine with a C compiler (the install should have built
    it); skip, with the reason, on one without."""
    if trec._compiled() is not None:
        return
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc):
        pytest.fail(f"ragexam.data._trecfast is not built although the C compiler {cc!r} is here "
                    "(is RAGEXAM_PURE_PYTHON set? else reinstall: pip install -e .)")
    pytest.skip(f"no C compiler ({cc!r}) on this machine: ragexam reads TREC files with pyarrow and Python")


@contextlib.contextmanager
def reader(name: str):
    """Read TREC files with the reader ``name`` (one of :data:`READERS`) inside the block."""
    assert name in READERS, name
    if name == "compiled":
        require_compiled()
        with mock.patch.object(trec, "_use_pyarrow", lambda nbytes: False):
            yield
        return
    with mock.patch.object(trec, "_compiled", lambda: None), \
            mock.patch.object(trec, "_use_pyarrow", lambda nbytes: name == "pyarrow"):
        yield
