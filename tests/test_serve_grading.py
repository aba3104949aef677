"""Doc mode's honesty in ``ragexam serve`` (issue 36 item 4), with the issue's repros: the bundled helpdesk set with
bm25 graded by evidence (``rel_ev``) and by document (``rel_doc``, tests/test_grading_rules.py).

* the missed questions of a doc-mode run show the first relevant document's rank *and* the first chunk of a
  relevant document (the document's rank indexed the chunk list before: hq_023 named hd_14#2, of a document that
  is not relevant);
* the runs list and a run's page say how each run was graded;
* the compare page refuses two runs graded under different rules -- in the page's words, with a checkbox
  "compare anyway" that maps to ``allow_grading_change`` -- and, asked so, says the difference includes the change
  of grading.
"""

from __future__ import annotations

import html
import re

import pytest

from test_grading_rules import QUICK, runs  # noqa: F401 (fixture)
from test_cli_pipelines import cli


def client(*folders, lang="en", history=None):
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    opts = ServeOptions(port=8765, lang=lang)
    return TestClient(create_app(Catalog.of([], None, list(folders), history), opts),
                      base_url="http://127.0.0.1:8765")


def text(page_html):
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page_html)))


def test_doc_mode_missed_questions_name_a_chunk_of_a_relevant_document(runs):  # noqa: F811
    from ragexam.data.loaders import load_qa

    qa = load_qa("it_helpdesk")
    c = client(runs / "rel_doc", runs / "rel_ev")
    page = c.get("/run/f1").text
    assert "graded by <b>document</b> (a chunk counts for its document; k counts distinct documents)" in page
    assert "first relevant document: rank · its first chunk" in page
    rows = re.findall(r'<tr class="miss-row">(.*?)</tr>', page, re.S)
    assert len(rows) == 6  # the six questions bm25 misses at k = 5
    for row in rows:
        qid = re.search(r"<code>([^<]+)</code>", row).group(1)
        cell = text(re.search(r'<td class="num first-rank">(.*?)</td>', row, re.S).group(1))
        m = re.fullmatch(r"document (\d+) · (\S+) at chunk rank (\d+)", cell.strip())
        assert m is not None, cell
        assert m.group(2).split("#")[0] in qa[qid].relevant_docs, (qid, cell)  # a chunk of a relevant document
    hq023 = next(r for r in rows if "hq_023" in r)
    assert re.search(r"document 8 · hd_06#\d+ at chunk rank \d+", text(hq023))
    # a missed question's page says the same
    detail = c.get("/run/f1/missed", params={"pipeline": "bm25 | paragraphs:400", "qid": "hq_023"}).text
    about = text(re.search(r'<p class="note" id="missed-about">(.*?)</p>', detail, re.S).group(1))
    assert "graded by document: its first relevant document at document rank 8 (k = 5 counts documents)" in about
    assert re.search(r"the first chunk of a relevant document is hd_06#\d+ of hd_06 ?, at chunk rank \d+", about)
    # evidence mode is unchanged: a chunk rank
    ev = c.get("/run/f2").text
    assert "graded by <b>evidence</b>" in ev and "first relevant document" not in ev
    assert all(re.fullmatch(r"\d+|not found", text(x).strip())
               for x in re.findall(r'<td class="num first-rank">(.*?)</td>', ev, re.S))


