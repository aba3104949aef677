"""Issue 36, items 1, 2 and 5: `ragexam locate-evidence` (the locator, the located set, the model's confirmation),
its review (`review apply` on a located set, then `run` by evidence), and the measured numbers the docs quote."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sys
from pathlib import Path

import pytest

from test_cli_pipelines import cli  # main() in this process: (exit status, stdout, stderr)
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.schema import Document
from ragexam.errors import InputError
from ragexam.questions.locate import DEFAULT_THRESHOLD, LocateSettings, Locator, confidence

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "src" / "ragexam" / "data" / "samples"
OFFLINE = LocateSettings(semantic=False)

DOCS = [
    Document("vpn", "재택근무 중에는 SecureLink VPN으로 먼저 접속해야 합니다. 공용 와이파이에서 VPN-ERR-619가 뜨면 UDP 4500 "
                    "포트가 막힌 것입니다. 설정 > 연결 방식에서 TCP 443 모드를 선택한 뒤 다시 접속하면 됩니다.\n\n"
                    "해외 출장 중에는 출국 3영업일 전까지 헬프온에서 해외 VPN 사용 신청을 해야 합니다."),
    Document("print", "보안 출력은 사원증을 프린터에 태깅해야 인쇄됩니다. 보관된 문서는 12시간이 지나면 지워집니다.\n\n"
                      "토너가 떨어지면 층별 비품함에서 새 토너를 가져가 교체하십시오."),
    Document("mail", "메일함 기본 용량은 30GB입니다. 오래된 메일은 보관 메일함으로 옮기면 용량 계산에서 빠집니다."),
]


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _strip(name: str, path: Path, **changes) -> Path:
    """The bundled set ``name`` without its evidence (``changes``: ``{query_id: {field: value}}``)."""
    rows = [json.loads(x) for x in (SAMPLES / name / "qa.jsonl").read_text(encoding="utf-8").splitlines() if x]
    for r in rows:
        r.pop("evidence", None)
        r.update(changes.get(r["query_id"], {}))
    return _write(path, rows)


# -- the locator --------------------------------------------------------------------------------------------------


def test_the_sentence_that_holds_the_answer_is_located_with_its_runner_up():
    loc = Locator(DOCS, OFFLINE)
    (x,) = loc.locate("VPN-ERR-619 오류는 어떻게 고치나요?", "연결 방식을 TCP 443 모드로 바꾸고 다시 접속하면 됩니다.", ["vpn"])
    assert "TCP 443 모드를 선택한 뒤" in x.best.span.text and x.doc_id == "vpn"
    assert x.best.span.text == DOCS[0].content[x.best.span.start:x.best.span.end]  # a verbatim span
    assert x.runner_up is not None and not x.runner_up.span.text.startswith("설정")
    assert x.margin > 0 and x.confidence >= DEFAULT_THRESHOLD and x.scope == "document"


def test_a_document_that_does_not_hold_the_answer_gives_low_confidence():
    loc = Locator(DOCS, OFFLINE)
    answer = "연결 방식을 TCP 443 모드로 바꾸고 다시 접속하면 됩니다."
    (right,) = loc.locate("VPN 오류는?", answer, ["vpn"])
    (wrong,) = loc.locate("VPN 오류는?", answer, ["mail"])
    assert wrong.confidence < DEFAULT_THRESHOLD <= right.confidence


def test_an_answer_from_two_sentences_takes_a_window():
    loc = Locator(DOCS, OFFLINE)
    (x,) = loc.locate("공용 와이파이에서 VPN-ERR-619가 떠요", "UDP 4500 포트가 막힌 것이니 연결 방식에서 TCP 443 모드를 선택해 "
                      "다시 접속하세요.", ["vpn"])
    assert x.best.span.sentences == 2 and "UDP 4500" in x.best.span.text and "TCP 443" in x.best.span.text


def test_windows_stay_inside_a_paragraph_and_can_be_switched_off():
    loc = Locator(DOCS, OFFLINE)
    spans = loc.candidates("vpn")
    assert all("\n\n" not in sp.text for sp in spans) and any(sp.sentences == 2 for sp in spans)
    assert all(sp.sentences == 1 for sp in Locator(DOCS, LocateSettings(semantic=False, windows=False))
               .candidates("vpn"))


def test_codes_and_numbers_are_matched_exactly():
    loc = Locator(DOCS, OFFLINE)
    (x,) = loc.locate("보관 기간은?", "보관된 문서는 12시간이 지나면 지워집니다.", ["print"])
    assert "12시간" in x.best.span.text and x.best.features["code"] == 1.0


def test_a_long_sentence_is_cut_into_clause_windows():
    long = "이 표는 장비별 기준을 정리한 것으로, " + ", ".join(f"{i}번 장비는 {i * 10}분마다 점검하고" for i in range(1, 30)) + \
           ", 마지막 장비는 매일 교체합니다."
    loc = Locator([Document("long", long)], LocateSettings(semantic=False, max_chars=120))
    spans = loc.candidates("long")
    assert spans and all(len(sp.text) <= 120 for sp in spans)
    (x,) = loc.locate("17번 장비 점검 주기는?", "17번 장비는 170분마다 점검합니다.", ["long"])
    assert "17번 장비는 170분마다" in x.best.span.text


def test_the_whole_corpus_is_searched_when_no_document_is_given():
    loc = Locator(DOCS, OFFLINE)
    (x,) = loc.locate("메일함 용량은?", "기본 용량은 30GB입니다.", [])
    assert x.scope == "corpus" and x.doc_id == "mail" and "30GB" in x.best.span.text


def test_two_documents_each_hold_their_part_of_the_answer():
    loc = Locator(DOCS, OFFLINE)
    xs = loc.locate("재택 VPN과 보안 출력은?", "SecureLink VPN으로 먼저 접속하고, 출력은 사원증을 프린터에 태깅해야 인쇄됩니다.",
                    ["vpn", "print"])
    assert [x.doc_id for x in xs] == ["vpn", "print"] or [x.doc_id for x in xs] == ["print", "vpn"]
    assert all(x.needed for x in xs) and xs[1].part == "rest"


def test_english_documents_are_cut_into_sentences_and_located():
    docs = [Document("a", "The service desk is open from 8 am to 6 pm on weekdays. Password resets need a one-time code "
                          "sent to your phone. Locked accounts unlock by themselves after 30 minutes."),
            Document("b", "Laptops are replaced every four years. A lost laptop must be reported within 24 hours "
                          "through the help portal.")]
    loc = Locator(docs, OFFLINE)
    assert loc.language == "en" and len([sp for sp in loc.candidates("a") if sp.sentences == 1]) == 3
    (x,) = loc.locate("How long until a locked account opens again?", "It unlocks after 30 minutes.", ["a"])
    assert x.best.span.text == "Locked accounts unlock by themselves after 30 minutes."
    (x,) = loc.locate("I lost my laptop, what now?", "Report it within 24 hours on the help portal.", [])
    assert x.doc_id == "b" and x.best.span.text.startswith("A lost laptop") and x.confidence >= DEFAULT_THRESHOLD


def test_confidence_needs_coverage_and_margin():
    assert confidence(0.6, 0.3) == 1.0
    assert confidence(0.3, 0.3) == pytest.approx(0.5) and confidence(0.6, 0.15) == pytest.approx(0.5)
    assert confidence(0.6, 0.3, has_answer=False) == 0.5 and confidence(0.6, 0.3, matchable=0.25) == 0.5


def test_settings_are_checked():
    with pytest.raises(InputError, match="from 0 to 1"):
        LocateSettings(threshold=1.5)


# -- the located set ---------------------------------------------------------------------------------------------


def test_locate_evidence_makes_the_stripped_helpdesk_set_an_evidence_exam(tmp_path, capsys):
    qa = _strip("it_helpdesk", tmp_path / "qa.jsonl")
    before = hashlib.sha256(qa.read_bytes()).hexdigest()
    out = tmp_path / "located.jsonl"
    code, text, _ = cli(["locate-evidence", "--corpus", "it_helpdesk", "--qa", qa, "--out", out, "--no-e5"], capsys)
    assert code == 0 and hashlib.sha256(qa.read_bytes()).hexdigest() == before  # the input is never modified
    assert "located" in text and "근거" in text
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 71 and sum(1 for r in rows if r.get("answerable") is False) == 6
    for r in rows:
        if r.get("answerable") is False:
            assert "evidence" not in r and "evidence_status" not in r
            continue
        rec = r["metadata"]["located"]
        assert rec["method"] == "offline" and rec["threshold"] == DEFAULT_THRESHOLD and rec["spans"]
        if rec["status"] == "located":  # confident: evidence written, never below the threshold
            assert r["evidence"] and rec["confidence"] >= DEFAULT_THRESHOLD and "evidence_status" not in r
        else:  # not confident: no evidence, the status and the reason say why
            assert "evidence" not in r and r["evidence_status"] == rec["status"] and rec["reason"]
    card = json.loads((tmp_path / "located.card.json").read_text(encoding="utf-8"))
    assert card["format"] == "ragexam-located-card/1" and card["counts"]["out_of_corpus"] == 6
    code, text, _ = cli(["validate", "--corpus", "it_helpdesk", "--qa", out], capsys)
    located = sum(1 for r in rows if r.get("evidence"))
    assert code == (0 if located == 65 else 1)


def test_existing_evidence_is_kept_and_verified(tmp_path, capsys):
    rows = [{"query_id": "a", "question": "메일함 용량은?", "evidence": "메일함 기본 용량은 30GB", "relevant_doc_ids": ["mail"]},
            {"query_id": "b", "question": "토너는?", "evidence": "문서에 없는 문장", "relevant_doc_ids": ["print"]},
            {"query_id": "c", "question": "출장 VPN은?", "ground_truth": "출국 3영업일 전까지 해외 VPN 사용 신청을 해야 합니다."}]
    corpus = _write(tmp_path / "c.jsonl", [{"doc_id": d.doc_id, "content": d.content} for d in DOCS])
    qa = _write(tmp_path / "q.jsonl", rows)
    out = tmp_path / "o.jsonl"
    code, text, _ = cli(["locate-evidence", "--corpus", corpus, "--qa", qa, "--out", out, "--no-e5", "--json"], capsys)
    assert code == 0
    got = {r["query_id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert got["a"]["evidence"] == ["메일함 기본 용량은 30GB"] and got["a"]["metadata"]["located"]["verified"] is True
    assert got["b"]["evidence"] == ["문서에 없는 문장"]  # kept as is, flagged
    assert got["b"]["metadata"]["located"]["verified"] is False and got["b"]["metadata"]["located"]["missing"] == [1]
    c = got["c"]["metadata"]["located"]
    assert c["scope"] == "corpus" and "whole corpus" in c["reason"]
    assert got["c"]["relevant_doc_ids"] == ["vpn"] and "3영업일" in got["c"]["evidence"][0]
    data = json.loads(text)
    assert data["counts"]["kept"] == 1 and data["counts"]["kept_unverified"] == 1 and data["counts"]["located"] == 1


def test_outputs_are_checked_before_any_work(tmp_path, capsys):
    qa = _strip("ai_concepts", tmp_path / "qa.jsonl")
    code, _, err = cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", qa], capsys)
    assert code == 2 and "--qa" in err
    code, _, err = cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa], capsys)
    assert code == 2 and "--out" in err


def test_a_question_without_answer_key_is_never_confident_enough(tmp_path):
    from ragexam.questions.locate_set import locate_set

    qa = _write(tmp_path / "q.jsonl", [{"query_id": "a", "question": "보안 출력 문서는 얼마나 보관되나요?",
                                        "relevant_doc_ids": ["print"]}])
    corpus = _write(tmp_path / "c.jsonl", [{"doc_id": d.doc_id, "content": d.content} for d in DOCS])
    res = locate_set(corpus, qa, settings=OFFLINE)
    (q,) = res.questions
    assert q.status in ("uncertain", "unlocated") and "no answer key" in q.reason and q.confidence <= 0.5


# -- item 2: review of a located set, then run by evidence ---------------------------------------------------


def _paraphrased():
    """ai_concepts' keys rewritten by hand (benchmarks/data/locate): ``{query_id: {"ground_truth": key}}``."""
    path = ROOT / "benchmarks" / "data" / "locate" / "ai_concepts_paraphrased.jsonl"
    return {r["query_id"]: {"ground_truth": r["ground_truth"]} for r in
            map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def _sheet(path: Path):
    text = path.read_text(encoding="utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def _write_sheet(path: Path, rows) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text("\ufeff" + buf.getvalue(), encoding="utf-8")


def test_review_accept_pick_the_runner_up_edit_then_run_by_evidence(tmp_path, capsys):
    qa = _strip("ai_concepts", tmp_path / "qa.jsonl", **_paraphrased())
    out = tmp_path / "located.jsonl"
    code, _, _ = cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)
    assert code == 0
    rows = _sheet(tmp_path / "located.review.csv")
    by = {r["query_id"]: r for r in rows}
    assert set(rows[0]) >= {"proposed", "doc_id", "runner_up", "runner_up_doc", "evidence_status", "confidence"}
    uncertain = [r for r in rows if r["evidence_status"] == "uncertain"]
    confident = [r for r in rows if r["evidence_status"] == "located"]
    assert uncertain and confident and all(not r["evidence"] and r["proposed"] for r in uncertain)
    assert all(r["runner_up"] and r["runner_up_doc"] for r in rows)
    # every question without evidence (uncertain, or unlocated with a proposed span) accepted takes its proposal
    waiting = {r["query_id"] for r in rows if not r["evidence"] and r["proposed"]}
    # the decisions: accept everything, one uncertain question takes its runner-up, one gets an edited span, one is
    # rejected
    for r in rows:
        r["status"] = "accept"
    pick, edit, drop = uncertain[0]["query_id"], confident[0]["query_id"], rows[-1]["query_id"]
    by[pick]["evidence"] = by[pick]["runner_up"]
    corpus = {d.doc_id: d.content for d in load_corpus("ai_concepts")}
    doc = by[edit]["doc_id"].split()[0]
    by[edit]["evidence"] = corpus[doc].split(". ")[0]  # the document's first sentence, verbatim
    by[drop]["status"] = "reject"
    _write_sheet(tmp_path / "located.review.csv", rows)
    reviewed = tmp_path / "reviewed.jsonl"
    code, text, err = cli(["review", "apply", "--qa", out, "--out", reviewed, "--json"], capsys)
    assert code == 0, err
    res = json.loads(text)
    assert res["counts"]["rejected"] == 1 and res["counts"]["runner_up"] == 1 and res["counts"]["accepted"] == 11
    assert res["counts"]["proposed"] == len(waiting) - (1 if drop in waiting else 0) - 1
    final = {r["query_id"]: r for r in map(json.loads, reviewed.read_text(encoding="utf-8").splitlines())}
    assert drop not in final and len(final) == 11
    assert all(r["evidence"] and "evidence_status" not in r for r in final.values())
    assert final[pick]["metadata"]["located"]["choice"] == "runner_up"
    assert final[pick]["evidence"] == [by[pick]["runner_up"]]
    assert final[edit]["metadata"]["located"]["choice"] == "edited"
    code, text, err = cli(["run", "--corpus", "ai_concepts", "--qa", reviewed, "-r", "bm25", "--no-history", "--json",
                           "--n-resamples", "100", "--n-permutations", "100"], capsys)
    assert code == 0, err
    summary = json.loads(text)
    assert summary["config"]["relevance"] == "evidence" and summary["dataset"]["n_scored"] == 11


def test_review_refuses_an_edit_that_is_not_in_the_documents(tmp_path, capsys):
    qa = _strip("ai_concepts", tmp_path / "qa.jsonl")
    out = tmp_path / "located.jsonl"
    cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)
    rows = _sheet(tmp_path / "located.review.csv")
    rows[0]["status"] = "accept"
    rows[0]["evidence"] = "문서에 없는 말을 근거로 씁니다"
    _write_sheet(tmp_path / "located.review.csv", rows)
    code, _, err = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl"], capsys)
    assert code == 2 and "located.review.csv:2" in err and "field 'evidence'" in err and "occurs in no document" in err
    rows[0]["evidence"] = load_corpus("ai_concepts")["doc_010"].content.split(". ")[0]  # another question's document
    _write_sheet(tmp_path / "located.review.csv", rows)
    code, _, err = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl"], capsys)
    assert code == 2 and "none of the question's relevant documents" in err


