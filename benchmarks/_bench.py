"""Shared by the benchmark scripts: what the machine was doing, and medians of repeated measurements.

A benchmark claim is the median of repeated runs with the machine's load written beside it
(``machine_line``): numbers taken while another process used the cores are not comparable.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from typing import Callable, List, Sequence, Tuple


def machine_line() -> str:
    """One line: cores, load average (1/5/15 min), Python, platform."""
    try:
        load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on Linux/macOS
        load = "n/a"
    return (f"machine: {os.cpu_count()} cores, load {load} (1/5/15 min), python {sys.version.split()[0]}, "
            f"{platform.machine()} {platform.system()}")


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
