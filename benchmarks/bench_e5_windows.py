"""Benchmark: where the fast e5's time goes per window -- per-call overhead of short windows, thread settings, and
what padded batches (length bucketing) would save -- on the windows of a KorQuAD-size exam.

The windows are those ``dense:e5`` embeds for ``--paragraphs`` (240) seeded KorQuAD-like paragraphs
(``_korean.py``) chunked ``paragraphs:400`` (half of them short: a 480-character paragraph leaves a tail).  Printed:

1. **per-call overhead**: the CPU milliseconds of one window of 8-256 tokens alone (``B = 1``, one thread, best of
   ``--rounds``) for the two precisions backend ``onnx`` runs (``int8``; ``int8x2`` for windows of at most 64
   tokens), the cost per token, and the fixed part of a call (the intercept of a line through 16 and 64 tokens);
2. **thread settings**: the sample embedded with ``workers`` 1 and 2 (one window per call on each worker thread,
   one onnxruntime thread each: the default) and with one worker running each window on two onnxruntime threads:
   wall seconds and CPU seconds;
3. **padding waste**: the windows sorted by length in batches of 8 and 32 (length bucketing): the share of padded
   tokens, and the CPU per real token of such padded batches on a graph with an attention mask against one window
   per call.  Measured only: with int8 activations quantized per tensor, a window's vector would depend on its
   batch-mates (``forward_onnx``), so ``dense:e5`` keeps one window per call -- vectors identical for any batch.

    python benchmarks/bench_e5_windows.py [--paragraphs 240] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import load_now, machine_line  # noqa: E402


def _best_cpu(fn, rounds: int) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def overhead(e5, rounds: int) -> None:
    import numpy as np

    ids = np.random.default_rng(0).integers(5, 1000, size=(1, 256))
    print("1. one window per call, one thread (CPU ms; best of rounds)")
    print(f"{'tokens':>8}" + "".join(f"{p + ' ms':>12}{p + ' us/tok':>14}" for p in ("int8", "int8x2")))
    costs = {}
    for n in (8, 16, 32, 64, 128, 256):
        row = []
        for p in ("int8", "int8x2"):
            enc = e5._encoder(p)
            t = _best_cpu(lambda: enc.pooled(ids[:, :n], np.array([n])), rounds)
            costs[(p, n)] = t
            row.append(f"{t * 1e3:>12.2f}{t * 1e6 / n:>14.1f}")
        print(f"{n:>8}" + "".join(row))
    for p in ("int8", "int8x2"):  # a line through 16 and 64 tokens (attention, quadratic, is small there)
        slope = (costs[(p, 64)] - costs[(p, 16)]) / 48
        fixed = costs[(p, 16)] - 16 * slope
        print(f"   {p}: {slope * 1e6:.1f} us per token from 16 to 64 tokens; fixed part of a call ~{fixed * 1e3:.2f} "
              f"ms ({fixed / costs[(p, 16)]:.0%} of a 16-token window, {fixed / costs[(p, 64)]:.0%} of a 64-token one)")


def threads(texts, rounds: int) -> None:
    from ragexam.retrieval.e5 import E5Embedder

    print("2. thread settings (the sample; wall and CPU seconds, median of rounds)")
    setups = {"workers 1 x 1 onnx thread": E5Embedder(workers=1), "workers 2 x 1 onnx thread (default)":
              E5Embedder(workers=2)}
    for label, e in setups.items():
        e.embed_passages(texts[:4])
        walls, cpus = [], []
        for _ in range(rounds):
            w0, c0 = time.perf_counter(), time.process_time()
            e.embed_passages(texts)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        print(f"   {label:<40} {statistics.median(walls):7.2f} s wall {statistics.median(cpus):7.2f} CPU-s")
    import numpy as np

    from ragexam.retrieval.e5.forward_onnx import OnnxEncoder

    e = setups["workers 1 x 1 onnx thread"]
    two = {p: OnnxEncoder(e._read_model(), threads=2, precision=p) for p in ("int8", "int8x2")}
    windows = [w for t in texts for w in e.token_ids(t, "passage")]
    walls, cpus = [], []
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        for w in windows:
            two["int8" if len(w) > 64 else "int8x2"].pooled(np.array([w]), np.array([len(w)]))
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    print(f"   {'workers 1 x 2 onnx threads':<40} {statistics.median(walls):7.2f} s wall "
          f"{statistics.median(cpus):7.2f} CPU-s")


def padding(windows, rounds: int) -> None:
    import numpy as np

    from ragexam.retrieval.e5.forward_onnx import OnnxEncoder

    print("3. padded batches by length (measured only: int8 scales per tensor make a vector depend on its batch)")
    from ragexam.retrieval.e5.model_file import read_model_file

    model = read_model_file()
    plain = OnnxEncoder(model, threads=1, precision="int8", attention="plain", layers=model.layers)
    fused = OnnxEncoder(model, threads=1, precision="int8", layers=model.layers)
    order = sorted(windows, key=len)
    real = sum(map(len, order))
    one = _best_cpu(lambda: [fused.pooled(np.array([w]), np.array([len(w)])) for w in order[::8]], 1) / \
        sum(len(w) for w in order[::8])
    print(f"   one window per call (int8, no mask): {one * 1e6:.1f} us per token")
    for b in (8, 32):
        batches = [order[i:i + b] for i in range(0, len(order), b)]
        padded = sum(len(bt) * max(map(len, bt)) for bt in batches)
        sample = batches[::max(1, len(batches) // 8)]

        def run(sample=sample):
            for bt in sample:
                L = max(map(len, bt))
                ids = np.full((len(bt), L), model.pad, dtype=np.int64)
                for r, w in enumerate(bt):
                    ids[r, :len(w)] = w
                plain.pooled(ids, np.array([len(w) for w in bt]))

        per_real = _best_cpu(run, 1) / sum(len(w) for bt in sample for w in bt)
        print(f"   batches of {b:>2}: {padded / real - 1:.1%} padded tokens; {per_real * 1e6:.1f} us per real token "
              f"({per_real / one:.2f}x one window per call)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paragraphs", type=int, default=240)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from _korean import make_dataset

    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.schema import Document
    from ragexam.retrieval.e5 import E5Embedder

    print(machine_line())
    texts = [c.text for c in chunk_corpus([Document(d, c) for d, c in make_dataset(args.paragraphs, 10, 0)[0]],
                                          "paragraphs:400")]
    e5 = E5Embedder(workers=1)
    windows = [w for t in texts for w in e5.token_ids(t, "passage")]
    short = sum(1 for w in windows if len(w) <= 64)
    print(f"sample: {len(texts)} chunks of {args.paragraphs} paragraphs (paragraphs:400), {len(windows)} windows, "
          f"{sum(map(len, windows)):,} tokens; {short} windows of <= 64 tokens; backend {e5.backend}")
    overhead(e5, args.rounds)
    threads(texts, max(1, args.rounds // 2))
    padding(windows, args.rounds)
    print(f"load after: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
