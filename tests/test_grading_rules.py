"""Issue 36, items 3 and 4: `validate` predicts `run`, doc mode names a chunk of a relevant document, and `compare`
refuses two runs graded differently.  The issue's repros are run as they were reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_cli_pipelines import cli  # main() in this process: (exit status, stdout, stderr)
from ragexam.cli import main
from ragexam.data.gradability import choose_mode, gradability, similar_field
from ragexam.data.loaders import load_qa
from ragexam.errors import InputError, setting, speaking_to

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "ragexam" / "data" / "samples"
QUICK = ["--n-resamples", "200", "--n-permutations", "200"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The issue's two runs: the bundled helpdesk set with bm25, graded by evidence and by document."""
    import os

    d = tmp_path_factory.mktemp("grading")
    old = os.getcwd()
    os.chdir(d)
    try:
        for name, extra in (("rel_ev", []), ("rel_doc", ["--relevance", "doc"])):
            try:
                main(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25", "--out", name,
                      "--no-history", *extra, *QUICK])
            except SystemExit as e:
                assert not e.code
    finally:
        os.chdir(old)
    return d


# -- item 4: compare refuses a change of grading -------------------------------------------------------------


def test_compare_refuses_runs_graded_under_different_relevance_rules(runs, capsys):
    code, out, err = cli(["compare", runs / "rel_ev", runs / "rel_doc", "-m", "hit@1", "-m", "hit@5"], capsys)
    assert code == 2 and out == ""
    assert "graded differently" in err and "relevance rule: A 'evidence', B 'doc'" in err
    # the fix in the reader's syntax: flags on the command line, never a Python keyword
    assert "--relevance evidence" in err and "--allow-grading-change" in err
    assert "relevance=" not in err and "allow_grading_change" not in err
    assert "better" not in err and "missed→found" not in err


def test_compare_asked_explicitly_says_the_difference_includes_the_grading(runs, capsys):
    code, out, _ = cli(["compare", runs / "rel_ev", runs / "rel_doc", "-m", "hit@1", "-m", "hit@5",
                        "--allow-grading-change"], capsys)
    assert code == 0
    assert re.search(r"note: the differences below include the change of grading.*relevance rule", out)
    code, out, _ = cli(["compare", runs / "rel_ev", runs / "rel_doc", "-m", "hit@5", "--allow-grading-change",
                        "--json"], capsys)
    notes = json.loads(out)["notes"]
    assert any("include the change of grading" in n for n in notes)