def test_pending_uncertain_questions_stay_without_evidence(tmp_path, capsys):
    qa = _strip("ai_concepts", tmp_path / "qa.jsonl", **_paraphrased())
    out = tmp_path / "located.jsonl"
    cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)
    code, text, _ = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl", "--json"], capsys)
    res = json.loads(text)
    assert code == 0 and res["counts"]["pending_kept"] == 12 and res["counts"]["still_without_evidence"] > 0
    assert any("still have no evidence" in n for n in res["notes"])


def test_an_edit_in_a_row_left_pending_is_said_not_applied(tmp_path, capsys):
    """A pending row keeps what locate-evidence wrote (docs/evidence.md): an edit in its cells was dropped without
    a word ("0 edited")."""
    qa = _strip("ai_concepts", tmp_path / "qa.jsonl")
    out = tmp_path / "located.jsonl"
    cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)
    rows = _sheet(tmp_path / "located.review.csv")
    rows[0]["evidence"] = load_corpus("ai_concepts")[rows[0]["doc_id"].split()[0]].content.split(". ")[0]
    rows[1]["question"] = rows[1]["question"] + " (고침)"
    _write_sheet(tmp_path / "located.review.csv", rows)
    code, text, _ = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl", "--json"], capsys)
    res = json.loads(text)
    assert code == 0 and res["counts"]["edited"] == 0
    note = next(n for n in res["notes"] if "left pending had edited cells" in n)
    assert f"{rows[0]['query_id']} (evidence), {rows[1]['query_id']} (question)" in note and "set their status" in note
    # the sheet as written (no edit) says nothing of the kind
    code, text, _ = cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)
    code, text, _ = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl", "--json"], capsys)
    assert not any("left pending had edited cells" in n for n in json.loads(text)["notes"])


