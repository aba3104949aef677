"""What the Python API does with the arguments a user passes: objects where paths are natural (a RunResult, a list of
answers), one name where a list is expected, dicts or strings where a settings object is expected, misspelt
keywords, and messages that name Python keywords (not command-line flags) to a Python caller."""

from __future__ import annotations

import math

import pytest

import ragexam
from ragexam import api
from ragexam.errors import InputError, speaking_to


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A bm25 run of the bundled helpdesk set, and the folder it was saved to."""
    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], n_resamples=100, n_permutations=100,
                      progress=False)
    folder = tmp_path_factory.mktemp("runs") / "run_a"
    res.save(folder)
    return res, str(folder)


def test_a_run_result_is_taken_where_a_run_folder_is(saved):
    """score(run=RunResult) and compare(RunResult, ...) are the natural calls from Python (they used to fail with
    'expected str, bytes or os.PathLike object')."""
    res, folder = saved
    by_object = ragexam.score("it_helpdesk", "it_helpdesk", run=res, record=False)
    by_folder = ragexam.score("it_helpdesk", "it_helpdesk", run=folder, record=False)
    assert by_object.report.summary.to_dict()["results"] == by_folder.report.summary.to_dict()["results"]
    cmp = api.compare(res, folder, metrics=["hit@5"])
    assert [m.metric for m in cmp.pipelines[0].metrics] == ["hit@5"]
    assert api.check(res, ["hit@1=0"])[0].passed
    with pytest.raises(InputError, match=r"run_a: field 'run_a': received a dict; expected a run folder \(a path\), "
                                         r"a recorded run id or a RunResult"):
        api.compare({"run": folder}, folder)
    with pytest.raises(InputError, match="field 'run': received a list; expected a run folder"):
        ragexam.score("it_helpdesk", "it_helpdesk", run=[folder], record=False)


def test_answers_as_a_list_of_records(saved):
    """A list of answer records (dicts with an answers file's fields) is read as the file's lines are; a bad one is
    named by its index."""
    from ragexam.analysis.answers.files import load_answers

    records = [r.to_dict() for r in load_answers("it_helpdesk")]
    out = ragexam.score("it_helpdesk", records, record=False)
    assert out.report.summary.to_dict()["results"] == \
        ragexam.score("it_helpdesk", "it_helpdesk", record=False).report.summary.to_dict()["results"]
    with pytest.raises(InputError, match=r"answers\[1\]: field 'query_id'"):
        load_answers([records[0], {"answer": "x"}])
    with pytest.raises(InputError, match=r"answers\[1\]: field 'query_id': .*already appeared as answers\[0\]"):
        load_answers([records[0], records[0]])
    with pytest.raises(InputError, match="field 'answers': received a dict; expected an answers file"):
        load_answers({"query_id": "hq_001"})


def test_one_name_where_a_list_is_expected(saved):
    """A single metric name or floor is one name, never read one character at a time ('metric 'h' was not
    computed'); errors.names is the one rule."""
    from ragexam.errors import names
    from ragexam.llm.settings import LLMSettings

    res, folder = saved
    assert list(res.metrics_table("hit@5").columns) == ["hit@5"]
    cmp = api.compare(folder, folder, metrics="hit@5")
    assert [m.metric for m in cmp.pipelines[0].metrics] == ["hit@5"]
    assert [g.metric for g in api.check(folder, "hit@5=0")] == ["hit@5"]
    judge = LLMSettings("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    plan = ragexam.score("it_helpdesk", "it_helpdesk", run=folder, judge=judge, metrics="faithfulness",
                         dry_run=True).plan
    assert list(plan.by_metric) == ["faithfulness"]
    assert names("a") == ["a"] and names(("a", "b")) == ["a", "b"] and names(None) is None
    with pytest.raises(InputError, match="received 3 among the items; expected a metric name"):
        names(["a", 3], what="a metric name")


def test_settings_objects_are_checked(saved):
    """A dict or a string where LLMSettings, ScoreRequest or GenerateConfig is expected is an InputError naming the
    parameter with the fix (it used to be ignored or an AttributeError)."""
    _, folder = saved
    cases = [
        (lambda: ragexam.score("it_helpdesk", "it_helpdesk", judge={"model": "m"}, dry_run=True),
         r"judge: field 'judge': received dict \{'model': 'm'\}; expected an LLMSettings object. Fix: pass "
         r"judge=LLMSettings\(model=...\)"),
        (lambda: ragexam.score("it_helpdesk", "it_helpdesk", judge="gpt-4o-mini", dry_run=True),
         r"Fix: pass judge=LLMSettings\('gpt-4o-mini'\)"),
        (lambda: ragexam.score("it_helpdesk", "it_helpdesk", request={"miss_k": 3}),
         r"field 'request': received dict .*expected a ScoreRequest object. Fix: pass "
         r"request=ScoreRequest\(miss_k=...\)"),
        (lambda: ragexam.generate_plan("it_helpdesk", 10, settings={"model": "m"}),
         r"field 'settings': .*Fix: pass settings=LLMSettings\(model=...\)"),
        (lambda: ragexam.generate_plan("it_helpdesk", 10, model="m", config={"n": 5}),
         r"field 'config': .*expected a GenerateConfig object. Fix: pass config=GenerateConfig\(n=...\)"),
        (lambda: ragexam.generate_plan("it_helpdesk", 10, model="m", kinds=["procedure"]),
         r"field 'kinds': received \['procedure'\]; expected a dict of kind names to their instructions"),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()
    from ragexam.api import ScoreRequest

    with pytest.raises(InputError, match="received request= and the keywords miss_k"):
        ragexam.score("it_helpdesk", "it_helpdesk", request=ScoreRequest(), miss_k=3)


def test_misspelt_keywords_name_the_ones_taken(saved):
    _, folder = saved
    with pytest.raises(TypeError, match=r"score\(\) got an unexpected keyword argument 'miss_kk' \(did you mean "
                                        r"'miss_k'\?\); it takes pipeline, corpus, miss_k"):
        ragexam.score("it_helpdesk", "it_helpdesk", miss_kk=3, record=False)
    with pytest.raises(TypeError, match=r"compare\(\) got an unexpected keyword argument 'metric' \(did you mean "
                                        r"'metrics'\?\); it takes pipeline, pipeline_b, metrics"):
        api.compare(folder, folder, metric="hit@5")
    with pytest.raises(TypeError, match=r"^grade\(\) got an unexpected keyword argument 'relevence' \(did you mean "
                                        r"'relevance'\?\); it takes k, relevance"):
        ragexam.grade("it_helpdesk", "results.tsv", relevence="doc")


def test_messages_name_python_keywords_to_python_and_flags_to_the_command_line(saved):
    """errors.setting / option / judge_needed: a fix is written as the reader writes it."""
    res, folder = saved

    def message(call):
        with pytest.raises(InputError) as err:
            call()
        return str(err.value)

    needs_judge = lambda: ragexam.score("it_helpdesk", "it_helpdesk", metrics=["faithfulness"], record=False)
    in_python = message(needs_judge)
    assert "judge=LLMSettings(" in in_python and "--judge-model" not in in_python
    with speaking_to("cli"):
        assert "--judge-model MODEL" in message(needs_judge)
    too_deep = lambda: ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], k=(1, 50), depth=20)
    assert "raise the depth (depth=50)" in message(too_deep)
    with speaking_to("cli"):
        assert "raise the depth (--depth 50)" in message(too_deep)
    bad_k = lambda: ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], k="x")
    assert "such as k=(1, 3, 5) or k='1,3,5'" in message(bad_k)
    with speaking_to("cli"):
        assert "such as -k 1 -k 3 or -k 1,3,5" in message(bad_k)
    no_pipeline = lambda: api.compare(folder, folder, pipeline="nope")
    assert "field 'pipeline'" in message(no_pipeline)
    no_corpus = lambda: ragexam.run(None, "it_helpdesk", ["bm25"])
    assert "corpus='PATH_OR_NAME'" in message(no_corpus)
    report = lambda: ragexam.score("it_helpdesk", "it_helpdesk", report="x.html", record=False)
    assert message(report).startswith("score: field 'report': report needs run='DIR'")


