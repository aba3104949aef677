"""Messages of the answer commands that name the right file (issue 9)."""

from __future__ import annotations

import json

import pytest

from ragexam.analysis.answers.files import load_answers
from ragexam.metrics.verdicts import load_phrases
from ragexam.cli import main
from ragexam.errors import InputError


def _cli(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_context_ids_without_contexts_is_an_error(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"query_id": "hq_001", "answer": "x", "context_ids": ["c1"]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_answers(f)
    assert e.value.line == 1 and e.value.field == "context_ids" and "contexts" in e.value.message


def test_an_empty_phrase_file_is_named(tmp_path, capsys):
    f = tmp_path / "phrases.txt"
    f.write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_phrases(f.read_text().splitlines(), source=str(f))
    assert e.value.source == str(f)
    code, _, err = _cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--abstain-phrases", str(f),
                         "--no-history"], capsys)
    assert code == 2 and "phrases.txt" in err and "no phrases" in err


def test_judge_agreement_blames_the_answers_file_for_its_label(tmp_path, capsys):
    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"query_id": "q1", "question": "무엇인가요?", "relevant_doc_ids": ["d1"],
                              "evidence": ["가나다"], "ground_truth": "가나다"}, ensure_ascii=False) + "\n",
                  encoding="utf-8")
    ans = tmp_path / "answers.jsonl"
    ans.write_text(json.dumps({"query_id": "q1", "answer": "가나다", "human": {"answer_correctness": 9}},
                              ensure_ascii=False) + "\n", encoding="utf-8")
    code, _, err = _cli(["judge-agreement", "--qa", str(qa), "--answers", str(ans), "--judge-model", "m",
                         "--base-url", "http://127.0.0.1:9/v1", "--dry-run"], capsys)
    assert code == 2
    assert "answers.jsonl:1" in err and "human.answer_correctness" in err and "qa.jsonl" not in err


def test_miss_k_is_named_as_the_option_and_a_score_folder_is_no_run(tmp_path, capsys):
    """``score --miss-k 0`` names --miss-k (it named the field 'k'); ``report`` of a score folder says what it is
    (it printed "DIR:  is a recorded score": an empty id)."""
    code, _, err = _cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--miss-k", "0",
                         "--no-history"], capsys)
    assert code == 2 and "score: field '--miss-k': received 0; expected an integer >= 1." in err
    out = tmp_path / "s1"
    code, _, err = _cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--out", str(out),
                         "--no-history", "--list", "0"], capsys)
    assert code in (0, None), err
    code, _, err = _cli(["report", str(out), "--lang", "ko"], capsys)
    assert code == 2 and f"{out}: is a score folder, not a run; `ragexam report` takes a run." in err
    # E12: the fix names the pages that show a score, and which is in Korean
    assert f"Fix: `ragexam serve {out}` shows the score's page" in err and "in Korean or English (`--lang ko`)" in err
    assert "`ragexam score ... --report FILE.html` writes it as a file, in English" in err
    assert ":  " not in err