# -- the model's confirmation ------------------------------------------------------------------------------------


@pytest.fixture()
def support_stub():
    """A chat endpoint answering the span check: ``yes`` when the passage shares a third of the answer's bigrams."""
    sys.path.insert(0, str(Path(__file__).parent))
    from json_stub import json_server

    seen = []

    def handle(path, body, headers):
        user = body["messages"][-1]["content"]
        answer = user.split("\n")[1].split(":", 1)[1]
        passage = user.split("\n")[2].split(":", 1)[1]
        a = {answer[i:i + 2] for i in range(len(answer) - 1)}
        p = {passage[i:i + 2] for i in range(len(passage) - 1)}
        seen.append(body)
        verdict = "yes" if len(a & p) >= len(a) / 3 else "no"
        return 200, {"choices": [{"message": {"role": "assistant", "content": json.dumps({"supports": verdict})}}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 3}}

    base, shutdown = json_server(handle)
    yield base + "/v1", seen
    shutdown()


def test_a_model_confirms_spans_through_the_llm_layer_cached(tmp_path, capsys, support_stub):
    base, seen = support_stub
    qa = _strip("ai_concepts", tmp_path / "qa.jsonl")
    args = ["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--no-e5", "--model", "m", "--base-url", base,
            "--api-key", "x", "--cache-dir", tmp_path / "cache"]
    code, text, _ = cli(args + ["--dry-run", "--json"], capsys)
    plan = json.loads(text)
    assert code == 0 and plan["calls"] >= 12 and not seen  # the dry run sends nothing
    code, text, _ = cli(args + ["--out", tmp_path / "o.jsonl", "--json"], capsys)
    assert code == 0 and len(seen) == plan["calls"]
    assert seen[0]["messages"][0]["content"].startswith("문단이 질문의 답을")  # the corpus's language
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()]
    methods = {r["metadata"]["located"]["method"] for r in rows}
    assert methods == {"offline+llm"}
    assert all(c["status"] == "ok" and c["value"] in ("yes", "no") for r in rows for c in r["metadata"]["located"]
               ["checks"])
    card = json.loads((tmp_path / "o.card.json").read_text(encoding="utf-8"))
    assert card["model"] == "m" and card["this_run"]["usage"]["calls"] == plan["calls"]
    n = len(seen)
    code, _, _ = cli(args + ["--out", tmp_path / "o2.jsonl"], capsys)
    assert code == 0 and len(seen) == n  # every reply came from the cache