def test_assert_exam_refuses_a_floor_that_is_not_a_finite_number(saved):
    from ragexam.testing import assert_exam

    res, _ = saved
    with pytest.raises(InputError, match=r"field 'min': received nan; expected a finite number as the "
                                         r"floor of 'hit@5'"):
        assert_exam(res, min={"hit@5": math.nan})
    assert assert_exam(res, min={"hit@5": 0.0})


def test_progress_that_is_not_a_function_is_refused():
    """progress='no' used to count as true (run) or be called later (score)."""
    with pytest.raises(InputError, match="score: field 'progress': received 'no'; expected None or a function"):
        ragexam.score("it_helpdesk", "it_helpdesk", progress="no", record=False)
    with pytest.raises(InputError, match="field 'progress': received 'no'; expected True or False"):
        ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], progress="no")


def test_a_metric_alias_is_read_everywhere_a_metric_is_named(tmp_path):
    """check and assert_exam read 'recall@5' as r@5; metrics_table and compare refused it."""
    import ragexam
    from ragexam import api

    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25"], progress=False, n_resamples=50, n_permutations=50)
    assert list(res.metrics_table(["recall@5"]).columns) == ["r@5"]
    run = res.save(tmp_path / "run")
    comparison = api.compare(run, run, metrics=["recall@5", "HIT@5"])
    assert [m.metric for m in comparison.pipelines[0].metrics] == ["r@5", "hit@5"]


def test_sets_made_in_python_are_never_named_none_in_messages():
    import ragexam
    from ragexam.data import QASet, Question, load_corpus
    from ragexam.errors import InputError

    with pytest.raises(InputError) as e:
        ragexam.run(load_corpus("it_helpdesk"), QASet([]), ["bm25"], progress=False)
    assert "None" not in str(e.value) and str(e.value).startswith("QASet")
    doc_only = QASet([Question("x1", "VPN?", relevant_doc_ids=("hd_01",))])
    with pytest.raises(InputError) as e:
        ragexam.run(load_corpus("it_helpdesk"), doc_only, ["bm25"], relevance="evidence", progress=False)
    assert "'None'" not in str(e.value) and "None:" not in str(e.value)
