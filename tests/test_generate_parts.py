"""The generator's parts without a model: prompt files, the reply contract, evidence location, sampling, mix."""

from __future__ import annotations

import json
import unicodedata
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.questions import checks as C
from ragexam.questions.prompts import BUILTIN_KINDS, Passage, bundled_prompt_path, load_prompts
from ragexam.questions.replies import item_fields, parse_reply
from ragexam.questions.sampling import Coverage, build_sections, parse_mix, targets
from ragexam.data.evidence import CorpusText
from ragexam.data.schema import Document
from ragexam.errors import InputError
from ragexam.metrics.judge.replies import ReplyError


# -- prompts -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["ko", "en"])
def test_bundled_prompt_files_define_every_kind_and_render_passage_blocks(lang):
    p = load_prompts(lang)
    assert p.name == f"questions/{lang}" and p.version == "3" and p.kinds == list(BUILTIN_KINDS)
    assert p.label == f"questions/{lang}/v3@{p.sha}" and len(p.sha) == 16
    msgs = p.messages("lexical", [Passage("hd_01", "본문 {n} 그대로", 2, 3, 'VPN "가이드"')], 3)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert '<passage id="hd_01" part="2/3" title="VPN &quot;가이드&quot;">\n본문 {n} 그대로\n</passage>' in user
    assert '"type": "lexical"' in user and ("3개" in user or "write 3 questions" in user)
    assert "{avoid}" not in user and "{instructions}" not in user and "{language}" not in user
    assert "{evidence}" not in user and "{format}" not in user and "{kind}" not in user
    ooc = p.messages("out_of_corpus", [Passage("d", "x")], 2, titles=["VPN 접속", "프린터"])[1]["content"]
    assert "VPN 접속, 프린터" in ooc
    again = p.messages("meaning", [Passage("d", "x")], 2, avoid=["이미 나온 질문"], request=3)[1]["content"]
    assert "- 이미 나온 질문" in again and "3" in again
    assert "{error}" not in p.feedback("invalid", "no JSON") and "no JSON" in p.feedback("invalid", "no JSON")


def test_a_prompt_file_s_hash_follows_its_text(tmp_path):
    text = bundled_prompt_path("ko").read_text(encoding="utf-8")
    same = tmp_path / "same.txt"
    same.write_text(text.replace("\n", "\r\n"), encoding="utf-8")  # line endings do not count
    assert load_prompts("ko", same).sha == load_prompts("ko").sha
    edited = tmp_path / "edited.txt"
    edited.write_text(text.replace("시험 문제", "평가 문제", 1), encoding="utf-8")
    assert load_prompts("ko", edited).sha != load_prompts("ko").sha
    assert load_prompts("ko", extra_kinds={"procedure": "절차"}).sha != load_prompts("ko").sha


def test_a_broken_prompt_file_is_an_error_naming_the_file(tmp_path):
    text = bundled_prompt_path("en").read_text(encoding="utf-8")
    p = tmp_path / "p.txt"
    p.write_text(text.replace("=== feedback refused", "=== feedback refusal"), encoding="utf-8")
    with pytest.raises(InputError, match="no section '=== feedback refused'") as err:
        load_prompts("en", p)
    assert err.value.source == str(p)
    p.write_text(text.replace("{passages}", "(passages)"), encoding="utf-8")
    with pytest.raises(InputError, match=r"lacks \{passages\}") as err:
        load_prompts("en", p)
    assert err.value.line is not None
    p.write_text("hello\n" + text, encoding="utf-8")
    with pytest.raises(InputError, match="text before the first section"):
        load_prompts("en", p)
    with pytest.raises(InputError, match="already defined"):
        load_prompts("en", extra_kinds={"meaning": "x"})
    with pytest.raises(InputError, match="kind name"):
        load_prompts("en", extra_kinds={"Bad Name": "x"})
    with pytest.raises(InputError, match="cannot read"):
        load_prompts("en", tmp_path / "missing.txt")