def test_the_runs_list_shows_each_runs_relevance_rule(runs, tmp_path, capsys, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    for extra in ([], ["--relevance", "doc"]):
        code, _, _ = cli(["run", "--corpus", "ai_concepts", "--qa", "ai_concepts", "-r", "bm25", *extra, *QUICK],
                         capsys)
        assert code == 0
    page = client(runs / "rel_ev", runs / "rel_doc").get("/runs").text
    folders = re.search(r'<table class="runs" id="folders">(.*?)</table>', page, re.S).group(1)
    assert [text(x) for x in re.findall(r'<span class="tag rel-\w+"[^>]*>(.*?)</span>', folders)] == \
        ["by evidence", "by document"]
    history = re.search(r'<table class="runs" id="history">(.*?)</table>', page, re.S).group(1)
    assert sorted(re.findall(r'class="tag rel-(\w+)"', history)) == ["doc", "evidence"]
    assert 'title="graded by document: a chunk counts for its document; k counts distinct documents"' in history
    korean = client(runs / "rel_ev", runs / "rel_doc", lang="ko").get("/runs").text
    assert "근거 기준" in korean and "문서 기준" in korean


def test_compare_refuses_a_change_of_grading_and_compares_anyway_when_asked(runs):  # noqa: F811
    c = client(runs / "rel_ev", runs / "rel_doc")
    r = c.get("/compare", params={"a": "f1", "b": "f2"})
    assert r.status_code == 422
    page = r.text
    assert "A and B were graded differently" in page
    assert text(re.search(r'<ul id="grading">(.*?)</ul>', page, re.S).group(1)).strip() == \
        "the relevance rule: A by evidence, B by document"
    assert 'id="allow"' in page and "compare anyway — the difference then includes the change of grading" in page
    assert "diffs" not in page and "better" not in page and "missed→found" not in page  # no B − A at all
    assert "--allow-grading-change" not in page and "allow_grading_change" not in page  # browser terms
    r = c.get("/compare", params={"a": "f1", "b": "f2", "allow": "1"})  # the checkbox ticked
    assert r.status_code == 200
    page = r.text
    box = text(re.search(r'<div class="box warn" role="status" id="grading-included">(.*?)</div>', page,
                         re.S).group(1))
    assert "every difference below includes the change of grading" in box and "A by evidence, B by document" in box
    assert 'class="comparisons diffs"' in page
    assert "document rank in B" in page and "document rank in A" not in page  # B's ranks count documents
    # the same grading compares without a word about it
    same = c.get("/compare", params={"a": "f1", "b": "f1"})
    assert same.status_code == 200 and "graded differently" not in same.text and "grading-included" not in same.text


def test_the_grading_refusal_speaks_korean(runs):  # noqa: F811
    page = client(runs / "rel_ev", runs / "rel_doc", lang="ko").get("/compare", params={"a": "f1", "b": "f2"}).text
    assert "A와 B는 채점 방식이 다릅니다" in page and "관련성 기준: A는 근거, B는 문서" in page
    assert "그래도 비교 — 이때 차이에는 채점 방식의 변화가 함께 들어갑니다" in page


@pytest.mark.parametrize("key", ["relevance", "question_set"])
def test_every_grading_change_has_words_in_both_languages(key):
    from ragexam.serve.results_pages import _GRADING_TEXT
    from ragexam.serve.strings import STRINGS

    from ragexam.analysis.exam.compare import _GRADING

    assert set(_GRADING_TEXT) == {k for k, _ in _GRADING} | {"question_set"}
    assert len(STRINGS[_GRADING_TEXT[key]]) >= 2


def test_compare_anyway_in_the_browser(runs):  # noqa: F811
    """The checkbox in real Chromium: refused, ticked, compared with the warning; the Korean page likewise."""
    from test_report_browser import _playwright_and_chromium
    from test_serve_browser import _browse, _english_left

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import start

    sync_playwright, exe = _playwright_and_chromium()
    opts = ServeOptions(port=0)
    running = start(create_app(Catalog.of([], None, [runs / "rel_ev", runs / "rel_doc"]), opts), opts)
    try:
        with sync_playwright() as pw:
            for locale in ("en-US", "ko-KR"):
                browser, context, page = _browse((pw, exe), running.url, locale=locale)
                page.goto(page.base + "runs")
                page.locator("#folders tr").nth(1).locator("a.pick-a").click()
                page.locator("#folders tr").nth(2).locator("a.pick-b").click()
                page.wait_for_url("**/compare?a=f1&b=f2")
                assert page.locator("#compare-error").is_visible() and page.locator("table.diffs").count() == 0
                if locale == "ko-KR":
                    assert _english_left(page) == []
                page.locator("#allow").check()
                page.locator("#allow-submit").click()
                page.wait_for_url("**allow=1**")
                assert page.locator("#grading-included").is_visible() and page.locator("table.diffs").count() >= 1
                if locale == "ko-KR":
                    assert "채점 방식의 변화" in page.locator("#grading-included").inner_text()
                    assert _english_left(page) == []
                    # the doc-mode run and a missed question, with the report's sections, in Korean
                    page.goto(page.base + "run/f2")
                    assert "<b>문서</b> 기준 채점" in page.content() and _english_left(page) == []
                    assert page.locator("td.first-rank").first.inner_text().startswith("문서 ")
                    page.locator("a.open-missed").first.click()
                    page.wait_for_url("**/missed?**")
                    assert "문서 기준 채점" in page.locator("#missed-about").inner_text()
                    assert _english_left(page) == []
                assert not page.foreign and not page.errors, (page.foreign, page.errors)
                context.close()
                browser.close()
    finally:
        running.stop()
