"""Never lose the user's data (issue 19, items 1, 2, 3, 5 and 6).

* No command writes over a file it reads, over a file inside a run or score folder it reads, or replaces a folder
  holding one of its inputs (resolved real paths: a symlink to an input is the input).  The error names both paths;
  the input is byte-for-byte unchanged and no work was done.
* Run and score folders are written as a unit: a writer killed mid-save leaves the old folder intact; a re-run
  into the same folder leaves no file of the previous run; a folder with the user's own files is refused.
* A results file whose pipeline is named like one of ragexam's gets ``#2``: no pipeline's results replace another's.
* A 300-character pipeline name saves (its files are named by a short safe form plus a hash).
* A pipeline that produced nothing is flagged in the table and ``ragexam run`` exits 1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import test_grade_results as G
from json_stub import json_server
from test_output_paths import _cli, endpoint, no_retrieval  # noqa: F401  (fixtures)
from test_report_fixtures import make_run, write_run
from test_score_fixtures import write_case

import ragexam

SMALL = ["--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25:whitespace"]
FAST = dict(progress=False, n_resamples=50, n_permutations=50)


def _refused_naming(code, err, *paths):
    assert code == 2, err
    assert "Traceback" not in err and err.startswith("error: "), err
    for p in paths:
        assert str(p) in err, f"{p} not named in: {err}"


def _snapshot(*paths):
    out = {}
    for p in paths:
        p = Path(p)
        files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
        out.update({str(f): f.read_bytes() for f in files})
    return out


@pytest.fixture
def helpdesk_files(tmp_path):
    """The bundled helpdesk corpus and questions as files of the user's."""
    from ragexam.data.datasets import resolve

    corpus, qa = tmp_path / "docs.jsonl", tmp_path / "qa.jsonl"
    corpus.write_bytes(resolve("it_helpdesk", "corpus").read_bytes())
    qa.write_bytes(resolve("it_helpdesk", "qa").read_bytes())
    return corpus, qa


# -- 1. an output never replaces an input ---------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--report", "--out"])
def test_run_never_writes_over_its_question_set(helpdesk_files, option, no_retrieval, capsys, tmp_path):
    corpus, qa = helpdesk_files
    before = _snapshot(corpus, qa)
    target = qa if option == "--report" else qa.parent  # --out DIR holding the corpus and the question set
    code, _, err = _cli(["run", "--corpus", corpus, "--qa", qa, "-r", "bm25:whitespace", option, target], capsys)
    _refused_naming(code, err, qa if option == "--report" else corpus, target, option)
    assert no_retrieval == [] and _snapshot(corpus, qa) == before


def test_a_symlink_to_an_input_is_the_input(helpdesk_files, no_retrieval, capsys, tmp_path):
    corpus, qa = helpdesk_files
    link = tmp_path / "report.html"
    link.symlink_to(qa)
    before = _snapshot(qa)
    code, _, err = _cli(["run", "--corpus", corpus, "--qa", qa, "-r", "bm25:whitespace", "--report", link], capsys)
    _refused_naming(code, err, link, qa)
    assert no_retrieval == [] and _snapshot(qa) == before


def test_run_never_writes_over_a_results_file(helpdesk_files, no_retrieval, capsys, tmp_path):
    corpus, qa = helpdesk_files
    chunks = [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
              for d in G.load_corpus("it_helpdesk") for j, t in enumerate(G.recursive_split(d.content))]
    results = G.write_results(tmp_path / "mine.jsonl", G.load_qa("it_helpdesk"), chunks, "mine")
    before = _snapshot(results)
    code, _, err = _cli(["grade", "--qa", qa, "--retrieved", f"{results}>rerank:dense", "--report", results], capsys)
    _refused_naming(code, err, results)
    assert _snapshot(results) == before


@pytest.fixture
def saved_run(tmp_path):
    summary, rows = make_run(n_questions=8, seed=4, n_resamples=20, n_permutations=20)
    return write_run(tmp_path / "run", summary, rows)


@pytest.mark.parametrize("name", ["summary.json", "per_question.csv"])
def test_report_never_writes_over_the_run_it_reads(saved_run, name, capsys):
    before = _snapshot(saved_run)
    code, _, err = _cli(["report", saved_run, "-o", saved_run / name], capsys)
    _refused_naming(code, err, saved_run / name)
    assert _snapshot(saved_run) == before


def test_report_beside_the_run_is_still_the_default(saved_run, capsys):
    code, _, err = _cli(["report", saved_run], capsys)
    assert code in (0, None), err
    assert (saved_run / "report.html").stat().st_size > 0


