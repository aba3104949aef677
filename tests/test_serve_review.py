"""``ragexam serve --review``: the review screens and decisions over HTTP (Starlette's test client, no browser).

The set is generated through the question generator's loopback stub from good candidates and every kind of bad
one (tests/test_generate_stub.py), so the review sees a real set, its rejects file, card and sheet.
"""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest

from test_generate_stub import BAD, GOOD, UNSUPPORTED_ANSWER, item

MORE = {
    "d1": [item("해외에서 VPN을 쓰려면 언제까지 신청해야 하나요?", "출국 3영업일 전까지 신청해야 합니다.",
                ["출국 3영업일 전까지 해외 VPN 사용 신청을 해야 합니다"])],
    "d2": [item("토너가 떨어졌다는 표시가 뜨면 새 토너는 어디서 구하나요?", "층별 비품함에서 꺼냅니다.",
                ["층별 비품함에서 새 토너를 꺼내 교체합니다"])],
    "d3": [item("계정이 잠겼을 때 기다리지 않고 바로 풀 방법이 있나요?", "서비스데스크(내선 2000)에 전화하면 됩니다.",
                ["서비스데스크(내선 2000)에 전화해 바로 풀 수 있습니다"])],
}


def make_set(folder):
    """Generate ``folder/set/qa.jsonl`` (7 questions) with its rejects, card and sheet; returns ``folder/set``."""
    from test_generate_review import generate_set

    (folder / "set").mkdir(parents=True, exist_ok=True)
    generate_set(folder, lambda d: GOOD[d] + MORE.get(d, []) + [b for _, b in BAD.get(d, [])],
                 unsupported=[UNSUPPORTED_ANSWER], out="set/qa.jsonl")
    return folder / "set"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The generated set, made once per test session (the modules of ``ragexam serve`` share it)."""
    base = tmp_path_factory.getbasetemp() / "serve-generated"
    if not (base / "set" / "qa.review.csv").exists():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir()
        make_set(base)
    return base / "set"


@pytest.fixture
def qa(generated, tmp_path):
    """A fresh copy of the generated set (each test writes its own sheet)."""
    dst = tmp_path / "set"
    shutil.copytree(generated, dst)
    return dst / "qa.jsonl"


def client(*paths, raise_server_exceptions=True, **options):
    """A test client of the app reviewing ``paths`` (the Host header is the loopback one)."""
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    opts = ServeOptions(port=8765, **{"lang": "en", **options})  # English pages (test_serve_i18n.py: Korean)
    c = TestClient(create_app(Catalog.of(list(paths)), opts), base_url="http://127.0.0.1:8765",
                   raise_server_exceptions=raise_server_exceptions)
    c.csrf = opts.csrf
    return c


def version(page, key=None):
    m = re.search(r'name="key" value="([^"]*)">\s*<input type="hidden" name="version" value="([^"]*)"', page.text)
    assert m is not None and (key is None or m.group(1) == key), page.text[:300]
    return m.group(2)


def post(c, key, action, ver, **fields):
    return c.post("/review/1/decide", data={"csrf": c.csrf, "key": key, "action": action, "version": ver, **fields},
                  follow_redirects=False)


def sheet_rows(qa):
    from ragexam.questions.review import read_sheet

    return {qid: row for qid, (_, row) in read_sheet(qa.with_name("qa.review.csv")).by_id.items()}


def test_decisions_are_saved_to_the_sheet_at_once_and_review_apply_reads_it(qa, tmp_path):
    from ragexam.questions import apply_review

    c = client(qa)
    home = c.get("/")
    assert home.status_code == 200 and "qa.jsonl" in home.text
    page = c.get("/review/1/item?key=gen_0001")
    assert page.status_code == 200 and "암호를 몇 번 틀리면 로그인이 막히나요?" in page.text
    r = post(c, "gen_0001", "accept", version(page, "gen_0001"), note="좋은 질문")
    assert r.status_code == 303 and "key=gen_0002" in r.headers["location"]  # on to the next pending question
    assert sheet_rows(qa)["gen_0001"]["status"] == "accepted"  # written before the answer came back
    r = post(c, "gen_0002", "reject", version(c.get("/review/1/item?key=gen_0002")), note="답이 모호함")
    assert r.status_code == 303 and "key=gen_0003" in r.headers["location"]
    rows = sheet_rows(qa)
    assert rows["gen_0002"]["status"] == "rejected" and rows["gen_0002"]["note"] == "답이 모호함"
    assert qa.with_name("qa.review.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    res = apply_review(qa, None, tmp_path / "out.jsonl", pending="drop")
    assert [r["query_id"] for r in res.records] == ["gen_0001"] and res.rejected == ["gen_0002"]
    assert res.records[0]["metadata"]["generation"]["review_note"] == "좋은 질문"


def test_an_edit_is_checked_at_once_and_a_failing_one_is_refused_with_its_reason(qa, tmp_path):
    from ragexam.questions import apply_review

    c = client(qa)
    before = qa.with_name("qa.review.csv").read_bytes()
    page = c.get("/review/1/item?key=gen_0003")
    ver = version(page)
    r = post(c, "gen_0003", "save", ver, question="VPN-ERR-619 오류가 뜨면 무엇을 바꿔야 하나요?",
             ground_truth="TCP 443 모드로 바꿉니다.", evidence="VPN-ERR-619가 나면 TCP 443으로 바꾸세요")
    assert r.status_code == 422
    assert "evidence_not_found" in r.text and "occurs in no document of the corpus" in r.text
    assert "VPN-ERR-619 오류가 뜨면 무엇을 바꿔야 하나요?" in r.text  # what was typed is kept
    assert qa.with_name("qa.review.csv").read_bytes() == before  # nothing written
    r = post(c, "gen_0003", "save_accept", ver, question="VPN-ERR-619 오류가 뜨면 무엇을 바꿔야 하나요?",
             ground_truth="TCP 443 모드를 선택한 뒤 다시 접속합니다.",
             evidence=["설정 > 연결 방식에서 'TCP 443 모드'를 선택한 뒤 다시 접속합니다", ""])
    assert r.status_code == 303 and "key=gen_0003" in r.headers["location"]
    row = sheet_rows(qa)["gen_0003"]
    assert row["status"] == "accepted" and row["question"] == "VPN-ERR-619 오류가 뜨면 무엇을 바꿔야 하나요?"
    assert json.loads(row["evidence"]) == ["설정 > 연결 방식에서 'TCP 443 모드'를 선택한 뒤 다시 접속합니다"]
    assert row["answer_check"] == "vouched for by the reviewer" and row["type"] == "lexical" and row["anchors"] == "vpn-err-619"
    shown = c.get(r.headers["location"])
    assert "edit checked and saved" in shown.text and "edited: question, answer, evidence" in shown.text
    res = apply_review(qa, None, tmp_path / "out.jsonl")
    g = next(x for x in res.records if x["query_id"] == "gen_0003")["metadata"]["generation"]
    assert g["edited"] == ["evidence", "ground_truth", "question"] and g["answer_check"] == {"method": "human"}


def test_two_tabs_keep_each_others_decisions_and_a_stale_tab_is_told(qa):
    from concurrent.futures import ThreadPoolExecutor

    a, b = client(qa), client(qa)
    stale = version(b.get("/review/1/item?key=gen_0001"))
    assert post(a, "gen_0001", "accept", version(a.get("/review/1/item?key=gen_0001"))).status_code == 303
    assert post(b, "gen_0002", "reject", version(b.get("/review/1/item?key=gen_0002"))).status_code == 303
    rows = sheet_rows(qa)
    assert rows["gen_0001"]["status"] == "accepted" and rows["gen_0002"]["status"] == "rejected"
    r = post(b, "gen_0001", "reject", stale)  # b still shows gen_0001 as pending
    assert r.status_code == 409 and "changed by someone else" in r.text
    assert sheet_rows(qa)["gen_0001"]["status"] == "accepted"
    # many tabs at once, each on its own question
    keys = [f"gen_000{i}" for i in range(3, 8)]
    tabs = {k: client(qa) for k in keys}
    vers = {k: version(tabs[k].get(f"/review/1/item?key={k}")) for k in keys}
    with ThreadPoolExecutor(5) as pool:
        codes = list(pool.map(lambda k: post(tabs[k], k, "accept", vers[k], note=k).status_code, keys))
    assert codes == [303] * 5
    rows = sheet_rows(qa)
    assert all(rows[k]["status"] == "accepted" and rows[k]["note"] == k for k in keys)


@pytest.mark.parametrize("lang, unsaved", [("en", "Not saved -- your edit, kept"),
                                           ("ko", "저장되지 않음 -- 입력한 수정 내용을 남겨 두었습니다")])
def test_an_edit_refused_as_a_conflict_keeps_what_was_typed(qa, lang, unsaved):
    """T8: the edit form of a tab opened before another tab decided: 409, nothing written, the saved row shown and
    the typed edit kept in the form (marked not saved), as a 422 keeps it."""
    c = client(qa, lang=lang)
    page = c.get("/review/1/item?key=gen_0001")
    stale = version(page, "gen_0001")
    assert post(c, "gen_0001", "accept", stale, note="first tab").status_code == 303
    before = qa.with_name("qa.review.csv").read_bytes()
    row = sheet_rows(qa)["gen_0001"]
    typed = "XYZ " + row["question"]  # an edit the checks pass (a failing one is refused first: 422)
    evidence = json.loads(row["evidence"])
    r = post(c, "gen_0001", "save", stale, question=typed, ground_truth=row["ground_truth"], evidence=evidence,
             note="XYZ note")
    assert r.status_code == 409 and qa.with_name("qa.review.csv").read_bytes() == before
    editor = re.search(r'<form [^>]*id="editor".*?</form>', r.text, re.S).group(0)
    assert " hidden>" not in editor.split("\n")[0] and unsaved in editor
    assert f">{typed}</textarea>" in html.unescape(editor) and 'value="XYZ note"' in editor
    assert f'name="version" value="{version(c.get("/review/1/item?key=gen_0001"), "gen_0001")}"' in editor
    pane = r.text.split('id="editor"')[0]
    assert "XYZ" not in pane and 'id="status">' in pane  # the saved row, as saved
    assert sheet_rows(qa)["gen_0001"]["status"] == "accepted" and "XYZ" not in sheet_rows(qa)["gen_0001"]["question"]


def test_filters_progress_and_the_rejected_candidates(qa):
    c = client(qa)
    listing = c.get("/review/1?status=pending")
    assert listing.text.count('<tr class="st-pending">') == 7 and "0 of 7 decided" in listing.text
    assert post(c, "gen_0003", "accept", version(c.get("/review/1/item?key=gen_0003"))).status_code == 303
    listing = c.get("/review/1?status=pending&type=lexical")
    assert listing.text.count('<tr class="st-pending">') == 1 and "gen_0004" in listing.text
    assert "1 of 7 decided" in listing.text
    assert c.get("/review/1?status=accepted").text.count('<tr class="st-accepted">') == 1
    cands = c.get("/review/1?reason=any")
    assert cands.text.count('<tr class="st-candidate">') == 12
    para = c.get("/review/1?reason=evidence_paraphrased")
    assert para.text.count('<tr class="st-candidate">') == 1 and "인증 번호는 얼마나 자주 바뀌나요?" in para.text


def test_the_passages_mark_the_evidence_in_place(qa):
    c = client(qa)
    page = c.get("/review/1/item?key=gen_0001")
    marks = re.findall(r'<mark class="ev" data-ev="1">([^<]*)</mark>', page.text)
    assert marks == ["로그인에 5번 연속 실패하면 계정이 30분 동안 잠깁니다"]
    assert "비밀번호는 90일마다 바꿔야 하며" in page.text  # the whole document around it
    for step in ("question", "evidence", "answer", "copy", "duplicate"):
        assert f"<th>{step}</th>" in page.text
    assert "judged supported by the evidence: faithfulness 1.0" in page.text and "0.250" in page.text


def test_a_rejected_candidate_is_rescued_after_its_checks(qa, tmp_path):
    from ragexam.questions import apply_review

    c = client(qa)
    rejects = {json.loads(x)["reason"]: json.loads(x) for x in qa.with_name("qa.rejects.jsonl").read_text(
        encoding="utf-8").splitlines()}
    cid = rejects["evidence_paraphrased"]["cid"]
    page = c.get(f"/review/1/item?key=c:{cid}&reason=any")
    assert "evidence_paraphrased" in page.text and "Rescue" in page.text
    r = post(c, f"c:{cid}", "rescue", "", question="인증 번호는 얼마나 자주 바뀌나요?", ground_truth="30초마다 바뀝니다.",
             evidence="번호는 '다온 OTP' 앱이 30초마다 새로 만듭니다", reason="any")
    assert r.status_code == 422 and "evidence_paraphrased" in r.text
    r = post(c, f"c:{cid}", "rescue", "", question="인증 번호는 얼마나 자주 바뀌나요?", ground_truth="30초마다 바뀝니다.",
             evidence="번호는 '다온 OTP' 앱이 30초마다 새로 만들어 줍니다", reason="any")
    assert r.status_code == 303 and f"key=gen_{cid}" in r.headers["location"]
    assert sheet_rows(qa)[f"gen_{cid}"]["candidate"] == cid
    assert c.get("/review/1?reason=any").text.count('<tr class="st-candidate">') == 11
    res = apply_review(qa, None, tmp_path / "out.jsonl", pending="drop")
    assert [x["query_id"] for x in res.records] == [f"gen_{cid}"]
    assert res.records[0]["metadata"]["generation"]["rescued"] == "evidence_paraphrased"


def test_a_bad_file_is_a_page_with_the_reason(qa):
    lines = qa.read_text(encoding="utf-8").splitlines()
    qa.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n", encoding="utf-8")
    c = client(qa, qa.with_name("missing.jsonl"))
    home = c.get("/")
    assert home.status_code == 200 and f"{qa}:3" in home.text and "no such file" in home.text
    page = c.get("/review/1")
    assert page.status_code == 422 and f"{qa}:3" in page.text and "Traceback" not in page.text
    sheet = qa.with_name("qa.review.csv")
    qa.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sheet.write_text(sheet.read_text(encoding="utf-8-sig").replace(",pending,", ",maybe,", 1), encoding="utf-8")
    page = client(qa).get("/review/1")
    assert page.status_code == 422 and f"{sheet}:2" in page.text and "expected accept, reject or pending" in page.text


def test_long_documents_are_cut_around_the_evidence():
    from ragexam.serve.reviewing import WHOLE_DOCUMENT_CHARS, marked_html

    text = "가" * 20_000 + "근거<문장>" + "나" * 20_000
    text_html, cut = marked_html(text, [(20_000, 20_006, 1)])
    assert cut and '<mark class="ev" data-ev="1">근거&lt;문장&gt;</mark>' in text_html
    assert len(text_html) < 4_000 and text_html.count("[…]") == 2
    assert marked_html("짧은 글", []) == ("짧은 글", False) and WHOLE_DOCUMENT_CHARS > 5_000


def test_rows_the_server_did_not_touch_are_written_back_as_they_were(qa):
    sheet = qa.with_name("qa.review.csv")
    text = sheet.read_text(encoding="utf-8-sig").replace("gen_0002,pending,", "gen_0002,승인,", 1)
    sheet.write_text(text, encoding="utf-8-sig")
    c = client(qa)
    assert post(c, "gen_0001", "reject", version(c.get("/review/1/item?key=gen_0001"))).status_code == 303
    after = sheet.read_text(encoding="utf-8-sig").splitlines()
    assert after[2:] == text.splitlines()[2:] and after[1].startswith("gen_0001,rejected,")
    accepted = c.get("/review/1?status=accepted").text  # 승인 is a spelling of accepted
    assert accepted.count('<tr class="st-accepted">') == 1 and "gen_0002" in accepted


def test_the_python_example_of_docs_serve_runs(generated, tmp_path, monkeypatch):
    from pathlib import Path

    import httpx

    doc = (Path(__file__).resolve().parents[1] / "docs" / "serve.md").read_text(encoding="utf-8")
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    from test_report_fixtures import make_run, write_run

    shutil.copytree(generated, tmp_path / "set")
    write_run(tmp_path / "set" / "runs" / "bm25", *make_run(n_questions=8, seed=1))
    monkeypatch.chdir(tmp_path / "set")
    seen = []
    monkeypatch.setattr("builtins.print", lambda url: seen.extend(httpx.get(url + path, timeout=60)
                                                                  for path in ("review/1", "run/f1")))
    exec(compile(code, "docs/serve.md", "exec"), {})
    assert seen and seen[0].status_code == 200 and "gen_0001" in seen[0].text
    assert seen[1].status_code == 200 and "놓친 질문" in seen[1].text  # the data is Korean: so are the pages


def test_an_install_without_the_web_packages_gets_one_install_line(monkeypatch):
    import importlib.util

    from ragexam.cli_serve import _check_web_stack
    from ragexam.errors import MissingDependencyError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragexam\[serve\]'"):
        _check_web_stack()


def test_a_long_table_is_paginated(qa, monkeypatch):
    import ragexam.serve.app as app_module

    monkeypatch.setattr(app_module, "LIST_PAGE", 3)
    c = client(qa)
    first = c.get("/review/1?status=all")
    assert first.text.count('<tr class="st-pending">') == 3 and "rows 1–3 of 7 (page 1 of 3)" in first.text
    assert "Review these 7 one by one" in first.text and 'href="/review/1?status=all&amp;page=2"' in first.text
    last = c.get("/review/1?status=all&page=3")
    assert last.text.count('<tr class="st-pending">') == 1 and "gen_0007" in last.text and "gen_0001<" not in last.text
    assert c.get("/review/1?status=all&page=99").text.count('<tr class="st-pending">') == 1  # clamped
    assert c.get("/review/1?status=all&page=x").status_code == 200


def test_a_reworded_evidence_string_shows_where_it_was_copied_from(qa):
    c = client(qa)
    page = c.get("/review/1/item?key=c:p1-c0002-4&reason=any")  # evidence_paraphrased
    near = re.findall(r'<mark class="near" data-ev="1"[^>]*>([^<]*)</mark>', page.text)
    assert [html.unescape(x) for x in near] == ["번호는 '다온 OTP' 앱이 30초마다 새로 만"] and "closest verbatim" in page.text
    assert '<mark class="ev"' not in page.text
