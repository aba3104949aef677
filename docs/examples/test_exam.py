"""ragexam in CI: the exam as pytest tests (docs/judge.md, "In your test suite").

Run it with the ragexam plugin (installed with ragexam; ``-p ragexam.testing.plugin`` loads it by hand):

    pytest docs/examples/test_exam.py                               # the loopback stub judge, offline
    pytest docs/examples/test_exam.py --ragexam-judge-model gpt-4o-mini   # a real judge ($OPENAI_API_KEY / .env)

Floors are checked on the 95% CI lower bound: a pipeline passes only when it is *confidently* above the
floor.  A failure lists the metric, its interval, the floor and the worst questions.
"""

import pytest

import ragexam
from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.answers.scoring import score_answers
from ragexam.data.loaders import load_qa
from ragexam.testing import assert_exam


@pytest.fixture(scope="module")
def retrieval(tmp_path_factory):
    # BM25 over the bundled Korean IT-helpdesk set (18 documents, 71 questions); its own cache folder
    cache = tmp_path_factory.mktemp("retrieval-cache")
    return ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25"], cache_dir=cache, progress=False)


def test_retrieval_finds_the_evidence(retrieval):
    assert_exam(retrieval, min={"hit@5": 0.6, "mrr": 0.4})


def test_answers_are_correct_and_grounded(retrieval, ragexam_judge):
    # the bundled hand-written answers (it_helpdesk/answers.jsonl), judged on the chunks BM25 retrieved
    report = score_answers(load_qa("it_helpdesk"), load_answers("it_helpdesk"), run=retrieval,
                           pipeline=retrieval.baseline, judge=ragexam_judge,
                           judge_metrics=["answer_correctness", "faithfulness", "context_recall"])
    assert_exam(report, min={"answer_correctness": 2.5, "context_recall": 0.3}, min_coverage=0.8)


def test_a_failed_floor_names_the_worst_questions(retrieval, ragexam_judge):
    report = score_answers(load_qa("it_helpdesk"), load_answers("it_helpdesk"), run=retrieval,
                           pipeline=retrieval.baseline, judge=ragexam_judge, judge_metrics=["answer_correctness"])
    with pytest.raises(AssertionError) as failure:
        assert_exam(report, min={"answer_correctness_pass": 0.99})
    message = str(failure.value)
    assert "FAIL answer_correctness_pass >= 0.99" in message and "worst questions:" in message
