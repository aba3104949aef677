"""Benchmark: what the LLM layer's batch runner costs per call, beside the loop it replaced.

Runs N no-op calls (the call itself takes no time, so only the bookkeeping is measured), in one
process, each mode ``--repeats`` times (the median is printed, with the machine's load average):

1. ``plain``: a ``ThreadPoolExecutor`` and one ``LLMCache.put`` per result -- what the judge and
   answer generation each did by hand before ``ragexam.llm.batch``;
2. ``run_calls``: :func:`ragexam.llm.batch.run_calls` with the cache: de-duplication, a claim per
   call (in-flight sharing between processes), the put that releases it, progress and usage;
3. ``run_calls, no cache``;
4. ``rerun, all cached``: ``run_calls`` again over the same keys (one bulk read, no call).

Run::

    python benchmarks/bench_llm_batch.py [--calls 3000] [--concurrency 8] [--repeats 3]

A real LLM call takes 0.3-30 s, so a few tenths of a millisecond of bookkeeping per call are noise;
the benchmark is here so that a change that makes the runner quadratic shows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from ragexam.llm.batch import Outcome, run_calls
    from ragexam.llm.cache import LLMCache

    n, conc = args.calls, args.concurrency
    keys = [(f"k{i}", i) for i in range(n)]

    def noop(i: int) -> Outcome:
        return Outcome({"v": i}, requests=1, replies=1, prompt_tokens=1, completion_tokens=1)

    def plain() -> float:
        cache = LLMCache(tempfile.mkdtemp())
        t = time.perf_counter()

        def one(pair):
            k, i = pair
            cache.put(k, "bench", "m", "e", noop(i).value)

        with ThreadPoolExecutor(max_workers=conc) as pool:
            list(pool.map(one, keys))
        return time.perf_counter() - t

    def runner(with_cache: bool, rerun: bool = False) -> float:
        cache = LLMCache(tempfile.mkdtemp()) if with_cache else None
        if rerun:
            run_calls(keys, noop, cache=cache, kind="bench", model="m", endpoint="e", concurrency=conc)
        t = time.perf_counter()
        b = run_calls(keys, noop, cache=cache, kind="bench", model="m", endpoint="e", concurrency=conc)
        dt = time.perf_counter() - t
        assert len(b.values) == n and (b.usage.calls == (0 if rerun else n))
        return dt

    modes = {"plain": plain, "run_calls": lambda: runner(True), "run_calls, no cache": lambda: runner(False),
             "rerun, all cached": lambda: runner(True, rerun=True)}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{n} no-op calls, concurrency {conc}, median of {args.repeats}; load average {load:.2f}, "
          f"{os.cpu_count()} CPUs")
    times = {}
    for name, fn in modes.items():
        times[name] = statistics.median(fn() for _ in range(args.repeats))
        print(f"  {name:<22} {times[name]:7.3f} s  {times[name] / n * 1e3:6.3f} ms/call")
    print(f"  run_calls / plain: {times['run_calls'] / times['plain']:.2f}x")


if __name__ == "__main__":
    main()
