"""ragexam check: metric floors on the CI lower bound (or the mean), exit codes 0 / 1 / 2."""

from __future__ import annotations

import pytest

from ragexam import stats
from ragexam.cli import main
from ragexam.errors import InputError, MetricNameError
from ragexam.analysis.gating.gate import check_run, parse_floor
from ragexam.storage.runfolder import RunData, coerce_rows
from test_report_fixtures import make_run, write_run

PIPE = "bm25 | paragraphs:400"


@pytest.fixture(scope="module")
def run():
    summary, rows = make_run(n_questions=30, seed=4, n_resamples=100, n_permutations=50)
    return RunData(summary, coerce_rows(rows), "fixture")


@pytest.fixture()
def folder(run, tmp_path):
    return str(write_run(tmp_path / "run", run.summary, run.per_question))


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code or 0, out.out, out.err


def test_lower_bound_vs_point(run):
    res = run.summary["results"][PIPE]
    mean, (lo, _) = res["metrics"]["hit@5"], res["ci95"]["hit@5"]
    between = (lo + mean) / 2
    (r,) = check_run(run, [parse_floor(f"hit@5={between}")], pipeline=PIPE)
    assert not r.passed and r.value == lo and r.basis == "ci95 lower bound"
    (r,) = check_run(run, [parse_floor(f"hit@5={between}")], pipeline=PIPE, point=True)
    assert r.passed and r.value == mean and r.basis == "mean"
    (r,) = check_run(run, [parse_floor(f"hit@5={lo}")], pipeline=PIPE)
    assert r.passed  # at the floor passes
    assert f"{lo:.3f}" in r.line() and "PASS" in r.line() and PIPE in r.line()


def test_every_pipeline_by_default_and_aliases(run):
    results = check_run(run, [parse_floor("success@5=0"), parse_floor("P@5=0"), parse_floor("MRR=0")])
    assert len(results) == 3 * len(run.pipelines) and all(r.passed for r in results)
    assert {r.metric for r in results} == {"hit@5", "p@5", "mrr"}


def test_bootstrap_when_the_run_has_no_ci(run):
    summary = dict(run.summary, results={p: dict(r, ci95={}) for p, r in run.summary["results"].items()})
    (r,) = check_run(RunData(summary, run.per_question), [parse_floor("mrr=0")], pipeline=PIPE)
    vals = [x["mrr"] for x in run.rows(PIPE) if x["answerable"]]
    ci = stats.bootstrap_ci(vals, n_resamples=100, seed=4)
    assert (r.ci_low, r.ci_high) == (ci.low, ci.high)
    with pytest.raises(InputError, match="--point"):
        check_run(RunData(summary, []), [parse_floor("mrr=0")], pipeline=PIPE)


def test_errors(run):
    with pytest.raises(MetricNameError, match="valid metrics: hit@1, hit@3, hit@5, mrr"):
        check_run(run, [parse_floor("ndcg@99=0.5")])
    with pytest.raises(InputError, match="its pipelines"):
        check_run(run, [parse_floor("mrr=0.5")], pipeline="nope")
    for bad in ("mrr", "mrr=high", "=0.5", "mrr=nan", "a=1=2"):
        with pytest.raises(InputError):
            parse_floor(bad)


def test_cli_exit_codes(run, folder, capsys):
    res = run.summary["results"]
    low = min(r["ci95"]["hit@5"][0] for r in res.values())
    code, out, _ = _cli(["check", folder, "--min", f"hit@5={low - 0.01}", "--min", "mrr=0"], capsys)
    assert code == 0
    assert out.count("PASS ") == 2 * len(res) and "FAIL" not in out
    code, out, _ = _cli(["check", folder, "--min", "hit@5=0.99", "--min", "mrr=0"], capsys)
    assert code == 1
    assert out.count("FAIL hit@5") == len(res) and out.count("PASS mrr") == len(res)
    mean = res[PIPE]["metrics"]["hit@5"]
    code, out, _ = _cli(["check", folder, "--min", f"hit@5={mean}", "-p", PIPE, "--point"], capsys)
    assert code == 0 and out.count("PASS ") == 1
    code, out, _ = _cli(["check", folder, "--min", f"hit@5={mean}", "-p", PIPE], capsys)
    assert code == 1
    code, _, err = _cli(["check", folder, "--min", "recall@50=0.8"], capsys)
    assert code == 2 and "r@5" in err and "valid metrics" in err
    code, _, err = _cli(["check", folder, "--min", "mrr>0.8"], capsys)
    assert code == 2 and "METRIC=VALUE" in err


def test_a_floor_outside_the_metrics_values_is_refused(run, folder, capsys):
    """``--min hit@5=80`` ran, failed every pipeline and exited 1 with no hint that a rate lies in [0, 1]."""
    for bad in ("hit@5=80", "mrr=1.5", "hit@5=-0.1"):
        with pytest.raises(InputError) as info:
            check_run(run, [parse_floor(bad)])
        assert info.value.field == "--min" and "from 0 to 1" in str(info.value)
    (r,) = check_run(run, [parse_floor("hit@5=1")], pipeline=PIPE)  # the bounds themselves are floors
    code, out, err = _cli(["check", folder, "--min", "hit@5=80"], capsys)
    assert code == 2 and out == "" and "received 80.0; expected a floor of hit@5 from 0 to 1" in err
    assert "--min hit@5=0.8 for 80%" in err
