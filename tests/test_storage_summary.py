"""The typed run summary (storage/summary.py): every format reads and writes back unchanged, unknown keys survive,
a wrong value names its path, and readers get attributes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from test_report_fixtures import make_run

from ragexam.errors import InputError
from ragexam.storage.summary import MissedQuestion, PipelineResult, RunSummary

GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.mark.parametrize("case", ["helpdesk", "doc"])
def test_the_current_format_round_trips(case):
    data = json.loads((GOLDEN / case / "summary.json").read_text(encoding="utf-8"))
    s = RunSummary.from_dict(data)
    assert s.to_dict() == data
    assert json.dumps(s.to_dict(), sort_keys=True) == json.dumps(data, sort_keys=True)
    name = s.pipelines[0].name
    assert isinstance(s.results[name], PipelineResult) and s.results[name].n == s.dataset.n_scored
    assert all(isinstance(m, MissedQuestion) for m in s.missed[name])
    want = f"hit@{s.miss_k}"
    assert s.headline == (want if want in s.main_metrics else s.main_metrics[0])
    assert s.results[name].ci95["hit@5"][0] <= s.results[name].metrics["hit@5"]


def test_an_older_format_reads_and_writes_back_unchanged():
    summary, _ = make_run(n_questions=6, seed=2, n_resamples=20, n_permutations=20)
    assert summary["format"] == "ragexam-run/1"
    s = RunSummary.from_dict(summary)
    assert s.to_dict() == summary
    assert s.pipelines[0].kind == "chunks" and s.miss_k == 5  # defaults for what /1 did not write


def test_unknown_keys_are_kept():
    data = json.loads((GOLDEN / "doc" / "summary.json").read_text(encoding="utf-8"))
    data = copy.deepcopy(data)
    data["from_the_future"] = {"x": 1}
    first = next(iter(data["results"]))
    data["results"][first]["new_metric_block"] = [1, 2]
    s = RunSummary.from_dict(data)
    assert s.extra == {"from_the_future": {"x": 1}} and s.results[first].extra == {"new_metric_block": [1, 2]}
    assert s.to_dict() == data


@pytest.mark.parametrize("path,value,where", [
    (("results", 0, "metrics", "hit@5"), "high", "results['{p}'].metrics['hit@5']"),
    (("dataset", "n_scored"), 1.5, "dataset.n_scored"),
    (("missed", 0), {"k": 5}, "missed['{p}']"),
])
def test_a_wrong_value_names_its_path(path, value, where):
    data = copy.deepcopy(json.loads((GOLDEN / "doc" / "summary.json").read_text(encoding="utf-8")))
    p = next(iter(data["results"]))
    node = data
    keys = [p if k == 0 else k for k in path]
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    with pytest.raises(InputError) as err:
        RunSummary.from_dict(data, source="summary.json")
    assert where.format(p=p) in str(err.value) and "summary.json" in str(err.value)


def test_it_is_also_a_read_only_view_of_its_json():
    data = json.loads((GOLDEN / "doc" / "summary.json").read_text(encoding="utf-8"))
    s = RunSummary.from_dict(data)
    p = s.pipelines[0].name
    assert s["results"][p]["metrics"] == s.results[p].metrics and set(s) == set(data) and s == data
