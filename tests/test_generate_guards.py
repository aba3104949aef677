"""What issues 41 (points 5-7) and 39 asked of ``ragexam generate``: say who checked, cheap guards that match what a
person read, a limit on generation calls alone, the question word against the answer type, a dry run that names the
prompts it will use -- and the stages of :mod:`ragexam.questions.stages` composed by hand.

The model is the scripted loopback stub of ``qgen_stub.py``; the guards are measured on the labelled recordings
(``tests/data/generate_focus_labelled.json`` and the seed-7 run's labels, ``SEED7_BAD``).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from qgen_stub import GenRequest, write_docs
from ragexam import generate, generate_plan
from ragexam.questions import checks as C
from test_generate_stub import GOOD, by_doc, corpus, item, stub  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def spans(stub, corpus, tmp_path, **kw):
    kw.setdefault("cache_dir", tmp_path / "cache")
    kw.setdefault("cite", "spans")
    kw.setdefault("mix", "meaning=1")
    kw.setdefault("per_call", 10)
    kw.setdefault("max_passes", 1)
    return generate(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", **kw)


def sheet_rows(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def _located(*texts):
    return [C.Located(i, t, " ".join(t.split()), (), ()) for i, t in enumerate(texts, 1)]


# -- the stages ------------------------------------------------------------------------------------------------
def test_the_stages_composed_by_hand_make_the_set_generate_makes(stub, corpus, tmp_path):
    """The module docstring of :mod:`ragexam.questions.stages`, run: one pass by hand gives the records, rejects and
    card ``ragexam.generate`` gives."""
    from ragexam.questions import stages as S
    from ragexam.questions.config import resolve
    from ragexam.questions.products import Ledger, Reply, Task
    from ragexam.questions.sampling import Coverage

    stub.script = by_doc(lambda d, req: GOOD[d])
    whole = spans(stub, corpus, tmp_path, n=4)
    config, settings = resolve("stub-gen", 4, dict(base_url=stub.base_url, api_key="x", cache_dir=tmp_path / "c2",
                                                   cite="spans", mix="meaning=1", per_call=10, max_passes=1))
    setup = S.prepare(corpus, config, settings)
    ledger = Ledger(Coverage(setup.sections, config.seed), initial_check_rate=2.5)
    ledger.pass_no = 1
    tasks = S.sample(setup, ledger)
    assert tasks and all(isinstance(t, Task) for t in tasks)
    replies = S.ask(setup, S.fit(setup, tasks, ledger, dry=False), ledger, dry=False)
    assert all(isinstance(r, Reply) and r.status == "ok" for r in replies.values())
    cands = S.parse(setup, tasks, replies, ledger)
    live = S.verify(setup, cands, ledger)
    S.llm_check(setup, live, ledger, dry=False)
    S.settle(ledger, cands, live)
    ledger.tasks.extend(tasks)
    ledger.stop = "max_passes (1) reached"
    by_hand = S.write(setup, ledger, S.select(setup, ledger.kept))
    assert by_hand.records == whole.records and by_hand.rejects == whole.rejects
    assert {k: v for k, v in by_hand.card.items() if k != "this_run"} == \
        {k: v for k, v in whole.card.items() if k != "this_run"}


def test_there_is_one_public_generate():
    import ragexam
    import ragexam.api
    import ragexam.questions

    assert ragexam.generate is ragexam.api.generate and ragexam.generate_plan is ragexam.api.generate_plan
    assert not hasattr(ragexam.questions, "generate") and not hasattr(ragexam.questions, "plan")


# -- issue 39: the dry run names the prompts it will use ------------------------------------------------------------
def test_a_dry_run_prints_the_prompts_it_will_use(stub, tmp_path, capsys):
    """``generate --dry-run --prompt-lang en`` on a Korean corpus printed "prompts: ko" while the run used
    ``questions/en/v3``: it names the prompt file it will use and the questions' language."""
    from ragexam.cli import main
    from ragexam.questions.prompts import load_prompts

    base = ["generate", "--corpus", "it_helpdesk", "-n", "4", "--model", "stub-gen", "--base-url", stub.base_url,
            "--api-key", "x", "--cache-dir", str(tmp_path / "cache"), "--dry-run"]
    for lang in ("en", "ko"):
        with pytest.raises(SystemExit) as ei:
            main(base + ["--prompt-lang", lang])
        out = capsys.readouterr().out
        assert (ei.value.code or 0) == 0
        label = load_prompts(lang).label
        assert f"prompts: {label}" in " ".join(out.split()) and "prompts: ko;" not in out
        assert "questions in ko" in out
    assert stub.requests == []
    p = generate_plan("it_helpdesk", 4, model="stub-gen", base_url=stub.base_url, api_key="x", prompt_language="en",
                      cache_dir=tmp_path / "cache").to_dict()
    assert p["prompts"] == load_prompts("en").label and p["language"] == "ko" and p["cite"] == "focus"