def test_answer_never_writes_over_what_it_reads(endpoint, capsys, tmp_path):  # noqa: F811
    qa, corpus, answers, run = write_case(tmp_path / "case")
    (run / "chunks.jsonl").write_text("", encoding="utf-8")
    before = _snapshot(run, qa, corpus)
    for target in (run / "chunks.jsonl", qa, corpus):
        code, _, err = _cli(["answer", "--run", run, "--qa", qa, "--model", "stub", "--base-url", endpoint.base_url,
                             "--cache-dir", tmp_path / "cache", "--out", target], capsys)
        _refused_naming(code, err, target)
    # the question set the run recorded is protected too, even when --qa is not given
    code, _, err = _cli(["answer", "--run", run, "--model", "stub", "--base-url", endpoint.base_url,
                         "--cache-dir", tmp_path / "cache", "--out", qa], capsys)
    _refused_naming(code, err, qa)
    assert endpoint.requests == [] and _snapshot(run, qa, corpus) == before


def test_score_never_replaces_the_run_it_reads(endpoint, capsys, tmp_path):  # noqa: F811
    qa, corpus, answers, run = write_case(tmp_path / "case")
    before = _snapshot(run, answers)
    for target in (run, answers):
        code, _, err = _cli(["score", "--qa", qa, "--answers", answers, "--run", run, "--out", target], capsys)
        _refused_naming(code, err, target)
    assert _snapshot(run, answers) == before


def test_score_out_refuses_a_run_folder_it_does_not_read(capsys, tmp_path):
    qa, corpus, answers, run = write_case(tmp_path / "case")
    other = write_case(tmp_path / "other")[3]
    before = _snapshot(other)
    code, _, err = _cli(["score", "--qa", qa, "--answers", answers, "--out", other], capsys)
    _refused_naming(code, err, other)
    assert "is a run folder" in err and _snapshot(other) == before


def test_two_outputs_on_one_path_are_refused(helpdesk_files, no_retrieval, capsys, tmp_path):
    corpus, qa = helpdesk_files
    code, _, err = _cli(["run", "--corpus", corpus, "--qa", qa, "-r", "bm25:whitespace", "--out", tmp_path / "o",
                         "--report", tmp_path / "o" / "summary.json"], capsys)
    _refused_naming(code, err, "--out", "--report")
    assert no_retrieval == []


def test_the_report_may_go_into_the_run_folder_it_writes(helpdesk_files, capsys, tmp_path):
    """`ragexam report RUN` writes RUN/report.html by default: `--out o --report o/report.html` is the same place,
    written after the folder (only the folder's data names, summary.json above, are refused)."""
    corpus, qa = helpdesk_files
    out = tmp_path / "o"
    code, _, err = _cli(["grade", "--corpus", corpus, "--qa", qa, "--retrieved", _results(tmp_path, qa, corpus),
                         "--out", out, "--report", out / "report.html", "--no-history"], capsys)
    assert code == 0, err
    assert (out / "report.html").stat().st_size > 1000 and (out / "summary.json").exists()


def _results(tmp_path, qa, corpus):
    """A results file returning each question's relevant documents whole (a perfect pipeline)."""
    docs = {d["doc_id"]: d["content"] for d in map(json.loads, corpus.read_text(encoding="utf-8").splitlines())}
    rows = [json.loads(line) for line in qa.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps({"query_id": r["query_id"], "contexts": [
        {"doc_id": d, "text": docs[d]} for d in r.get("relevant_doc_ids") or []]}, ensure_ascii=False) + "\n"
        for r in rows), encoding="utf-8")
    return path


def test_the_rule_is_one_function(monkeypatch, helpdesk_files, capsys, tmp_path):
    """Every writing command of the API goes through storage.paths.check_outputs."""
    import ragexam.storage.paths as paths

    seen = []
    real = paths.check_outputs

    def spy(outputs, inputs=()):
        seen.append([o.option for o in outputs if o.path is not None])
        return real(outputs, inputs)

    monkeypatch.setattr(paths, "check_outputs", spy)
    corpus, qa = helpdesk_files
    code, _, err = _cli(["run", "--corpus", corpus, "--qa", qa, "-r", "bm25:whitespace", "--out", qa.parent], capsys)
    assert code == 2 and seen and "--out" in seen[0]


# -- 3. folders written as a unit ----------------------------------------------------------------------------------

