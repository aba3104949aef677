"""Ranking-metrics speed: ``ragexam evaluate`` vs pytrec_eval, from TREC files on disk, on several data shapes.

Shapes (generated once into ``benchmarks/_data``; ~5 relevant per query, graded 1-3, most of
them retrieved, plus 5 judged non-relevant; scores distinct):

  1k-queries     1,000 queries x 20 docs (files under 1 MiB: start-up dominates)
  bench          10,000 x 100, document ids d<n> drawn from 1,000,000 (the README's data)
  small-vocab    10,000 x 100, document ids d0 ... d999 (every query retrieves from 1,000 ids)
  numeric-ids    10,000 x 100, query and document ids that look like numbers (1048585, 7187158)
  long-ids       10,000 x 100, ids of 25-35 characters (msmarco_doc_00_1234567890#3_456)
  100k-queries   100,000 x 100 (10 M run lines, 380 MB)

Five metrics: ndcg@10, map, mrr, r@100, p@10 (trec_eval ndcg_cut.10, map, recip_rank,
recall.100, P.10).  Two comparisons per shape, each side by side (the commands alternate
within every repeat; medians of ``--repeat`` runs; the 1-minute load average is printed
before and after each shape, on a machine with ``os.cpu_count()`` cores):

* **the whole command, as a user runs it**: ``ragexam evaluate --qrels Q --run R -m ...``
  in a subprocess (start-up, imports, reading, metrics, printing), without and with
  ``--json``, against a plain pytrec_eval script in a subprocess (``import pytrec_eval``,
  ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator(...).evaluate`` + print the means;
  for ``--json``: ``json.dumps`` of its per-query results);
* **the library, in one process**: ``ragexam.evaluate(qrels_path, run_path, ...)`` against
  pytrec_eval's ``parse_qrel`` + ``parse_run`` + ``evaluate`` (both already imported).

Before timing, each shape is checked: ``ragexam evaluate --json --trec-compat`` must equal
pytrec_eval per query (to 1e-12), and the command must not import pandas.

    python benchmarks/bench_ranking.py [--repeat 5] [--shapes bench,small-vocab] [--no-library] [--ranx]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line, median, compile_ragexam  # noqa: E402

DATA = Path(__file__).parent / "_data"
METRICS = ["ndcg@10", "map", "mrr", "r@100", "p@10"]
TREC_MEASURES = {"ndcg_cut.10", "map", "recip_rank", "recall.100", "P.10"}
TREC_KEYS = {"ndcg@10": "ndcg_cut_10", "map": "map", "mrr": "recip_rank", "r@100": "recall_100", "p@10": "P_10"}


def _long_doc(d: int) -> str:
    return f"msmarco_doc_{d % 60:02d}_{(d * 2654435761) % 10**10:010d}#{d % 17}_{(d * 40503) % 10**6}"


#: name -> (queries, depth, document universe, query id format, document id format)
SHAPES = {
    "1k-queries": (1_000, 20, 1_000_000, lambda q: f"q{q}", lambda d: f"d{d}"),
    "bench": (10_000, 100, 1_000_000, lambda q: f"q{q}", lambda d: f"d{d}"),
    "small-vocab": (10_000, 100, 1_000, lambda q: f"q{q}", lambda d: f"d{d}"),
    "numeric-ids": (10_000, 100, 8_841_823, lambda q: f"{1_000_000 + q * 7}", lambda d: f"{d}"),
    "long-ids": (10_000, 100, 1_000_000, lambda q: f"query-{q:08d}-{(q * 2654435761) % 2**32:08x}", _long_doc),
    "100k-queries": (100_000, 100, 1_000_000, lambda q: f"q{q}", lambda d: f"d{d}"),
}

PYTREC_SCRIPT = """
import sys, json, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
res = pytrec_eval.RelevanceEvaluator(qrels, %r).evaluate(run)
if len(sys.argv) > 3:
    sys.stdout.write(json.dumps(res) + "\\n")
else:
    for m in sorted(next(iter(res.values()))):
        print(m, sum(v[m] for v in res.values()) / len(res))