def test_failed_calls_leave_the_offline_decision_and_are_counted(tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).parent))
    from json_stub import json_server

    base, shutdown = json_server(lambda path, body, headers: (200, {"choices": [{"message": {"content": "not json"}}]}))
    try:
        qa = _strip("ai_concepts", tmp_path / "qa.jsonl")
        code, text, _ = cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--no-e5", "--model", "m",
                             "--base-url", base + "/v1", "--api-key", "x", "--cache-dir", tmp_path / "cache",
                             "--out", tmp_path / "o.jsonl", "--json", "--max-retries", "0"], capsys)
    finally:
        shutdown()
    data = json.loads(text)
    # E17: every check failed, so the model step produced nothing: exit 1 (it was 0), the reasons counted
    assert code == 1 and data["card"]["model_checks"]["failed"] == data["card"]["model_checks"]["questions"] == 12
    calls = data["card"]["model_checks"]["failed_calls"]["invalid_reply"]
    assert any(f"check failed for 12 of the 12 questions it was asked of (invalid_reply {calls} calls" in n
               for n in data["notes"])
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["metadata"]["located"]["method"] == "offline" for r in rows)
    assert all(c["status"] == "failed" for r in rows for c in r["metadata"]["located"]["checks"])
    assert calls == sum(len(r["metadata"]["located"]["checks"]) for r in rows)