_KILLER = r"""
import os, signal, sys
import ragexam
res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], progress=False, n_resamples=20,
                  n_permutations=20)
real = res._write_trec_files
def dying(out):
    real(out)                       # the TREC files, per_question.csv and chunks.jsonl are written ...
    os.kill(os.getpid(), signal.SIGKILL)   # ... and the writer dies before summary.json
res._write_trec_files = dying
res.save(sys.argv[1])
"""


def test_a_writer_killed_mid_save_leaves_the_old_folder_intact(tmp_path):
    folder = tmp_path / "run"
    old = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace", "bm25"], **FAST)
    old.save(folder)
    before = _snapshot(folder)
    proc = subprocess.run([sys.executable, "-c", _KILLER, str(folder)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _snapshot(folder) == before, "the old run folder changed"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".run.ragexam-tmp-")]
    assert leftovers, "the killed writer wrote somewhere else than a temporary sibling"
    # the next save replaces the folder whole and removes the dead writer's leftovers
    new = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], **FAST)
    new.save(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert sorted(p.name for p in (folder / "runs").iterdir()) == sorted(
        f"{new.pipelines[0].slug}{ext}" for ext in (".trec", ".units.trec", ".units.qrels"))
    assert json.loads((folder / "summary.json").read_text(encoding="utf-8"))["run_id"] == new.summary.run_id


def test_a_failed_save_changes_nothing(tmp_path):
    folder = tmp_path / "run"
    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], **FAST)
    res.save(folder)
    before = _snapshot(folder)
    res.summary.warnings.append("lone surrogate \ud800 here")
    from ragexam.errors import InputError

    with pytest.raises(InputError, match="surrogate"):
        res.save(folder)
    assert _snapshot(folder) == before and sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_folder_with_the_users_files_is_not_replaced(tmp_path, no_retrieval, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes", encoding="utf-8")
    code, _, err = _cli(["run", *SMALL, "--out", folder], capsys)
    _refused_naming(code, err, folder, "notes.txt")
    assert no_retrieval == [] and (folder / "notes.txt").read_text(encoding="utf-8") == "my notes"


# -- 2. and 6. pipeline names ----------------------------------------------------------------------------------


def test_a_results_file_named_like_a_pipeline_does_not_replace_it(tmp_path):
    chunks = [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
              for d in G.load_corpus("it_helpdesk") for j, t in enumerate(G.recursive_split(d.content))]
    path = G.write_results(tmp_path / "r.jsonl", G.load_qa("it_helpdesk"), chunks, "bm25:whitespace | paragraphs:400")
    both = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], retrieved=[path], **FAST)
    alone = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], **FAST)
    names = [p.name for p in both.pipelines]
    assert names == ["bm25:whitespace | paragraphs:400", "bm25:whitespace | paragraphs:400 #2"]
    own = both.summary.results[names[0]].metrics
    kept = alone.summary.results[names[0]].metrics  # (both also has columns at an equal context budget)
    assert {m: own[m] for m in kept} == kept, "ragexam's pipeline lost its own results"
    assert both.summary.results[names[1]].metrics != own
    assert len({p.slug for p in both.pipelines}) == 2


def test_a_long_pipeline_name_saves(tmp_path):
    chunks = [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
              for d in G.load_corpus("it_helpdesk") for j, t in enumerate(G.recursive_split(d.content))]
    name = "파이프라인-" + "x" * 300
    path = G.write_results(tmp_path / "r.jsonl", G.load_qa("it_helpdesk"), chunks, name)
    res = ragexam.grade("it_helpdesk", path, **FAST)
    out = res.save(tmp_path / "run")
    slug = res.pipelines[0].slug
    assert len(slug.encode()) <= 80 and (out / "runs" / f"{slug}.trec").is_file()
    assert res.pipelines[0].name == name


# -- 5. a pipeline that produced nothing -----------------------------------------------------------------------


