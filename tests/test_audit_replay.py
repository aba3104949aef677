"""docs/measurements/audit.md: the audit and the review queue on the offline 1.5B model's recorded held-out runs
(replayed, no model call), measured by ``benchmarks/audit_replay.py`` against the person's labels -- asserted, so
the numbers in the docs are the ones this version gives."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def measured():
    path = ROOT / "benchmarks" / "audit_replay.py"
    spec = importlib.util.spec_from_file_location("audit_replay", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.measure()


def test_the_junk_rate_of_the_recorded_runs_as_audited(measured):
    seed7, helpdesk = measured["seed7"], measured["helpdesk10"]
    assert (seed7["n"], seed7["bad"], seed7["full"]) == (20, 10, "junk 50%, 20 of 20 audited (every question)")
    assert (helpdesk["n"], helpdesk["bad"], helpdesk["full"]) == (10, 4, "junk 40%, 10 of 10 audited (every question)")
    got = {(run, s["k"]): (round(s["coverage"], 3), round(s["mean_width"], 3), s["example"])
           for run in ("seed7", "helpdesk10") for s in measured[run]["samples"]}
    assert got == {
        ("seed7", 5): (0.967, 0.665, "junk 40% [10%–80%], 5 of 20 audited"),
        ("seed7", 10): (0.977, 0.423, "junk 20% [10%–45%], 10 of 20 audited"),
        ("seed7", 15): (0.967, 0.248, "junk 40% [30%–55%], 15 of 20 audited"),
        ("helpdesk10", 5): (0.952, 0.469, "junk 40% [20%–70%], 5 of 10 audited"),
    }


def test_the_checks_signals_against_the_labels(measured):
    rounded = {run: {k: round(v, 2) for k, v in measured[run]["signals"].items() if k != "risk"}
               for run in ("seed7", "helpdesk10", "pooled")}
    assert rounded == {
        "seed7": {"critic": 0.5, "reader": 0.65, "answer_check": 0.55, "overlap": 0.63, "key_share": 0.71,
                  "two_documents": 0.55},
        "helpdesk10": {"critic": 0.5, "reader": 0.54, "answer_check": 0.62, "overlap": 0.58, "key_share": 0.46,
                       "two_documents": 0.62},
        "pooled": {"critic": 0.5, "reader": 0.62, "answer_check": 0.58, "overlap": 0.62, "key_share": 0.65,
                   "two_documents": 0.58},
    }
    risk = {run: measured[run]["signals"]["risk"] for run in ("seed7", "helpdesk10", "pooled")}
    assert {run: (round(r["auc"], 2), round(r["low"], 2), round(r["high"], 2), r["helps"]) for run, r in risk.items()} \
        == {"seed7": (0.72, 0.45, 0.94, False), "helpdesk10": (0.67, 0.25, 1.0, False), "pooled": (0.72, 0.52, 0.89, True)}
    assert "the review queue is in random order" in risk["seed7"]["text"]