def test_compare_of_the_same_grading_is_not_refused(runs, capsys):
    code, out, err = cli(["compare", runs / "rel_ev", runs / "rel_ev", "-m", "hit@5", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and not data["notes"] and data["pipelines"][0]["metrics"][0]["diff"] == 0


def test_compare_refuses_another_question_set(runs, tmp_path, capsys, monkeypatch):
    qa = tmp_path / "qa.jsonl"
    lines = (SAMPLES / "it_helpdesk" / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    qa.write_text("\n".join(lines[:-3]) + "\n", encoding="utf-8")  # three questions fewer
    monkeypatch.chdir(tmp_path)
    code, _, _ = cli(["run", "--corpus", "it_helpdesk", "--qa", qa, "-r", "bm25", "--out", "fewer", "--no-history",
                      *QUICK], capsys)
    assert code == 0
    code, _, err = cli(["compare", runs / "rel_ev", tmp_path / "fewer", "-m", "hit@5"], capsys)
    assert code == 2 and "the question set (qa_sha256" in err and "run B again on A's question set" in err


def test_compare_refusal_speaks_python_to_python_users(runs):
    from ragexam import api

    with pytest.raises(InputError, match=r"relevance='evidence'.*allow_grading_change=True"):
        api.compare(str(runs / "rel_ev"), str(runs / "rel_doc"))


# -- item 4: doc mode's first correct chunk -------------------------------------------------------------------




def test_doc_mode_first_correct_chunk_is_a_chunk_of_a_relevant_document(runs, capsys):
    code, _, _ = cli(["report", runs / "rel_doc"], capsys)
    assert code == 0
    html = (runs / "rel_doc" / "report.html").read_text(encoding="utf-8")
    cells = re.findall(r"first correct chunk</dt><dd>(.*?)</dd>", html)
    assert len(cells) == 6  # the six questions bm25 misses at k = 5
    qa = load_qa("it_helpdesk")
    summary = json.loads((runs / "rel_doc" / "summary.json").read_text(encoding="utf-8"))
    missed = next(iter(summary["missed"].values()))
    for e, cell in zip(missed, cells):
        chunk = re.search(r"<code>([^<]+)</code>", cell).group(1)
        assert chunk.split("#")[0] in qa[e["query_id"]].relevant_docs, (e["query_id"], cell)
        assert f"document rank {e['first_rank']}" in cell
    by_id = {e["query_id"]: e for e in missed}
    # the two examples: hd_14#2 and hd_01#2 were chunks of documents that are not relevant
    assert by_id["hq_023"]["first_correct"]["chunk_id"].startswith("hd_06#")
    assert by_id["hq_045"]["first_correct"]["chunk_id"].startswith("hd_10#")
    assert "relevance <b>doc</b>" in html  # the report header says how the run was graded


def test_doc_mode_console_counts_documents_and_names_the_chunk(runs, capsys):
    code, out, _ = cli(["show", runs / "rel_doc"], capsys)
    assert code == 0
    found = [x for x in out.splitlines() if "relevant: hd_06" in x]
    assert found and "found at document rank 8 (chunk hd_06#" in found[0], found


def test_evidence_mode_first_correct_chunk_unchanged(runs, capsys):
    cli(["report", runs / "rel_ev"], capsys)
    html = (runs / "rel_ev" / "report.html").read_text(encoding="utf-8")
    cells = re.findall(r"first correct chunk</dt><dd>(.*?)</dd>", html)
    assert cells and all("document rank" not in c for c in cells)
    assert "relevance <b>evidence</b>" in html


def test_runs_list_shows_the_relevance_rule(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for extra in ([], ["--relevance", "doc"]):
        code, _, _ = cli(["run", "--corpus", "ai_concepts", "--qa", "ai_concepts", "-r", "bm25", *extra, *QUICK],
                         capsys)
        assert code == 0
    code, out, _ = cli(["runs"], capsys)
    assert code == 0 and "relevance doc" in out and "relevance evidence" in out
    code, out, _ = cli(["runs", "--json"], capsys)
    assert sorted(e["relevance"] for e in json.loads(out)) == ["doc", "evidence"]


# -- item 3: validate predicts run ----------------------------------------------------------------------------


@pytest.fixture()
def typo(tmp_path):
    """The issue's ``sed '/"hq_003"/s/"evidence"/"evidance"/'`` of the bundled helpdesk set."""
    lines = (SAMPLES / "it_helpdesk" / "qa.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    out = tmp_path / "qa_typo.jsonl"
    out.write_text("".join(x.replace('"evidence"', '"evidance"') if '"hq_003"' in x else x for x in lines),
                   encoding="utf-8")
    return out


def test_validate_on_the_typo_exits_non_zero_naming_the_field_and_the_fix(typo, capsys):
    code, out, _ = cli(["validate", "--corpus", "it_helpdesk", "--qa", typo], capsys)
    assert code == 1
    flat = " ".join(out.split())
    assert "'evidance' looks like 'evidence'" in flat and "Did you mean 'evidence'?" in flat
    assert "run_would_refuse" in flat and "hq_003" in flat
    assert "field '--relevance': the default rule, evidence" in flat and "field 'relevance'" not in flat
    assert "--relevance doc (65 of 65 gradable)" in flat and "ragexam locate-evidence" in flat
    assert "evidence: 64 of 65 answerable questions gradable (the default)" in flat
    assert "relevance='doc'" not in flat


def test_run_on_the_typo_refuses_in_cli_syntax(typo, capsys):
    code, out, err = cli(["run", "--corpus", "it_helpdesk", "--qa", typo, "-r", "bm25", "--no-history"], capsys)
    assert code == 2
    assert "hq_003 (its field 'evidance' looks like 'evidence')" in err and "--relevance doc" in err
    assert "relevance='doc'" not in err


def test_validate_with_the_flag_the_run_would_get(typo, capsys):
    code, out, _ = cli(["validate", "--corpus", "it_helpdesk", "--qa", typo, "--relevance", "doc", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["grading"]["mode"] == "doc" and data["grading"]["refusal"] is None
    assert data["counts"] == {"unknown_field": 1}


def test_a_relevant_document_not_in_the_corpus_is_not_counted_gradable(tmp_path, capsys, monkeypatch):
    """E24: validate reported unknown_doc_id and in the same output "doc: 5 of 5 answerable questions gradable;
    `ragexam run` with doc grades every answerable question" -- run refuses that set."""
    monkeypatch.setenv("COLUMNS", "250")
    lines = (SAMPLES / "it_helpdesk" / "qa.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    qa = tmp_path / "qa.jsonl"
    rows = [json.loads(x) for x in lines]
    rows[2]["relevant_doc_ids"] = ["hd_99"]
    qa.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    code, out, _ = cli(["validate", "--corpus", "it_helpdesk", "--qa", qa, "--relevance", "doc"], capsys)
    flat = " ".join(out.split())
    assert code == 1 and "unknown_doc_id" in flat and "grades every answerable question" not in flat
    assert "doc: 64 of 65 answerable questions gradable" in flat and "`ragexam run` with doc would refuse" in flat
    assert f"{rows[2]['query_id']} (relevant documents not in the corpus: hd_99)" in flat
    code, out, _ = cli(["validate", "--corpus", "it_helpdesk", "--qa", qa], capsys)
    flat = " ".join(out.split())
    assert code == 1 and "`ragexam run` with evidence refuses until the error above is fixed" in flat
    assert "grades every answerable question" not in flat


def test_validate_and_run_agree_on_every_set(tmp_path):
    """validate's prediction is run's decision: the one function decides both."""
    from ragexam.data.validation import validate

    docs_only = tmp_path / "docs_only.jsonl"
    docs_only.write_text(json.dumps({"query_id": "a", "question": "VPN?", "relevant_doc_ids": ["hd_01"]}) + "\n",
                         encoding="utf-8")
    for qa, relevance in ((docs_only, None), (docs_only, "evidence"), ("it_helpdesk", None),
                          ("it_helpdesk", "doc")):
        rep = validate("it_helpdesk", qa, relevance=relevance)
        questions = list(load_qa(qa))
        try:
            mode = choose_mode(relevance, questions, str(qa), corpus="it_helpdesk")
        except InputError as err:
            assert not rep.ok and rep.grading.refusal == err.message
        else:
            assert rep.ok and rep.grading.mode == mode and rep.grading.refusal is None


def test_python_users_get_python_syntax(typo):
    from ragexam import api

    with pytest.raises(InputError, match=r"relevance='doc'") as info:
        api.run_exam({"corpus": "it_helpdesk", "qa": str(typo), "retrievers": ["bm25"]}, record=False)
    assert "--relevance" not in str(info.value)


def test_setting_speaks_to_its_audience():
    assert setting("relevance", "doc") == "relevance='doc'"
    with speaking_to("cli"):
        assert setting("relevance", "doc") == "--relevance doc"
        assert setting("allow_grading_change") == "--allow-grading-change"
    assert setting("allow_grading_change") == "allow_grading_change=True"


@pytest.mark.parametrize("name, like", [("evidance", "evidence"), ("Evidence", "evidence"),
                                        ("relevant_doc_id", "relevant_doc_ids"), ("ground_truht", "ground_truth"),
                                        ("relevant-doc-ids", "relevant_doc_ids"), ("evidence_status", None),
                                        ("source", None), ("answer", None), ("located", None)])
def test_similar_field(name, like):
    known = ("query_id", "question", "relevant_doc_ids", "relevance", "evidence", "ground_truth", "type",
             "answerable", "metadata")
    assert similar_field(name, known) == like


def test_gradability_counts_each_rule():
    qa = load_qa("it_helpdesk")
    g = gradability(list(qa))
    assert g.default == "evidence" and g.refusal is None and g.answerable == 65
    assert (g.rules["evidence"].gradable, g.rules["doc"].gradable) == (65, 65)


def test_the_punctuation_hint_speaks_to_its_reader(tmp_path, capsys):
    from test_data_helpers import QA, make_set

    c, q = make_set(tmp_path, qa=[dict(QA[2], evidence="비밀번호는 90일마다, 바꿔야")])
    code, out, _ = cli(["validate", "--corpus", c, "--qa", q], capsys)
    assert code == 1 and "(--ignore-punctuation)" in " ".join(out.split()) and "ignore_punctuation=" not in out
    from ragexam.data.validation import validate

    (p, *_) = [p for p in validate(c, q).problems if p.kind == "evidence_not_found"]
    assert "(ignore_punctuation=True)" in p.message