# -- the reply contract ----------------------------------------------------------------------------------------
def test_reply_envelope():
    good = {"questions": [{"question": "q", "answer": "a", "evidence": ["e"], "type": "meaning", "extra": 1}]}
    assert parse_reply(json.dumps(good)) == good["questions"]
    assert parse_reply("<think>hmm</think>```json\n" + json.dumps(good) + "\n```") == good["questions"]
    assert parse_reply('{"questions": []}') == []  # nothing (more) to ask: valid, counted as no_questions
    for bad, kind in [("no json here", "invalid_json"), ('{"items": []}', "invalid_reply"),
                      ('{"questions": {}}', "invalid_reply"),
                      ('{"questions": [1], "questions": [2]}', "invalid_json"), (None, "invalid_json")]:
        with pytest.raises(ReplyError) as err:
            parse_reply(bad)
        assert err.value.kind == kind, bad


def test_reply_items():
    fields, problem = item_fields({"question": "q", "answer": None, "evidence": "one string"})
    assert problem is None and fields == {"question": "q", "answer": "", "evidence": ["one string"],
                                          "model_type": None, "cited": []}
    for bad, word in [(["x"], "list"), ({"answer": "a"}, '"question" is missing'),
                      ({"question": "q", "evidence": [1]}, "list of strings"), ({"question": "q", "answer": 3},
                                                                                '"answer"')]:
        fields, problem = item_fields(bad)
        assert fields is None and word in problem


# -- evidence location -----------------------------------------------------------------------------------------
DOCS = [Document("a", "첫 문단입니다.\n\nVPN-ERR-619 오류가 나면 'TCP 443 모드'로 바꿉니다. 공통 안내 문장입니다."),
        Document("b", "프린터 토너는 비품함에 있습니다. 공통 안내 문장입니다."),
        Document("c", unicodedata.normalize("NFD", "비밀번호는 90일마다 바꿔야 합니다."))]


def locate(evidence, shown=("a",), ambiguous="join", lo=8, hi=300):
    ct = CorpusText(DOCS)
    contents = {d.doc_id: d.content for d in DOCS}
    return C.locate_evidence(evidence, shown_docs=list(shown), shown_texts=[contents[d] for d in shown],
                             corpus_text=ct, contents=contents, min_chars=lo, max_chars=hi, ambiguous=ambiguous)


def test_evidence_is_located_verbatim_with_offsets():
    located, problem = locate(["VPN-ERR-619 오류가   나면"])  # whitespace differs: normalised
    assert problem is None
    loc = located[0]
    content = DOCS[0].content
    o = loc.shown[0]
    assert (o.doc_id, content[o.start:o.end]) == ("a", "VPN-ERR-619 오류가 나면") and loc.text == "VPN-ERR-619 오류가 나면"


def test_nfc_evidence_is_found_in_an_nfd_document_and_written_as_the_document_has_it():
    located, problem = locate(["비밀번호는 90일마다 바꿔야"], shown=("c",))
    assert problem is None
    assert located[0].text == unicodedata.normalize("NFD", "비밀번호는 90일마다 바꿔야")


@pytest.mark.parametrize("evidence,reason", [
    (["VPN-ERR-619 오류가 나면 'TCP 443 모드'로 바꾸세요"], "evidence_paraphrased"),
    (["인증서가 만료되면 사무실에서 갱신합니다"], "evidence_not_found"),
    (["프린터 토너는 비품함에 있습니다"], "evidence_not_in_passage"),
    (["443 모드"], "evidence_too_short"),
    ([], "no_evidence"),
    (["  "], "malformed_item"),
    (["VPN-ERR-619 오류가", "VPN-ERR-619  오류가"], "malformed_item"),
])
def test_evidence_problems_are_named(evidence, reason):
    located, problem = locate(evidence)
    assert located == [] and problem.reason == reason


def test_too_long_evidence():
    _, problem = locate(["VPN-ERR-619 오류가 나면 'TCP 443 모드'로 바꿉니다"], hi=10)
    assert problem.reason == "evidence_too_long"


def test_other_documents_holding_the_evidence_join_or_drop():
    located, problem = locate(["공통 안내 문장입니다"])
    assert problem is None and located[0].doc_ids == ["a"] and located[0].other_doc_ids == ["b"]
    assert C.evidence_doc_ids(located, join=True) == ["a", "b"]
    _, problem = locate(["공통 안내 문장입니다"], ambiguous="drop")
    assert problem.reason == "ambiguous_evidence" and "'b'" not in problem.detail and "b" in problem.detail


