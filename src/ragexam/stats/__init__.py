"""ragexam.stats: the statistics that keep one number from deciding (numpy only).

Everything works on *per-question* values: one row per question, in the same question order for
every pipeline.  All randomness comes from ``numpy.random.default_rng(seed)`` with an explicit
integer ``seed`` that is stored in every result, so the same inputs and the same seed give
bit-identical output (also independently of the internal chunk size).  Nothing here returns NaN:
empty input, NaN or infinite values, and statistics that are undefined on the given data raise
:class:`ragexam.errors.InputError` naming the parameter.

One module per job:

- :mod:`~ragexam.stats.bootstrap`: percentile-bootstrap intervals of a mean, a ratio of sums, any
  corpus statistic computed from summed per-segment statistics (BLEU, chrF), and a paired difference;
- :mod:`~ragexam.stats.randomization`: the paired sign-flip randomization test;
- :mod:`~ragexam.stats.multiple`: Holm and Benjamini–Hochberg corrections;
- :mod:`~ragexam.stats.power`: the resolution (one question) and the minimum detectable difference;
- :mod:`~ragexam.stats.verdict`: the one plain-words wording of a comparison;
- :mod:`~ragexam.stats.comparison`: all of the above for one metric (:func:`compare`) or a family of
  metrics with Holm's correction (:func:`compare_family`);
- :mod:`~ragexam.stats.agreement`: Cohen's kappa and Spearman's rho (judge checks);
- :mod:`~ragexam.stats.hypergeometric`: the exact finite-population interval of a share of bad items from a
  random sample of a set (a question set's audited junk rate).
"""

from __future__ import annotations

from ragexam.stats._checks import DEFAULT_SEED
from ragexam.stats.agreement import cohen_kappa, spearman
from ragexam.stats.bootstrap import (BootstrapCI, bootstrap_ci, bootstrap_indices, bootstrap_ratio_ci,
                                     bootstrap_sums_ci, paired_bootstrap_diff)
from ragexam.stats.comparison import Comparison, compare, compare_family
from ragexam.stats.hypergeometric import FiniteInterval, hypergeometric_interval
from ragexam.stats.multiple import benjamini_hochberg, holm
from ragexam.stats.power import minimum_detectable_difference, normal_quantile, resolution
from ragexam.stats.randomization import RandomizationTest, paired_randomization_test
from ragexam.stats.verdict import Verdict, assess, verdict

__all__ = [
    "DEFAULT_SEED", "BootstrapCI", "RandomizationTest", "Comparison", "Verdict",
    "bootstrap_ci", "bootstrap_ratio_ci", "bootstrap_sums_ci", "bootstrap_indices", "paired_bootstrap_diff",
    "paired_randomization_test", "holm", "benjamini_hochberg", "resolution", "minimum_detectable_difference",
    "normal_quantile", "assess", "verdict", "compare", "compare_family", "cohen_kappa", "spearman",
    "FiniteInterval", "hypergeometric_interval",
]
