"""What the generator measures: overlap, anchors and type, near-duplicates, copies, language, references to
the passage -- checked on the bundled hand-written questions (which must all pass) and on made-up bad ones."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.questions import checks as C
from ragexam.questions import measure as M
from ragexam.data.evidence import CorpusText
from ragexam.data.loaders import load_corpus, load_qa


@pytest.fixture(scope="module")
def bundled():
    out = []
    for name in ("it_helpdesk", "ai_concepts"):
        corpus = load_corpus(name)
        out.append((corpus, list(load_qa(name)), C.CorpusFacts.build(corpus.documents)))
    return out


def _paragraphs(corpus, ct, q):
    spans = {}
    for ev in q.evidence:
        o = ct.locate(ev)[0]
        spans.setdefault(o.doc_id, []).append((o.start, o.end))
    return "\n".join(M.scope_texts(corpus[d].content, s, "paragraph") for d, s in spans.items()), \
        "\n".join(M.scope_texts(corpus[d].content, s, "sentence") for d, s in spans.items())


def test_measured_type_agrees_with_the_hand_labels_on_70_of_77(bundled):
    # the number docs/generate.md quotes; a change of the rule moves it
    agree = total = 0
    for corpus, qa, facts in bundled:
        answerable = [q for q in qa if q.answerable]
        paras = [_paragraphs(corpus, facts.corpus_text, q)[0] for q in answerable]
        measured = M.measure_many([q.question for q in answerable], [" ".join(q.evidence) for q in answerable], paras,
                                  language="ko", latin_is_foreign=True, lexical_at=0.7)
        for q, (_, _, style) in zip(answerable, measured):
            total += 1
            agree += style == q.type
    assert (agree, total) == (70, 77)


def test_the_bundled_questions_pass_every_question_check(bundled):
    for corpus, qa, facts in bundled:
        assert facts.language == "ko" and facts.script == "hangul"
        for q in qa:
            assert C.question_problem(q.question, script=facts.script, foreign=facts.foreign) is None, q.question
            if q.answerable:
                _, sentences = _paragraphs(corpus, facts.corpus_text, q)
                assert M.containment(M.bigrams(q.question), M.bigrams(sentences)) < 0.8, q.question
        grams = [M.bigrams(q.question) for q in qa]
        worst = max(M.jaccard(a, b) for a, b in itertools.combinations(grams, 2))
        assert worst < 0.3  # distinct questions are far below the 0.5 duplicate line


@pytest.mark.parametrize("question,ref", [
    ("이 문서에서 말하는 VPN 설정은 무엇인가요?", "이 문서"),
    ("위 글에 따르면 OTP는 몇 초마다 바뀌나요?", "위 글"),
    ("본문에 나온 절차를 알려 주세요", "본문에"),
    ("지문에서 설명한 오류 코드는?", "지문에서"),
    ("문서에 따르면 비밀번호는 며칠마다 바꾸나요?", "문서에 따르면"),
    ("According to the text, how do I reset it?", "According to the text"),
    ("What does the passage above say about VPN?", "the passage"),
    ("Who can edit this document?", "this document"),
    ("Based on the document, who approves it?", "Based on the document"),
])
def test_questions_that_refer_to_the_passage_are_caught(question, ref):
    assert M.refers_to_passage(question) == ref


@pytest.mark.parametrize("question", ["지문 인식 로그인이 안 돼요.", "문서 보안 등급은 어떻게 정하나요?",
                                      "결재 문서를 위로 올리려면?", "How do I print a document?",
                                      "Where is the text editor installed?"])
def test_ordinary_questions_are_not_taken_for_references(question):
    assert M.refers_to_passage(question) is None


def test_language_share_ignores_the_corpus_s_own_names_and_codes():
    foreign = frozenset({"vpn-err-619", "vpn", "securelink", "otp"})
    assert M.language_share("How do I fix VPN-ERR-619 at a hotel?", "hangul", foreign) == 0.0
    assert M.language_share("SecureLink VPN 설치는 어디서 하나요?", "hangul", foreign) == 1.0
    assert M.language_share("VPN-ERR-619", "hangul", foreign) is None  # nothing left: passes
    # NFD Hangul (decomposed jamo) counts as Hangul
    nfd = unicodedata.normalize("NFD", "비밀번호를 잊어버렸어요")
    assert M.language_share(nfd, "hangul", foreign) == 1.0
    rej = C.question_problem("How do I fix VPN-ERR-619 at a hotel?", script="hangul", foreign=foreign)
    assert rej.reason == "wrong_language" and "0.00" in rej.detail


def test_scripts():
    assert [M.script_of(c) for c in "가ᄀAé漢カЖ"] == ["hangul", "hangul", "latin", "latin", "han", "kana", "cyrillic"]
    assert M.main_script(["회사 밖에서는 SecureLink로 먼저 접속해야 합니다"]) == "hangul"
    assert M.main_script(["VPN 접속은 SecureLink로 합니다"]) == "latin"  # 13 Latin letters, 6 Hangul
    assert M.main_script(["Reset the VPN password"]) == "latin"
    assert M.main_script([""]) == "latin"


def test_anchors_are_codes_names_and_numbers_of_the_evidence_passage():
    passage = "VPN-ERR-619 오류가 나면 설정에서 'TCP 443 모드'를 고릅니다. SecureLink 5.2를 씁니다."
    assert M.anchors("VPN-ERR-619가 떠요", passage, latin_is_foreign=True) == ["vpn-err-619"]
    assert M.anchors("securelink 버전은?", passage, latin_is_foreign=True) == ["securelink"]
    assert M.anchors("443 포트는 뭔가요?", passage, latin_is_foreign=True) == ["443"]
    assert M.anchors("VPN 오류가 떠요", passage, latin_is_foreign=True) == []  # not in the passage as a word
    # in English text an ordinary word is no anchor, a code or an acronym is
    en = "Printer error PRN-0x4E means the toner is low. Ask IT."
    assert M.anchors("What does PRN-0x4E mean for the printer?", en, latin_is_foreign=False) == ["prn-0x4e"]
    assert M.anchors("Is the toner low?", en, latin_is_foreign=False) == []
    assert M.anchors("Should I ask IT?", en, latin_is_foreign=False) == ["it"]


def test_style_and_type():
    assert M.style(0.1, ["vpn"], 0.7) == "lexical"
    assert M.style(0.7, [], 0.7) == "lexical"
    assert M.style(0.69, [], 0.7) == "meaning"
    assert M.type_of(True, "meaning", "meaning") == "multi"
    assert M.type_of(False, "procedure", "lexical") == "procedure"
    assert M.type_of(False, "multi", "lexical") == "lexical"
    assert M.needs_two_documents([["d1"], ["d2"]]) and not M.needs_two_documents([["d1", "d2"], ["d2"]])
    assert not M.needs_two_documents([["d1"]])


def test_overlap_on_kiwi_morphemes_and_on_words():
    q, e = M.terms(["비밀번호를 바꾸려면 어떻게 하나요?", "비밀번호는 90일마다 바꿔야 합니다"], "ko")
    assert {"비밀", "번호", "바꾸"} <= q & e  # Kiwi splits 비밀번호
    assert M.overlap(q, e) == pytest.approx(len(q & e) / len(q))
    q, e = M.terms(["How do I reset the password?", "Reset the password from the portal."], "en")
    assert q == {"reset", "password"} and M.overlap(q, e) == 1.0
    assert M.overlap(set(), {"x"}) == 0.0


def test_sentence_and_paragraph_around_a_span():
    content = "첫 문장입니다. 둘째 문장에 근거가 있습니다. 셋째.\n\n다음 문단입니다."
    s = content.index("근거")
    assert M.sentence_around(content, s, s + 2) == "둘째 문장에 근거가 있습니다."
    assert M.paragraph_around(content, s, s + 2) == "첫 문장입니다. 둘째 문장에 근거가 있습니다. 셋째."
    assert M.paragraph_around(content, len(content) - 3, len(content)) == "다음 문단입니다."


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=30), st.text(min_size=0, max_size=30))
def test_bigram_similarities_are_bounded_and_symmetric(a, b):
    ga, gb = M.bigrams(a), M.bigrams(b)
    j = M.jaccard(ga, gb)
    assert 0.0 <= j <= 1.0 and j == M.jaccard(gb, ga)
    assert 0.0 <= M.containment(ga, gb) <= 1.0
    if ga:
        assert M.jaccard(ga, ga) == 1.0 and M.containment(ga, ga) == 1.0


def test_near_duplicates_and_copies():
    kept = [("q1", M.bigrams("VPN-ERR-619 오류는 어떻게 해결하나요?"))]
    dup = C.find_duplicate(M.bigrams("VPN-ERR-619 오류는 어떻게 해결해야 하나요?"), kept, 0.5)
    assert dup.reason == "duplicate" and dup.extra == {"duplicate_of": "q1"}
    assert C.find_duplicate(M.bigrams("사원증을 잃어버리면 어떻게 들어가나요?"), kept, 0.5) is None
    sentence = "대기 중인 출력물은 24시간이 지나면 자동으로 삭제됩니다."
    assert C.copy_problem("대기 중인 출력물은 24시간이 지나면 자동으로 삭제되나요?", sentence, [], 0.8).reason == \
        "copies_evidence"
    assert C.copy_problem("어제 걸어 둔 인쇄물이 오늘 안 보여요", sentence, [], 0.8) is None


def test_the_corpus_text_normalises_nfd_korean():
    from ragexam.data.schema import Document

    nfd = unicodedata.normalize("NFD", "비밀번호는 90일마다 바꿔야 합니다.")
    ct = CorpusText([Document("d", nfd)])
    occ = ct.locate("비밀번호는 90일마다")
    assert len(occ) == 1 and unicodedata.normalize("NFC", nfd[occ[0].start:occ[0].end]) == "비밀번호는 90일마다"
