"""``--cite focus``: ragexam chooses the sentence, the model writes one question it answers after worked examples.

The model is the scripted stub of ``qgen_stub.py`` (a focus call is a :class:`GenRequest` with ``focus`` set);
the local model's real replies in this mode are replayed in ``test_generate_replay.py``.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from qgen_stub import GenRequest, start_gen_stub, write_docs
from ragexam import generate
from ragexam.questions.prompts import FOCUS_SCHEMA, load_prompts, parse_examples
from ragexam.questions.replies import ReplyError, parse_focus_reply
from ragexam.errors import InputError

DOCS = [
    {"doc_id": "t1", "title": "국내 출장", "content":
        "국내 출장 일비는 1일 2만 5천 원이고, 당일 출장은 1만 5천 원입니다. 숙박비는 서울 1박 10만 원까지입니다.\n\n"
        "출장에서 돌아오면 5영업일 이내에 출장 보고서를 '스마트정산'에 올려야 합니다."},
    {"doc_id": "t2", "title": "해외 출장", "content":
        "해외 출장 일비는 1일 60달러이며, 미주·유럽 지역은 1일 70달러입니다. 해외 출장은 본부장의 사전 승인이 "
        "필요합니다.\n\n항공권은 이코노미석이 원칙입니다."},
    {"doc_id": "t3", "title": "연차 휴가", "content":
        "입사 1년이 지나면 연 15일의 연차가 부여됩니다. 연차는 사용일 3일 전까지 신청합니다.\n\n"
        "쓰지 못한 연차는 다음 해로 최대 5일까지 이월됩니다."},
]
SENTENCES = {
    "국내 출장 일비는 1일 2만 5천 원이고, 당일 출장은 1만 5천 원입니다.": ("당일 출장 일비는 얼마인가요?", "1만 5천 원"),
    "숙박비는 서울 1박 10만 원까지입니다.": ("서울에서 자면 하룻밤 숙박비는 얼마까지 나오나요?", "1박 10만 원까지"),
    "출장에서 돌아오면 5영업일 이내에 출장 보고서를 '스마트정산'에 올려야 합니다.":
        ("출장 보고서는 돌아와서 언제까지 올려야 하나요?", "5영업일 이내"),
    "해외 출장 일비는 1일 60달러이며, 미주·유럽 지역은 1일 70달러입니다.": ("미국 출장의 하루 일비는 얼마인가요?", "1일 70달러"),
    "해외 출장은 본부장의 사전 승인이 필요합니다.": ("해외 출장은 누구의 승인을 먼저 받아야 하나요?", "본부장"),
    "항공권은 이코노미석이 원칙입니다.": ("항공권은 어떤 좌석으로 끊어야 하나요?", "이코노미석"),
    "입사 1년이 지나면 연 15일의 연차가 부여됩니다.": ("입사 1년이 지나면 연차가 며칠 생기나요?", "연 15일"),
    "연차는 사용일 3일 전까지 신청합니다.": ("휴가는 며칠 전에 신청해야 하나요?", "사용일 3일 전까지"),
    "쓰지 못한 연차는 다음 해로 최대 5일까지 이월됩니다.": ("못 쓴 연차는 다음 해로 며칠까지 넘길 수 있나요?", "최대 5일"),
}


@pytest.fixture
def stub():
    s, shutdown = start_gen_stub()
    yield s
    shutdown()


@pytest.fixture
def corpus(tmp_path):
    return write_docs(tmp_path / "docs.jsonl", DOCS)


def run(stub, corpus, tmp_path, **kw):
    kw.setdefault("cache_dir", tmp_path / "cache")
    kw.setdefault("n", 9)
    kw.setdefault("mix", "meaning=1")
    kw.setdefault("max_passes", 3)
    return generate(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", cite="focus", **kw)


def answer_from_table(req: GenRequest):
    question, answer = SENTENCES[req.passages[0][1]]
    return {"question": question, "answer": answer}


def recorded(stub):
    """Answer from the table and keep every request: the list of requests seen."""
    seen = []

    def s(req: GenRequest):
        seen.append(req)
        return answer_from_table(req)

    stub.script = s
    return seen


def test_each_call_asks_one_question_about_one_sentence_after_the_worked_examples(stub, corpus, tmp_path):
    seen = recorded(stub)
    res = run(stub, corpus, tmp_path)
    assert len(res.records) == 9 and not res.rejects
    asked = [req.passages[0][1] for req in seen]
    assert sorted(asked) == sorted(SENTENCES)  # every sentence once, none twice
    examples = load_prompts("en").examples("ko", "meaning")
    body = seen[0].body
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * len(examples) + ["user"]
    assert json.loads(msgs[2]["content"]) == {"question": examples[0].question, "answer": examples[0].answer}
    assert body["response_format"]["json_schema"]["schema"] == FOCUS_SCHEMA
    assert "Ask in your own words" in msgs[-1]["content"] and "Document: " in msgs[-1]["content"]
    for r in res.records:  # the evidence is the focus sentence, verbatim: it is the corpus's own text
        g = r["metadata"]["generation"]
        assert r["evidence"] == [next(k for k, v in SENTENCES.items() if v[0] == r["question"])]
        doc = next(d for d in DOCS if d["doc_id"] == r["relevant_doc_ids"][0])
        span = g["evidence_spans"][0]
        assert doc["content"][span["start"]:span["end"]] == r["evidence"][0]
        assert g["cited_sentences"] == [1]
    assert "|per_call:1|" in res.signature and "|cite:focus|" in res.signature
    assert "|max_tokens:400|" in res.signature  # a focus reply is one question: a small completion limit


def test_the_model_cannot_choose_its_evidence_and_extra_items_are_over_count(stub, corpus, tmp_path):
    def s(req: GenRequest):
        q, a = SENTENCES[req.passages[0][1]]
        if "이월" in req.passages[0][1]:  # an envelope of two items, the first with evidence of its own choosing
            return {"questions": [{"question": q, "answer": a, "evidence": ["항공권은 이코노미석이 원칙입니다."]},
                                  {"question": "다른 질문은 무엇인가요?", "answer": "없음"}]}
        return {"question": q, "answer": a, "evidence": ["쓰지 못한 연차"]}

    stub.script = s
    res = run(stub, corpus, tmp_path)
    assert Counter(r["reason"] for r in res.rejects) == {"over_count": 1}
    carry = next(r for r in res.records if "이월" in r["question"] or "넘길" in r["question"])
    assert carry["evidence"] == ["쓰지 못한 연차는 다음 해로 최대 5일까지 이월됩니다."]
    assert all(r["evidence"][0] in SENTENCES for r in res.records)


def test_a_reply_without_a_question_gets_the_focus_feedback_then_counts_as_malformed(stub, corpus, tmp_path):
    replies = []

    def s(req: GenRequest):
        replies.append(req)
        return {"questions_list": ["?"]}

    stub.script = s
    res = run(stub, corpus, tmp_path, n=1, max_passes=1)
    assert res.records == [] and {r["reason"] for r in res.rejects} == {"malformed_reply"}
    retry = next(req for req in replies if req.retry == 1)
    feedback = retry.body["messages"][-1]["content"]
    assert 'no "question" key' in feedback and 'Reply again with exactly one JSON object: {"question"' in feedback


def test_lexical_prefers_a_sentence_with_a_code_name_or_number(stub, corpus, tmp_path):
    seen = recorded(stub)
    run(stub, corpus, tmp_path, n=3, mix="lexical=1", max_passes=1)
    lexical = [req for req in seen if req.kind == "lexical"]
    assert lexical and all(any(ch.isdigit() or ch == "'" for ch in req.passages[0][1]) for req in lexical)
    assert all("Keep the code, name or number" in req.user for req in lexical)


def test_multi_shows_a_sentence_of_each_of_two_documents(stub, corpus, tmp_path):
    seen = []

    def s(req: GenRequest):
        seen.append(req)
        (d1, s1), (d2, s2) = req.passages
        return {"question": "국내 출장과 해외 출장의 일비는 각각 하루 얼마인가요?", "answer": "2만 5천 원, 60달러"}

    stub.script = s
    res = run(stub, corpus, tmp_path, n=1, mix="multi=1", max_passes=1)
    req = seen[0]
    assert req.kind == "multi" and len(req.passages) == 2 and req.passages[0][0] != req.passages[1][0]
    assert "Sentence 1 (" in req.user and "Sentence 2 (" in req.user
    multi_examples = load_prompts("en").examples("ko", "multi")
    assert len(req.body["messages"]) == 1 + 2 * len(multi_examples) + 1
    r = res.records[0]
    assert r["type"] == "multi" and len(r["relevant_doc_ids"]) == 2 and len(r["evidence"]) == 2


def test_korean_instructions_have_the_focus_mode_too(stub, corpus, tmp_path):
    seen = recorded(stub)
    res = run(stub, corpus, tmp_path, n=2, prompt_language="ko", max_passes=1)
    assert len(res.records) == 2 and "문장: " in seen[0].user and "자기 말로" in seen[0].user
    assert "|prompt:questions/ko/v3@" in res.signature


def test_a_prompt_file_without_the_focus_sections_is_an_input_error_naming_them(stub, corpus, tmp_path):
    from ragexam.questions.prompts import bundled_prompt_path

    text = bundled_prompt_path("en").read_text(encoding="utf-8")
    own = tmp_path / "mine.txt"
    own.write_text(text.split("\n=== focus user")[0] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"no section === focus user.*--cite focus needs") as err:
        run(stub, corpus, tmp_path, prompt=str(own))
    assert str(own) in str(err.value)
    assert stub.requests == []


def test_parse_focus_reply_reads_one_object_or_an_envelope():
    assert parse_focus_reply('{"question": "q?", "answer": "a"}') == [{"question": "q?", "answer": "a"}]
    assert parse_focus_reply('```json\n{"questions": [{"question": "q?"}]}\n```') == [{"question": "q?"}]
    with pytest.raises(ReplyError, match=r'no "question" key \(keys: \'q\'\)'):
        parse_focus_reply('{"q": 1}')


def test_the_bundled_examples_are_well_formed_and_hashed_into_the_prompt():
    from ragexam.questions.prompts import bundled_examples_path

    for lang in ("ko", "en"):
        ex = parse_examples(bundled_examples_path(lang).read_text(encoding="utf-8"), lang)
        assert {e.kind for e in ex} == {"meaning", "lexical", "multi"}
        assert all(e.question.endswith("?") for e in ex)
    p = load_prompts("en")
    from dataclasses import replace

    assert replace(p, examples_text={**p.examples_text, "ko": p.examples_text["ko"] + "\n"}).sha != p.sha
    with pytest.raises(InputError, match="one document title per sentence"):
        parse_examples('{"kind": "meaning", "documents": [], "sentences": ["a"], "question": "q", "answer": "a"}',
                       "x.jsonl")


# -- what the local model got wrong in this mode, rejected by deterministic checks ------------------------------
def _located(*texts):
    from ragexam.questions.checks import Located

    return [Located(i, t, t, (), ()) for i, t in enumerate(texts, 1)]


def test_a_key_naming_who_may_not_as_if_they_may_is_answer_polarity():
    from ragexam.questions.checks import polarity_problem

    ev = _located("입사 후 3개월이 지나지 않은 직원은 재택근무를 신청할 수 없습니다.")
    q = "재택근무를 신청할 수 있는 기준은 무엇인가요?"
    bad = polarity_problem(q, "입사 후 3개월이 지나지 않은 직원", ev, "ko")  # the local model's key
    assert bad is not None and bad.reason == "answer_polarity" and "'신청'" in bad.detail
    for right in ("입사 후 3개월이 지나야 신청할 수 있습니다", "3개월이 지나지 않은 직원은 신청할 수 없습니다",
                  "아니요, 3개월이 지나야 합니다"):
        assert polarity_problem(q, right, ev, "ko") is None, right
    # a question that asks about the negation itself, or evidence that also allows it, is left alone
    assert polarity_problem("누가 재택근무를 신청할 수 없나요?", "입사 후 3개월이 지나지 않은 직원", ev, "ko") is None
    both = _located("A팀은 신청할 수 없고 B팀은 신청할 수 있습니다.")
    assert polarity_problem("B팀은 신청할 수 있나요?", "B팀", both, "ko") is None
    assert polarity_problem("Can I apply?", "staff of 3 months", _located("Staff cannot apply."), "en") is None
    ev2 = _located("승인 없이 한 초과근무는 수당을 받을 수 없습니다.")
    assert polarity_problem("초과근무 수당은 누가 받을 수 있나요?", "승인 없이 한 초과근무", ev2, "ko").reason == \
        "answer_polarity"
    # the bundled hq_071: the question mentions what the evidence negates (켜지 않은 채) without asking if one can
    vpn = _located("대부분 VPN을 켜지 않은 채 재택근무 체크를 누른 경우이므로")
    assert polarity_problem("VPN을 켜려니 VPN-ERR-619가 나요.", "VPN부터 연결해야 합니다", vpn, "ko") is None


def test_one_of_two_evidence_sentences_unrelated_to_the_question_is_evidence_unrelated():
    from ragexam.questions.checks import unrelated_evidence

    ev = _located("회의실은 '한빛포털'의 회의실 메뉴에서 예약하며, 한 번에 최대 2시간까지 잡을 수 있습니다.",
                  "재택근무는 주 2회까지 할 수 있으며, 전날 오후 5시까지 'HR-Desk'에 신청해 팀장 승인을 받아야 합니다.")
    bad = unrelated_evidence("재택근무를 신청해야 하는 이유는 무엇인가요?", "팀장 승인을 받아야 합니다", ev, "ko")
    assert bad is not None and bad.reason == "evidence_unrelated" and "evidence 1" in bad.detail
    assert unrelated_evidence("회의실 예약과 재택근무 신청은 각각 어디에서 하나요?", "한빛포털, HR-Desk", ev, "ko") is None
    assert unrelated_evidence("재택근무는 주 몇 회인가요?", "주 2회", ev[1:], "ko") is None  # one string: not this check


@pytest.mark.parametrize("content, question, answer, reason, check", [
    ("입사 후 3개월이 지나지 않은 직원은 재택근무를 신청할 수 없습니다.", "재택근무를 신청할 수 있는 기준은 무엇인가요?",
     "입사 후 3개월이 지나지 않은 직원", "answer_polarity", "guards"),
    ("모든 원격 세션은 녹화되어 90일 동안 보관됩니다.", "원격 세션은 언제 보관되나요?", "90일 동안", "answer_type_mismatch",
     "premise"),
])
def test_the_checks_run_in_a_generation_and_can_be_switched_off(stub, corpus, tmp_path, content, question, answer,
                                                               reason, check):
    p = write_docs(tmp_path / "d.jsonl", [{"doc_id": "d1", "title": "안내", "content": content}])
    stub.script = lambda req: {"question": question, "answer": answer}
    res = run(stub, p, tmp_path, n=1, max_passes=1)
    assert [r["reason"] for r in res.rejects] == [reason]
    assert "|checks:injection+guards+premise+title+fragment+critic+" in res.signature
    res = run(stub, p, tmp_path / "off", n=1, max_passes=1, skip_checks=(check,))
    assert res.rejects == [] and len(res.records) == 1 and f"+{check}+" not in res.signature


def test_a_key_copied_from_one_sentence_does_not_make_the_other_related():
    from ragexam.questions.checks import unrelated_evidence

    ev = _located("외부 방문객은 방문 전날까지 '한빛포털'에서 방문 등록을 해야 출입증을 받을 수 있습니다.",
                  "재택근무는 주 2회까지 할 수 있으며, 전날 오후 5시까지 'HR-Desk'에 신청해 팀장 승인을 받아야 합니다.")
    key = "재택근무는 주 2회까지 할 수 있으며, 전날 오후 5시까지 'HR-Desk'에 신청해 팀장 승인을 받아야 합니다."
    bad = unrelated_evidence("재택근무를 신청해야 하는 이유는 무엇인가요?", key, ev, "ko")  # the local model's, again
    assert bad is not None and "evidence 1" in bad.detail
    assert unrelated_evidence("방문객 등록과 재택근무 신청은 각각 언제까지 하나요?", "방문 전날까지, 전날 오후 5시까지", ev,
                              "ko") is None


def test_multi_needs_two_sentences_that_share_terms(stub, tmp_path):
    docs = [{"doc_id": "a", "title": "회의실", "content": "회의실은 한빛포털에서 예약합니다. 회의실 예약은 2시간까지입니다."},
            {"doc_id": "b", "title": "주차", "content": "주차 등록은 총무팀에 신청합니다. 방문객 주차는 3시간 무료입니다."}]
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    res = run(stub, p, tmp_path, n=1, mix="multi=1", max_passes=1)
    assert stub.generation_bodies() == [] and res.records == []
    assert any("shares 2 terms" in n for n in res.card["notes"])


def test_a_kind_of_which_nothing_is_kept_is_given_up_with_a_note(stub, corpus, tmp_path):
    ooc = "출장 일비는 하루 얼마인가요?"
    stub.in_corpus = {ooc}  # the out-of-corpus check finds it answered: never kept

    def s(req: GenRequest):
        if req.focus:
            return answer_from_table(req)
        return {"questions": [{"question": ooc, "answer": "", "evidence": [], "type": "out_of_corpus"}]}

    stub.script = s
    res = run(stub, corpus, tmp_path, n=16, mix="meaning=0.5,out_of_corpus=0.5", max_passes=30)
    from qgen_stub import parse_generation

    kinds = Counter(parse_generation(b).kind for b in stub.generation_bodies())
    # GIVE_UP_AFTER questions asked for (one per call; a pass asks up to one call per section, 3 here), then no more
    assert 8 <= kinds["out_of_corpus"] < 8 + 3
    assert any(f"no out_of_corpus question kept of {kinds['out_of_corpus']} asked for" in n for n in res.card["notes"])
    ooc = next(b for b in stub.generation_bodies() if parse_generation(b).kind == "out_of_corpus")
    assert '"evidence": [' in ooc["messages"][1]["content"]  # out-of-corpus calls keep the passage prompt and format
    assert len(res.records) == 9 and all(r["answerable"] for r in res.records)  # filled with the other type


def test_the_reader_gets_worked_examples_two_of_which_decline():
    from ragexam.questions.prompts import load_reader

    r = load_reader("en")
    msgs = r.messages("연차는 며칠인가요?", ["연차는 15일입니다."], language="ko", decline="문서에서 찾을 수 없습니다.")
    ex = r.examples("ko")
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * len(ex) + ["user"]
    assert sum(1 for m in msgs if m["role"] == "assistant" and m["content"] == "문서에서 찾을 수 없습니다.") == 2
    assert "연차는 15일입니다." in msgs[-1]["content"] and "연차는 15일입니다." not in msgs[1]["content"]
    from dataclasses import replace

    assert replace(r, examples_text={}).sha != r.sha and r.label.startswith("reader/en/v2@")


def test_when_how_much_and_why_need_a_time_an_amount_and_a_reason():
    from ragexam.questions.checks import answer_type_problem

    rule = _located("경조금은 'HR-Desk'의 경조 신청 메뉴에서 증빙 서류를 첨부해 30일 이내에 신청해야 합니다.")
    bad = answer_type_problem("경조금을 신청해야 하는 이유는 무엇인가요?", "HR-Desk에서 신청합니다", rule)  # the local model's
    assert bad.reason == "answer_type_mismatch" and "asks why" in bad.detail
    because = _located("USB 저장장치는 악성코드를 막기 위해 기본적으로 차단됩니다.")
    assert answer_type_problem("USB는 왜 막혀 있나요?", "악성코드를 막기 위해서입니다", because) is None
    assert answer_type_problem("경조금은 언제까지 신청하나요?", "HR-Desk에서", rule).detail.endswith("no time")
    assert answer_type_problem("경조금은 언제까지 신청하나요?", "경조사 발생일로부터 30일 이내", rule) is None
    assert answer_type_problem("경조금은 얼마인가요?", "증빙 서류를 첨부합니다", rule).detail.endswith("no amount")
    assert answer_type_problem("How much is the allowance?", "It is paid monthly", rule).reason == "answer_type_mismatch"
    assert answer_type_problem("몇 번씩 잠겨요. 왜 이러죠?", "예전 비밀번호가 저장된 기기가 로그인을 시도해 잠기므로",
                               rule) is None  # asks why, not how many
    assert answer_type_problem("경조금은 어디에서 신청하나요?", "HR-Desk", rule) is None
    assert answer_type_problem("What should I do when the printer shows PRN-0x4E?", "Replace the toner.", rule) is None
    assert answer_type_problem("When is the report due?", "Send it to the team lead.", rule).reason == \
        "answer_type_mismatch"


def test_a_question_whose_premise_the_evidence_and_key_do_not_share_is_rejected():
    from ragexam.questions.checks import premise_problem

    kept = _located("모든 원격 세션은 녹화되어 90일 동안 보관됩니다.")
    bad = premise_problem("원격 세션은 언제 보관되나요?", "90일 동안", kept, "ko")  # the local model's
    assert bad.reason == "answer_type_mismatch" and "how long" in bad.detail
    for q, key in (("원격 세션은 얼마 동안 보관되나요?", "90일 동안"), ("원격 세션은 언제까지 보관되나요?", "녹화 후 90일 동안"),
                   ("원격 세션은 언제 지워지나요?", "녹화 후 90일이 지나면"), ("When is it deleted?", "After 90 days")):
        assert premise_problem(q, key, kept, "ko") is None, q
    assert premise_problem("When are sessions kept?", "for 90 days", kept, "en").reason == "answer_type_mismatch"
    vpn = _located("오랫동안 VPN 없이 사외에서 노트북을 쓸 때 주로 생기므로, VPN에 연결한 뒤 에이전트 메뉴의 '지금 백업'을 "
                   "눌러 주십시오.")
    q = "VPN에 연결하지 않으면 PC 데이터를 백업하는 방법은 무엇인가요?"
    bad = premise_problem(q, "VPN에 연결한 뒤 에이전트 메뉴의 '지금 백업'을 누릅니다", vpn, "ko")  # the local model's
    assert bad.reason == "answer_polarity" and "'연결'" in bad.detail
    assert premise_problem(q, "아니요, 먼저 VPN에 연결해야 합니다", vpn, "ko") is None  # the key says no
    assert premise_problem(q, "에이전트 메뉴의 '지금 백업'을 누릅니다", vpn, "ko") is None  # the key does not name it
    assert premise_problem("VPN에 연결하지 않으면 백업되나요?", "VPN에 연결해야 백업됩니다", vpn, "ko") is None  # yes/no
    both = _located("VPN에 연결하지 않으면 백업이 멈추고, VPN에 연결하면 다시 시작됩니다.")
    assert premise_problem(q, "VPN에 연결하면 다시 시작됩니다", both, "ko") is None  # the evidence says it too


def test_a_key_that_loops_is_answer_repeats():
    from ragexam.questions.checks import answer_problem

    key = "본인 과실로 분실한 노트북을 잔존가치의 30%를 부담하게 되면 " + "본인이 부담하게 되면 " * 5 + "본인이부담하게 되면"
    assert answer_problem(key).reason == "answer_repeats"  # the local model's key, its last repeat without a space
    assert answer_problem("출장 보고서와 영수증을 올리고, 영수증 원본은 보관합니다.") is None


def test_the_new_checks_pass_every_hand_written_bundled_question():
    """answer_type_mismatch, answer_repeats, answer_polarity: none of the 77 answerable hand-written questions of the
    bundled Korean sets is rejected (the checks were written from the local model's wrong questions)."""
    from ragexam.questions.checks import (Located, answer_problem, answer_type_problem, polarity_problem,
                                                  premise_problem)
    from ragexam.data.loaders import load_qa

    seen = 0
    for name in ("it_helpdesk", "ai_concepts"):
        for q in load_qa(name):
            if not q.answerable:
                continue
            seen += 1
            located = [Located(i, e, e, (), ()) for i, e in enumerate(q.evidence, 1)]
            for problem in (answer_type_problem(q.question, q.ground_truth, located), answer_problem(q.ground_truth),
                            polarity_problem(q.question, q.ground_truth, located, "ko"),
                            premise_problem(q.question, q.ground_truth, located, "ko")):
                assert problem is None, (q.query_id, q.question, problem)
    assert seen == 77


def test_a_sentence_that_shares_only_common_terms_with_the_other_is_unrelated():
    from ragexam.questions.checks import unrelated_evidence

    vpn = "재택근무일에 사내 시스템에 접속할 때는 반드시 회사 VPN을 사용해야 하며, 카페 등 공공 와이파이에서는 업무 시스템에 접속하지 않습니다."
    leave = "연차는 'HR-Desk'에서 사용일 3일 전까지 신청하고 팀장 승인을 받습니다."
    bad = unrelated_evidence("재택근무를 하려면 회사 VPN을 사용해야 하는 이유는 무엇인가요?", vpn, _located(vpn, leave), "ko")
    assert bad is not None and "evidence 2" in bad.detail  # only 사용 in common: not a two-document question
    trips = _located("해외 출장은 본부장의 사전 승인이 필요하며, 출국 14일 전까지 '한빛결재'로 신청합니다.",
                     "국내 출장은 출발 전에 팀장의 사전 승인을 받아야 합니다.")
    assert unrelated_evidence("해외 출장과 국내 출장의 차이점은 무엇인가요?", "본부장 승인과 팀장 승인", trips, "ko") is None


def test_a_sentence_that_leans_on_its_neighbours_is_not_asked_about(stub, tmp_path):
    docs = [{"doc_id": "p1", "title": "프린터", "content": "프린터 용지가 걸리면 뒷면 덮개를 열어 종이를 빼십시오. "
             "위 방법으로 해결되지 않으면 헬프온에서 '프린터 장애'를 접수하십시오. 자주 보이는 오류는 다음과 같습니다. "
             "다만 컬러 인쇄는 팀장 승인이 필요합니다. 예비 토너는 각 층 탕비실 옆 소모품 함에 있습니다."}]
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps(docs[0], ensure_ascii=False) + "\n", encoding="utf-8")
    seen = []

    def s(req: GenRequest):
        seen.append(req.passages[0][1])
        return {"question": "프린터에 문제가 생기면 어떻게 하나요?", "answer": "확인합니다"}

    stub.script = s
    run(stub, p, tmp_path, n=5, max_passes=5)
    assert sorted(seen) == ["예비 토너는 각 층 탕비실 옆 소모품 함에 있습니다.", "프린터 용지가 걸리면 뒷면 덮개를 열어 종이를 빼십시오."]