# -- issue 41.5: say who checked ------------------------------------------------------------------------------------
def test_the_card_console_sheet_and_record_say_the_generator_checked_itself(stub, corpus, tmp_path):
    from rich.console import Console

    from ragexam.report.console_generate import print_generate

    stub.script = by_doc(lambda d, req: GOOD[d])
    out = tmp_path / "set" / "qa.jsonl"
    res = spans(stub, corpus, tmp_path, n=4, out=out)
    assert res.card["checked_by"] == {"model": "stub-gen", "generator_itself": True,
                                      "text": "checked by the generator itself: stub-gen"}
    console = Console(record=True, width=200)
    print_generate(res, console)
    text = console.export_text()
    assert "checked by the generator itself: stub-gen" in text and "생성 모델이 스스로 검사" in text
    rows = sheet_rows(out.with_name("qa.review.csv"))
    assert {r["checked_by"] for r in rows} == {"the generator itself: stub-gen"}
    for r, rec in zip(rows, res.records):
        g = rec["metadata"]["generation"]
        assert g["checked_by"] == {"model": "stub-gen", "generator_itself": True}
        assert r["critic"] == f"{g['critic']['score']}/3" and r["reader_answer"] == g["reader"]["answer"]
        assert r["reader_agreement"].split()[0] == g["reader"]["agreement"]
        r["answer_check"].encode("cp949")  # Korean Excel saves the sheet so
        assert r["answer_check"] in ("answer found in evidence - not checked for correctness",
                                     f"judged supported: faithfulness {g['answer_check'].get('score')}")


def test_a_separate_judge_is_named_as_such(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d])
    res = spans(stub, corpus, tmp_path, n=4, judge_model="stub-judge", out=tmp_path / "qa.jsonl")
    assert res.card["checked_by"] == {"model": "stub-judge", "generator_itself": False,
                                      "text": "checked by another model: stub-judge (the generator: stub-gen)"}
    assert {r["checked_by"] for r in sheet_rows(tmp_path / "qa.review.csv")} == {"stub-judge"}


def test_serve_says_what_a_contained_answer_is_worth():
    """"the answer lies inside the evidence" read as a check of the key; it says only where the key was found."""
    from ragexam.serve.app import answer_support

    it = SimpleNamespace(answerable=True, edited=[], origin="set")
    got = answer_support(it, SimpleNamespace(answer_contained=True), {"answer_check": {"method": "contained"}})
    assert got["text"] == "answer found in evidence — not checked for correctness"
    it = SimpleNamespace(answerable=True, edited=["ground_truth"], origin="set")
    got = answer_support(it, SimpleNamespace(answer_contained=True), {})
    assert got["text"] == "answer found in evidence — not checked for correctness"


