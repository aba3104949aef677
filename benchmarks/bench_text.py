"""Corpus BLEU and chrF: ragexam vs sacrebleu on seeded synthetic pairs.

Prints, per language and metric, the median of ``--repeat`` wall times of each implementation,
the speed-up (sacrebleu time / ragexam time) and the absolute score difference (must be
<= 1e-9; scores in [0, 1]).  Both sides start cold on every run: a fresh sacrebleu metric
object (its tokenizer cache is per object) and ragexam's stateless functions.

    python benchmarks/bench_text.py                 # 10,000 pairs, en and ko, 5 repeats
    python benchmarks/bench_text.py --pairs 2000 --lang ko --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line, median  # noqa: E402


def _median(fn, repeat: int):
    times, value = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return median(times), value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--lang", choices=["en", "ko", "both"], default="both")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tokenizers", default="13a", help="comma-separated BLEU tokenizers (default 13a)")
    args = ap.parse_args()

    import sacrebleu
    from sacrebleu.metrics import BLEU, CHRF

    import ragexam
    from ragexam.metrics.text import corpus_bleu, corpus_chrf
    from ragexam.metrics.text.synthetic import random_pairs

    print(f"ragexam {ragexam.__version__}, sacrebleu {sacrebleu.__version__}; {args.pairs} pairs, "
          f"1 reference each, median of {args.repeat}")
    print(machine_line())
    print(f"{'lang':4} {'metric':14} {'ragexam s':>10} {'sacrebleu s':>12} {'speed-up':>9} {'|diff|':>9}")
    langs = ["en", "ko"] if args.lang == "both" else [args.lang]
    worst = float("inf")
    for lang in langs:
        hyps, refs = random_pairs(args.pairs, lang, seed=args.seed)
        refs1 = [r[0] for r in refs]
        cases = [(f"BLEU tok:{tok}",
                  lambda tok=tok: corpus_bleu(hyps, refs1, tokenize=tok).score,
                  lambda tok=tok: BLEU(tokenize=tok).corpus_score(hyps, [refs1]).score / 100)
                 for tok in args.tokenizers.split(",")]
        cases += [
            ("chrF", lambda: corpus_chrf(hyps, refs1).score,
             lambda: CHRF().corpus_score(hyps, [refs1]).score / 100),
            ("chrF++", lambda: corpus_chrf(hyps, refs1, word_order=2).score,
             lambda: CHRF(word_order=2).corpus_score(hyps, [refs1]).score / 100),
        ]
        for name, ours, theirs in cases:
            ours()  # warm-up: imports, regex compilation
            t_ours, s_ours = _median(ours, args.repeat)
            t_theirs, s_theirs = _median(theirs, args.repeat)
            diff = abs(s_ours - s_theirs)
            ratio = t_theirs / t_ours
            worst = min(worst, ratio)
            flag = "" if diff <= 1e-9 else "  SCORE MISMATCH"
            print(f"{lang:4} {name:14} {t_ours:10.3f} {t_theirs:12.3f} {ratio:8.2f}x {diff:9.1e}{flag}")
    print(f"smallest speed-up: {worst:.2f}x")
    print(machine_line())


if __name__ == "__main__":
    main()