def test_answers():
    assert C.answer_problem("  ").reason == "empty_answer"
    assert C.answer_problem("문서에 나와 있지 않습니다.").reason == "answer_declines"
    assert C.answer_problem("The documents do not say.").reason == "answer_declines"
    assert C.answer_problem("TCP 443 모드로 바꿉니다.") is None
    located, _ = locate(["'TCP 443 모드'로 바꿉니다"])
    assert C.answer_contained("TCP 443   모드", located) is True  # compared after normalisation
    assert C.answer_contained("TCP 443으로 바꿔요", located) is False
    assert C.answer_contained("", located) is False


def test_every_reason_has_a_stage_and_a_meaning():
    assert {s for s, _ in C.REASONS.values()} == {"call", "reply", "item", "question", "evidence", "answer",
                                                  "out_of_corpus", "check", "selection"}
    assert all(m for _, m in C.REASONS.values())


# -- sections, coverage, mix ------------------------------------------------------------------------------------
def test_sections_are_slices_of_their_documents():
    long = "\n\n".join(f"문단 {i}. " + "가나다라마바사 " * 30 for i in range(12))
    docs = [Document("long", long), Document("short", "짧은 문서입니다."), Document("blank", "   ")]
    secs = build_sections(docs, 600)
    assert {s.doc_id for s in secs} == {"long", "short"}
    for s in secs:
        content = {"long": long, "short": "짧은 문서입니다."}[s.doc_id]
        assert content[s.start:s.end] == s.text and len(s.text) <= 1200
    parts = [s for s in secs if s.doc_id == "long"]
    assert len(parts) > 1 and [s.part for s in parts] == list(range(1, len(parts) + 1))
    assert all(s.parts == len(parts) for s in parts)
    assert [s.sid for s in parts][:2] == ["long#s0", "long#s1"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=8), st.integers(0, 2**31), st.integers(1, 30))
def test_every_section_is_used_once_before_any_twice(per_doc, seed, pass_size):
    from ragexam.questions.sampling import Section

    secs = [Section(f"d{d}#s{i}", f"d{d}", 0, 1, "x", i + 1, n, None) for d, n in enumerate(per_doc) for i in range(n)]
    cov = Coverage(secs, seed)
    dealt = []
    while len(dealt) < 3 * len(secs):
        taken = set()
        for _ in range(pass_size):
            s = cov.take(taken)
            if s is None:
                break
            taken.add(s.sid)
            dealt.append(s)
        assert len(taken) == min(pass_size, len(secs))  # a pass never repeats a section
    total = len(secs)
    first = dealt[:total]
    assert len({s.sid for s in first}) == total  # the first round covers every section
    # the first sections dealt come from distinct documents
    head = dealt[:len(per_doc)]
    assert len({s.doc_id for s in head}) == len(per_doc) or pass_size < len(per_doc)
    counts = Counter(s.sid for s in dealt)
    assert max(counts.values()) - min(counts.values()) <= 2
    again = Coverage(secs, seed)
    assert [again.take(set()).sid for _ in range(5)] == [again2.sid for again2 in _deal(secs, seed, 5)]


def _deal(secs, seed, n):
    cov = Coverage(secs, seed)
    return [cov.take(set()) for _ in range(n)]


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["meaning", "lexical", "multi", "out_of_corpus"]),
                       st.floats(0.01, 10), min_size=1), st.integers(1, 500))
def test_targets_sum_to_n(weights, n):
    mix = parse_mix(weights, list(BUILTIN_KINDS))
    t = targets(mix, n)
    assert sum(t.values()) == n and set(t) == set(mix)
    for k, w in mix.items():
        assert abs(t[k] - w * n) < 1 + 1e-9


def test_mix_parsing():
    assert parse_mix("meaning=80,lexical=20", list(BUILTIN_KINDS)) == {"meaning": 0.8, "lexical": 0.2}
    assert targets(parse_mix(None, list(BUILTIN_KINDS)), 200) == {"meaning": 80, "lexical": 70, "multi": 30,
                                                                   "out_of_corpus": 20}
    for bad, word in [("meaning", "KIND=WEIGHT"), ("nope=1", "unknown kind"), ("meaning=-1", ">= 0"),
                      ("meaning=0", "every weight is 0"), ("meaning=1,meaning=2", "twice"), ("meaning=x", ">= 0")]:
        with pytest.raises(InputError, match=word):
            parse_mix(bad, list(BUILTIN_KINDS))