# -- issue 41.6: cheap guards -----------------------------------------------------------------------------------
def test_a_question_holding_its_documents_whole_title_is_rejected(stub, corpus, tmp_path):
    """"퇴사자 계정과 IT 자산 처리는 어떻게 되나요?" (the seed-7 run, read as bad) asks about the document, not about
    one fact of it.  A question that names its document's topic and asks a fact of its evidence, and a title of one
    word, are left alone."""
    title = ["퇴사자 계정과 IT 자산 처리"]
    ev = ["인사팀이 퇴사를 확정하면 헬프온에 '퇴사자 IT 처리' 티켓이 자동으로 만들어집니다."]
    assert C.title_problem("퇴사자 계정과 IT 자산 처리는 어떻게 되나요?", title, ev, "ko").reason == "contains_title"
    assert C.title_problem("퇴사자  계정과 it 자산 처리는?", title, ev, "ko") is not None  # case and spaces aside
    assert C.title_problem("퇴사자 계정과 IT 자산 처리 티켓은 누가 만드나요?", title, ev, "ko") is None  # asks a fact
    assert C.title_problem("퇴사할 때 노트북은 어떻게 반납하나요?", title, ev, "ko") is None
    assert C.title_problem("VPN은 어떻게 되나요?", ["VPN"], ["VPN은 회사 밖에서 씁니다."], "ko") is None  # one word
    assert C.title_problem("해외 출장은 누구의 승인을 먼저 받아야 하나요?", ["해외 출장"],
                           ["해외 출장은 본부장의 사전 승인이 필요합니다."], "ko") is None
    titled = item("VPN 접속은 어떻게 되나요?", "SecureLink VPN으로 먼저 접속해야 합니다",
                  ["회사 밖에서 사내 시스템을 쓰려면 SecureLink VPN으로 먼저 접속해야 합니다"])
    stub.script = by_doc(lambda d, req: GOOD[d] + ([titled] if d == "d1" else []))
    res = spans(stub, corpus, tmp_path, n=10)
    rej = next(r for r in res.rejects if r.get("question") == titled["question"])
    assert rej["reason"] == "contains_title" and "'VPN 접속'" in rej["detail"]
    assert [r["reason"] for r in res.rejects] == ["contains_title"]  # the good questions pass
    res = spans(stub, corpus, tmp_path, n=10, skip_checks=("title",))
    assert titled["question"] in {r["question"] for r in res.records}
    assert "title" not in res.card["checks"] and "checks:injection+guards+premise+fragment+" in res.signature


def test_a_key_cut_where_the_splitter_cut_its_focus_sentence_is_rejected(stub, tmp_path):
    """"IT 지원 요청의 목표 시간은?" → "긴급 4시간, 높음": the sentence splitter cut a list at a line break, the model
    took the piece as the key.  A focus sentence with no sentence ending whose last word the key ends with is
    ``fragment_key``; a key that stops before the cut, and a sentence with an ending, are left alone."""
    cut = "요청 등급별 목표 처리 시간은 긴급 4시간, 높음"
    assert C.ends_sentence(cut, "ko") is False
    assert C.ends_sentence("교체 주기는 4년입니다", "ko") and C.ends_sentence("'PDF'를 고르세요.\"", "ko")
    assert C.ends_sentence("... 확인하십시오. 'Microsoft Print to PDF'", "ko") is False
    assert C.fragment_problem("긴급 4시간, 높음", _located(cut), "ko").reason == "fragment_key"
    assert C.fragment_problem("긴급 요청은 4시간", _located(cut), "ko") is None
    assert C.fragment_problem("4년", _located("노트북 교체 주기는 4년입니다."), "ko") is None
    docs = [{"doc_id": "s1", "title": "지원 요청 등급", "content": f"{cut}\n1영업일."},  # the rest is too short
            {"doc_id": "s2", "title": "원격지원", "content": "원격지원은 헬프온 앱에서 요청 번호를 입력하면 시작됩니다."}]
    corpus = write_docs(tmp_path / "d.jsonl", docs)
    asked = "헬프데스크에 급한 요청을 하면 처리까지 얼마나 걸리나요?"

    def script(req: GenRequest):
        if "긴급" in req.passages[0][1]:
            return {"question": asked, "answer": "긴급 4시간, 높음"}
        return {"question": "원격지원은 어떻게 시작하나요?", "answer": "헬프온 앱에서 요청 번호를 입력하면 시작됩니다"}

    stub.script = script
    kw = dict(model="stub-gen", base_url=stub.base_url, api_key="x", cite="focus", mix="meaning=1", max_passes=1)
    res = generate(corpus, 2, cache_dir=tmp_path / "c", **kw)
    rej = next(r for r in res.rejects if r.get("question") == asked)
    assert rej["reason"] == "fragment_key" and "높음" in rej["detail"]
    res = generate(corpus, 2, cache_dir=tmp_path / "c", skip_checks=("fragment",), **kw)
    assert asked in [r["question"] for r in res.records]


