"""Chunking in ``ragexam run`` (issue 23, phase 2): metrics at an equal context budget (``-k 2000c``, ``-k 512t``,
the equal budget chosen when chunkers of different size are compared), the size-mismatch warning, chunk sizes and
embedder windows in the summary, ``evidence_split`` for every pipeline (per_question.csv, the missed list, the
counts, stage attribution), and the chunking study's console tables."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

import ragexam
from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.answers.diagnosis import LABELS
from ragexam.analysis.exam.config import RunConfig, load_config_file, parse_k
from ragexam.analysis.answers.scoring import score_answers
from ragexam.metrics.verdicts import parse_correct_if
from ragexam.cli import main
from ragexam.data import load_qa
from ragexam.data.chunking import equal_budget
from ragexam.data.normalization import normalize
from ragexam.errors import InputError
from ragexam.metrics.ranking import table_columns
from ragexam.storage.runfolder import SplitCell, coerce_rows, read_run_folder
from ragexam.storage.summary import RunSummary
from test_score_fixtures import DOCS, GT, QA, WRONG, write_jsonl

FAST = dict(progress=False, n_resamples=200, n_permutations=200)


def _render(summary, width=140) -> str:
    from rich.console import Console

    from ragexam.report.console_run import render_run

    buf = io.StringIO()
    render_run(summary, Console(file=buf, width=width, force_terminal=False, color_system=None))
    return buf.getvalue()


# -- budgets given with -k -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def budget_run():
    return ragexam.run("it_helpdesk", "it_helpdesk", ["bm25"], ["paragraphs:200"], k="1,5,1000c,256t", **FAST)


def test_budget_columns_equal_a_walk_down_the_ranked_chunks(budget_run):
    """hit@1000c and r@1000c by hand: read the judged list in rank order, each chunk spending its length."""
    res = budget_run
    name = res.pipelines[0].name
    J, ranked, chunks = res.judgments[name], res.rankings[name], res.chunkings["paragraphs:200"]
    hits, recalls = [], []
    for q in res.scored_ids:
        spent, first, found = 0.0, None, 0.0
        for item, (cid, _) in zip(J.run[q], ranked[q]):
            size = len(chunks[cid].text)
            share = min(1.0, max(0.0, (1000 - spent) / size))
            if item in J.qrels[q]:
                first = share if first is None else first
                found += share
            spent += size
        hits.append(first or 0.0)
        recalls.append(found / len(J.qrels[q]))
    got = res.summary.results[name].metrics
    assert got["hit@1000c"] == pytest.approx(sum(hits) / len(hits))
    assert got["r@1000c"] == pytest.approx(sum(recalls) / len(recalls))
    assert got["hit@5"] == pytest.approx(res.summary.results[name].metrics["hit@5"])  # the counts stay


def test_token_budget_counts_in_e5s_tokenizer(budget_run):
    from ragexam.data.relevance import item_sizes
    from ragexam.metrics.ranking import ContextSizes, evaluate
    from ragexam.retrieval.chunk_models import token_sizer

    res = budget_run
    name = res.pipelines[0].name
    J, ranked, chunks = res.judgments[name], res.rankings[name], res.chunkings["paragraphs:200"]
    size, counter = token_sizer(None)
    tokens = {c.chunk_id: size(c.text) for c in chunks}
    sizes = ContextSizes("t", {q: item_sizes(J.per_question[q], [chunks[c] for c, _ in ranked[q]],
                                             lambda c: tokens[c.chunk_id]) for q in J.run}, counter)
    want = evaluate(J.qrels, J.run, ["ndcg@256t", "p@256t"], sizes=[sizes]).mean
    got = res.summary.results[name].metrics
    assert got["ndcg@256t"] == pytest.approx(want["ndcg@256t"]) and got["p@256t"] == pytest.approx(want["p@256t"])
    s = res.summary
    assert s.config.k == [1, 5] and s.config.budgets == ["1000c", "256t"]
    assert s.chunking.budgets == ["1000c", "256t"] and s.chunking.budget_rule == "given"
    assert s.chunking.token_counter == "e5"
    assert s.budget_metrics == table_columns((), 0, which="budget", budgets=["1000c", "256t"])
    assert all(len(s.results[name].ci95[m]) == 2 for m in s.budget_metrics)
    assert "budget:share,c=chars,t=e5" in s.results[name].signature
    assert not s.budget_comparisons  # one pipeline: nothing to compare
    text = _render(s)
    assert "At an equal context budget" in text and "1000 characters or 256 tokens" in text
    assert "1000c" in text.split("P@K / R@K / F1@K sweep")[1]  # the budgets' rows of the sweep


# -- a chunking study: chunkers of different size, the equal budget chosen for them ---------------------------


@pytest.fixture(scope="module")
def study():
    return ragexam.run("it_helpdesk", "it_helpdesk", ["bm25", "bm25:whitespace"], ["paragraphs:200", "paragraphs:800"],
                       **FAST)


def test_a_study_is_cut_at_an_equal_budget_and_warned_about(study):
    s = study.summary
    stats = [study.chunkings[c].stats() for c in ("paragraphs:200", "paragraphs:800")]
    budget = equal_budget(stats, 5)
    assert s.chunking.budgets == [budget] and s.chunking.budget_rule == "equal" and not s.config.budgets
    sizes = s.chunking.sizes
    assert sizes["paragraphs:200"].mean_chars == pytest.approx(stats[0].mean) and sizes["paragraphs:800"].max_chars <= 800
    assert s.chunk_sizes("bm25:whitespace | paragraphs:800") is sizes["paragraphs:800"]
    warning = s.chunking.size_warning
    assert warning in s.warnings and "paragraphs:200 156" in warning and f"@{budget}" in warning
    # each chunker against the first chunker with the same retriever, one Holm family per pair
    pairs = {(c.baseline, c.pipeline) for c in s.budget_comparisons}
    assert pairs == {("bm25 | paragraphs:200", "bm25 | paragraphs:800"),
                     ("bm25:whitespace | paragraphs:200", "bm25:whitespace | paragraphs:800")}
    assert {c.metric for c in s.budget_comparisons} == set(s.budget_metrics)
    # the chunk-count comparisons are the ones of a run without budgets (their own family)
    assert [c.metric for c in s.comparisons[:len(s.main_metrics)]] == s.main_metrics
    assert RunSummary.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_the_study_reads_in_the_console(study):
    text = _render(study.summary)
    assert "warning: chunkers of different size are compared by chunk count k" in text
    assert "paragraphs:200: 154 chunks, mean 156 / max 200 characters" in text
    assert "Chunking study: hit@5 (k chunks, sizes differ) beside hit@2000c" in text
    assert "At an equal context budget: paired comparisons" in text
    assert "P3 bm25 | paragraphs:800  vs  P1 bm25 | paragraphs:200" in text
    assert "verdict on hit@2000c" in text


# -- evidence_split for every pipeline --------------------------------------------------------------------------

CUT = DOCS[2]["content"].index("자동으로")  # another system's chunker cut q4's evidence "30분 뒤 자동으로 풀립니다"


def _study_files(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCS)
    qa = write_jsonl(tmp_path / "qa.jsonl", QA)
    text = {d["doc_id"]: d["content"] for d in DOCS}
    rel = {q["query_id"]: q.get("relevant_doc_ids", [None])[0] for q in QA}
    lines = []
    for q in QA:
        if rel[q["query_id"]] is None:
            contexts = [{"text": text["d2"], "doc_id": "d2"}]
        elif q["query_id"] == "q4":  # rank 1 ends inside the evidence; its second half is never retrieved
            contexts = [{"text": text["d3"][:CUT], "doc_id": "d3"}, {"text": text["d2"], "doc_id": "d2"}]
        else:
            contexts = [{"text": text[rel[q["query_id"]]], "doc_id": rel[q["query_id"]]}]
        lines.append({"query_id": q["query_id"], "pipeline": "cutter", "contexts": contexts})
    results = write_jsonl(tmp_path / "results.jsonl", lines)
    return corpus, qa, results


@pytest.fixture(scope="module")
def split_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("split")
    corpus, qa, results = _study_files(folder)
    res = ragexam.run(str(corpus), str(qa), ["bm25"], ["chars:24:0"], retrieved=[str(results)], **FAST)
    return folder, qa, res


def test_a_results_file_whose_chunks_cut_the_evidence(split_run):
    folder, _, res = split_run
    s = res.summary
    assert s.results["cutter"].n_evidence_split == 1
    [entry] = [m for m in s.missed["cutter"] if m.evidence_split is not None]
    sp = entry.evidence_split
    assert entry.query_id == "q4" and (sp.rank, sp.part, sp.doc_id, sp.how, sp.k) == (1, "start", "d3", "text", 5)
    assert sp.chars == len(normalize("30분 뒤"))
    [row] = [r for r in res.per_question if r.pipeline == "cutter" and r.evidence_split is not None]
    assert row.query_id == "q4" and row.evidence_split == SplitCell("ev1", 5, 1, row.top_ids[0], "start", sp.chars,
                                                                    sp.length)
    # the texts pipeline's sizes are those of the texts it returned
    assert s.chunking.sizes["cutter"].kind == "texts" and s.chunking.pipelines["cutter"] == "cutter"
    # ragexam's chars:24:0 chunks cut evidence too: every label is located, and its chunk holds that part
    name = "bm25 | chars:24:0"
    chunks = res.chunkings["chars:24:0"]
    assert s.results[name].n_evidence_split == sum(m.evidence_split is not None for m in s.missed[name]) >= 1
    for m in s.missed[name]:
        sp = m.evidence_split
        if sp is None:
            continue
        held = normalize(chunks[sp.chunk_id].text)
        ev = normalize(sp.evidence)
        assert sp.how == "location" and sp.rank <= 5 and res.rankings[name][m.query_id][sp.rank - 1][0] == sp.chunk_id
        assert {"start": held.endswith(ev[:sp.chars]), "end": held.startswith(ev[-sp.chars:]),
                "middle": held in ev}[sp.part]


def test_evidence_split_is_saved_read_and_printed(split_run):
    folder, _, res = split_run
    out = res.save(folder / "run")
    header = (out / "per_question.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[-1] == "evidence_split"
    back = read_run_folder(out)
    assert [r.evidence_split for r in back.per_question] == [r.evidence_split for r in res.per_question]
    assert back.summary.missed["cutter"] == res.summary.missed["cutter"]
    text = _render(back.summary)
    assert "1 evidence_split (the chunking cut the evidence" in text
    assert "evidence_split: #1 h:" in text and "holds the start" in text
    with pytest.raises(InputError, match=r"evidence_split\.rank"):
        coerce_rows([{"pipeline": "p", "query_id": "q", "evidence_split": '{"unit_id": "ev1", "k": 5, "rank": "1"}'}])


def test_stage_attribution_names_the_chunking(split_run):
    folder, qa, res = split_run
    out = folder / "run-score"
    res.save(out)
    answers = write_jsonl(folder / "answers.jsonl", [
        {"query_id": q["query_id"], "pipeline": "cutter",
         "answer": WRONG if q["query_id"] == "q4" else GT[q["query_id"]]} for q in QA])
    rep = score_answers(load_qa(qa), load_answers(answers), answers_source=str(answers), run=read_run_folder(out),
                        correct_if=parse_correct_if("chrf>=0.5"))
    labels = {r.inputs.query_id: r.label for r in rep.attribution.results}
    assert labels["q4"] == "evidence_split" and "evidence_split" in LABELS
    assert rep.attribution.counts("cutter")["evidence_split"] == 1
    # with k=0... no: a generator given only rank 1 still saw the cut piece; beyond the label's k it is not one
    rep6 = score_answers(load_qa(qa), load_answers(answers), answers_source=str(answers), run=read_run_folder(out),
                         correct_if=parse_correct_if("chrf>=0.5"), k=6)
    assert {r.inputs.query_id: r.label for r in rep6.attribution.results}["q4"] == "retrieval_miss"


# -- sizes: sentences cut inside, chunks over the embedder's window ---------------------------------------------


def test_sentences_cut_and_chunks_over_e5s_window(tmp_path):
    long_sentence = "사내 VPN 접속이 끊기면 " + "네트워크 설정과 인증서 상태와 방화벽 규칙과 " * 8 + "모두 확인하세요."
    docs = [{"doc_id": "a", "title": "긴 문서", "content": "VPN이 연결되지 않으면 먼저 네트워크를 확인하세요. " * 70},
            {"doc_id": "b", "title": "긴 문장", "content": "짧은 문장입니다. " + long_sentence}]
    qa = [{"query_id": "q1", "question": "VPN이 안 되면?", "evidence": "먼저 네트워크를 확인하세요", "type": "x"},
          {"query_id": "q2", "question": "VPN 접속이 끊기면?", "evidence": "짧은 문장입니다", "type": "x"}]
    corpus, questions = write_jsonl(tmp_path / "c.jsonl", docs), write_jsonl(tmp_path / "q.jsonl", qa)
    s = ragexam.run(str(corpus), str(questions), ["dense"], ["whole", "paragraphs:100"], **FAST).summary
    whole, para = s.chunking.sizes["whole"], s.chunking.sizes["paragraphs:100"]
    assert para.cut_sentences == 1 and para.max_chars <= 100 and whole.cut_sentences == 0
    [w] = whole.windows
    assert (w.n_over, w.window, w.action) == (1, 510, "windowed") and w.max_tokens > 510
    assert [x.n_over for x in para.windows] == [0]
    assert any(f"1 of 2 chunks exceed {w.embedder}'s window of 510 tokens" in x for x in s.warnings)
    text = _render(s)
    assert "1 sentence longer than 100 characters cut inside" in text
    assert f"1 over {w.embedder}'s window of 510 tokens (windowed)" in text


# -- settings and the command line ------------------------------------------------------------------------------


def test_k_takes_budgets_in_the_metric_names_grammar(tmp_path):
    assert parse_k("1,5,2000C") == (1, 5, "2000c") and parse_k(["512t", 3, "1000c"]) == (3, "1000c", "512t")
    cfg = RunConfig("c", "q", cutoffs="2000c")
    assert (cfg.cutoffs, cfg.budgets) == ((1, 3, 5, 10), ("2000c",))
    for bad in ("20x", "0c", "5 t"):
        with pytest.raises(InputError, match="2000c"):
            parse_k(bad)
    toml = tmp_path / "run.toml"
    toml.write_text('k = [5, "300c"]\n', encoding="utf-8")
    assert load_config_file(toml)["k"] == (5, "300c")
    assert table_columns((1, 5), 5, which="all", budgets=["300c"])[-8:] == [
        "hit@300c", "mrr@300c", "ndcg@300c", "p@300c", "r@300c", "f1@300c", "f0.5@300c", "f2@300c"]
    with pytest.raises(ValueError):
        table_columns((1,), 1, which="budgets")


def test_cli_run_with_a_budget_and_the_help_texts(tmp_path, capsys, monkeypatch):
    corpus, qa = write_jsonl(tmp_path / "c.jsonl", DOCS), write_jsonl(tmp_path / "q.jsonl", QA)
    with pytest.raises(SystemExit) as ex:
        main(["run", "--corpus", str(corpus), "--qa", str(qa), "-r", "bm25:whitespace", "-k", "1,3", "-k", "100c",
              "--n-resamples", "50", "--n-permutations", "50", "--json"])
    s = json.loads(capsys.readouterr().out)
    assert (ex.value.code or 0) == 0 and s["config"]["budgets"] == ["100c"] and "hit@100c" in s["budget_metrics"]
    monkeypatch.setenv("COLUMNS", "200")  # at 80 columns rich cuts a form longer than the help column

    def help_text(command):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        return re.sub(r"[\s│]+", "", capsys.readouterr().out)  # the words, whatever the width wrapped

    assert "acontextbudget:512t(tokens),2000c(characters)forhit,mrr,ndcg,p,r,f,map" in help_text("evaluate")
    assert "recursive:SIZE:OVERLAP,tokens:SIZE:OVERLAP,semantic" in help_text("run")
    assert "-k2000c(characters),-k512t(tokens)" in help_text("run")
    # the metrics' help is filled in when its command runs: starting the CLI imports no numpy
    code = "import sys, ragexam.cli; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_an_older_summary_reads_and_renders_without_the_new_blocks(budget_run):
    data = budget_run.summary.to_dict()
    for key in ("chunking", "budget_metrics", "budget_comparisons"):
        data.pop(key, None)
    for res in data["results"].values():
        res.pop("n_evidence_split")
    old = RunSummary.from_dict(data)
    assert old.chunking is None and old.budget_metrics == [] and old.chunk_sizes("x") is None
    assert "chunking" not in old.to_dict() and "Chunking study" not in _render(old)


def test_e5s_bound_spares_counting_and_never_undercounts():
    """Only the chunks with more characters than e5's window are segmented; the bound is never below the count."""
    import random

    from ragexam.data import Document, chunk_corpus, load_corpus
    from ragexam.retrieval.chunk_models import E5_WINDOW, _e5_spans, chunk_window_report

    e5 = _e5_spans()
    # the bound's premise, over e5's whole normalization table: no character grows more than under NFKC
    import unicodedata

    e5._load()
    assert all(len(out) <= len(unicodedata.normalize("NFKC", chr(cp))) for cp, out in e5._norm.items())
    docs = list(load_corpus("it_helpdesk"))
    rng = random.Random(7)
    for _ in range(25):
        d = rng.choice(docs).content
        a = rng.randrange(len(d))
        text = d[a:a + rng.choice((5, 60, 400, 900))] + rng.choice(("", "  ㈜ＡＢＣ ﬁ", "\n\n둘째 줄"))
        assert e5.bound(text) >= e5.count(text)
    long = Document("long", " ".join(d.content for d in docs[:2]))
    chunking = chunk_corpus([long, *docs[2:6]], "whole")
    rep = chunk_window_report(chunking)
    assert rep.n_chunks == 5 and rep.n_over == sum(e5.count(c.text) > E5_WINDOW for c in chunking)
    assert rep.max_tokens == max(e5.count(c.text) for c in chunking)


def test_the_runs_embedders_each_once_and_chunkers_bound_to_the_first():
    from ragexam.analysis.exam.pipelines import plan_pipelines
    from ragexam.data.chunking import SemanticChunker, TokenChunker

    plan = plan_pipelines(["bm25", "dense", "hybrid:bm25+dense", "bm25>rerank:dense"],
                          ["paragraphs:400", "tokens:64:8", "semantic"], [], {}, have_corpus=True)
    [e5] = plan.embedders  # dense, the hybrid's dense member and rerank:dense share one e5
    tokens, semantic = plan.chunkers[1], plan.chunkers[2]
    assert isinstance(tokens, TokenChunker) and tokens.tokenizer is not None and tokens.tokenizer.name == "e5"
    assert isinstance(semantic, SemanticChunker) and semantic.embed.embedder is e5
    assert plan_pipelines(["bm25"], ["paragraphs:400"], [], {}, have_corpus=True).embedders == []