# -- item 5: the measured numbers (benchmarks/bench_locate.py) --------------------------------------------------


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_locate

    return bench_locate


def test_bundled_sets_without_evidence_are_located_with_confidence(bench):
    """The issue's goal, no model: >= 90 % located with confidence, >= 95 % of those agree (the numbers are in
    docs/measurements/locate.md)."""
    data = bench.build(["bundled"], [])
    bench.locate_all(data, semantic=True)
    items = [it for _, items in data.values() for it in items]
    r = bench.rates(items, DEFAULT_THRESHOLD)
    assert r["n"] == 77
    assert r["located_share"] >= 0.90 and r["agreement"] >= 0.95, r
    # the threshold is the one the calibration half chooses (odd-numbered questions; the others are held out)
    assert bench.choose_threshold([it for it in items if it.calibration]) <= DEFAULT_THRESHOLD
    held = bench.rates([it for it in items if not it.calibration], DEFAULT_THRESHOLD)
    assert held["agreement"] >= 0.95


def test_confidence_means_what_it_says_on_held_out_sets(bench):
    """Paraphrased keys, long pages and the whole corpus: what is written as evidence still agrees >= 95 %; a
    document that does not hold the answer rarely yields a confident span."""
    data = bench.build(["paraphrased", "long-pages", "answers-only"], [])
    bench.locate_all(data, semantic=True)
    for name, (_, items) in data.items():
        r = bench.rates(items, DEFAULT_THRESHOLD)
        assert r["agreement"] is None or r["agreement"] >= 0.95, (name, r)
        wrong = bench.negative_rate(items, DEFAULT_THRESHOLD)
        assert wrong is None or wrong <= 0.15, (name, wrong)  # long pages: 6.2-10.8 % (docs/measurements/locate.md)


