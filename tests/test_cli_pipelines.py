"""The command line of issue 11/13: ``ragexam grade``, ``run --retrieved``, ``-r http:URL --header``, a rerank
stage on the command line, ``ragexam convert`` and BEIR folders as ``--corpus``/``--qa``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from json_stub import json_server
from test_grade_results import rank, recursive_split, write_results

from ragexam.cli import app
from ragexam.data.loaders import load_corpus, load_qa

QUICK = ["--n-resamples", "50", "--n-permutations", "50", "--no-history"]


def cli(args, capsys):
    from ragexam.cli import main

    try:
        main(list(map(str, args)))
    except SystemExit as e:
        code = e.code or 0
    else:
        code = 0
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def chunks():
    return [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
            for d in load_corpus("it_helpdesk") for j, t in enumerate(recursive_split(d.content))]


def test_grade_two_files_json(tmp_path, chunks, capsys):
    qa = load_qa("it_helpdesk")
    a = write_results(tmp_path / "a.jsonl", qa, chunks, "ranked")
    b = write_results(tmp_path / "b.jsonl", qa, chunks, "shuffled", shuffle_seed=5)
    code, out, err = cli(["grade", "--qa", "it_helpdesk", "--retrieved", a, "--retrieved", b, "--json",
                          "--out", tmp_path / "run", *QUICK], capsys)
    assert code == 0, err
    s = json.loads(out)
    assert [p["name"] for p in s["pipelines"]] == ["ranked", "shuffled"] and s["config"]["corpus"] is None
    assert {c["pipeline"] for c in s["comparisons"]} == {"shuffled"}
    assert (tmp_path / "run" / "chunks.jsonl").exists()
    # the same through run, with ragexam's bm25 as the baseline
    code, out, err = cli(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25", "--retrieved", a,
                          "--json", *QUICK], capsys)
    assert code == 0, err
    assert [p["name"] for p in json.loads(out)["pipelines"]] == ["bm25 | paragraphs:400", "ranked"]
    # run without a corpus but with a ragexam retriever: a clear error
    code, out, err = cli(["run", "--qa", "it_helpdesk", "-r", "bm25", "--retrieved", a, *QUICK], capsys)
    assert code == 2 and "retriever 'bm25' indexes ragexam's chunks of a corpus, but no corpus was given" in err


def test_http_retriever_and_rerank_stage_on_the_command_line(tmp_path, chunks, capsys, monkeypatch):
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path))
    seen = []

    def handle(path, body, headers):
        seen.append(headers.get("X-Api-Key"))
        if path == "/search":
            hits = rank(body["query"], chunks, body["top_k"])
            return 200, {"results": [{"text": c["text"], "doc_id": c["doc_id"], "id": c["id"]} for c, _ in hits]}
        return 200, {"results": [{"index": i, "relevance_score": -i} for i in range(len(body["documents"]))]}

    url, shutdown = json_server(handle)
    try:
        spec = f"http:{url}/search>rerank:http:{url}/rerank?top=5"
        code, out, err = cli(["run", "--qa", "it_helpdesk", "-r", spec, "--header", "X-Api-Key: k-123456789",
                              "--depth", "20", "--json", *QUICK], capsys)
    finally:
        shutdown()
    assert code == 0, err
    s = json.loads(out)
    assert set(seen) == {"k-123456789"} and "k-123456789" not in out
    name = s["pipelines"][0]["name"]
    # a reranker that keeps the order changes nothing: zero lift
    assert all(c["diff"] == 0 for c in s["rerank"][name]["comparisons"])
    code, out, err = cli(["run", "--qa", "it_helpdesk", "-r", spec, "--header", "no colon", *QUICK], capsys)
    assert code == 2 and "expected 'Name: value'" in err


def test_convert_and_beir_folders(tmp_path, capsys):
    code, out, err = cli(["convert", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "--to", "beir", "--out",
                          tmp_path / "beir"], capsys)
    assert code == 0, err
    assert "18 documents, 71 questions" in out and "wrote" in out and "note:" in out
    code, out, err = cli(["run", "--corpus", tmp_path / "beir", "--qa", tmp_path / "beir", "-r", "bm25:whitespace",
                          "--json", *QUICK], capsys)
    assert code == 0, err
    assert json.loads(out)["dataset"]["n_scored"] == 65
    code, out, err = cli(["convert", "--qa", tmp_path / "beir", "--to", "trec", "--out", tmp_path / "q.trec",
                          "--json"], capsys)
    assert code == 0 and json.loads(out)["files"] == [str(tmp_path / "q.trec")]
    code, out, err = cli(["convert", "--qa", "it_helpdesk", "--to", "xml", "--out", tmp_path / "x"], capsys)
    assert code == 2 and "expected one of ragexam, beir, trec" in err


def test_grade_is_listed_in_help(capsys):
    code, out, _ = cli(["--help"], capsys)
    assert code == 0 and "grade" in out and "convert" in out
    assert app.registered_commands
