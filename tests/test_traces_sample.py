"""``ragexam traces sample``: traffic to exam candidates, through review to an exam set (issue 38, item 3).

The traffic is made from the bundled it_helpdesk questions and tests/data/traces/paraphrases.jsonl (user-style
rewordings), each asked a seeded number of times, written as a Phoenix export and imported: so the near-duplicate
clusters, frequencies and negative feedback are known.  e5 runs offline (the session's cache is shared).
"""

from __future__ import annotations

import csv
import io
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from ragexam.analysis.answers.traces import import_traces, sample_traces
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.traces import writers
from ragexam.data.traces.mapping import MappedTrace
from ragexam.data.traces.meta import Feedback, RetrievedDoc, TraceMeta
from ragexam.errors import InputError
from ragexam.questions import traces_sample as TS

DATA = Path(__file__).parent / "data" / "traces"
ROOT = Path(__file__).resolve().parents[1]


def make_traffic():
    """Mapped traces: every bundled question and its paraphrases, 1-4 times each (seeded); contexts are the
    question's relevant documents and one other; one in ten has a thumbs down."""
    from ragexam.analysis.answers.files import load_answers

    qa = {q.query_id: q for q in load_qa("it_helpdesk").questions}
    docs = {d.doc_id: d.content for d in load_corpus("it_helpdesk").documents}
    ids = sorted(docs)
    para = {json.loads(x)["query_id"]: json.loads(x)["paraphrases"]
            for x in (DATA / "paraphrases.jsonl").read_text(encoding="utf-8").splitlines()}
    rng = random.Random(7)
    out = []
    for i, a in enumerate(load_answers("it_helpdesk")):
        q = qa[a.query_id]
        chosen = list(dict.fromkeys(list(q.relevant_doc_ids) + [ids[(i * 7) % len(ids)]]))
        for phrasing in [q.question] + para.get(a.query_id, []):
            for _ in range(rng.randint(1, 4)):
                k = len(out)
                fb = (Feedback("thumbs", 0.0 if rng.random() < 0.1 else 1.0, None, "HUMAN"),)
                meta = TraceMeta("phoenix", f"t{k}", f"2025-03-{1 + k % 28:02d}T01:00:00.000000Z", 900.0, "m", 1, 1, 2,
                                 f"user{k % 13}", None, (), fb, tuple(RetrievedDoc(d, r, None)
                                                                     for r, d in enumerate(chosen, 1)))
                out.append(MappedTrace(f"{k:032x}", phrasing, a.answer, None, tuple(docs[d] for d in chosen),
                                       tuple(chosen), meta))
    return out


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    d = tmp_path_factory.mktemp("traffic")
    traces = make_traffic()
    with open(d / "export.jsonl", "w", encoding="utf-8") as fh:
        for m in traces:
            for rec in writers.phoenix_spans(m):
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    res = import_traces([d / "export.jsonl"], d / "answers.jsonl")
    assert res.imported == len(traces)
    return d / "answers.jsonl", traces


