"""The question generator against a local OpenAI-compatible stub: good questions and every kind of bad one.

Each test scripts the stub's replies per passage (see ``qgen_stub.py``) and checks that exactly the
good questions survive, that every rejection is counted under its reason, and that the written set
validates.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from qgen_stub import GenRequest, start_gen_stub, write_docs
from ragexam import generate, generate_plan as plan
from ragexam.data.normalization import normalize
from ragexam.errors import InputError

DOCS = [
    {"doc_id": "d1", "title": "VPN 접속", "content":
        "회사 밖에서 사내 시스템을 쓰려면 SecureLink VPN으로 먼저 접속해야 합니다. 로그인에는 OTP 6자리 번호가 필요하며, "
        "번호는 '다온 OTP' 앱이 30초마다 새로 만들어 줍니다.\n\n"
        "VPN-ERR-619 오류가 나면 설정 > 연결 방식에서 'TCP 443 모드'를 선택한 뒤 다시 접속합니다. 해외에서 접속하려면 "
        "출국 3영업일 전까지 해외 VPN 사용 신청을 해야 합니다. 자세한 내용은 헬프온 게시판에서 확인할 수 있습니다."},
    {"doc_id": "d2", "title": "프린터", "content":
        "보안 인쇄를 쓰면 출력물은 사원증을 복합기에 댄 사람에게만 나옵니다. 대기 중인 출력물은 24시간이 지나면 자동으로 "
        "삭제됩니다.\n\n복합기에 PRN-0x4E가 표시되면 토너가 부족하다는 뜻이므로 층별 비품함에서 새 토너를 꺼내 교체합니다."},
    {"doc_id": "d3", "title": "계정", "content":
        "비밀번호는 90일마다 바꿔야 하며, 최근에 쓴 비밀번호 5개는 다시 쓸 수 없습니다. 로그인에 5번 연속 실패하면 계정이 "
        "30분 동안 잠깁니다.\n\n잠긴 계정은 30분을 기다리거나 서비스데스크(내선 2000)에 전화해 바로 풀 수 있습니다. "
        "자세한 내용은 헬프온 게시판에서 확인할 수 있습니다."},
    {"doc_id": "d4", "title": "화상회의", "content":
        "화상회의는 온미팅으로 엽니다. 회의실 예약은 다온포털의 회의실 메뉴에서 하며, 예약 시간이 10분 지나도 입실하지 "
        "않으면 예약이 자동으로 취소됩니다."},
]
CONTENT = {d["doc_id"]: d["content"] for d in DOCS}


def item(q, a, ev, t="meaning"):
    return {"question": q, "answer": a, "evidence": ev, "type": t}


GOOD = {
    "d1": [item("VPN-ERR-619 오류가 뜨면 어떻게 해결하나요?", "TCP 443 모드로 바꿔 다시 접속합니다.",
                ["VPN-ERR-619 오류가 나면 설정 > 연결 방식에서 'TCP 443 모드'를 선택한 뒤 다시 접속합니다"], "lexical")],
    "d2": [item("출력 버튼을 눌렀는데 제 인쇄물을 남이 가져갈까 걱정돼요. 괜찮을까요?", "사원증을 복합기에 댄 사람에게만 나옵니다",
                ["출력물은 사원증을 복합기에 댄 사람에게만 나옵니다"])],
    "d3": [item("암호를 몇 번 틀리면 로그인이 막히나요?", "5번 연속 실패하면 30분 동안 잠깁니다.",
                ["로그인에 5번 연속 실패하면 계정이 30분 동안 잠깁니다"])],
    "d4": [item("회의실을 잡아 놓고 늦게 가면 어떻게 되나요?", "예약 시간이 10분 지나도 입실하지 않으면 예약이 자동으로 취소됩니다",
                ["예약 시간이 10분 지나도 입실하지 않으면 예약이 자동으로 취소됩니다"])],
}
UNSUPPORTED_ANSWER = "내선 3000번으로 전화하면 됩니다."
BAD = {
    "d1": [
        ("evidence_not_found", item("VPN 쓰려면 관리자 권한이 필요한가요?", "관리자 권한이 필요합니다.",
                                    ["접속 전에 반드시 노트북의 관리자 권한을 먼저 받아 두어야 합니다"])),
        ("evidence_paraphrased", item("인증 번호는 얼마나 자주 바뀌나요?", "30초마다 바뀝니다.",
                                      ["번호는 '다온 OTP' 앱이 30초마다 새로 만듭니다"])),
        ("duplicate", item("VPN-ERR-619 오류가 뜨면 어떻게 해결해야 하나요?", "TCP 443 모드로 바꿉니다.",
                           ["VPN-ERR-619 오류가 나면 설정 > 연결 방식에서 'TCP 443 모드'를 선택한 뒤 다시 접속합니다"])),
        ("evidence_not_in_passage", item("토너가 떨어지면 어디서 새 걸 받나요?", "비품함에서 꺼냅니다.",
                                         ["토너가 부족하다는 뜻이므로 층별 비품함에서 새 토너를 꺼내 교체합니다"])),
        ("evidence_too_short", item("인증 앱 번호는 몇 초짜리예요?", "30초", ["30초"])),
    ],
    "d2": [
        ("wrong_language", item("What does PRN-0x4E on the printer mean?", "The toner is low.",
                                ["복합기에 PRN-0x4E가 표시되면 토너가 부족하다는 뜻이므로"], "lexical")),
        ("answer_declines", item("토너 교체 비용은 누가 내나요?", "문서에 나와 있지 않습니다.",
                                 ["층별 비품함에서 새 토너를 꺼내 교체합니다"])),
        ("copies_evidence", item("대기 중인 출력물은 24시간이 지나면 자동으로 삭제되나요?", "네, 삭제됩니다.",
                                 ["대기 중인 출력물은 24시간이 지나면 자동으로 삭제됩니다"])),
        ("malformed_item", {"question": 42, "answer": "x", "evidence": []}),
    ],
    "d3": [
        ("refers_to_passage", item("위 글에 따르면 비밀번호는 며칠마다 바꿔야 하나요?", "90일마다 바꿉니다.",
                                   ["비밀번호는 90일마다 바꿔야 하며"])),
        ("answer_unsupported", item("잠긴 계정을 바로 풀려면 어디로 전화하나요?", UNSUPPORTED_ANSWER,
                                    ["서비스데스크(내선 2000)에 전화해 바로 풀 수 있습니다"])),
        ("no_evidence", item("비밀번호를 예전 것으로 다시 써도 되나요?", "최근 5개는 안 됩니다.", [])),
        ("empty_question", item("  ", "x", ["비밀번호는 90일마다 바꿔야 하며"])),
    ],
}


@pytest.fixture
def stub():
    s, shutdown = start_gen_stub()
    s.unsupported.add(UNSUPPORTED_ANSWER)
    yield s
    shutdown()


@pytest.fixture
def corpus(tmp_path):
    return write_docs(tmp_path / "docs.jsonl", DOCS)


def run(stub, corpus, tmp_path, **kw):
    kw.setdefault("cache_dir", tmp_path / "cache")
    kw.setdefault("cite", "spans")  # these scripts answer passage prompts (the focus mode: test_generate_focus.py)
    return generate(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", **kw)


def by_doc(script):
    def s(req: GenRequest):
        return {"questions": script(req.doc_ids[0], req)}
    return s


def test_only_good_questions_survive_and_each_rejection_is_counted_under_its_reason(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d] + [b for _, b in BAD.get(d, [])])
    out = tmp_path / "set" / "qa.jsonl"
    res = run(stub, corpus, tmp_path, n=50, mix="meaning=1", per_call=10, max_passes=1, out=out)

    requested = {parse_doc(b) for b in stub.generation_bodies()}
    assert requested == {"d1", "d2", "d3", "d4"}  # one pass, one call per section (4 documents of one section)
    kept = {r["question"] for r in res.records}
    assert kept == {g["question"] for d in GOOD for g in GOOD[d]}
    expected = Counter(reason for d in BAD for reason, _ in BAD[d])
    assert Counter(r["reason"] for r in res.rejects) == expected
    assert res.card["rejections"] == dict(expected)
    assert res.card["n_kept"] == 4 and res.shortfall == 46
    assert res.card["stopped"] == "max_passes (1) reached"

    # the wording of each reason's detail says what the model did
    details = {r["reason"]: r["detail"] for r in res.rejects}
    assert "d2" in details["evidence_not_in_passage"]
    assert "bigram Jaccard" in details["duplicate"]
    assert "위 글" in details["refers_to_passage"]
    # the paraphrase was told apart from the invention by its longest verbatim piece
    assert details["evidence_paraphrased"].endswith("characters") and "not in the passage verbatim" in \
        details["evidence_not_found"]

    # the set validates against the corpus, with no warning, and every evidence span is where it says
    from ragexam.data.validation import validate

    report = validate(corpus, out)
    assert report.ok and not report.problems, [str(p) for p in report.problems]
    for r in res.records:
        g = r["metadata"]["generation"]
        for span in g["evidence_spans"]:
            text = CONTENT[span["doc_id"]][span["start"]:span["end"]]
            assert normalize(text) == normalize(r["evidence"][span["evidence"] - 1])
    # an extractive answer needs no LLM call; an abstractive one was judged
    checks = {r["question"]: r["metadata"]["generation"]["answer_check"]["method"] for r in res.records}
    assert checks[GOOD["d2"][0]["question"]] == "contained"
    assert checks[GOOD["d1"][0]["question"]] == "judge"
    judged = {judge_question(b) for b in stub.judge_bodies("faithfulness")}
    assert GOOD["d2"][0]["question"] not in judged and GOOD["d1"][0]["question"] in judged
    # files next to the set
    for name in ("qa.rejects.jsonl", "qa.card.json", "qa.review.csv"):
        assert (out.parent / name).exists()
    lines = (out.parent / "qa.rejects.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == sum(expected.values())


def parse_doc(body):
    from qgen_stub import parse_generation

    return parse_generation(body).doc_ids[0]


def judge_question(body):
    from qgen_stub import judge_inputs

    return judge_inputs(body)[0]


def test_types_are_measured_not_taken_from_the_model(stub, corpus, tmp_path):
    # the model calls every question "meaning"; the one quoting a code of its evidence is measured lexical
    stub.script = by_doc(lambda d, req: [dict(g, type="meaning") for g in GOOD[d]])
    res = run(stub, corpus, tmp_path, n=50, mix="meaning=1", per_call=10, max_passes=1)
    types = {r["question"]: (r["type"], r["metadata"]["generation"]) for r in res.records}
    t, g = types[GOOD["d1"][0]["question"]]
    assert t == "lexical" and g["model_type"] == "meaning"
    assert g["anchors"] == ["vpn-err-619"] and g["style"] == "lexical"
    t, g = types[GOOD["d3"][0]["question"]]
    assert t == "meaning" and g["anchors"] == [] and 0 <= g["overlap"] < 0.7
    assert all(r["metadata"]["generation"]["overlap_unit"] == "kiwi" for r in res.records)


def test_out_of_corpus_candidates_are_searched_and_judged(stub, corpus, tmp_path):
    answered = "VPN-ERR-619 오류는 어떻게 고치나요?"
    stub.in_corpus.add(answered)
    good = {"d1": "사내 주차장 월 정기 등록은 어떻게 하나요?", "d2": "법인카드 한도를 올리려면 누구 승인이 필요한가요?",
            "d3": "연차 휴가는 1년에 며칠 쓸 수 있나요?", "d4": "출장 일비는 하루에 얼마씩 나오나요?"}

    def script(d, req):
        items = [item(good[d], "", [], "out_of_corpus")]
        if d == "d1":
            items += [item(answered, "", [], "out_of_corpus"),
                      item("OTP 번호는 몇 초마다 바뀌나요?", "", ["30초마다 새로 만들어 줍니다"], "out_of_corpus")]
        return items

    stub.script = by_doc(script)
    out = tmp_path / "ooc.jsonl"
    res = run(stub, corpus, tmp_path, n=40, mix="out_of_corpus=1", per_call=10, max_passes=1, out=out)
    assert {r["question"] for r in res.records} == set(good.values())
    assert all(r["answerable"] is False and r["type"] == "out_of_corpus" and "evidence" not in r
               and r["ground_truth"] == "문서에서 찾을 수 없습니다." for r in res.records)
    assert Counter(r["reason"] for r in res.rejects) == {"answered_in_corpus": 2}
    details = sorted(r["detail"] for r in res.rejects)
    assert "judged 5 of 5" in details[1] and "occurs in d1" in details[0]
    # the LLM check saw the top sections the retriever found for the question
    g = next(r for r in res.records if r["question"] == good["d1"])["metadata"]["generation"]["ooc_check"]
    assert g["retriever"] == "bm25" and g["limit"] == 3 and g["max"] == 1 and g["top"]
    cr = [b for b in stub.judge_bodies("context_relevance") if judge_question(b) == answered]
    assert len(cr) == 1 and "SecureLink VPN" in cr[0]["messages"][1]["content"]
    from ragexam.data.validation import validate

    # every record is well-formed; a set of out-of-corpus questions alone gives `run` nothing to retrieve, and
    # validate says so (issue 36: validate predicts run)
    report = validate(corpus, out)
    assert [p.kind for p in report.errors] == ["run_would_refuse"]
    assert "nothing to retrieve" in report.errors[0].message


def test_malformed_replies_get_feedback_then_count_as_rejected(stub, corpus, tmp_path):
    def script(req):
        d = req.doc_ids[0]
        if d == "d1":
            return "질문을 만들었습니다! 마음에 드셨으면 좋겠어요."  # never JSON
        if d == "d2" and req.retry == 0:
            return '{"questions": [{"question": "잘린'  # broken once, then fine
        if d == "d3" and req.retry == 0:
            return {"items": GOOD[d]}  # wrong envelope once
        return {"questions": GOOD[d]}

    stub.script = script
    res = run(stub, corpus, tmp_path, n=50, mix="meaning=1", per_call=10, max_passes=1, max_attempts=3,
              prompt_language="ko")
    assert {r["question"] for r in res.records} == {GOOD[d][0]["question"] for d in ("d2", "d3", "d4")}
    assert Counter(r["reason"] for r in res.rejects) == {"malformed_reply": 1}
    bad = res.rejects[0]
    assert bad["detail"].startswith("invalid_json") and "after 3 attempts" in bad["detail"]
    assert len(bad["errors"]) == 3 and bad["reply"].startswith("질문을 만들었습니다")
    d1 = [b for b in stub.generation_bodies() if parse_doc(b) == "d1"]
    assert len(d1) == 3  # three attempts, each with the earlier replies and the feedback
    assert d1[-1]["messages"][-1]["role"] == "user" and "이전 응답을 사용할 수 없습니다" in d1[-1]["messages"][-1]["content"]
    d3 = [b for b in stub.generation_bodies() if parse_doc(b) == "d3"]
    assert len(d3) == 2 and '"questions"' in d3[1]["messages"][-1]["content"]


def test_a_truncated_reply_is_asked_again_with_more_room(stub, corpus, tmp_path):
    def script(req):
        if req.retry == 0 and req.doc_ids[0] == "d1":
            return ('{"questions": [{"question": "VPN', "length")
        return {"questions": GOOD[req.doc_ids[0]]}

    stub.script = script
    res = run(stub, corpus, tmp_path, n=50, mix="meaning=1", per_call=10, max_passes=1, max_tokens=500)
    assert len(res.records) == 4 and not res.rejects
    d1 = [b for b in stub.generation_bodies() if parse_doc(b) == "d1"]
    assert [b["max_tokens"] for b in d1] == [500, 1000]


def test_failed_calls_are_counted_not_cached_and_tried_again(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d])
    stub.fail = {"d2"}
    kw = dict(n=50, mix="meaning=1", per_call=10, max_passes=1, max_retries=0)
    first = run(stub, corpus, tmp_path, **kw)
    assert Counter(r["reason"] for r in first.rejects) == {"call_failed": 1}
    assert first.rejects[0]["detail"].startswith("server_error")
    assert len(first.records) == 3
    before = len(stub.generation_bodies())
    stub.fail = set()
    second = run(stub, corpus, tmp_path, **kw)
    again = stub.generation_bodies()[before:]
    assert [parse_doc(b) for b in again] == ["d2"]  # only the failed call is made again
    assert len(second.records) == 4 and not second.rejects


def test_a_rerun_calls_nothing_and_writes_the_same_files(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d] + [b for _, b in BAD.get(d, [])])
    kw = dict(n=6, per_call=10, mix="meaning=0.5,lexical=0.5")
    first = run(stub, corpus, tmp_path, out=tmp_path / "a.jsonl", **kw)
    n = len(stub.requests)
    second = run(stub, corpus, tmp_path, out=tmp_path / "b.jsonl", **kw)
    assert len(stub.requests) == n
    for suffix in (".jsonl", ".rejects.jsonl", ".review.csv"):
        assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    assert second.card["this_run"]["usage"]["generation"]["calls"] == 0
    assert second.card["this_run"]["usage"]["generation"]["cached"] == first.card["this_run"]["usage"]["generation"][
        "calls"]


def test_dry_run_counts_the_calls_and_sends_nothing(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d])
    kw = dict(n=50, mix="meaning=1", per_call=10, max_passes=1, cache_dir=tmp_path / "cache", cite="spans")
    p = plan(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", **kw)
    assert stub.requests == []
    assert (p.next_pass, p.generation_calls, p.generation_cached, p.check_calls_exact) == (1, 4, 0, False)
    # 4 calls x 10 questions x 2.5 check calls expected per candidate (critic, reader, half a third)
    assert p.check_calls == 100 and p.est_prompt_tokens > 0 and p.est_cost == "unknown"
    run(stub, corpus, tmp_path, **kw)
    assert len(stub.generation_bodies()) == p.generation_calls
    p2 = plan(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", **kw)
    assert p2.next_pass is None and p2.generation_calls == 0 and p2.cached_passes == 1 and p2.kept_so_far == 4
    p3 = plan(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", price="0.5,1.5" and (0.5, 1.5),
              **dict(kw, cache_dir=tmp_path / "empty"))
    assert isinstance(p3.est_cost, float) and p3.est_cost > 0
    # the dry run refuses the output path the run would refuse (it passed, and only the real run stopped)
    with pytest.raises(InputError, match="would replace|is the file"):
        plan(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", out=corpus, **kw)
    assert not list(tmp_path.glob("*.rejects.jsonl"))


def test_max_calls_is_never_exceeded(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d] + [b for _, b in BAD.get(d, [])])
    res = run(stub, corpus, tmp_path, n=40, per_call=10, mix="meaning=1", max_calls=3)
    assert 1 <= len(stub.requests) <= 3
    assert res.card["stopped"] == "max_calls (3) reached"
    assert res.card["this_run"]["usage"]["generation"]["calls"] + res.card["this_run"]["usage"].get(
        "checks", {}).get("calls", 0) == len(stub.requests)


def test_budget_needs_a_price_and_is_checked_before_any_call(stub, corpus, tmp_path):
    with pytest.raises(InputError, match="--budget needs a price"):
        run(stub, corpus, tmp_path, n=5, budget=0.01)
    assert stub.requests == []
    stub.script = by_doc(lambda d, req: GOOD[d])
    tiny = run(stub, corpus, tmp_path, n=40, mix="meaning=1", per_call=10, budget=0.0005, price=(1.0, 1.0))
    assert tiny.card["stopped"] == "budget ($0.0005) reached" and stub.requests == []  # not even one call fits
    res = run(stub, corpus, tmp_path, n=40, mix="meaning=1", per_call=10, budget=0.004, price=(1.0, 1.0),
              max_passes=1)
    assert len(stub.generation_bodies()) == 1  # the estimate of one call (~0.0025) fits, two do not
    assert res.card["stopped"] == "max_passes (1) reached"
    spent = sum(u["cost_usd"] for u in res.card["this_run"]["usage"].values())
    assert 0 < spent <= 0.004


def test_a_bad_output_path_fails_before_any_call(stub, corpus, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="--out"):
        run(stub, corpus, tmp_path, n=5, out=tmp_path / "file" / "qa.jsonl")
    with pytest.raises(InputError, match="--out"):
        run(stub, corpus, tmp_path, n=5, out=tmp_path)
    assert stub.requests == []


def test_a_kind_the_user_adds_keeps_its_name(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d] if req.kind == "procedure" else [])
    res = run(stub, corpus, tmp_path, n=50, mix="procedure=1", per_call=10, max_passes=1,
              kinds={"procedure": "여러 단계로 된 절차를 묻는 질문입니다."})
    assert {r["type"] for r in res.records} == {"procedure"} and len(res.records) == 4
    user = stub.generation_bodies()[0]["messages"][1]["content"]
    assert '여러 단계로 된 절차를 묻는 질문입니다. (type: "procedure")' in user
    assert res.card["mix"]["procedure"] == {"target": 50, "achieved": 4}
    with pytest.raises(InputError, match="unknown kind 'howto'"):
        run(stub, corpus, tmp_path, n=5, mix="howto=1")


def test_ambiguous_evidence_is_joined_or_dropped_as_the_user_chooses(stub, corpus, tmp_path):
    shared = item("더 자세한 안내는 어디서 찾아보나요?", "헬프온 게시판에서 확인할 수 있습니다",
                  ["자세한 내용은 헬프온 게시판에서 확인할 수 있습니다"])
    stub.script = by_doc(lambda d, req: [shared] if d == "d1" else GOOD[d])
    kw = dict(n=50, mix="meaning=1", per_call=10, max_passes=1)
    joined = run(stub, corpus, tmp_path, **kw)
    rec = next(r for r in joined.records if r["question"] == shared["question"])
    assert rec["relevant_doc_ids"] == ["d1", "d3"]
    assert rec["metadata"]["generation"]["joined_doc_ids"] == ["d3"]
    assert {s["doc_id"]: s["shown"] for s in rec["metadata"]["generation"]["evidence_spans"]} == {"d1": True,
                                                                                                   "d3": False}
    dropped = run(stub, corpus, tmp_path, ambiguous="drop", **kw)
    assert shared["question"] not in {r["question"] for r in dropped.records}
    assert Counter(r["reason"] for r in dropped.rejects) == {"ambiguous_evidence": 1}


def test_items_beyond_the_number_asked_for_are_not_used(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d] * 3 if d == "d1" else GOOD[d])
    res = run(stub, corpus, tmp_path, n=50, mix="meaning=1", per_call=2, max_passes=1)
    assert Counter(r["reason"] for r in res.rejects) == {"duplicate": 1, "over_count": 1}


def test_an_english_corpus_gets_english_prompts_and_checks(stub, tmp_path):
    docs = [{"doc_id": "e1", "content": "To reset your password, open the portal and choose Security > Reset. "
                                        "Passwords expire every 90 days."},
            {"doc_id": "e2", "content": "Printer error PRN-0x4E means the toner is low. Replace it from the "
                                        "supply cabinet on your floor."}]
    corpus = tmp_path / "en.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    good = {"e1": item("How often does my login password expire?", "every 90 days",
                       ["Passwords expire every 90 days"]),
            "e2": item("What should I do when the printer shows PRN-0x4E?", "Replace the toner.",
                       ["Printer error PRN-0x4E means the toner is low"], "lexical")}
    stub.script = by_doc(lambda d, req: [good[d], item("비밀번호는 얼마나 자주 바꾸나요?", "90일", [
        "Passwords expire every 90 days"])] if d == "e1" else [good[d]])
    res = run(stub, corpus, tmp_path, n=40, mix="meaning=1", per_call=10, max_passes=1)
    assert {r["question"] for r in res.records} == {g["question"] for g in good.values()}
    assert Counter(r["reason"] for r in res.rejects) == {"wrong_language": 1}
    assert stub.generation_bodies()[0]["messages"][0]["content"].startswith("You write exam questions")
    types = {r["question"]: r["type"] for r in res.records}
    assert types[good["e2"]["question"]] == "lexical" and types[good["e1"]["question"]] == "meaning"
    assert res.language == "en" and res.records[0]["metadata"]["generation"]["overlap_unit"] == "words"


def test_an_empty_reply_retires_the_passage_for_that_kind(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: [] if d == "d1" else GOOD[d] if req.request == 1 else [])
    res = run(stub, corpus, tmp_path, n=50, mix="meaning=1", per_call=10)
    asked = Counter(parse_doc(b) for b in stub.generation_bodies())
    assert asked == {"d1": 1, "d2": 2, "d3": 2, "d4": 2}  # never twice after an empty reply, and no retry of it
    assert Counter(r["reason"] for r in res.rejects) == {"no_questions": 4}
    assert len(res.records) == 3 and res.card["stopped"] == "pass 2 kept no question"


def test_two_document_questions_are_typed_multi_only_when_their_evidence_needs_both(stub, corpus, tmp_path):
    def script(req):
        a, b = req.doc_ids
        both = item(GOOD[a][0]["question"].rstrip("?") + ", 그리고 " + GOOD[b][0]["question"], "둘 다 문서대로 합니다.",
                    GOOD[a][0]["evidence"] + GOOD[b][0]["evidence"], "multi")
        one = dict(GOOD[a][0], type="multi")  # the model says multi; its evidence is in one document
        return {"questions": [both, one]}

    stub.script = script
    res = run(stub, corpus, tmp_path, n=50, mix="multi=1", per_call=10, max_passes=1)
    bodies = stub.generation_bodies()
    assert bodies and all(len(parse_generation_(b).doc_ids) == 2 for b in bodies)
    by_q = {r["question"]: r for r in res.records}
    multi = [r for r in res.records if r["type"] == "multi"]
    assert multi and all(", 그리고 " in r["question"] for r in multi)
    assert all(len(r["relevant_doc_ids"]) == 2 and len(r["evidence"]) == 2 for r in multi)
    single = [r for r in by_q.values() if r["type"] != "multi"]
    assert single and all(r["type"] in ("meaning", "lexical") and len(r["relevant_doc_ids"]) == 1
                          and r["metadata"]["generation"]["model_type"] == "multi" for r in single)
    assert res.card["mix"]["multi"]["achieved"] == len(multi)
    assert set(r["reason"] for r in res.rejects) <= {"duplicate"}  # pairs seen twice give the same question


def parse_generation_(body):
    from qgen_stub import parse_generation

    return parse_generation(body)


def test_a_generation_that_kept_no_question_writes_only_its_rejects_and_says_why(stub, corpus, tmp_path):
    """Every call failed (the endpoint down): no empty set, card or review sheet to audit and run, only the rejects
    file with each call's error; the console says the calls failed and what to check, not to raise --max-passes."""
    from rich.console import Console

    from ragexam.report.console_generate import print_generate

    stub.script = by_doc(lambda d, req: GOOD[d])
    stub.fail = {"d1", "d2", "d3", "d4"}
    out = tmp_path / "set" / "qa.jsonl"
    res = run(stub, corpus, tmp_path, n=4, mix="meaning=1", per_call=10, max_passes=1, max_retries=0, out=out)
    assert not res.records and res.shortfall == 4
    assert sorted(p.name for p in out.parent.iterdir()) == ["qa.rejects.jsonl"]
    assert res.written == {"rejects": out.with_name("qa.rejects.jsonl")}
    console = Console(record=True, width=300)
    print_generate(res, console)
    text = console.export_text()
    assert "No question was kept, so no set, card or review sheet was written" in text
    assert "every generation call failed (the rejects file holds each error): check --base-url" in text
    assert "review audit" not in text and "raise --max-passes" not in text
    # a generation that kept some questions writes the four files and keeps the old advice
    stub.fail = {"d2"}
    res = run(stub, corpus, tmp_path, n=50, mix="meaning=1", per_call=10, max_passes=1, max_retries=0, out=out)
    assert sorted(res.written) == ["card", "qa", "rejects", "review"] and out.is_file()