def test_multi_leaves_the_default_mix_when_the_generator_checks_itself(stub, corpus, tmp_path):
    kw = dict(model="stub-gen", base_url=stub.base_url, api_key="x", cache_dir=tmp_path / "c")
    own = generate_plan(corpus, 20, **kw)
    assert set(own.targets) == {"meaning", "lexical", "out_of_corpus"} and sum(own.targets.values()) == 20
    assert any("multi left out of the default mix" in n for n in own.notes)
    other = generate_plan(corpus, 20, judge_model="stub-judge", **kw)
    assert other.targets["multi"] == 3 and not any("multi" in n for n in other.notes)
    asked = generate_plan(corpus, 20, mix="meaning=0.5,multi=0.5", **kw)
    assert asked.targets == {"meaning": 10, "multi": 10}
    stub.script = by_doc(lambda d, req: GOOD[d])
    res = generate(corpus, 4, cite="spans", per_call=10, max_passes=1, **kw)
    assert "multi" not in res.card["mix"] and any("multi left out" in n for n in res.card["notes"])


# -- issue 41.7: generation calls alone -------------------------------------------------------------------------------
def test_max_generation_calls_counts_generation_calls_only(stub, corpus, tmp_path):
    stub.script = by_doc(lambda d, req: GOOD[d])
    res = spans(stub, corpus, tmp_path, n=40, per_call=1, max_passes=10, max_generation_calls=3)
    usage = res.card["this_run"]["usage"]
    assert usage["generation"]["calls"] == 3 and usage["checks"]["calls"] > 3  # the checks are not counted
    assert res.card["stopped"] == "max_generation_calls (3) reached"
    assert res.card["generation_calls"] == 3 and res.card["limits"]["max_generation_calls"] == 3
    # like --max-calls, the limit is this run's: a rerun gets the cached calls free and may make 3 more
    again = spans(stub, corpus, tmp_path, n=40, per_call=1, max_passes=10, max_generation_calls=3)
    assert again.card["generation_calls"] == 6 and again.card["this_run"]["usage"]["generation"]["calls"] == 3
    assert {r["question"] for r in res.records} <= {r["question"] for r in again.records}
    both = spans(stub, corpus, tmp_path, n=40, per_call=1, max_passes=10, max_calls=3, cache_dir=tmp_path / "c3")
    assert both.card["this_run"]["usage"]["generation"]["calls"] < 3  # --max-calls counts the checks too
    p = generate_plan(corpus, 40, model="stub-gen", base_url=stub.base_url, api_key="x", cache_dir=tmp_path / "c4",
                      cite="spans", mix="meaning=1", per_call=1, max_generation_calls=2)
    assert p.generation_calls == 2 and p.to_dict()["max_generation_calls"] == 2


def test_the_console_says_how_many_were_kept_in_how_many_generation_calls(stub, corpus, tmp_path):
    from rich.console import Console

    from ragexam.report.console_generate import print_generate, print_generate_plan

    stub.script = by_doc(lambda d, req: GOOD[d])
    res = spans(stub, corpus, tmp_path, n=40, per_call=1, max_passes=10, max_generation_calls=3)
    console = Console(record=True, width=200)
    print_generate(res, console)
    assert f"{res.card['n_kept']} kept in 3 generation calls (3 made by this run; --max-generation-calls 3)" in \
        console.export_text()
    p = generate_plan(corpus, 40, model="stub-gen", base_url=stub.base_url, api_key="x", cache_dir=tmp_path / "c4",
                      cite="spans", mix="meaning=1", per_call=1, max_generation_calls=2)
    console = Console(record=True, width=200)
    print_generate_plan(p, console)
    assert "at most 2 generation calls (--max-generation-calls)" in console.export_text()


