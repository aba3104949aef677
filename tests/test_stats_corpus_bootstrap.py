"""The bootstrap of a corpus statistic (corpus BLEU, corpus chrF): resample segments, sum their
statistics, recompute — checked against a direct reimplementation with sacrebleu's own corpus scores,
and the corpus score lies inside its own interval (it did not when the interval was bootstrapped from
sentence BLEU: issue 9, ``check --min bleu``: mean 0.417, CI 0.321–0.407)."""

from __future__ import annotations

import numpy as np
import pytest

from ragexam import stats
from ragexam.metrics.text import bleu_scores, bleu_stats, chrf_scores, chrf_stats, corpus_bleu, corpus_chrf

sacrebleu = pytest.importorskip("sacrebleu")

WORDS = "the a cat dog sat on mat red blue fast slow runs jumps over under house tree river stone light".split()


def _segments(seed: int, n: int):
    """``n`` (hypothesis, reference) pairs: references of 4-14 random words, hypotheses that keep each
    reference word with a segment-specific probability and add a few random words."""
    rng = np.random.default_rng(seed)
    hyps, refs = [], []
    for _ in range(n):
        ref = list(rng.choice(WORDS, size=int(rng.integers(4, 15))))
        keep = rng.random()
        hyp = [w for w in ref if rng.random() < keep] + list(rng.choice(WORDS, size=int(rng.integers(0, 4))))
        hyps.append(" ".join(hyp))
        refs.append(" ".join(ref))
    return hyps, refs


def _direct(hyps, refs, score, n_resamples, seed):
    """The percentile interval of ``score(hyps, refs)`` over resampled segments, one resample at a time."""
    n = len(hyps)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    values = [score([hyps[i] for i in row], [refs[i] for i in row]) for row in idx]
    return tuple(np.quantile(values, [0.025, 0.975]))


def test_corpus_bleu_interval_matches_sacrebleu_resampled():
    hyps, refs = _segments(7, 40)
    ci = stats.bootstrap_sums_ci(bleu_stats(hyps, refs), bleu_scores, n_resamples=300, seed=3)
    low, high = _direct(hyps, refs, lambda h, r: sacrebleu.corpus_bleu(h, [r]).score / 100, 300, 3)
    assert ci.mean == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score / 100, abs=1e-12)
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)


def test_corpus_chrf_interval_matches_sacrebleu_resampled():
    hyps, refs = _segments(8, 40)
    ci = stats.bootstrap_sums_ci(chrf_stats(hyps, refs), chrf_scores, n_resamples=300, seed=4)
    low, high = _direct(hyps, refs, lambda h, r: sacrebleu.corpus_chrf(h, [r]).score / 100, 300, 4)
    assert ci.mean == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score / 100, abs=1e-12)
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_the_corpus_score_lies_inside_its_interval(seed):
    hyps, refs = _segments(100 + seed, 30 + 5 * seed)
    b = stats.bootstrap_sums_ci(bleu_stats(hyps, refs), bleu_scores, n_resamples=1000, seed=seed)
    c = stats.bootstrap_sums_ci(chrf_stats(hyps, refs), chrf_scores, n_resamples=1000, seed=seed)
    assert b.low <= corpus_bleu(hyps, refs).score <= b.high
    assert c.low <= corpus_chrf(hyps, refs).score <= c.high