def test_review_apply_of_a_located_set_nobody_audited_reads_not_audited(tmp_path, capsys, monkeypatch):
    """The README's flow: locate, review apply (every row pending), run.  Nobody audited the set, so nothing bounds
    its junk: the written set and the run's card read "not audited" (never "junk at most 100%" from no label), and
    review apply says what it did to the evidence in its own terms, without a number for 0 questions."""
    from ragexam.questions.audit import audit_status

    qa = _strip("ai_concepts", tmp_path / "qa.jsonl")
    out = tmp_path / "located.jsonl"
    assert cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)[0] == 0
    reviewed = tmp_path / "reviewed.jsonl"
    code, text, err = cli(["review", "apply", "--qa", out, "--out", reviewed], capsys)
    assert code == 0, err
    assert "junk at most" not in text and "the set's audit: not audited" in text
    assert "the written set: not audited (12 not reviewed)" in text
    assert "Wrote 12 questions to " in text and ": 12 pending kept." in text
    assert "evidence: 12 pending: kept as ragexam located it" in text
    assert " 0 " not in text.replace(str(tmp_path), "")  # E: no number for 0 questions
    status = audit_status(reviewed)
    assert status.junk_high is None and status.text().startswith("not audited (review apply: 12 not reviewed")
    monkeypatch.setenv("COLUMNS", "250")
    code, text, err = cli(["run", "--corpus", "ai_concepts", "--qa", reviewed, "-r", "bm25", "--no-history",
                           "--relevance", "doc", "--n-resamples", "100", "--n-permutations", "100"], capsys)
    assert code == 0, err
    assert "audit     not audited (review apply: 12 not reviewed" in text and "junk at most" not in text
    code, text, err = cli(["check", "--qa", reviewed, "--max-junk", "0.5"], capsys)
    assert code == 1 and "FAIL junk <= 50%: not audited" in text
    code, text, err = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r2.jsonl", "--max-junk", "0.5"],
                          capsys)
    assert code == 1 and f"refused: {out.name} is not audited, and 12 of the 12 questions" in text
    assert "--sample" not in text and not (tmp_path / "r2.jsonl").exists()


# -- the reviewers' defects (exam E3, E9, E17, E19; traces T3) ----------------------------------------------------

HR = [
    Document("hr_04", "본인 결혼 시 5일, 자녀 결혼 시 1일의 경조휴가가 주어집니다.\n\n배우자, 본인 및 배우자의 부모가 사망한 경우 5일, "
                      "본인 및 배우자의 조부모 또는 형제자매가 사망한 경우 3일의 휴가를 사용할 수 있습니다.\n\n경조휴가는 경조사 발생일로부터 "
                      "30일 이내에 사용해야 하며, 휴일은 휴가 일수에 포함되지 않습니다."),
    Document("hr_05", "직원 본인이 결혼하는 경우 회사는 경조금 100만 원과 화환을 지원합니다. 자녀 결혼 시에는 50만 원을 지급합니다.\n\n"
                      "직원의 부모 또는 배우자의 부모가 사망한 경우 경조금 100만 원과 근조기, 장례용품 일체를 지원합니다.\n\n경조금은 경조사 "
                      "발생 후 60일 이내에 HR포털의 '경조 신청' 메뉴에서 증빙서류를 첨부하여 신청해야 합니다."),
    Document("hr_06", "임신 중인 직원은 출산 전후를 합하여 90일의 출산전후휴가를 사용할 수 있으며, 다태아의 경우 120일입니다. 출산 후에 "
                      "45일 이상이 확보되어야 합니다.\n\n배우자가 출산한 직원은 출산일로부터 90일 이내에 20일의 유급 배우자 출산휴가를 "
                      "사용할 수 있으며, 한 번 나누어 사용할 수 있습니다."),
    Document("trip", "해외 출장은 본부장의 사전 승인이 필요하며, 출국 14일 전까지 HR포털에서 신청합니다.\n\n귀국 후 7일 이내에 출장 보고서와 "
                     "경비 정산서를 제출해야 합니다."),
    Document("exp", "업무상 지출한 경비는 지출일로부터 30일 이내에 경비정산 시스템에 영수증을 첨부하여 청구해야 합니다.\n\n승인된 경비는 "
                    "매월 25일 급여와 함께 지급됩니다."),
]


def test_a_document_is_needed_by_what_its_span_holds_not_by_what_is_left_over():
    """E3: the second document's span was proposed (and became evidence on accept) whenever a quarter of the answer's
    terms were left over, though it held none of them; and a document holding the only "5일" was not needed."""
    loc = Locator(HR, OFFLINE)
    trip, exp = loc.locate("해외 출장 다녀와서 정산은 언제까지?", "귀국 후 일주일 안에 출장 보고서와 경비 정산서를 내야 합니다.",
                           ["trip", "exp"])
    assert trip.doc_id == "trip" and trip.needed and "귀국 후 7일" in trip.best.span.text
    assert exp.doc_id == "exp" and not exp.needed  # holds none of the rest: kept for the record, not proposed
    first, second = loc.locate("장인어른이 돌아가셨을 때 휴가와 조의금은 어떻게 되나요?",
                               "배우자의 부모 사망 시 경조휴가 5일과 경조금 100만 원, 근조기와 장례용품을 지원받습니다.",
                               ["hr_04", "hr_05"])
    assert first.doc_id == "hr_05" and second.doc_id == "hr_04" and second.needed and "5일" in second.best.span.text


def test_a_located_set_proposes_only_the_documents_the_answer_needs(tmp_path):
    from ragexam.questions.locate_review import sheet_rows
    from ragexam.questions.locate_set import locate_set

    corpus = _write(tmp_path / "c.jsonl", [{"doc_id": d.doc_id, "content": d.content} for d in HR])
    qa = _write(tmp_path / "q.jsonl", [{"query_id": "q18", "question": "해외 출장 다녀와서 정산은 언제까지?",
                                        "relevant_doc_ids": ["trip", "exp"],
                                        "ground_truth": "귀국 후 일주일 안에 출장 보고서와 경비 정산서를 내야 합니다.",
                                        "answerable": True}])
    (q,) = locate_set(corpus, qa, settings=OFFLINE).questions
    assert "0%" not in q.reason and "exp" not in q.reason
    (row,) = sheet_rows([q.record])
    assert row["doc_id"] == "trip" and "경비정산 시스템" not in row["proposed"]