# -- issue 39: the question word against the answer type --------------------------------------------------------------
def test_a_why_question_answered_with_a_date_is_rejected():
    """The newcomer's "…배제되는 것은 없다는 이유는 무엇인가요?" → "대법원 2007. 9." was kept with critic 3/3: its
    evidence held a reason marker, so the old rule passed it.  Why needs a reason clause in the key (a predicate or
    a reason marker); when a time; how many or how much an amount."""
    q = "근로기준법 적용에서 배제되는 것은 없다는 이유는 무엇인가요?"
    ev = _located("대법원 2007. 9. 판결에 따르면 근로자성이 인정되기 때문에 적용에서 배제되는 것은 없다.")
    bad = C.answer_type_problem(q, "대법원 2007. 9.", ev, "ko")
    assert bad is not None and bad.reason == "answer_type_mismatch" and "not a reason" in bad.detail
    assert C.answer_type_problem(q, "근로자성이 인정되기 때문입니다", ev, "ko") is None
    assert C.answer_type_problem(q, "근로자로 인정됩니다", ev, "ko") is None  # a clause: the reader judges it
    assert C.answer_type_problem("Why was the claim refused?", "Supreme Court, 2007",
                                 _located("Refused because the court ruled so."), "en").reason == "answer_type_mismatch"
    assert C.answer_type_problem("Why was the claim refused?", "The court found no contract",
                                 _located("Refused because the court ruled so."), "en") is None
    assert C.answer_type_problem("비밀번호는 언제 바꾸나요?", "팀장에게", _located("비밀번호는 90일마다 바꿉니다."),
                                 "ko").reason == "answer_type_mismatch"
    assert C.answer_type_problem("계정은 몇 번 틀리면 잠기나요?", "서비스데스크", _located("5번 틀리면 잠깁니다."),
                                 "ko").reason == "answer_type_mismatch"


# -- the guards measured on what people read ------------------------------------------------------------------------
def _labelled():
    """Every question a person labelled, as (source, label, question, answer, evidence, titles, kind): the kept
    questions of the handbook33/helpdesk10 runs and the 41 focus sentences' three variants
    (``generate_focus_labelled.json``), and the seed-7 run's 20 kept questions (``SEED7_BAD``)."""
    from ragexam.data.loaders import load_corpus
    from test_generate_replay import SEED7_BAD, replay

    titles = {}

    def title(corpus, doc):
        if corpus not in titles:
            titles[corpus] = {d.doc_id: d.title or "" for d in load_corpus(ROOT / corpus)}
        return titles[corpus][doc]

    data = json.loads((DATA / "generate_focus_labelled.json").read_text(encoding="utf-8"))
    out = [("kept:" + k["run"], k["label"], k["question"], k["answer"], [k["evidence"]],
            [title(k["corpus"], k["doc_id"])], k["kind"]) for k in data["kept"]]
    for s in data["sentences"]:
        for v in ("focus", "answer_first", "rewrite"):
            out.append(("sentences:" + v, s[v]["label"], s[v]["question"], s[v]["answer"], [s["sentence"]],
                        [title(s["corpus"], s["doc_id"])], s["kind"]))
    return out, SEED7_BAD, replay


