"""judge-check says no more than it measured (issue 39's vague cases, issue 41 point 1):

* an endpoint that gave log-probabilities to ``llm probe`` and none afterwards: with ``--scoring probability`` the
  table and ``--out`` show no AUC and no verdict for the 0 items judged; with ``--scoring auto`` the written scores
  are used, with a note;
* a judge whose AUC interval lies wholly below 0.5 is an *inverted scale*, not "does not separate";
* below :data:`~ragexam.analysis.judging.check.MIN_QUESTIONS` questions no verdict; no zero-width interval;
* the judge is measured, not the quotation rule in front of it; answer_correctness positives are not the
  reference judged against itself;
* the record is keyed by the data set, and a verdict from another set says so.
"""

from __future__ import annotations

import json

import pytest

from ragexam.analysis.judging.check import MIN_QUESTIONS, ContrastItem, build_contrast, separation
from ragexam.cli import main
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.testing.stub import StubEndpoint


class _LogprobsOnlyForTheProbe(StubEndpoint):
    """Log-probabilities to the probe's request, none to any judgment (an endpoint whose proxy drops them)."""

    def _chat(self, body):
        out = super()._chat(body)
        if ((body.get("response_format") or {}).get("json_schema") or {}).get("name") != "ragexam_probe":
            out["choices"][0].pop("logprobs", None)
        return out


def _rows(pairs):
    """``(positive?, score)`` pairs, one question per (positive, negative) couple."""
    return [(ContrastItem(f"q{i // 2}", "context_relevance", "evidence" if pos else "random", pos, None), s)
            for i, (pos, s) in enumerate(pairs)]


def _check(ep, tmp_path, *extra, name="check.json"):
    out = tmp_path / name
    with pytest.raises(SystemExit) as ei:
        main(["judge-check", "--qa", "it_helpdesk", "--corpus", "it_helpdesk", "--judge-model", "m", "--base-url",
              ep.base_url, "--cache-dir", str(tmp_path / "c"), "--limit", "6", "-m", "context_relevance",
              "--out", str(out), "--max-retries", "0", *extra])
    return ei.value.code, json.loads(out.read_text(encoding="utf-8"))