def test_a_pipeline_that_produced_nothing_is_flagged_and_exits_1(capsys, tmp_path):
    url, shutdown = json_server(lambda path, body, headers: (500, {"error": "search is down"}))
    try:
        spec = f"http:{url}/search?timeout=2&max_retries=0"
        code, out, err = _cli(["run", *SMALL, "-r", spec, "--out", tmp_path / "run"], capsys)
    finally:
        shutdown()
    assert code == 1, err
    assert f"error: pipeline {spec!r} produced nothing: every question failed" in err
    assert "[produced nothing]" in out and "produced nothing: every question failed" in out
    # the main table marks the row even when it is too narrow for the names (the label-only form)
    assert "[produced nothing]" in out.split("Retrieval metrics")[1].split("\n\n")[0]
    assert f"{spec}: no text returned" in out and "0 texts returned" not in out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["results"][spec]["produced_nothing"].startswith("every question failed")
    assert "produced_nothing" not in summary["results"]["bm25:whitespace | paragraphs:400"]
    # not recorded: it would become `latest` with a row of zeros that the next compare reads as a collapse
    assert "Not recorded in the history: pipeline" in out and "Recorded as run" not in out
    code, listing, _ = _cli(["runs"], capsys)
    assert code == 0 and summary["run_id"] not in listing
    # a floor of 0 is no pass for a row of zeros that is no result of the pipeline
    code, out, err = _cli(["check", tmp_path / "run", "--min", "hit@5=0", "--point"], capsys)
    assert code == 1, out + err
    assert f"FAIL hit@5 >= 0: mean 0.000; the pipeline produced nothing (every question failed" in out
    assert "PASS hit@5 >= 0" in out  # the other pipeline, bm25, passes


def test_a_rerank_stage_that_reranked_nothing_is_flagged(tmp_path):
    url, shutdown = json_server(lambda path, body, headers: (200, {"nonsense": True}))
    try:
        res = ragexam.run("it_helpdesk", "it_helpdesk", [f"bm25:whitespace>rerank:http:{url}/r?timeout=2&backoff=0"],
                          cache_dir=tmp_path, **FAST)
    finally:
        shutdown()
    why = res.summary.failed_pipelines[res.pipelines[0].name]
    assert "reranked no question" in why and "first stage" in why


def test_a_configured_key_is_never_written_into_a_run_folder(tmp_path, monkeypatch):
    """A results file (a service's texts) quoting the configured key: the run folder holds it redacted."""
    key = "sk-test-" + "k" * 24
    monkeypatch.setenv("OPENAI_API_KEY", key)
    chunks = [{"text": t + f" (token {key})", "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
              for d in G.load_corpus("it_helpdesk") for j, t in enumerate(G.recursive_split(d.content))]
    path = G.write_results(tmp_path / "r.jsonl", G.load_qa("it_helpdesk"), chunks, "leaky")
    out = ragexam.grade("it_helpdesk", path, **FAST).save(tmp_path / "run")
    written = "".join(p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file())
    assert key not in written and "[redacted]" in written


def test_a_configured_key_is_never_written_into_a_score_folder(tmp_path, monkeypatch, capsys):
    """An answers file quoting the configured key: the score folder (per_answer.csv, score.json) holds it redacted."""
    key = "sk-test-" + "s" * 24
    monkeypatch.setenv("OPENAI_API_KEY", key)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"query_id": "hq_001", "answer": f"VPN 인증서를 갱신하세요 (token {key})"},
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    code, _, err = _cli(["score", "--qa", "it_helpdesk", "--answers", answers, "--out", tmp_path / "score",
                         "--no-history"], capsys)
    assert code == 0, err
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "score").rglob("*") if p.is_file())
    assert key not in written and "[redacted]" in written