def test_coverage_is_of_the_answer_itself_so_an_unrelated_answer_is_unlocated(tmp_path):
    """T3: coverage counted only the answer's words that occur in the corpus, so a lunch menu "held 94%" of itself
    in a backup-error span and went to review as uncertain (docs: unlocated under a fifth)."""
    from ragexam.questions.locate_set import locate_set

    qa = _write(tmp_path / "q.jsonl", [{"query_id": "q1", "question": "호텔 와이파이에서 VPN 연결하면 VPN-ERR-619가 떠요. "
                                                                      "어떻게 해결하나요?",
                                        "ground_truth": "오늘 점심 메뉴는 김치찌개와 제육볶음입니다. 맛있게 드세요."}])
    (q,) = locate_set("it_helpdesk", qa, settings=OFFLINE).questions
    assert q.status == "unlocated" and "nothing holds 20% of it" in q.reason
    best = q.locations[0].best
    assert best.coverage < 0.2 and f"holds {best.coverage:.0%} of the answer" in q.reason


def test_one_sentence_holding_the_whole_key_is_preferred_over_its_window():
    """E27's note (q10): the e5 similarity and the question's words made a two-sentence window win though its first
    sentence holds the whole key."""
    loc = Locator(HR, LocateSettings())
    (x,) = loc.locate("쌍둥이를 낳으면 출산휴가가 얼마나 되나요?", "다태아 출산이면 120일입니다.", ["hr_06"])
    assert x.best.span.sentences == 1 and x.best.span.text.endswith("다태아의 경우 120일입니다.")
    assert x.confidence >= DEFAULT_THRESHOLD