""" % (TREC_MEASURES,)


def make_files(shape: str = "bench", seed: int = 0) -> tuple[Path, Path]:
    """Write (once) the qrels and run of ``shape``; returns their paths."""
    n_queries, depth, universe, qid, docid = SHAPES[shape]
    DATA.mkdir(exist_ok=True)
    stem = f"{n_queries}x{depth}" if shape == "bench" else shape  # the README's files keep their names
    run_path = DATA / f"run_{stem}.trec"
    qrels_path = DATA / f"qrels_{stem}.trec"
    if run_path.exists() and qrels_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    tmp_run, tmp_qrels = run_path.with_suffix(".tmp"), qrels_path.with_suffix(".tmp")
    with open(tmp_run, "w") as frun, open(tmp_qrels, "w") as fq:
        for q in range(n_queries):
            docs = rng.choice(universe, size=depth + 10, replace=False)
            retrieved = docs[:depth]
            scores = np.sort(rng.random(depth))[::-1] * 30
            n_rel = int(rng.integers(3, 8))
            # most relevant docs are retrieved (at random ranks), one in five is not
            rel_docs = [retrieved[i] if rng.random() < 0.8 else docs[depth + j]
                        for j, i in enumerate(rng.choice(depth, size=n_rel, replace=False))]
            nonrel = rng.choice(retrieved, size=5, replace=False)
            judged = {int(d): int(rng.integers(1, 4)) for d in rel_docs}
            for d in nonrel:
                judged.setdefault(int(d), 0)
            qs = qid(q)
            frun.write("".join(f"{qs} Q0 {docid(int(d))} {i + 1} {s:.8f} bench\n"
                               for i, (d, s) in enumerate(zip(retrieved, scores))))
            fq.write("".join(f"{qs} 0 {docid(d)} {g}\n" for d, g in judged.items()))
    os.replace(tmp_run, run_path)
    os.replace(tmp_qrels, qrels_path)
    return qrels_path, run_path


def _ragexam_command() -> list[str]:
    """``ragexam`` as installed next to this interpreter (the console script a user runs)."""
    script = Path(sys.executable).with_name("ragexam")
    if script.exists():
        return [str(script)]
    found = shutil.which("ragexam")
    return [found] if found else [sys.executable, "-m", "ragexam.cli"]


def _run(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def check_shape(qrels: Path, run: Path) -> None:
    """ragexam's command equals pytrec_eval per query; the command does not import pandas."""
    cmd = _ragexam_command() + ["evaluate", "--qrels", str(qrels), "--run", str(run), "--json", "--trec-compat"]
    for m in METRICS:
        cmd += ["-m", m]
    ours = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    theirs = json.loads(subprocess.run([sys.executable, "-c", PYTREC_SCRIPT, str(qrels), str(run), "json"],
                                       check=True, capture_output=True, text=True).stdout)
    assert set(ours["per_query"]) == set(theirs), "query sets differ"
    worst = max(abs(ours["per_query"][q][m] - theirs[q][TREC_KEYS[m]]) for q in theirs for m in METRICS)
    assert worst <= 1e-12, f"ragexam and pytrec_eval differ by {worst}"
    probe = ("import sys, runpy; sys.argv = " + repr(["ragexam"] + cmd[len(_ragexam_command()):])
             + "\ntry:\n    runpy.run_module('ragexam.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             + "sys.stderr.write('PANDAS' if 'pandas' in sys.modules else 'NO-PANDAS')")
    err = subprocess.run([sys.executable, "-c", probe], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert err.stderr.endswith("NO-PANDAS"), f"ragexam evaluate imported pandas: {err.stderr[-300:]}"


def time_commands(qrels: Path, run: Path, repeat: int) -> dict[str, list[float]]:
    base = _ragexam_command() + ["evaluate", "--qrels", str(qrels), "--run", str(run)]
    for m in METRICS:
        base += ["-m", m]
    cmds = {
        "pytrec": [sys.executable, "-c", PYTREC_SCRIPT, str(qrels), str(run)],
        "ragexam": base,
        "pytrec-json": [sys.executable, "-c", PYTREC_SCRIPT, str(qrels), str(run), "json"],
        "ragexam-json": base + ["--json"],
    }
    times: dict[str, list[float]] = {k: [] for k in cmds}
    names = list(cmds)
    for i in range(repeat):
        for name in names[i % len(names):] + names[:i % len(names)]:  # rotate the order
            times[name].append(_run(cmds[name]))
    return times


def time_library(qrels: Path, run: Path, repeat: int, ranx: bool) -> dict[str, list[float]]:
    import pytrec_eval

    import ragexam

    times: dict[str, list[float]] = {"pytrec": [], "ragexam": [], "ranx": []}
    for _ in range(repeat):
        t = time.perf_counter()
        with open(qrels) as f:
            pq = pytrec_eval.parse_qrel(f)
        with open(run) as f:
            pr = pytrec_eval.parse_run(f)
        pytrec_eval.RelevanceEvaluator(pq, TREC_MEASURES).evaluate(pr)
        times["pytrec"].append(time.perf_counter() - t)
        del pq, pr
        t = time.perf_counter()
        ragexam.evaluate(qrels, run, METRICS)
        times["ragexam"].append(time.perf_counter() - t)
        if ranx:
            from ranx import Qrels, Run, evaluate

            t = time.perf_counter()
            evaluate(Qrels.from_file(str(qrels), kind="trec"), Run.from_file(str(run), kind="trec"),
                     ["ndcg@10", "map", "mrr", "recall@100", "precision@10"])
            times["ranx"].append(time.perf_counter() - t)
    return times


def _reader_line() -> str:
    """Which reader reads plain TREC files here (ragexam.data.trec): the compiled one, or pyarrow and Python."""
    from ragexam.data import trec

    if trec._compiled() is not None:
        return "compiled (ragexam.data._trecfast)"
    why = "RAGEXAM_PURE_PYTHON is set" if os.environ.get("RAGEXAM_PURE_PYTHON") else "not built at install"
    return f"pyarrow and Python (the compiled reader: {why})"


def import_time(module: str, n: int = 5) -> float:
    def once(code: str) -> float:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - t

    base = median([once("pass") for _ in range(n)])
    full = median([once(f"import {module}") for _ in range(n)])
    return full - base


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, from: {', '.join(SHAPES)}")
    ap.add_argument("--no-library", action="store_true", help="skip the in-process library comparison")
    ap.add_argument("--ranx", action="store_true", help="also time ranx in-process (pays a numba JIT on first use)")
    args = ap.parse_args()
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {unknown}; known: {', '.join(SHAPES)}")
    print(machine_line())
    print(compile_ragexam())
    print(f"TREC reader: {_reader_line()}")
    print(f"medians of {args.repeat} runs; ragexam command: {' '.join(_ragexam_command())}")
    print(f"{'shape':<13} {'run file':>9} {'load':>10} | {'whole command (s)':^33} | {'with --json (s)':^33}"
          + ("" if args.no_library else f" | {'library in-process (s)':^33}"))
    print(f"{'':<13} {'':>9} {'before-after':>10} | {'pytrec_eval':>11} {'ragexam':>9} {'ratio':>9} | "
          f"{'pytrec_eval':>11} {'ragexam':>9} {'ratio':>9}"
          + ("" if args.no_library else f" | {'pytrec_eval':>11} {'ragexam':>9} {'ratio':>9}"))
    for shape in shapes:
        qrels, run = make_files(shape)
        check_shape(qrels, run)
        before = _load()
        t = time_commands(qrels, run, args.repeat)
        lib = None if args.no_library else time_library(qrels, run, args.repeat, args.ranx)
        after = _load()
        med = {k: median(v) for k, v in t.items()}
        line = (f"{shape:<13} {run.stat().st_size / 2**20:>6.0f} MB {before + '-' + after:>10} | "
                f"{med['pytrec']:>11.3f} {med['ragexam']:>9.3f} {med['pytrec'] / med['ragexam']:>8.2f}x | "
                f"{med['pytrec-json']:>11.3f} {med['ragexam-json']:>9.3f} "
                f"{med['pytrec-json'] / med['ragexam-json']:>8.2f}x")
        if lib is not None:
            lp, lr = median(lib["pytrec"]), median(lib["ragexam"])
            line += f" | {lp:>11.3f} {lr:>9.3f} {lp / lr:>8.2f}x"
            if lib["ranx"]:
                line += (f"  (ranx: 1st run incl. JIT {lib['ranx'][0]:.2f} s, median of later runs "
                         f"{median(lib['ranx'][1:] or lib['ranx']):.3f} s)")
        print(line, flush=True)
    print("ratio = pytrec_eval time / ragexam time (above 1: ragexam is faster); every shape was checked equal "
          "to pytrec_eval per query and free of pandas imports before timing")
    print(f"import ragexam: {import_time('ragexam'):.3f} s (subprocess, minus bare interpreter start)")


if __name__ == "__main__":
    main()