def test_a_key_that_looks_like_a_number_cannot_break_the_written_files(tmp_path, monkeypatch):
    """Redaction works on values, never on the serialized text: a key such as ``00000000`` (also found inside
    the numbers of summary.json) leaves every file readable, and only strings holding it are redacted."""
    monkeypatch.setenv("OPENAI_API_KEY", "00000000")
    out = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25"], **FAST).save(tmp_path / "run")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["format"]
    for line in (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines():
        json.loads(line)
    from ragexam.storage.runfolder import read_run_folder

    assert read_run_folder(out).summary.run_id == summary["run_id"]


def test_convert_never_writes_over_its_input(helpdesk_files, capsys, tmp_path):
    corpus, qa = helpdesk_files
    before = _snapshot(corpus, qa)
    for target, to in ((qa.parent, "beir"), (qa, "trec")):
        code, _, err = _cli(["convert", "--to", to, "--corpus", corpus, "--qa", qa, "--out", target], capsys)
        _refused_naming(code, err, target)
    assert _snapshot(corpus, qa) == before


def test_pairwise_never_writes_over_its_answers(endpoint, capsys, tmp_path):  # noqa: F811
    qa, corpus, answers, run = write_case(tmp_path / "case")
    before = _snapshot(qa, answers)
    for target in (qa, answers):
        code, _, err = _cli(["pairwise", "--qa", qa, "--answers", answers, "--a", "x", "--b", "y", "--judge-model",
                             "stub", "--base-url", endpoint.base_url, "--out", target], capsys)
        _refused_naming(code, err, target)
    assert endpoint.requests == [] and _snapshot(qa, answers) == before


def test_generate_never_writes_over_its_corpus_or_prompt(helpdesk_files, endpoint, capsys, tmp_path):  # noqa: F811
    """``generate --corpus c.jsonl --out c.jsonl`` (issue 19): refused before any call, naming both paths; so is a
    side file (``X.card.json`` of ``--out X.jsonl``) landing on the corpus, and ``--out`` over ``--prompt``."""
    from ragexam.questions.prompts import bundled_prompt_path

    corpus, _ = helpdesk_files
    prompt = tmp_path / "questions.txt"
    prompt.write_text(bundled_prompt_path("ko").read_text(encoding="utf-8"), encoding="utf-8")
    side = tmp_path / "set.card.json"
    side.write_bytes(corpus.read_bytes())
    before = _snapshot(corpus, prompt, side)
    base = ["generate", "-n", "4", "--model", "stub", "--base-url", endpoint.base_url]
    for corpus_arg, out, named in ((corpus, corpus, corpus), (side, tmp_path / "set.jsonl", side),
                                   (corpus, prompt, prompt)):
        code, _, err = _cli(base + ["--corpus", corpus_arg, "--prompt", prompt, "--out", out], capsys)
        _refused_naming(code, err, named)
        assert "--corpus" in err or "--prompt" in err
    assert endpoint.requests == [] and _snapshot(corpus, prompt, side) == before


def test_review_apply_never_writes_over_the_sheet_it_reads(tmp_path, capsys):
    """``review apply --qa qa.jsonl --out qa.review.csv`` replaced the reviewer's edited sheet (issue 19)."""
    qa, sheet, rejects = tmp_path / "qa.jsonl", tmp_path / "qa.review.csv", tmp_path / "qa.rejects.jsonl"
    qa.write_text('{"query_id": "gen_0001", "question": "q?"}\n', encoding="utf-8")
    sheet.write_text("query_id,status\ngen_0001,accepted\n", encoding="utf-8")
    rejects.write_text("", encoding="utf-8")
    other = tmp_path / "edited.csv"
    other.write_bytes(sheet.read_bytes())
    before = _snapshot(qa, sheet, rejects, other)
    for extra, out in (([], sheet), ([], qa), ([], rejects), (["--review", other], other)):
        code, _, err = _cli(["review", "apply", "--qa", qa, "--out", out, *extra], capsys)
        _refused_naming(code, err, out)
    assert _snapshot(qa, sheet, rejects, other) == before


_SCORE_KILLER = r"""
import os, signal, sys
from ragexam.storage.runfolder import write_score_folder

class Dying(list):
    def __iter__(self):
        for i, row in enumerate(list.__iter__(self)):
            if i == 2:
                os.kill(os.getpid(), signal.SIGKILL)   # killed while per_answer.csv is half written
            yield row

rows = Dying({"pipeline": "p", "query_id": f"q{i}", "answer": "새 답"} for i in range(5))
write_score_folder(sys.argv[1], {"format": "ragexam-score/2", "run_id": "new"}, rows)
"""


def test_a_score_writer_killed_mid_save_leaves_the_old_folder_intact(tmp_path):
    from ragexam.storage.runfolder import read_score_folder, write_score_folder

    folder = tmp_path / "score"
    write_score_folder(folder, {"format": "ragexam-score/2", "run_id": "old"},
                       [{"pipeline": "p", "query_id": "q0", "answer": "옛 답"}])
    before = _snapshot(folder)
    proc = subprocess.run([sys.executable, "-c", _SCORE_KILLER, str(folder)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _snapshot(folder) == before and read_score_folder(folder).summary["run_id"] == "old"


def test_a_search_service_that_refuses_the_connection_is_not_asked_once_per_question(tmp_path):
    """Nothing listening: every question retried the connection (71 questions took 20 s to say so); after the first
    refusal the rest fail at once with that reason, said as not sent."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = f"http:http://127.0.0.1:{port}/search?max_retries=1&backoff=0&concurrency=1"
    res = ragexam.run(None, "it_helpdesk", [spec], **FAST)
    p = res.summary.results[spec]
    assert p.produced_nothing and p.unretrieved.n == len(res.per_question)
    reasons = [q.reason for q in p.unretrieved.questions]
    assert "refused" in reasons[0].lower() and "not sent again" not in reasons[0]
    assert all(r.endswith(f"(not sent again: nothing listens at http://127.0.0.1:{port}/search)") for r in reasons[1:])