def test_an_unknown_relevant_document_is_named_and_counted(tmp_path, capsys):
    """E9: a relevant document not in the corpus was replaced by a found one with only "had no relevant document"."""
    corpus = _write(tmp_path / "c.jsonl", [{"doc_id": d.doc_id, "content": d.content} for d in HR])
    qa = _write(tmp_path / "q.jsonl", [
        {"query_id": "e1", "question": "쌍둥이 출산휴가는?", "relevant_doc_ids": ["hr_99"], "ground_truth": "다태아는 120일입니다.",
         "answerable": True},
        {"query_id": "e2", "question": "경조금은 언제까지 신청?", "ground_truth": "경조사 발생 후 60일 이내에 신청해야 합니다."}])
    out = tmp_path / "o.jsonl"
    code, text, _ = cli(["locate-evidence", "--corpus", corpus, "--qa", qa, "--out", out, "--no-e5"], capsys)
    assert code == 0
    assert "1 question named relevant documents that are not in the corpus: hr_99 (first: e1)" in text
    assert "1 question had no relevant document" in text  # e2 only: e1 had one, unknown
    card = json.loads((tmp_path / "o.card.json").read_text(encoding="utf-8"))
    assert card["unknown_doc_ids"] == {"questions": 1, "ids": ["hr_99"]}
    rec = {r["query_id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}["e1"]
    assert rec["metadata"]["located"]["unknown_doc_ids"] == ["hr_99"]
    assert "hr_99 are not in the corpus: the whole corpus was searched instead" in rec["metadata"]["located"]["reason"]


def test_the_sheet_and_the_reason_show_one_confidence():
    """E19: the sheet rounded the stored 0.165 to 0.17, the reason the unrounded 0.16499... to 0.16; a question
    without a key read "holds 88% of the answer"."""
    from ragexam.questions.locate import confidence_text

    assert confidence_text(0.16499999999, 0.6) == "0.17" == confidence_text(0.165)
    assert confidence_text(0.59996, 0.6) == "0.60" and confidence_text(0.5996, 0.6) == "0.5996"
    loc = Locator(HR, OFFLINE)
    from ragexam.questions.locate_review import sheet_rows
    from ragexam.questions.locate_set import located_question
    from ragexam.data.schema import Question

    q = Question("q11", "아내가 출산하면 남편은 휴가를 며칠 받나요?", ("hr_06",), ground_truth="twenty days of paid spousal leave, "
                 "within 90 days of the birth")
    lq = located_question(q, loc.locate(q.question, q.ground_truth, ["hr_06"]), OFFLINE, scope="documents")
    (row,) = sheet_rows([lq.record])
    assert lq.status != "located" and f"confidence {row['confidence']} < 0.6" in lq.reason
    nokey = Question("k", "보안 출력 문서는 얼마나 보관되나요?", ("hr_06",))
    lq = located_question(nokey, loc.locate(nokey.question, None, ["hr_06"]), OFFLINE, scope="documents")
    assert "of the answer" not in lq.reason and "of the question's words" in lq.reason and "no answer key" in lq.reason


def test_a_located_set_without_its_card_is_reviewed_as_a_located_set(tmp_path, capsys):
    """E7: the kind came only from the card: a located set and its sheet copied without located.card.json were
    reviewed as a generated set (an accepted uncertain row did not take its proposed span, a pending row's edit was
    applied).  The records' metadata.located tell the kind too; the sheet means the same with or without the card,
    and a note says how the kind was told."""
    import shutil

    qa = _strip("ai_concepts", tmp_path / "qa.jsonl", **_paraphrased())
    out = tmp_path / "located.jsonl"
    assert cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)[0] == 0
    rows = _sheet(tmp_path / "located.review.csv")
    uncertain = next(r for r in rows if r["evidence_status"] == "uncertain")
    uncertain["status"] = "accept"
    edited = next(r for r in rows if r["evidence_status"] == "located")
    edited["evidence"] = load_corpus("ai_concepts")[edited["doc_id"].split()[0]].content.split(". ")[0]
    _write_sheet(tmp_path / "located.review.csv", rows)
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(out, bare / "located.jsonl")
    shutil.copy(tmp_path / "located.review.csv", bare / "located.review.csv")
    results = []
    for folder in (tmp_path, bare):
        code, text, err = cli(["review", "apply", "--qa", folder / "located.jsonl", "--out", folder / "r.jsonl",
                               "--corpus", "ai_concepts", "--json"], capsys)
        assert code == 0, err
        results.append((json.loads(text), (folder / "r.jsonl").read_text(encoding="utf-8")))
    (with_card, written), (without, written_bare) = results
    assert written_bare == written and without["kind"] == with_card["kind"] == "located"
    assert without["counts"] == with_card["counts"] and with_card["counts"]["proposed"] == 1
    final = {r["query_id"]: r for r in map(json.loads, written_bare.splitlines())}
    assert final[uncertain["query_id"]]["evidence"] and final[uncertain["query_id"]]["metadata"]["located"]
    assert not any("no card" in n for n in with_card["notes"])
    assert any("has no card (located.card.json)" in n and "metadata.located" in n for n in without["notes"])
    # a sheet without a located set's columns on a located set: said
    plain = [{k: v for k, v in r.items() if k not in ("evidence_status", "proposed", "runner_up")} for r in rows]
    _write_sheet(bare / "located.review.csv", plain)
    code, text, err = cli(["review", "apply", "--qa", bare / "located.jsonl", "--out", bare / "r2.jsonl", "--corpus",
                           "ai_concepts", "--json"], capsys)
    assert code == 0, err
    assert any("none of a located set's columns" in n for n in json.loads(text)["notes"])


def test_an_edited_relevant_doc_ids_cell_is_applied_when_its_ids_are_documents(tmp_path, capsys):
    """E13: the relevant_doc_ids column was display-only -- an edit was ignored without a word while the error said
    "add the document to relevant_doc_ids".  An accepted row's cell now becomes the question's relevant documents
    (each checked to be a document of the corpus), before its evidence is checked against them."""
    qa = _strip("ai_concepts", tmp_path / "qa.jsonl")
    out = tmp_path / "located.jsonl"
    cli(["locate-evidence", "--corpus", "ai_concepts", "--qa", qa, "--out", out, "--no-e5"], capsys)
    rows = _sheet(tmp_path / "located.review.csv")
    rows[0]["status"] = "accept"
    rows[0]["evidence"] = load_corpus("ai_concepts")["doc_010"].content.split(". ")[0]
    _write_sheet(tmp_path / "located.review.csv", rows)
    code, _, err = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl"], capsys)
    assert code == 2 and "add the document to relevant_doc_ids" in err
    had = rows[0]["relevant_doc_ids"]
    rows[0]["relevant_doc_ids"] = had + " doc_999"
    _write_sheet(tmp_path / "located.review.csv", rows)
    code, _, err = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl"], capsys)
    assert code == 2 and "field 'relevant_doc_ids'" in err and "doc_999: not a document of the corpus" in err
    rows[0]["relevant_doc_ids"] = had + " doc_010"
    rows[1]["relevant_doc_ids"] = "doc_010"  # left pending: not applied, said
    _write_sheet(tmp_path / "located.review.csv", rows)
    code, text, err = cli(["review", "apply", "--qa", out, "--out", tmp_path / "r.jsonl", "--json"], capsys)
    assert code == 0, err
    res = json.loads(text)
    final = {r["query_id"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines())}
    first = final[rows[0]["query_id"]]
    assert first["relevant_doc_ids"] == had.split() + ["doc_010"]
    assert first["metadata"]["located"]["edited"] == ["evidence", "relevant_doc_ids"]
    assert any(n.startswith("relevant documents changed in located.review.csv: " + rows[0]["query_id"])
               for n in res["notes"])
    assert any("left pending had an edited relevant_doc_ids cell" in n and rows[1]["query_id"] in n
               for n in res["notes"])
    assert final[rows[1]["query_id"]]["relevant_doc_ids"] != ["doc_010"]
