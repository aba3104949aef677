"""The offline demo: the bundled it_helpdesk answers scored with no LLM.

The answers carry a ``note`` saying how each was written (correct, wrong, unfaithful,
abstained, hallucinated).  The text-threshold verdicts (``--correct-if chrf>=0.5``, the phrase
list for abstention) are compared with those notes and the agreement is asserted *as measured*
(see the numbers below), not tuned: chrF on paraphrased Korean answers is a rough proxy.

Measured on the bundled set (chrF >= 0.5 against ground_truth):

* wrong answers (9):                 0 counted correct (all rejected)
* abstentions to answerable q. (4):  0 counted correct
* correct paraphrases (44):          23 counted correct (recall 0.52: paraphrases score low)
* unfaithful answers (8):            5 counted correct (their core is right; chrF cannot see the
                                     invented extra claims -- that needs the judge's faithfulness)
* out-of-corpus (6):                 the phrase list agrees with all 6 notes (4 abstained, 2 hallucinated)
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.answers.scoring import score_answers
from ragexam.metrics.verdicts import ABSTAIN_PHRASES, is_abstention, parse_correct_if
from ragexam.cli import main
from ragexam.data import load_qa
from ragexam.errors import InputError


@pytest.fixture(scope="module")
def report():
    qa = load_qa("it_helpdesk")
    return score_answers(qa, load_answers("it_helpdesk"), answers_source="it_helpdesk",
                         correct_if=parse_correct_if("chrf>=0.5"))


def test_bundled_answers_load():
    recs = load_answers("it_helpdesk")
    assert len(recs) == 71 and all(r.pipeline is None and r.contexts is None for r in recs)
    assert Counter(r.metadata["note"] for r in recs) == {"correct": 44, "wrong": 9, "unfaithful": 8, "abstained": 8,
                                                         "hallucinated": 2}


def test_text_threshold_verdicts_vs_notes(report):
    by_note = Counter()
    for r in report.rows:
        note = r.record.metadata["note"]
        s = r.stage.inputs
        verdict = s.correct if r.question.answerable else s.abstained
        by_note[(note, r.question.answerable, verdict)] += 1
    # answerable questions: correct (True) / not correct (False)
    assert by_note[("wrong", True, True)] == 0 and by_note[("wrong", True, False)] == 9
    assert by_note[("abstained", True, True)] == 0 and by_note[("abstained", True, False)] == 4
    assert by_note[("correct", True, True)] == 23 and by_note[("correct", True, False)] == 21
    assert by_note[("unfaithful", True, True)] == 5 and by_note[("unfaithful", True, False)] == 3
    # out-of-corpus: abstained (True) / answered (False)
    assert by_note[("abstained", False, True)] == 4 and by_note[("hallucinated", False, False)] == 2
    # overall agreement on the notes whose expected verdict is clear (correct, wrong, abstained, hallucinated)
    clear = [(n, a, v) for (n, a, v), c in by_note.items() for _ in range(c) if n != "unfaithful"]
    expected = {("correct", True): True, ("wrong", True): False, ("abstained", True): False,
                ("abstained", False): True, ("hallucinated", False): False}
    agree = sum(1 for n, a, v in clear if expected[(n, a)] == v) / len(clear)
    assert agree == pytest.approx(42 / 63)  # 0.667: rough, and reported as such
    # precision of "correct": every answer chrF accepted was written correct or with a correct core
    accepted = {n for (n, a, v) in by_note if a and v}
    assert accepted == {"correct", "unfaithful"}


def test_text_metrics_use_a_korean_tokenizer(report):
    t = report.text["(answers)"].to_dict()
    assert t["n"] == 65
    assert "tok:ko-kiwi" in t["signatures"]["bleu"] and "tok:ko-kiwi" in t["signatures"]["rouge_l"]
    # the aggregates are sums of per-answer statistics: identical to the corpus functions, and to
    # sacrebleu's (BLEU on the same kiwi morphemes, joined by spaces and not tokenized again)
    import sacrebleu

    from ragexam.metrics.text import corpus_bleu, corpus_chrf, corpus_rouge_l
    from ragexam.metrics.text.tokenizers import tokenize_lines

    use = [r for r in report.rows if r.question.answerable]
    hyps, refs = [r.answer for r in use], [r.question.ground_truth for r in use]
    kiwi = [[" ".join(toks) for toks in tokenize_lines(x, "ko-kiwi")] for x in (hyps, refs)]
    assert t["bleu"] == pytest.approx(sacrebleu.corpus_bleu(kiwi[0], [kiwi[1]], tokenize="none").score / 100,
                                      abs=1e-12)
    assert t["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score / 100, abs=1e-12)
    # the bundled set's values (fixed data; a change here is a change of a metric or of the tokenizer)
    assert (t["bleu"], t["chrf"], t["rouge_l"]) == pytest.approx((0.41747, 0.46049, 0.59233), abs=5e-6)
    assert t["bleu"] == pytest.approx(corpus_bleu(hyps, refs, tokenize="ko-kiwi").score, abs=1e-12)
    assert t["chrf"] == pytest.approx(corpus_chrf(hyps, refs).score, abs=1e-12)
    assert t["rouge_l"] == pytest.approx(corpus_rouge_l(hyps, refs, tokenize="ko-kiwi").score, abs=1e-12)
    assert t["signatures"]["rouge_l"] == corpus_rouge_l(hyps, refs, tokenize="ko-kiwi").signature
    # out-of-corpus questions are graded by abstention, not by overlap with "not in the documents"
    assert sum(b.n for b in report.text_by_type["(answers)"].values()) == 65
    assert report.text_by_type["(answers)"]["out_of_corpus"].n == 0


def test_without_a_run_retrieval_is_unknown_and_said_so(report):
    c = report.attribution.counts("(answers)")
    assert c["unjudged"] == 65 and c["abstained_ok"] == 4 and c["hallucinated"] == 2
    assert any("pass --run DIR" in n for n in report.notes)
    assert "retrieval:unknown" in report.attribution.signature


def test_cli_offline_demo(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--json"])
    assert ei.value.code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["correctness_source"] == "none" and data["settings"]["abstention_source"] == "phrases"
    assert data["attribution"]["unjudged_reasons"]["(answers)"] == {"no_correctness_source": 65}
    assert "correct:none" in data["attribution"]["signature"]


def test_phrase_list():
    assert is_abstention("문서에서  찾을 수 없습니다.") == "문서에서 찾을 수 없"
    assert is_abstention("I CAN\u2019T FIND that in the documents") == "can't find"
    assert is_abstention("VPN-ERR-619는 UDP 4500 포트가 막힌 경우입니다.") is None
    assert is_abstention(None) is None
    assert all(p == p.strip() for p in ABSTAIN_PHRASES)


@pytest.mark.parametrize("text, canon", [("chrf>=0.5", "chrf>=0.5"), (" rougeL > 0.3 ", "rouge_l>0.3"),
                                         ("chrf>=0.5,bleu>=0.2", "chrf>=0.5,bleu>=0.2"), ("chrF>=.5&bleu<1", "chrf>=0.5,bleu<1")])
def test_correct_if_parsing(text, canon):
    assert str(parse_correct_if(text)) == canon


@pytest.mark.parametrize("text, needle", [("chrf>=50", "outside [0, 1]"), ("meteor>=0.5", "unknown metric"),
                                          ("chrf=0.5", "cannot read"), ("", "expected a condition")])
def test_correct_if_errors(text, needle):
    with pytest.raises(InputError) as ei:
        parse_correct_if(text)
    assert needle in str(ei.value)


@pytest.mark.parametrize("line, field, needle", [
    ('{"answer": "x"}', "query_id", "non-empty string"),
    ('{"query_id": "q1"}', "answer", "is missing"),
    ('{"query_id": "q1", "answer": 3}', "answer", "expected a string"),
    ('{"query_id": "q1", "answer": "x", "contexts": "abc"}', "contexts", "list of strings"),
    ('{"query_id": "q1", "answer": "x", "k": 0}', "k", "integer >= 1"),
    ('{"query_id": "q1", "answer": "x", "human": 4}', "human", "expected an object"),
])
def test_answers_file_errors(tmp_path, line, field, needle):
    p = tmp_path / "a.jsonl"
    p.write_text('{"query_id": "q0", "answer": "ok"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_answers(p)
    assert ei.value.line == 2 and ei.value.field == field and needle in str(ei.value)


def test_duplicate_answers_and_null_answer_with_error(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"query_id": "q1", "answer": "a"}\n{"query_id": "q1", "answer": "b"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="already appeared on line 1"):
        load_answers(p)
    p.write_text('{"query_id": "q1", "answer": null, "error": "timeout"}\n', encoding="utf-8")
    assert load_answers(p)[0].error == "timeout"


def _joined(bleu_tokenize="auto"):
    from ragexam.analysis.answers import stages
    from ragexam.analysis.answers.options import ScoreOptions

    return stages.join(load_qa("it_helpdesk"), load_answers("it_helpdesk"),
                       options=ScoreOptions(answers_source="it_helpdesk", bleu_tokenize=bleu_tokenize))


def test_text_scores_beside_the_judge_run_in_a_child_process_and_equal_the_inline_ones(monkeypatch):
    """With a judge the text statistics come from a child process (Kiwi's load would hold this process's GIL
    during the calls); they equal the statistics computed here."""
    from ragexam.analysis.answers import stages

    here = stages.text(_joined(), beside=False)
    inline = here.result()
    job = stages.text(_joined(), beside=True)
    assert job.job.started
    monkeypatch.setattr(job.job, "fn", lambda *a: pytest.fail("computed in this process"))
    beside = job.result()
    assert job.job.where == "beside" and here.job.where == "here"
    assert len(job.todo) == len(here.todo) > 60
    assert [r.text_stats for r in job.todo] == [r.text_stats for r in here.todo]
    assert [r.text for r in job.todo] == [r.text for r in here.todo]
    assert beside == inline


def test_text_scores_are_computed_here_when_the_child_cannot_run(monkeypatch):
    import sys

    from ragexam.analysis.answers import stages

    here = stages.text(_joined("char"), beside=False)
    inline = here.result()
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    job = stages.text(_joined("char"), beside=True)
    assert not job.job.started
    assert job.result() == inline and job.job.where == "here"
    assert [r.text for r in job.todo] == [r.text for r in here.todo]


def test_text_scores_child_is_stopped_when_scoring_fails_before_the_result():
    import gc

    from ragexam.analysis.answers import stages

    job = stages.text(_joined(), beside=True)
    proc = job.job._proc
    assert proc is not None and proc.poll() is None
    del job  # what an exception between the start and result() leaves behind
    gc.collect()
    assert proc.poll() is not None
