"""Child process for tests: evaluates cases with pytrec_eval, one JSON line in, one out.

pytrec_eval 0.5.11 (the terrier fork) segfaults on some inputs — e.g. qrels
``{"q3": {"d0": 3}, "q5": {"d13": -2}}`` with run ``{"q3": {"d2": 0.0}, "q5": {}}`` — which
would kill the test process.  Running it here lets the parent skip a crashing case (and
count it) instead of dying.  Input lines: ``[qrels, run, measures, relevance_level]``.
"""

import json
import sys

import pytrec_eval

for line in sys.stdin:
    qrels, run, measures, level = json.loads(line)
    res = pytrec_eval.RelevanceEvaluator(qrels, set(measures), relevance_level=level).evaluate(run)
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()
