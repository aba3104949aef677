"""Benchmark: chunkers on hostile and on KorQuAD-size input, in this process.

* **recursive on 1,000,000 characters** (issue 39): ``recursive:600000:0`` and ``recursive:1000:100`` on a blob
  with no separator at all (a minified file or base64 in a PDF extraction: cut between characters), and
  ``recursive:2000:200`` on the same characters with a space every 50-3,000, and ``recursive:600000:0`` on
  500,000 one-letter words (the space level's merge of many pieces).  Goal:
  each ≤ 2 s (LangChain's merge, which drops the head of its list one piece at a time, took ~20 min);
* **the chunk stage of the KorQuAD-size exam** (issue 40): ``paragraphs:400`` over the seeded ``_korean.py``
  corpus of ``--paragraphs`` (961) paragraphs of ~480 characters, Kiwi already loaded (its load is reported
  apart: ``ragexam run`` loads it once for chunking and BM25).  Goal: ≤ 1 s on the reference machine;
* **semantic on one 300,000-character "sentence"** (issue 39: minutes, silent): each sentence is embedded once
  (Kiwi's pieces cut it into sentences of at most 4,000 characters).

Printed: the machine, then per case the median wall seconds of ``--rounds`` (and their range), the chunks made,
and the CPU seconds of the process (Kiwi's workers included).

    python benchmarks/bench_chunkers.py [--rounds 3] [--paragraphs 961] [--only recursive|stage]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import load_now, machine_line, spread  # noqa: E402


def _blob(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/="
    return "".join(rng.choice(alphabet) for _ in range(n))


def _spaced(blob: str, seed: int = 1) -> str:
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(blob):
        step = rng.randint(50, 3000)
        out.append(blob[at:at + step])
        at += step
    return " ".join(out)[:len(blob)]


def _time(fn, rounds: int):
    walls, cpus, result = [], [], None
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return walls, cpus, result


def _row(label: str, walls, cpus, n_chunks: int, goal: float) -> None:
    med = sorted(walls)[len(walls) // 2]
    print(f"{label:<44} {spread(walls):>24} s  cpu {spread(cpus):>24} s  {n_chunks:>6} chunks  "
          f"{'ok' if med <= goal else 'OVER'} (goal <= {goal:g} s)", flush=True)


def recursive_cases(rounds: int) -> None:
    from ragexam.data.chunking import parse_chunker

    blob = _blob(1_000_000)
    spaced = _spaced(blob)
    for spec, text, what in (("recursive:600000:0", blob, "no separator"),
                             ("recursive:1000:100", blob, "no separator"),
                             ("recursive:2000:200", spaced, "rare spaces"),
                             ("recursive:600000:0", "a " * 500_000, "500,000 words")):
        ch = parse_chunker(spec)
        walls, cpus, spans = _time(lambda: ch.spans(text), rounds)
        _row(f"{spec} on 1,000,000 chars ({what})", walls, cpus, len(spans), 2.0)


def chunk_stage(rounds: int, paragraphs: int, seed: int) -> None:
    from _korean import make_dataset

    from ragexam.data import chunking as chunking_module
    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.kiwi import kiwi
    from ragexam.data.schema import Document

    docs = [Document(d, c) for d, c in make_dataset(paragraphs, 10, seed)[0]]
    w0, c0 = time.perf_counter(), time.process_time()
    kiwi()
    print(f"Kiwi loaded in {time.perf_counter() - w0:.2f} s wall, {time.process_time() - c0:.2f} CPU-s "
          "(once per process; not in the rows below)")
    chars = sum(len(d.content) for d in docs)

    def cold():
        chunking_module._SPLIT_MEMO.clear()  # a new process: no sentence split kept from a previous round
        return chunk_corpus(docs, "paragraphs:400")

    walls, cpus, chunking = _time(cold, rounds)
    _row(f"paragraphs:400, {paragraphs} paragraphs ({chars:,} chars)", walls, cpus, len(chunking), 1.0)


def semantic_case(rounds: int) -> None:
    """``semantic`` on one 300,000-character "sentence" (Korean words, no sentence end: Kiwi's pieces cut it into
    sentences of at most 4,000 characters), with the offline e5 (cache off: each round embeds)."""
    from _korean import Generator

    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.schema import Document
    from ragexam.retrieval.chunk_models import bind_chunker
    from ragexam.retrieval.e5 import E5Embedder

    g = Generator(3)
    words = []
    while sum(len(w) + 1 for w in words) < 300_000:
        words.extend(g.sentence()[0].rstrip(".").split())
    text = " ".join(words)[:300_000]
    e5 = E5Embedder()
    e5.embed_passages(["준비"])
    ch = bind_chunker("semantic", e5, e5.embed_passages)
    walls, cpus, chunking = _time(lambda: chunk_corpus([Document("blob", text)], ch), rounds)
    _row("semantic on one 300,000-char sentence (e5)", walls, cpus, len(chunking), 60.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--paragraphs", type=int, default=961)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=("recursive", "stage", "semantic"), default=None)
    args = ap.parse_args()
    print(machine_line())
    print(f"{'case':<44} {'wall: median (range of n)':>24}    {'CPU':>28}")
    if args.only in (None, "recursive"):
        recursive_cases(args.rounds)
    if args.only in (None, "stage"):
        chunk_stage(args.rounds, args.paragraphs, args.seed)
    if args.only in (None, "semantic"):
        semantic_case(args.rounds)
    print(f"load after: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