def test_no_auc_and_no_verdict_for_zero_judged_items(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("COLUMNS", "160")
    with _LogprobsOnlyForTheProbe() as ep:
        code, data = _check(ep, tmp_path, "--scoring", "probability")
    text = capsys.readouterr().out
    prob = data["metrics"]["context_relevance"]["separation"]["probability"]
    assert prob["auc"] is None and prob["verdict"] == "unknown" and prob["n_scored"] == 0
    assert "no verdict: 0 of 18 items judged" in prob["text"]
    line = next(x for x in text.splitlines() if x.lstrip().startswith("context_relevance") and "probability" in x
                and "│" in x or x.startswith("│ context_relevance │ probability"))
    assert "0/18" in line and "0.5" not in line and "separat" not in line
    assert "context_relevance (probability): no verdict" in text
    assert code == 1  # nothing judged


def test_auto_scoring_falls_back_to_the_written_scores_with_a_note(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with _LogprobsOnlyForTheProbe() as ep:
        code, data = _check(ep, tmp_path)
    cr = data["metrics"]["context_relevance"]
    assert code == 0 and cr["n_judged"] == cr["n"] == 18 and list(cr["separation"]) == ["sample"]
    assert data["judge"]["scoring"]["context_relevance"] == "sample"
    assert any("written scores" in n and "18 replies" in n for n in data["notes"])
    assert "written scores" in capsys.readouterr().out


def test_an_interval_wholly_below_one_half_is_an_inverted_scale():
    inverted = separation("context_relevance", "sample", _rows([(True, 1.0), (False, 5.0)] * 20), seed=1,
                          n_resamples=200)
    assert inverted.auc.high < 0.5 and inverted.verdict == "inverted"
    assert "inverted scale" in inverted.text and "prompt or parsing fault" in inverted.text
    assert "does not separate" not in inverted.text


def test_too_few_questions_give_no_verdict_and_no_zero_width_interval():
    few = separation("context_relevance", "sample", _rows([(True, 5.0), (False, 1.0)] * 4), seed=1, n_resamples=200)
    assert few.n_questions == 4 < MIN_QUESTIONS and few.verdict == "too_few"
    assert few.auc.auc == 1.0 and few.auc.low < 0.6 and few.auc.floored  # not [1.00-1.00]
    assert f"a verdict needs at least {MIN_QUESTIONS}" in few.text and "4 questions" in few.text
    enough = separation("context_relevance", "sample", _rows([(True, 5.0), (False, 1.0)] * MIN_QUESTIONS), seed=1,
                        n_resamples=200)
    assert enough.verdict == "separates" and 0.70 <= enough.auc.low < 0.75


def test_the_contrast_measures_the_judge():
    qa, corpus = load_qa("it_helpdesk"), load_corpus("it_helpdesk")
    c = build_contrast(qa, corpus, ["answer_correctness", "context_relevance"], limit=12)
    by = {q.query_id: q for q in qa}
    ac = c["answer_correctness"]
    pos = [x for x in ac if x.positive]
    assert pos and all(x.item.answer != by[x.query_id].ground_truth for x in pos)  # never the key against itself
    assert all(x.item.answer == " ".join(by[x.query_id].evidence) for x in pos)
    for p, n in zip(ac[::2], ac[1::2]):
        assert p.query_id == n.query_id and not n.positive and n.item.answer != p.item.answer
        if n.detail.startswith("numbers"):  # only numbers the key holds are changed: the change contradicts it
            import re

            changed = set(re.findall(r"\d+", p.item.answer)) - set(re.findall(r"\d+", n.item.answer))
            assert changed and changed <= set(re.findall(r"\d+", by[p.query_id].ground_truth))
    # the other metrics' items do not move when answer_correctness is checked too
    alone = build_contrast(qa, corpus, ["context_relevance"], limit=12)["context_relevance"]
    assert [(x.query_id, x.kind, x.detail) for x in alone] == [(x.query_id, x.kind, x.detail)
                                                               for x in c["context_relevance"]]


def test_the_quotation_rule_is_off_in_a_check(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with StubEndpoint() as ep:
        out = tmp_path / "check.json"
        with pytest.raises(SystemExit):
            main(["judge-check", "--qa", "it_helpdesk", "--corpus", "it_helpdesk", "--judge-model", "m",
                  "--base-url", ep.base_url, "--cache-dir", str(tmp_path / "c"), "--limit", "6", "-m",
                  "faithfulness", "--out", str(out), "--scoring", "sample"])
        calls = sum(1 for b in ep.requests if (b.get("response_format") or {}).get("json_schema", {}).get("name")
                    == "faithfulness")
    data = json.loads(out.read_text(encoding="utf-8"))
    fa = data["metrics"]["faithfulness"]
    assert "quoted:off" in data["judge"]["signatures"]["faithfulness"]
    assert calls == fa["n"] == 12  # every item asked the judge: none was decided by the rule
    assert all(not (r.get("score_sample") is None and r["status"] == "judged") for r in fa["items"])


def test_the_record_is_keyed_by_the_data_set(tmp_path, capsys, monkeypatch):
    """A check on one set, then ``score`` on another: the warning says the verdict comes from another set."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    cache = str(tmp_path / "c")
    with StubEndpoint() as ep:
        with pytest.raises(SystemExit):
            main(["judge-check", "--qa", "it_helpdesk", "--corpus", "it_helpdesk", "--judge-model", "m",
                  "--base-url", ep.base_url, "--cache-dir", cache, "--limit", "6", "-m", "answer_correctness",
                  "--scoring", "sample"])
        capsys.readouterr()
        other = tmp_path / "other.jsonl"
        lines = open(load_qa("it_helpdesk").source, encoding="utf-8").read().splitlines()
        first = json.loads(lines[0])
        first["question"] += " (reworded)"  # another data set, though most of it is the same
        other.write_text("\n".join([json.dumps(first, ensure_ascii=False)] + lines[1:]) + "\n", encoding="utf-8")
        args = ["score", "--answers", "it_helpdesk", "--judge-model", "m", "--base-url", ep.base_url,
                "--cache-dir", cache, "-m", "answer_correctness", "--no-history", "--json", "--scoring", "sample"]
        with pytest.raises(SystemExit):
            main(args + ["--qa", "it_helpdesk"])
        same = [n for n in json.loads(capsys.readouterr().out)["notes"] if n.startswith("answer_correctness:")]
        with pytest.raises(SystemExit):
            main(args + ["--qa", str(other)])
        got = json.loads(capsys.readouterr().out)
        elsewhere = [n for n in got["notes"] if n.startswith("answer_correctness:")]
    assert len(same) == 1 and "on it_helpdesk" in same[0] and "another data set" not in same[0]
    assert "too few" in same[0]  # 6 questions: no verdict
    assert len(elsewhere) == 1 and "on another data set (it_helpdesk, " in elsewhere[0]
    # no corpus for the other set (a file of its own, no --run, no --corpus): no check ran, the verdict says where
    assert got["judge"]["trust"]["answer_correctness"]["verdict"] == "other_set"


def test_the_judge_beside_the_evidence_gives_a_verdict_without_a_call():
    """Issue 41 point 2's data: the judge passing 15 of 16 contexts that hold no evidence, and every context that
    does -- the contrast ``score`` already has, read like a judge-check."""
    from ragexam.analysis.judging.check import evidence_contrast

    rows = [(f"q{i}", 4.0, True) for i in range(16)] + [(f"q{i}", 4.0 if i else 1.0, False) for i in range(16)]
    sep = evidence_contrast("context_relevance", "sample", rows)
    assert sep.n_questions == 16 and sep.verdict == "does_not" and round(sep.auc.auc, 3) == 0.531
    good = evidence_contrast("context_relevance", "sample", [(f"q{i}", 5.0, True) for i in range(16)] +
                             [(f"q{i}", 1.0, False) for i in range(16)])
    assert good.verdict == "separates"


def test_the_shown_interval_does_not_contradict_the_verdict_at_a_boundary():
    """Review E18: ``AUC 0.86 [0.70–0.94] … only weakly`` from a low end of 0.6985 ("separates" starts at 0.70)."""
    from types import SimpleNamespace

    from ragexam.analysis.judging.check import auc_interval, verdict_of
    from ragexam.report.console_judge import _auc_ci

    weak = SimpleNamespace(auc=0.86, low=0.6985, high=0.94)
    verdict, text = verdict_of("contexts", weak, [0.0, 1.0], 20, 40)
    assert verdict == "weakly" and "AUC 0.86 [0.699–0.94], 20 questions" in text
    assert auc_interval(SimpleNamespace(auc=0.86, low=0.7012, high=0.94)) == "AUC 0.86 [0.70–0.94]"
    assert auc_interval(SimpleNamespace(auc=0.6, low=0.5004, high=0.7)) == "AUC 0.60 [0.5004–0.70]"  # > 0.5: weakly
    assert _auc_ci(0.6985, 0.94) == "0.699–0.94"