def test_the_title_guard_on_the_labelled_questions(tmp_path):
    """``contains_title`` removes 8 questions read as bad and 1 read as good of the 186 labelled ones (90 bad), and
    none of the 77 hand-written bundled questions; of the seed-7 run's 44 rejected candidates, it would have
    rejected 2.  The literal rule (any question holding the whole title) removed 13 bad and 2 good, and "해외 출장은
    누구의 승인을 먼저 받아야 하나요?" under the title "해외 출장" with them."""
    from collections import Counter

    from ragexam.data.loaders import load_corpus, load_qa

    labelled, seed7_bad, replay = _labelled()
    _, res = replay(DATA / "generate_replay_focus_helpdesk_n20_seed7.jsonl", tmp_path)
    hd = {d.doc_id: d.title for d in load_corpus("it_helpdesk")}
    for r in res.records:
        labelled.append(("seed7", "bad" if r["question"] in seed7_bad else "good", r["question"], r["ground_truth"],
                         r["evidence"], [hd[d] for d in r["relevant_doc_ids"]], r["metadata"]["generation"]["kind"]))
    hits = Counter((src.split(":")[0], label) for src, label, q, _, ev, titles, _ in labelled
                   if C.title_problem(q, titles, ev, "ko") is not None)
    labels = Counter(label for _, label, *_ in labelled)
    assert labels == {"bad": 90, "good": 96}
    assert hits == {("kept", "bad"): 1, ("sentences", "bad"): 5, ("seed7", "bad"): 2, ("seed7", "good"): 1}
    for name in ("it_helpdesk", "ai_concepts"):
        docs = {d.doc_id: d.title for d in load_corpus(name)}
        assert not [q.question for q in load_qa(name) if q.answerable and C.title_problem(
            q.question, [docs[d] for d in q.relevant_docs], q.evidence, "ko") is not None]
    rejected = [r for r in res.rejects if r.get("question") and r["reason"] != "surplus"]
    held = [r for r in rejected if C.title_problem(r["question"], [hd[s.split("#")[0]] for s in r["sections"]],
                                                   r["evidence"], "ko")]
    assert (len(held), len(rejected)) == (2, 44)


def test_the_answer_type_and_fragment_guards_reject_no_labelled_good_question():
    """The why-key rule and the fragment rule were written from the newcomer's and the held-out run's questions, not
    from these: on the 186 labelled questions they reject none (the labelled sentences were all whole sentences, and
    no labelled why-question has a key without a clause); the 77 hand-written ones pass (test_generate_focus)."""
    labelled, _, _ = _labelled()
    why = [q for _, _, q, a, ev, _, _ in labelled if C.answer_type_problem(q, a, _located(*ev), "ko") is not None
           and C.answer_type_problem(q, a, _located(*ev)) is None]
    cut = [q for _, _, q, a, ev, _, _ in labelled if C.fragment_problem(a, _located(*ev), "ko") is not None]
    assert why == [] and cut == []


def test_multi_questions_of_the_held_out_runs(tmp_path):
    """Why ``multi`` leaves the default mix when the generator checks itself: of the two held-out it_helpdesk runs
    (10 and 20 kept, read by a person), 29 candidates were two-document questions; 25 were rejected and 3 of the 4
    kept were read as bad."""
    labelled, seed7_bad, replay = _labelled()
    n10_bad = {q for src, label, q, *_ in labelled if src == "kept:helpdesk10" and label == "bad"}
    kept = rejected = bad = 0
    for name, bad_set in (("generate_replay_focus_helpdesk_n10.jsonl", n10_bad),
                          ("generate_replay_focus_helpdesk_n20_seed7.jsonl", set(seed7_bad))):
        _, res = replay(DATA / name, tmp_path / name)
        multi = [r for r in res.records if r["metadata"]["generation"]["kind"] == "multi"]
        kept += len(multi)
        bad += sum(r["question"] in bad_set for r in multi)
        rejected += sum(1 for r in res.rejects if r.get("kind") == "multi" and r["reason"] != "surplus")
    assert (kept + rejected, rejected, kept, bad) == (29, 25, 4, 3)


def test_the_generators_own_checks_passed_the_bad_questions_it_kept(tmp_path):
    """docs/generate.md, "Who checked": on the recorded held-out run the generator's critic gave all 20 kept questions
    full marks; a person read 10 as bad, 5 of those with the reader's answer agreeing with the key (contained)."""
    _, seed7_bad, replay = _labelled()
    _, res = replay(DATA / "generate_replay_focus_helpdesk_n20_seed7.jsonl", tmp_path)
    g = [(r["metadata"]["generation"], r["question"] in seed7_bad) for r in res.records]
    assert len(g) == 20 and all(x["critic"]["score"] == 3 for x, _ in g)
    assert sum(bad for _, bad in g) == 10
    assert sum(bad and x["reader"]["agreement"] == "contained" for x, bad in g) == 5
    assert all(x["checked_by"] == {"model": "qwen2.5-1.5b", "generator_itself": True} for x, _ in g)
