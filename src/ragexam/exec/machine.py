"""What machine this is: CPU model, cores, the instruction sets that decide kernel speed, the load.

:func:`cpu_info` reads ``/proc/cpuinfo`` on Linux (``sysctl`` facts on macOS, ``platform`` elsewhere) once
per process, without importing any numeric library.  Used where a speed depends on the CPU: the benchmarks
print it beside every number (``benchmarks/_bench.py``), and the fast e5 keys its cached graphs and its
backend calibration by :func:`cpu_fingerprint` (a cached optimized graph may hold kernels chosen for this
CPU; a calibration is only true of the CPU it ran on).
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Tuple

__all__ = ["CpuInfo", "cpu_info", "cpu_fingerprint", "load_average", "ISA_FLAGS"]

#: Instruction-set flags (as ``/proc/cpuinfo`` names them) that change how fast int8/fp32 kernels run.
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16", "asimd", "asimddp", "sve", "i8mm")


@dataclass(frozen=True)
class CpuInfo:
    """``model`` (e.g. ``AMD EPYC 9R14``), ``vendor``, ``cores`` this process may use, ``logical`` CPUs of
    the machine, ``isa`` (the :data:`ISA_FLAGS` present, in that order) and ``machine`` (``x86_64``, ...)."""

    model: str
    vendor: str
    cores: int
    logical: int
    isa: Tuple[str, ...]
    machine: str

    def line(self) -> str:
        """One line: ``CPU: <model> (<vendor>), <cores> cores usable of <logical>, ISA: avx2 avx512f ...``."""
        return (f"CPU: {self.model} ({self.vendor}, {self.machine}), {self.cores} cores usable of {self.logical}, "
                f"ISA: {' '.join(self.isa) or 'none of ' + '/'.join(ISA_FLAGS[:4])}")


def _proc_cpuinfo() -> Dict[str, str]:
    out: Dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                key = key.strip().lower()
                if sep and key not in out:
                    out[key] = value.strip()
                if not line.strip() and out:
                    break  # the first processor's block is enough
    except OSError:
        pass
    return out


def _sysctl(name: str) -> str:  # pragma: no cover - macOS
    try:
        return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


@lru_cache(maxsize=1)
def cpu_info() -> CpuInfo:
    """This machine's :class:`CpuInfo` (read once per process)."""
    info = _proc_cpuinfo()
    model = info.get("model name") or info.get("cpu model") or ""
    vendor = info.get("vendor_id") or info.get("cpu implementer") or ""
    flags = set((info.get("flags") or info.get("features") or "").split())
    if not model and platform.system() == "Darwin":  # pragma: no cover - macOS
        model = _sysctl("machdep.cpu.brand_string")
        flags |= {f.lower().replace(".", "_") for f in _sysctl("machdep.cpu.features").split()}
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return CpuInfo(model=model or platform.processor() or "unknown CPU", vendor=vendor or "unknown vendor",
                   cores=cores, logical=os.cpu_count() or cores, isa=tuple(f for f in ISA_FLAGS if f in flags),
                   machine=platform.machine())


def cpu_fingerprint() -> str:
    """12 hex digits naming the CPU model, vendor, architecture and instruction sets (not the core count)."""
    c = cpu_info()
    return hashlib.sha256("|".join((c.model, c.vendor, c.machine, *c.isa)).encode()).hexdigest()[:12]


def load_average() -> Tuple[float, float, float]:
    """The 1/5/15-minute load averages (``(nan, nan, nan)`` where the OS has none)."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):  # pragma: no cover - Windows
        nan = float("nan")
        return nan, nan, nan