def test_cluster_joins_the_most_similar_leader_and_keeps_numbers_apart():
    v = np.array([[1, 0, 0], [0.999, 0.0447, 0], [0, 1, 0], [0.995, 0.0999, 0], [0.999, 0.0447, 0]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    texts = ["SYNC-409 떠요", "SYNC-409 오류", "프린터", "SYNC-409 나와요", "SYNC-414 오류"]
    labels = TS.cluster(v, texts, 0.99, batch=2)  # batches of 2: leaders found across batches and inside one
    assert labels.tolist() == [0, 0, 2, 0, 4]  # 414 is not 409 however close the vectors
    assert TS.cluster(v, texts, 0.99, batch=512).tolist() == labels.tolist()


def test_choose_is_seeded_puts_flagged_first_and_top_takes_the_most_frequent():
    clusters = [TS.Cluster([i], count=c, flagged=f) for i, (c, f) in enumerate([(50, 0), (1, 0), (5, 2), (20, 0),
                                                                               (3, 0), (8, 1)])]
    a = [c.members[0] for c in TS.choose(clusters, 4, strategy="weighted", seed=1)]
    assert a == [c.members[0] for c in TS.choose(clusters, 4, strategy="weighted", seed=1)]
    assert a[:2] == [2, 5] and len(set(a)) == 4
    assert [c.members[0] for c in TS.choose(clusters, 4, strategy="top", seed=1)] == [2, 5, 0, 3]
    # weighted: the frequent cluster is drawn first most of the time
    firsts = [TS.choose([TS.Cluster([0], 50), TS.Cluster([1], 1)], 1, strategy="weighted", seed=s)[0].members[0]
              for s in range(200)]
    assert 180 < firsts.count(0) < 200
    with pytest.raises(InputError, match="--strategy"):
        TS.choose(clusters, 2, strategy="random", seed=1)


def test_sample_counts_the_traffic_and_writes_review_files(traffic, tmp_path):
    answers, traces = traffic
    out = tmp_path / "cand.jsonl"
    res = sample_traces(answers, 12, "it_helpdesk", out, first=["negative"])
    card = res.card
    assert card["traffic"]["traces"] == card["traffic"]["with_question"] == len(traces)
    assert card["traffic"]["distinct_questions"] == 71 + 90
    assert 71 <= card["traffic"]["clusters"] < 161  # paraphrases joined their question (not all: recall 0.87)
    assert card["n_kept"] == 12 and len(res.records) == 12 and not res.shortfall
    negatives = {m.question for m in traces if m.meta.negative}
    for r in res.records:
        meta = r["metadata"]
        assert meta["source"] == "trace" and meta["frequency"] == meta["trace"]["frequency"] >= 1
        assert meta["trace"]["picked_as"] == "first" and meta["trace"]["negative_feedback"] >= 1
        assert any(p in negatives for p, _ in meta["trace"]["phrasings"])
        g = meta["generation"]
        located = g["located"]
        assert located["status"] == g["evidence_status"] and located["method"] == "offline"
        if g["evidence_status"] == "located":  # written as evidence only with confidence
            assert r["type"] in ("meaning", "lexical") and r["evidence"] and r["relevant_doc_ids"]
            assert located["confidence"] >= located["threshold"] == 0.6 and g["verified"] is True
            assert r["evidence"] == [located["spans"][0]["best"]["text"]] and located["scope"] in ("hints", "corpus")
        else:
            assert not r["evidence"] and g["verified"] is False and located["reason"]
        assert [c["rank"] for c in meta["trace"]["contexts"]] == list(range(1, len(meta["trace"]["contexts"]) + 1))
    paths = {k: Path(v) for k, v in TS.write_sample(res, tmp_path / "again.jsonl").items()}
    assert paths["review"].read_text(encoding="utf-8-sig").splitlines()[0].startswith("query_id,status,type,question")
    assert json.loads((tmp_path / "cand.card.json").read_text(encoding="utf-8"))["kind"] == "traces"


def _sheet(path):
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    return rows


def _write_sheet(path, rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text("\ufeff" + buf.getvalue(), encoding="utf-8")


def test_review_turns_traffic_into_an_exam_that_validates_and_runs(traffic, tmp_path):
    from ragexam import api

    answers, _ = traffic
    out = tmp_path / "cand.jsonl"
    res = sample_traces(answers, 200, "it_helpdesk", out, strategy="top")  # every cluster (fewer than 200)
    card = res.card
    assert res.shortfall and card["n_kept"] + sum(card["rejections"].values()) == card["traffic"]["clusters"]
    recs = {r["query_id"]: r for r in res.records}
    rows = _sheet(tmp_path / "cand.review.csv")
    unlocated = [r for r in rows if recs[r["query_id"]]["metadata"]["generation"]["evidence_status"] == "unlocated"]
    located = [r for r in rows if r not in unlocated]
    assert len(unlocated) >= 2 and len(located) >= 10
    corpus = {d.doc_id: d.content for d in load_corpus("it_helpdesk").documents}
    for r in located[:-1]:
        r["status"] = "accept"
    located[-1]["status"] = "reject"
    unlocated[0].update(status="accept", type="out_of_corpus")  # the reviewer: the documents do not answer it
    unlocated[1].update(status="accept", evidence=json.dumps([corpus["hd_01"][:60]], ensure_ascii=False),
                        ground_truth="회사 밖에서는 SecureLink VPN으로 먼저 접속해야 합니다.")  # evidence and answer given
    for r in unlocated[2:]:
        r["status"] = "reject"
    _write_sheet(tmp_path / "cand.review.csv", rows)
    exam = tmp_path / "exam.jsonl"
    done = api.review_apply(out, exam)
    assert done.counts["accepted"] == len(located) - 1 + 2 and done.counts["rejected"] == 1 + len(unlocated) - 2
    final = {r["query_id"]: r for r in map(json.loads, exam.read_text(encoding="utf-8").splitlines())}
    ooc = final[unlocated[0]["query_id"]]
    assert (ooc["answerable"], ooc["type"]) == (False, "out_of_corpus") and "evidence" not in ooc
    pasted = final[unlocated[1]["query_id"]]
    assert pasted["relevant_doc_ids"] == ["hd_01"] and pasted["metadata"]["generation"]["verified"] is True
    assert all(r["metadata"]["source"] == "trace" and r["metadata"]["frequency"] >= 1 for r in final.values())
    uncertain = [r["query_id"] for r in located[:-1] if recs[r["query_id"]]["metadata"]["generation"]
                 ["evidence_status"] == "uncertain"]
    assert uncertain  # accepted: each took its proposed span, checked
    for qid in uncertain:
        g = final[qid]["metadata"]["generation"]
        assert g["evidence_choice"] == "proposed" and g["verified"] is True
        assert final[qid]["evidence"] == [recs[qid]["metadata"]["generation"]["located"]["spans"][0]["best"]["text"]]
    report = api.validate("it_helpdesk", exam)
    assert report.ok, report
    run = api.run_exam({"corpus": "it_helpdesk", "qa": str(exam), "retrievers": ["bm25"]}, record=False,
                       progress=False)
    assert run.result is not None


def test_an_accepted_question_without_evidence_is_refused_naming_its_line(traffic, tmp_path):
    from ragexam import api

    answers, _ = traffic
    out = tmp_path / "cand.jsonl"
    res = sample_traces(answers, 200, "it_helpdesk", out, strategy="top")
    rows = _sheet(tmp_path / "cand.review.csv")
    bad = next(i for i, r in enumerate(rows) if not res.records[i]["evidence"])
    rows[bad]["status"] = "accept"
    _write_sheet(tmp_path / "cand.review.csv", rows)
    with pytest.raises(InputError, match=rf"cand\.review\.csv:{bad + 2}: field 'evidence': this question has no "
                                         "evidence yet"):
        api.review_apply(out, tmp_path / "exam.jsonl")
    assert not (tmp_path / "exam.jsonl").exists()


def test_redact_and_paths(traffic, tmp_path):
    answers, _ = traffic
    with pytest.raises(InputError, match="--out"):
        sample_traces(answers, 3, "it_helpdesk", answers)
    with pytest.raises(InputError, match="--first"):
        sample_traces(answers, 3, "it_helpdesk", tmp_path / "c.jsonl", first=["thumbs"])
    f = tmp_path / "pii.jsonl"
    line = json.loads(answers.read_text(encoding="utf-8").splitlines()[0])
    line.update(question="제 메일 kim@daon.example 로 VPN-ERR-619 해결법 보내 주세요", answer="010-1234-5678로 연락드릴게요")
    f.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    res = sample_traces(f, 1, "it_helpdesk", tmp_path / "c.jsonl", redact=True)
    text = (tmp_path / "c.jsonl").read_text(encoding="utf-8") + (tmp_path / "c.rejects.jsonl").read_text("utf-8")
    assert "kim@daon.example" not in text and "010-1234-5678" not in text and "[email]" in text
    assert res.card["redacted"] == {"email": 2, "phone": 1}  # the question, its phrasing; the answer


def test_the_measured_threshold_and_evidence_figures_hold():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import traces_threshold as M

    nd = M.threshold_table(*M.pairs())
    row = next(r for r in nd["rows"] if r["threshold"] == TS.DEFAULT_THRESHOLD)
    assert (nd["same_pairs"], nd["different_pairs_same_digits"]) == (135, 4497)
    assert row["recall_guarded"] >= 0.86 and row["different_above_guarded"] <= 2
    assert row["different_above"] >= 20  # without the guard, different error codes merge
    table = M.evidence_table()
    ev = table["by_note"]["all"]
    assert ev["located agrees"] >= 48 and ev.get("located disagrees", 0) <= 1  # docs/measurements/traces.md
    assert ev.get("uncertain agrees", 0) >= 10 and ev["unlocated"] <= 9
    assert table["scopes"]["located in hints"] >= 48  # the traced documents first


def test_first_conditions_read_the_feedback_recorded_on_a_trace():
    low, neg = TS.parse_first(["faithfulness<0.5", "thumbs-down"])
    judged = TraceMeta("langfuse", "t", feedback=(Feedback("faithfulness", 0.4, None, "EVAL"),))
    assert low(judged) and not neg(judged) and not low(None)
    assert not low(TraceMeta("langfuse", "t", feedback=(Feedback("faithfulness", 0.5),)))
    assert TS.parse_first(["faithfulness<=0.5"])[0](TraceMeta("langfuse", "t", feedback=(Feedback("faithfulness",
                                                                                                   0.5),)))
    assert neg(TraceMeta("otel", "t", feedback=(Feedback("rating", None, "👎"),)))


def test_a_first_condition_no_trace_meets_is_said_with_the_names_the_traces_have(traffic, tmp_path):
    """T7: `--first 'faithfullness<0.5'` (no trace has that score) or `--first negative` on traffic without a thumbs
    down changed nothing and said nothing."""
    thumbs = TraceMeta("langfuse", "t", feedback=(Feedback("thumbs", 1.0), Feedback("faithfulness", 0.7)))
    conds = TS.parse_first(["faithfullness<0.5", "negative", "faithfulness<0.5", "thumbs<2"])
    assert [c(thumbs) for c in conds] == [False, False, False, True]
    notes = TS.first_notes(conds)
    assert notes[0] == ("--first faithfullness<0.5 picked nothing first: no trace has a feedback score named "
                        "'faithfullness' (did you mean 'faithfulness'?); the traces have: faithfulness, thumbs; the "
                        "sample is as without it")
    assert notes[1].startswith("--first negative picked nothing first: no trace has negative feedback")
    assert "no trace has faithfulness < 0.5 (its lowest is 0.700)" in notes[2] and len(notes) == 3
    # a later condition is counted even when an earlier one already flagged the trace
    later = TS.parse_first(["thumbs<2", "faithfulness<0.8"])
    assert any(c(thumbs) for c in later) and TS.first_notes(later) == []
    answers, _ = traffic
    res = sample_traces(answers, 3, "it_helpdesk", tmp_path / "c.jsonl", first=["faithfullness<0.5"])
    assert any(n.startswith("--first faithfullness<0.5 picked nothing first: no trace has a feedback score named "
                            "'faithfullness'; the traces have: thumbs") for n in res.card["notes"])
    res = sample_traces(answers, 3, "it_helpdesk", tmp_path / "d.jsonl", first=["negative"])
    assert not any("picked nothing first" in n for n in res.card["notes"])


def test_an_english_question_to_a_korean_corpus_rejected_as_wrong_language_is_rescuable(tmp_path):
    """T11: English traffic questions went to the rejects as wrong_language, the console called them "rescuable in
    review", and the review refused the rescue with the same wrong_language.  A traced set holds the users' own
    words: its review does not hold a question to the corpus's language."""
    from ragexam import api

    corpus = {d.doc_id: d.content for d in load_corpus("it_helpdesk").documents}
    asked = [("k1", "VPN-ERR-619 오류가 나면 어떻게 하나요?", corpus["hd_01"][:80]),
             ("e1", "How long is the projector lamp replacement cycle?", "About a year.")]
    answers = tmp_path / "traffic.jsonl"
    answers.write_text("".join(json.dumps({"query_id": q, "question": text, "answer": a, "contexts": []},
                                          ensure_ascii=False) + "\n" for q, text, a in asked), encoding="utf-8")
    out = tmp_path / "cand.jsonl"
    res = sample_traces(answers, 2, "it_helpdesk", out)
    reject = next(r for r in res.rejects if r["question"] == asked[1][1])
    assert reject["reason"] == "wrong_language"
    rows = _sheet(tmp_path / "cand.review.csv")
    for r in rows:
        r["status"] = "reject"
    rows.append({**{k: "" for k in rows[0]}, "query_id": f"trace_{reject['cid']}", "status": "accept",
                 "question": asked[1][1], "type": "out_of_corpus"})
    for r in rows:
        r["candidate"] = reject["cid"] if r["query_id"] == f"trace_{reject['cid']}" else ""
    _write_sheet(tmp_path / "cand.review.csv", rows)
    done = api.review_apply(out, tmp_path / "exam.jsonl")
    assert done.counts["rescued"] == 1
    final = [json.loads(x) for x in (tmp_path / "exam.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["question"] for r in final] == [asked[1][1]]
    assert final[0]["metadata"]["generation"]["rescued"] == "wrong_language"
    # a generated set's review still holds its questions to the corpus's language
    from ragexam.questions.review import CheckSettings

    assert CheckSettings.from_card({"kind": "traces"}).any_language and not CheckSettings.from_card({}).any_language


def test_the_sheet_note_speaks_the_corpus_language():
    """T12d: a Korean team's review sheet read `2695 trace(s), 7 phrasing(s), ...` in English."""
    rec = {"metadata": {"generation": {"located": {"confidence": 0.91, "scope": "hints"}, "evidence_status": "located"},
                        "trace": {"frequency": 2695, "distinct_phrasings": 7, "negative_feedback": 3}}}
    assert TS._note(rec, "ko") == "요청 2695건, 표현 7가지; 부정 피드백 3건: 답을 확인하세요; 근거 찾음, 확신도 0.91 (hints)"
    assert TS._note(rec, "en").startswith("2695 traces, 7 phrasings; 3 with negative feedback")
    rec["metadata"]["trace"].update(frequency=1, distinct_phrasings=1, negative_feedback=0)
    assert TS._note(rec).startswith("1 trace, 1 phrasing; evidence located")
