"""Grading the user's own pipeline from results files (``ragexam.grade`` / ``run(..., retrieved=)``).

The bundled helpdesk set is chunked by an independent recursive splitter (not ragexam's chunkers) and
ranked by a character-bigram overlap; the metrics must equal a hand computation of evidence containment.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import ragexam
from ragexam.analysis.exam.run import grade, run
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.normalization import normalize
from ragexam.errors import InputError
from ragexam.storage.runfolder import read_run_folder


def recursive_split(text: str, size: int = 160, seps=("\n\n", "\n", ". ", " ")) -> list:
    """A recursive character splitter (the LangChain idea, written here): split on the first separator that
    occurs, pack pieces up to ``size`` characters, recurse into pieces that are still too long."""
    if len(text) <= size:
        return [text] if text.strip() else []
    for n, sep in enumerate(seps):
        if sep in text:
            parts = [p + sep for p in text.split(sep)]
            parts[-1] = parts[-1][: -len(sep)]
            out, cur = [], ""
            for p in parts:
                if len(cur) + len(p) <= size:
                    cur += p
                else:
                    if cur.strip():
                        out.append(cur)
                    cur = p
            if cur.strip():
                out.append(cur)
            finer = seps[n + 1:]
            return [x for piece in out for x in (recursive_split(piece, size, finer) if len(piece) > size else [piece])]
    return [text[i:i + size] for i in range(0, len(text), size)]


def bigrams(s: str) -> set:
    s = "".join(s.split())
    return {s[i:i + 2] for i in range(len(s) - 1)}


def rank(question: str, chunks: list, top: int = 10) -> list:
    qb = bigrams(question)
    scored = sorted(((len(qb & bigrams(c["text"])) / (1 + len(bigrams(c["text"]))) ** 0.5, i)
                     for i, c in enumerate(chunks)), key=lambda t: (-t[0], t[1]))
    return [(chunks[i], s) for s, i in scored[:top]]


@pytest.fixture(scope="module")
def helpdesk():
    corpus = load_corpus("it_helpdesk")
    qa = load_qa("it_helpdesk")
    chunks = [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
              for d in corpus for j, t in enumerate(recursive_split(d.content))]
    return corpus, qa, chunks


def write_results(path: Path, qa, chunks, pipeline: str, shuffle_seed=None, drop=()):
    rng = random.Random(shuffle_seed)
    with open(path, "w", encoding="utf-8") as fh:
        for q in qa:
            if q.query_id in drop:
                continue
            hits = rank(q.question, chunks)
            if shuffle_seed is not None:
                rng.shuffle(hits)
            ctx = [{"text": c["text"], "doc_id": c["doc_id"], "id": c["id"], "score": round(s, 6)} for c, s in hits]
            fh.write(json.dumps({"query_id": q.query_id, "pipeline": pipeline, "contexts": ctx},
                                ensure_ascii=False) + "\n")
    return path


def hand_first_ranks(path: Path, qa) -> dict:
    """First 1-based position whose normalized text contains a normalized evidence string, per scored question."""
    lists = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        lists[obj["query_id"]] = [c["text"] for c in obj["contexts"]]
    out = {}
    for q in qa:
        if not q.answerable:
            continue
        ranks = [i for i, t in enumerate(lists.get(q.query_id, []), 1)
                 if any(normalize(e) in normalize(t) for e in q.evidence)]
        out[q.query_id] = ranks[0] if ranks else None
    return out


def test_results_file_metrics_equal_hand_computed_containment(tmp_path, helpdesk):
    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "splitter.jsonl", qa, chunks, "bigram-recursive")
    res = ragexam.grade("it_helpdesk", a, progress=False, n_resamples=200, n_permutations=500)
    first = hand_first_ranks(a, qa)
    m = res.summary["results"]["bigram-recursive"]["metrics"]
    n = len(first)
    assert res.summary["dataset"]["n_scored"] == n == 65
    for k in (1, 3, 5, 10):
        assert m[f"hit@{k}"] == pytest.approx(sum(1 for r in first.values() if r is not None and r <= k) / n)
    assert m["mrr"] == pytest.approx(sum(1 / r for r in first.values() if r is not None) / n)
    assert 0 < m["hit@1"] < m["hit@10"] < 1  # a real spread, not a degenerate file
    rows = {r.query_id: r for r in res.per_question}
    assert {q: rows[q].first_rank for q in first} == first
    # the run saw no corpus chunking: the pipeline is a texts pipeline with no chunker
    p = res.summary["pipelines"][0]
    assert p["kind"] == "texts" and p["chunker"] is None and "match:text" in p["signature"]
    assert res.summary["dataset"]["n_chunks"] == {} and res.summary["dataset"]["n_documents"] is None


def test_second_file_is_compared_with_paired_tests(tmp_path, helpdesk):
    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "a.jsonl", qa, chunks, "ranked")
    b = write_results(tmp_path / "b.jsonl", qa, chunks, "shuffled", shuffle_seed=7)
    res = grade("it_helpdesk", [a, b], corpus="it_helpdesk", progress=False, n_resamples=300, n_permutations=2000)
    assert [p.name for p in res.pipelines] == ["ranked", "shuffled"]
    comps = {c["metric"]: c for c in res.summary["comparisons"]}
    assert set(comps) == set(res.main_metrics)
    va, vb = res.values["ranked"], res.values["shuffled"]
    j = res.metrics.index("mrr")
    assert comps["mrr"]["n"] == 65
    assert comps["mrr"]["diff"] == pytest.approx(float(np.mean(vb[:, j] - va[:, j])))
    assert comps["mrr"]["diff"] < 0 and comps["mrr"]["p_value"] < 0.05  # shuffling the top 10 hurts MRR
    # hit@10 sees the same ten texts in both files: no difference at all
    assert comps["hit@10"]["diff"] == 0


def test_own_pipeline_texts_grade_exactly_like_the_run(tmp_path):
    """ragexam's own bm25 ranking written as a results file: the text rule gives the run's numbers, in both
    relevance modes."""
    for mode in ("evidence", "doc"):
        own = run("it_helpdesk", "it_helpdesk", ["bm25"], relevance=mode, progress=False, n_resamples=100,
                  n_permutations=100)
        ch = own.chunkings["paragraphs:400"]
        path = tmp_path / f"own-{mode}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for qid, hits in own.rankings["bm25 | paragraphs:400"].items():
                fh.write(json.dumps({"query_id": qid, "contexts": [
                    {"text": ch.by_id[c].text, "doc_id": ch.by_id[c].doc_id, "id": c, "score": s} for c, s in hits]},
                    ensure_ascii=False) + "\n")
        res = grade("it_helpdesk", path, relevance=mode, progress=False, n_resamples=100, n_permutations=100)
        name = f"own-{mode}"
        assert res.summary["results"][name]["metrics"] == own.summary["results"]["bm25 | paragraphs:400"]["metrics"]
        assert [r.first_rank for r in res.per_question] == [r.first_rank for r in own.per_question]
        assert [r.top_ids for r in res.per_question] == [r.top_ids for r in own.per_question]


def test_missing_questions_are_misses_listed_and_counted(tmp_path, helpdesk):
    corpus, qa, chunks = helpdesk
    drop = ("hq_001", "hq_002", "hq_066")  # hq_066 is out of corpus
    a = write_results(tmp_path / "partial.jsonl", qa, chunks, "partial", drop=drop)
    res = grade("it_helpdesk", a, progress=False, n_resamples=100, n_permutations=100)
    un = res.summary["results"]["partial"]["unretrieved"]
    assert un["n"] == 3 and un["n_scored"] == 2 and un["by_kind"] == {"missing": 3}
    assert [x["query_id"] for x in un["questions"]] == list(drop)
    rows = {r.query_id: r for r in res.per_question}
    assert rows["hq_001"].unretrieved.startswith("missing: no line") and rows["hq_001"].first_rank is None
    assert rows["hq_001"]["hit@10"] == 0.0 and rows["hq_003"].unretrieved is None
    missed = {e["query_id"]: e for e in res.summary["missed"]["partial"]}
    assert missed["hq_001"]["unretrieved"].startswith("missing") and missed["hq_001"]["top"] == []
    assert any("no line for 3 question(s)" in w for w in res.summary["warnings"])
    out = res.save(tmp_path / "out")
    back = read_run_folder(out)
    assert back.row("partial", "hq_002").unretrieved.startswith("missing")
    assert back.row("partial", "hq_003").unretrieved is None
    assert back.format == "ragexam-run/3"
    ctx = back.contexts("partial", 3)
    assert ctx["hq_001"] == [] and len(ctx["hq_003"]) == 3
    assert ctx["hq_003"][0][1] == rank(qa["hq_003"].question, chunks)[0][0]["text"]


def test_a_results_files_statistics_describe_what_it_returned(tmp_path, helpdesk):
    """10 contexts per question: a missed question's evidence is 'not found in the 10 texts returned' (it said 'in
    the top 100', the run's depth), and the chunks line counts every text returned and the distinct ones (it gave
    the distinct count as the number returned)."""
    from rich.console import Console

    from ragexam.report.console_run import render_run
    from ragexam.report.html import render_report

    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "mine.jsonl", qa, chunks, "mine")
    lines = [json.loads(x) for x in a.read_text(encoding="utf-8").splitlines()]
    total, distinct = sum(len(x["contexts"]) for x in lines), len({c["text"] for x in lines for c in x["contexts"]})
    assert total > distinct and {len(x["contexts"]) for x in lines} == {10}
    res = grade("it_helpdesk", a, progress=False, n_resamples=50, n_permutations=50)
    console = Console(record=True, width=250)
    render_run(res.summary, console)
    text = console.export_text()
    assert f"mine: {total} texts returned, {distinct} distinct, mean" in text
    unfound = [e for e in res.summary.missed["mine"] if e.first_rank is None]
    assert unfound and all(e.n_returned == 10 for e in unfound)
    assert "not found in the 10 texts returned" in text and "not found in the top" not in text
    html = render_report(res.summary, [r.to_dict() for r in res.per_question])
    assert "not among the 10 returned for this question" in html


def test_unknown_ids_warn_and_a_foreign_file_is_an_error(tmp_path, helpdesk):
    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "a.jsonl", qa, chunks, "p")
    with open(a, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"query_id": "zz_999", "pipeline": "p", "contexts": ["x"]}) + "\n")
    res = grade("it_helpdesk", a, progress=False, n_resamples=50, n_permutations=50)
    assert any("zz_999 (line 72)" in w for w in res.summary["warnings"])
    other = tmp_path / "other.jsonl"
    other.write_text('{"query_id": "x1", "contexts": ["a"]}\n{"query_id": "x2", "contexts": ["b"]}\n')
    with pytest.raises(InputError, match="none of the 2 question ids"):
        grade("it_helpdesk", other, progress=False)


@pytest.mark.parametrize("lines, message, line", [
    (['{"query_id": "hq_001", "contexts": ["a"]}', '{"query_id": "hq_001", "contexts": ["b"]}'],
     "already appeared on line 1", 2),
    (['{"query_id": "hq_001", "contexts": [""]}'], "empty text", 1),
    (['{"query_id": "hq_001", "contexts": [{"content": "abc"}]}'], "rename 'content' to 'text'", 1),
    (['{"query_id": "hq_001", "contexts": [{"text": "abc", "url": "u"}]}'], "'url'", 1),
    (['{"query_id": "hq_001", "context": ["a"]}'], "rename 'context' to 'contexts'", 1),
    (['{"query_id": 12, "contexts": ["a"]}'], 'write it as a string: "12"', 1),
    (['{"query_id": "hq_001", "contexts": [{"text": "a", "score": "high"}]}'], "finite number", 1),
    (['{"query_id": "hq_001", "contexts": ["a", "b"], "context_ids": ["x"]}'], "one id per context", 1),
])
def test_bad_lines_are_errors_naming_file_line_field(tmp_path, lines, message, line):
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        grade("it_helpdesk", p, progress=False)
    assert err.value.source == str(p) and err.value.line == line


def test_empty_contexts_warn_and_count_as_misses(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"query_id": "hq_001", "contexts": []}\n{"query_id": "hq_003", "contexts": ["다른 이야기"]}\n',
                 encoding="utf-8")
    res = grade("it_helpdesk", p, progress=False, n_resamples=50, n_permutations=50)
    assert any("empty contexts list" in w and "hq_001 (line 1)" in w for w in res.summary["warnings"])
    rows = {r.query_id: r for r in res.per_question}
    assert rows["hq_001"].first_rank is None and rows["hq_001"].unretrieved is None  # retrieved nothing, no failure
    assert res.summary["results"]["r"]["metrics"]["hit@10"] == 0.0


def test_doc_mode_needs_doc_ids(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"query_id": "hq_001", "contexts": ["VPN 설정"]}\n', encoding="utf-8")
    with pytest.raises(InputError, match="has no doc_id"):
        grade("it_helpdesk", p, relevance="doc", progress=False)


def test_answers_file_with_contexts_is_graded(tmp_path, helpdesk):
    corpus, qa, chunks = helpdesk
    p = tmp_path / "answers.jsonl"
    with open(p, "w", encoding="utf-8") as fh:
        for q in list(qa)[:10]:
            top = rank(q.question, chunks, 3)
            fh.write(json.dumps({"query_id": q.query_id, "answer": "...", "model": "m",
                                 "contexts": [c["text"] for c, _ in top], "context_ids": [c["id"] for c, _ in top]},
                                ensure_ascii=False) + "\n")
    res = grade("it_helpdesk", p, progress=False, n_resamples=50, n_permutations=50)
    row = next(r for r in res.per_question if r.query_id == "hq_001")
    assert row.top_ids == [c["id"] for c, _ in rank(qa["hq_001"].question, chunks, 3)]
    assert res.summary["results"]["answers"]["unretrieved"]["n"] == len(qa) - 10


def test_retrievers_and_results_files_mix(tmp_path, helpdesk):
    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "mine.jsonl", qa, chunks, "mine")
    res = run("it_helpdesk", "it_helpdesk", ["bm25"], retrieved=a, progress=False, n_resamples=50,
              n_permutations=50)
    assert [p.name for p in res.pipelines] == ["bm25 | paragraphs:400", "mine"]
    assert {c["pipeline"] for c in res.summary["comparisons"]} == {"mine"}
    assert res.summary["config"]["retrieved"] == [str(a)]
    with pytest.raises(InputError, match="no corpus was given"):
        run(None, "it_helpdesk", ["bm25"], retrieved=a, progress=False)


def test_ids_repeated_with_different_texts_get_distinct_keys(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"query_id": "hq_001", "contexts": [{"text": "one", "id": "c1"}]}\n'
                 '{"query_id": "hq_003", "contexts": [{"text": "two", "id": "c1"}, "two"]}\n', encoding="utf-8")
    res = grade("it_helpdesk", p, progress=False, n_resamples=50, n_permutations=50)
    rows = {r.query_id: r for r in res.per_question}
    assert rows["hq_001"].top_ids == ["c1"]
    k2, k3 = rows["hq_003"].top_ids
    assert k2.startswith("c1@") and k3.startswith("h:")
    back = read_run_folder(res.save(tmp_path / "o"))
    assert back.contexts("r", 2)["hq_003"] == [(k2, "two"), (k3, "two")]


def test_tables_and_report_show_the_unretrieved(tmp_path, helpdesk):
    from rich.console import Console

    from ragexam.report.console_run import render_run
    from ragexam.report.html import render_report

    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "a.jsonl", qa, chunks, "full")
    b = write_results(tmp_path / "b.jsonl", qa, chunks, "partial", drop=("hq_001", "hq_002"))
    res = grade("it_helpdesk", [a, b], progress=False, n_resamples=50, n_permutations=50)
    console = Console(record=True, width=140)
    render_run(res.summary, console)
    text = console.export_text()
    assert "P2 unretrieved: 2 of 65 scored questions (missing 2), graded as misses" in text
    assert "P1 unretrieved" not in text
    assert "no corpus (every pipeline returned its own texts)" in text
    assert "warning: " in text and "has no line for 2 question(s)" in text
    assert "unretrieved: missing: no line" in text  # the missed entry says why
    html = render_report(res.summary, [r.to_dict() for r in res.per_question])
    assert "unretrieved 2 of 65 scored questions (missing 2), graded as misses" in html
    assert "Warnings (1)" in html


def test_unretrieved_counts_add_up_to_the_scored_questions_they_are_shown_against(tmp_path, helpdesk):
    """A results file lacking scored and out-of-corpus questions: the breakdown beside '3 of 65 scored questions'
    counts those 3 (it said '(missing 5)', the out-of-corpus ones included); the out-of-corpus ones are said apart,
    and a file lacking only out-of-corpus questions shows no '0 of 65'."""
    from rich.console import Console

    from ragexam.report.console_run import render_run
    from ragexam.report.html import render_report

    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "a.jsonl", qa, chunks, "a", drop=("hq_001", "hq_002", "hq_003", "hq_011", "hq_022"))
    b = write_results(tmp_path / "b.jsonl", qa, chunks, "b", drop=("hq_011",))
    res = grade("it_helpdesk", [a, b], progress=False, n_resamples=50, n_permutations=50)
    un = res.summary.result("a").unretrieved
    assert (un.n, un.n_scored, un.by_kind_scored) == (5, 3, {"missing": 3})
    console = Console(record=True, width=200)
    render_run(res.summary, console)
    text = console.export_text()
    assert ("P1 unretrieved: 3 of 65 scored questions (missing 3), graded as misses; 2 out-of-corpus questions "
            "(not scored)") in text
    assert "P2 unretrieved: 1 out-of-corpus question (not scored)" in text and "0 of 65" not in text
    html = render_report(res.summary, [r.to_dict() for r in res.per_question])
    assert "unretrieved 3 of 65 scored questions (missing 3), graded as misses" in html
    assert "2 out-of-corpus questions had no result (not scored)" in html


def test_doc_mode_without_a_corpus_does_not_warn_about_unjudged_documents(tmp_path, helpdesk):
    """Issue 39: ``grade --relevance doc`` without ``--corpus`` warned "324 of the 438 doc_id(s) ... not judged" on
    every realistic results file -- but a document the question set does not judge is simply not relevant (as in
    trec_eval), so only ids that cannot be the set's are worth a word: with a corpus, those not in it."""
    corpus, qa, chunks = helpdesk
    a = write_results(tmp_path / "a.jsonl", qa, chunks, "p")
    lines = []
    for n, line in enumerate(a.read_text(encoding="utf-8").splitlines()):  # a realistic index: other documents too
        obj = json.loads(line)
        obj["contexts"] += [{"text": f"다른 문서 {n}-{j}", "doc_id": f"wiki_{n}_{j}"} for j in range(5)]
        lines.append(json.dumps(obj, ensure_ascii=False))
    a.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = grade("it_helpdesk", a, relevance="doc", progress=False, n_resamples=50, n_permutations=50)
    assert not [w for w in res.summary["warnings"] if "doc_id(s)" in w]
    res = grade("it_helpdesk", a, relevance="doc", corpus="it_helpdesk", progress=False, n_resamples=50,
                n_permutations=50)  # with the corpus, ids that are not in it still warn
    assert any("are not in the corpus" in w and "'wiki_0_0'" in w for w in res.summary["warnings"])
