"""``ragexam serve`` in real headless Chromium (Debian's /usr/bin/chromium driven by Playwright), against
the real server (uvicorn on a free loopback port).

The review flow a person makes: accept three questions (keyboard and button), reject one, try an edit whose
evidence is not in the corpus (refused, with the reason on the page and nothing written), fix it by selecting
the evidence in the passage (key ``s``) and save it; then ``ragexam review apply`` must produce exactly the
expected set.  Every request must go to the server itself (no CDN), the page must raise no JavaScript error,
and Korean must be drawn with a Hangul font (the report's check, tests/test_report_browser.py).
The results a person reads: the runs list, a run (plots drawn, the per-type metric switched), a missed question
with its evidence marked in the retrieved chunks, two runs compared (picked on the runs list), a score's
attribution cell opening its answers.  Every page runs under the server's content security policy, so an inline
style or script would be a console error here.
Both languages: the flows above in English (an English browser), and the same pages read by a Korean browser
(``Accept-Language: ko-KR``): every label Korean, no English left but data, names and the report's own sections
(marked ``lang="en"``), and the page's switch to English and back.
Screenshots go to tests/_artifacts/.
"""

from __future__ import annotations

import json

import pytest

from test_report_browser import ARTIFACTS, CHROMIUM_FLAGS, _hangul_families, _hangul_problems, playwright  # noqa: F401
from test_serve_results import built  # noqa: F401 (fixture)
from test_serve_review import generated, qa  # noqa: F401 (fixtures)


@pytest.fixture
def server(qa):
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import start

    opts = ServeOptions(port=0)
    catalog = Catalog.of([qa])
    catalog.warm().join(120)
    running = start(create_app(catalog, opts), opts)
    yield running.url
    running.stop()


def _browse(playwright, base, locale="en-US"):  # noqa: F811
    """(browser, context, page) of a headless Chromium in ``locale`` (its ``Accept-Language``) that may ask
    ``base`` only (other requests are aborted and recorded in ``page.foreign``; JavaScript and console errors in
    ``page.errors``)."""
    pw, exe = playwright
    browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_FLAGS[:-1])
    context = browser.new_context(viewport={"width": 1400, "height": 950}, locale=locale)
    p = context.new_page()
    p.foreign, p.errors = [], []

    def route(r):
        if r.request.url.startswith(base):
            r.continue_()
        else:
            p.foreign.append(r.request.url)
            r.abort()

    p.route("**/*", route)
    p.on("pageerror", lambda exc: p.errors.append(str(exc)))
    p.on("console", lambda msg: p.errors.append(msg.text) if msg.type == "error" and "422" not in msg.text else None)
    p.base = base
    return browser, context, p


@pytest.fixture
def page(playwright, server, tmp_path):  # noqa: F811
    browser, context, p = _browse(playwright, server)
    yield p
    context.close()
    browser.close()


@pytest.fixture
def results_page(playwright, built):  # noqa: F811
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import start

    opts = ServeOptions(port=0)
    catalog = Catalog.of([], None, [built.run_a, built.run_b, built.score, built.scored_run], built.history)
    running = start(create_app(catalog, opts), opts)
    browser, context, p = _browse(playwright, running.url)
    yield p
    context.close()
    browser.close()
    running.stop()


def _status(page):
    return page.locator("#status").inner_text()


def test_review_a_generated_set_in_the_browser(page, qa, tmp_path):
    from ragexam.questions import apply_review

    page.goto(page.base)
    page.get_by_role("link", name="qa.jsonl").click()
    page.locator("#start").click()
    assert page.locator(".qid").inner_text() == "gen_0001"
    assert page.locator("mark.ev").first.inner_text() == "로그인에 5번 연속 실패하면 계정이 30분 동안 잠깁니다"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "serve_review.png"), full_page=True)
    assert _hangul_problems(page, _hangul_families()) == []

    page.keyboard.press("a")  # accept by key: on to the next pending question
    page.wait_for_url("**key=gen_0002**")
    assert "gen_0001: accepted" in page.locator("#flash").inner_text()
    page.locator("#accept").click()  # accept by button
    page.wait_for_url("**key=gen_0003**")
    page.keyboard.press("a")
    page.wait_for_url("**key=gen_0004**")
    page.keyboard.press("r")  # reject
    page.wait_for_url("**key=gen_0005**")
    assert page.locator("#progress").inner_text().strip().startswith("4 of 7 decided · 3 accepted · 1 rejected")

    # an edit whose evidence is not in the corpus is refused with its reason
    page.keyboard.press("e")
    assert page.locator("#editor").is_visible() and page.evaluate("document.activeElement.id") == "e-question"
    page.fill("#e-question", "회의실 예약을 하고 늦으면 예약은 어떻게 되나요?")
    page.locator("textarea.e-evidence").first.fill("10분 늦으면 예약이 없어집니다")
    before = qa.with_name("qa.review.csv").read_bytes()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#refused")
    page.wait_for_load_state()  # serve.js (deferred) reads keys once loaded
    refused = page.locator("#refused").inner_text()
    assert "evidence_not_found" in refused and "occurs in no document of the corpus" in refused
    assert page.locator("#e-question").input_value() == "회의실 예약을 하고 늦으면 예약은 어떻게 되나요?"
    assert _status(page) == "pending" and qa.with_name("qa.review.csv").read_bytes() == before
    page.screenshot(path=str(ARTIFACTS / "serve_refused.png"), full_page=True)

    # the fix: select the evidence in the passage and press s, then save (Ctrl+Enter)
    good = "예약 시간이 10분 지나도 입실하지 않으면"
    page.locator("textarea.e-evidence").first.focus()  # the box to replace
    page.evaluate("""(good) => {
        const walker = document.createTreeWalker(document.querySelector('.passage .text'), NodeFilter.SHOW_TEXT);
        let node;
        while ((node = walker.nextNode()) && !node.textContent.includes(good)) {}
        const range = document.createRange();
        range.setStart(node, node.textContent.indexOf(good));
        range.setEnd(node, node.textContent.indexOf(good) + good.length);
        document.activeElement.blur();
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
    }""", good)
    page.keyboard.press("s")
    assert page.locator("textarea.e-evidence").first.input_value() == good
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#flash")
    assert "edit checked and saved (accepted)" in page.locator("#flash").inner_text()
    assert _status(page) == "accepted" and page.locator("#question").inner_text().startswith("회의실 예약을 하고")
    assert page.locator("mark.ev").first.inner_text() == good
    assert not page.foreign, page.foreign
    assert not page.errors, page.errors

    out = tmp_path / "reviewed.jsonl"
    res = apply_review(qa, None, out, pending="drop")
    got = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [r["query_id"] for r in got] == ["gen_0001", "gen_0002", "gen_0003", "gen_0005"]
    assert res.rejected == ["gen_0004"] and res.counts["pending_dropped"] == 2 and res.counts["edited"] == 1
    edited = got[-1]
    assert edited["question"] == "회의실 예약을 하고 늦으면 예약은 어떻게 되나요?" and edited["evidence"] == [good]
    assert edited["metadata"]["generation"]["edited"] == ["evidence", "question"]
    assert edited["metadata"]["generation"]["answer_check"] == {"method": "human"}
    originals = {json.loads(x)["query_id"]: json.loads(x) for x in qa.read_text(encoding="utf-8").splitlines()}
    for r in got[:3]:  # accepted as generated: the same record, marked accepted
        expect = json.loads(json.dumps(originals[r["query_id"]]))
        expect["metadata"]["generation"]["review"] = "accepted"
        assert r == expect


def test_read_results_in_the_browser(results_page, built):  # noqa: F811
    page = results_page
    families = _hangul_families()
    page.goto(page.base + "runs")
    page.locator("#folders a.open").first.click()  # run A
    page.wait_for_url("**/run/f1")
    charts = page.eval_on_selector_all("svg.chart", "els => els.filter(e => e.getBoundingClientRect().width > 100)"
                                                    ".map(e => e.getAttribute('data-plot'))")
    assert {"sweep-p", "fbeta-1", "by-type", "first-rank"} <= set(charts)
    page.select_option("#type-metric", "mrr")  # the report's script, served as a file under the CSP
    shown = page.eval_on_selector_all(".type-chart", "cs => cs.filter(c => !c.hidden).map(c => c.dataset.metric)")
    assert shown == ["mrr"]
    assert _hangul_problems(page, families) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "serve_run.png"), full_page=True)

    # a missed question: its evidence marked in the retrieved chunks; j goes to the next one
    page.select_option("#f-pipeline", "bm25 | paragraphs:400")
    page.locator("#missed-filter button[type=submit]").click()
    page.wait_for_url("**pipeline=bm25**")
    rows = page.locator("tr.miss-row")
    assert rows.count() > 0 and all("bm25 | paragraphs:400" in t for t in rows.all_inner_texts())
    first = page.locator("a.open-missed").first
    qid = first.inner_text()
    first.click()
    page.wait_for_url("**/missed?**")
    assert page.locator("h1 .qid").inner_text() == qid
    evidence = page.locator(".detail .evidence").first.inner_text().strip()
    assert evidence and page.locator(".chunks li").count() >= 1
    marks = page.locator(".chunks mark")
    if marks.count():
        marks.first.scroll_into_view_if_needed()
        assert marks.first.is_visible() and marks.first.inner_text().strip() in evidence
    assert _hangul_problems(page, families) == []
    page.screenshot(path=str(ARTIFACTS / "serve_missed.png"), full_page=True)
    page.keyboard.press("j")
    page.wait_for_function(f"document.querySelector('h1 .qid').textContent !== {qid!r}")
    assert page.locator("#position").inner_text().startswith("2 of")

    # compare two runs: pick A on the runs list, then B
    page.goto(page.base + "runs")
    page.locator("#folders tr").nth(1).locator("a.pick-a").click()
    assert "A is" in page.locator("#picked").inner_text()
    page.locator("#folders tr").nth(2).locator("a.pick-b").click()
    page.wait_for_url("**/compare?a=f1&b=f2")
    assert page.locator("section.pair").count() == 3
    assert page.locator("table.diffs").first.locator("tbody tr").count() == 10
    assert page.locator("h3.flips-lost").count() == 3 and page.locator("h3.flips-gained").count() == 3
    page.screenshot(path=str(ARTIFACTS / "serve_compare.png"), full_page=True)
    page.locator("a.open-flip").first.click()
    page.wait_for_url("**/missed?**")

    # a score: an attribution cell opens its answers, whose judge reasoning is there to read
    page.goto(page.base + "run/f3")
    cell = page.locator("svg[data-plot=attribution] a.cell-link").first
    cell.click()
    page.wait_for_url("**label=**")
    n = int(page.locator("#answers-count").inner_text())
    assert n >= 1 and page.locator("tr.answer-row").count() == n
    page.locator("tr.answer-row details summary").first.click()
    assert page.locator("tr.answer-row .reasoning").first.is_visible()
    assert _hangul_problems(page, families) == []
    assert not page.foreign, page.foreign
    assert not page.errors, page.errors


#: what a Korean page may show in Latin letters: names (ragexam, the judge, a statistic's author, keys) and the
#: data of these fixtures (pipeline and metric names, question types, verdicts and judge statuses)
NAMES_AND_DATA = {"ragexam", "serve", "LLM", "CSRF", "Holm", "Ctrl", "Enter", "Esc", "UTC", "ID", "English",
                  "dense", "bm", "mrr", "map", "rprec", "lexical", "meaning", "correct", "incorrect", "judged", "stub",
                  "judge", "answer_correctness", "faithfulness", "ok", "hit", "ndcg", "p@5", "r@5", "f1",
                  "duplicate", "surplus"}
_ENGLISH_LEFT = """(allowed) => {
  const skip = 'script, style, [lang="en"], code, kbd, pre, svg, .qid, .doc-id, .tag, .path, .pname, .metric-name, ' +
               '.passage .text, #question, #answer, .evidence-list, textarea, .langs, .stage, .reasoning, .evidence, ' +
               '.data';
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let n;
  while ((n = walker.nextNode())) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    for (const raw of n.textContent.split(/\\s+/)) {
      // a word of letters only: identifiers (ids, paths, files, codes) hold digits, dots, slashes or underscores
      const token = raw.replace(/^[(\\[\\"'“‘«·—–→←,;:]+|[)\\]\\"'”’»·—–→←,;:.!?…]+$/g, '');
      if (/^[A-Za-z][A-Za-z'-]{2,}$/.test(token) && !allowed.includes(token))
        out.push(token + '  <' + el.tagName.toLowerCase() + '> ' + n.textContent.trim().slice(0, 80));
    }
  }
  for (const el of document.querySelectorAll('[title], [placeholder], [aria-label]')) {
    if (el.closest('[lang="en"], svg')) continue;
    for (const a of ['title', 'placeholder', 'aria-label']) {
      const v = el.getAttribute(a);
      if (v && /[A-Za-z]{3,}/.test(v) && !/[\\uac00-\\ud7a3]/.test(v) && !/_/.test(v))
        out.push(a + '="' + v + '"');
    }
  }
  return out;
}"""


def _english_left(page):
    """Latin words on a Korean page outside data, names and the report's English sections."""
    assert page.evaluate("document.documentElement.lang") == "ko"
    return page.evaluate(_ENGLISH_LEFT, sorted(NAMES_AND_DATA))


@pytest.fixture
def korean_page(playwright, server, tmp_path):  # noqa: F811
    browser, context, p = _browse(playwright, server, locale="ko-KR")
    yield p
    context.close()
    browser.close()


def test_review_in_korean_in_the_browser(korean_page, qa):
    """A Korean browser gets Korean pages: every label, button, message; the switch goes to English and back."""
    page = korean_page
    page.goto(page.base)
    assert page.locator("h2").first.inner_text() == "결과" and _english_left(page) == []
    page.get_by_role("link", name="qa.jsonl").click()
    assert page.locator("h1").inner_text() == "검토: qa.jsonl"
    assert "하나씩 검토하기" in page.locator("#start").inner_text() and _english_left(page) == []
    page.locator("#start").click()
    for button, label in (("#accept", "승인"), ("#reject", "거절"), ("#pending", "보류"), ("#edit", "수정")):
        assert page.locator(button).inner_text().startswith(label)
    assert page.locator("#status").inner_text() == "보류" and page.locator(".passages h2").inner_text() == "지문"
    assert _english_left(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "serve_review_ko.png"), full_page=True)
    page.keyboard.press("a")
    page.wait_for_url("**key=gen_0002**")
    assert page.locator("#flash").inner_text() == "gen_0001: 승인"
    assert page.locator("#progress").inner_text().strip().startswith("7개 중 1개 결정 · 승인 1 · 거절 0")
    page.keyboard.press("e")
    page.locator("textarea.e-evidence").first.fill("문서에 없는 근거 문장입니다 정말로")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#refused")
    page.wait_for_load_state()  # serve.js (deferred) reads keys once loaded
    assert page.locator("#refused strong").inner_text() == "거부했습니다"
    assert "생성기의 검사를 통과하지 못했습니다" in page.locator("#refused").inner_text()
    assert "근거 문자열이 어디에도 없습니다" in page.locator("#refused").inner_text()  # the reason, in Korean
    assert _english_left(page) == []
    page.screenshot(path=str(ARTIFACTS / "serve_refused_ko.png"), full_page=True)
    # the switch: English, then Korean again (kept by the browser)
    page.goto(page.base + "review/1")
    with page.expect_navigation():  # a link: the old page's document goes away while the new one loads
        page.locator("#lang-en").click()
    page.wait_for_function("document.documentElement && document.documentElement.lang === 'en'")
    assert page.locator("h1").inner_text() == "Review: qa.jsonl" and "lang=" not in page.url
    page.goto(page.base)
    assert page.evaluate("document.documentElement.lang") == "en"  # the choice is kept
    with page.expect_navigation():  # a link: the old page's document goes away while the new one loads
        page.locator("#lang-ko").click()
    page.wait_for_function("document.documentElement && document.documentElement.lang === 'ko'")
    assert page.locator("h2").first.inner_text() == "결과"
    assert _hangul_problems(page, _hangul_families()) == []
    assert not page.foreign, page.foreign
    assert not page.errors, page.errors


def test_read_results_in_korean_in_the_browser(playwright, built):  # noqa: F811
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import start

    opts = ServeOptions(port=0)
    catalog = Catalog.of([], None, [built.run_a, built.run_b, built.score, built.scored_run], built.history)
    running = start(create_app(catalog, opts), opts)
    browser, context, page = _browse(playwright, running.url, locale="ko-KR")
    try:
        page.goto(page.base + "runs")
        assert page.locator("h1").inner_text() == "실행과 채점" and _english_left(page) == []
        page.locator("#folders a.open").first.click()
        page.wait_for_url("**/run/f1")
        assert page.locator("#missed h2").inner_text() == "놓친 질문"
        assert page.locator("nav.sections a").first.inner_text() == "점수"
        assert _english_left(page) == []
        page.screenshot(path=str(ARTIFACTS / "serve_run_ko.png"), full_page=True)
        page.locator("a.open-missed").first.click()
        page.wait_for_url("**/missed?**")
        assert "놓쳤습니다" in page.locator("p.note").first.inner_text() and _english_left(page) == []
        page.goto(page.base + "compare?a=f1&b=f2")
        assert page.locator("h1").inner_text() == "비교" and page.locator("h3.flips-lost").count() == 3
        assert _english_left(page) == []
        page.goto(page.base + "run/f3")
        assert page.locator("#attribution h2").inner_text() == "실패 단계 분석" and _english_left(page) == []
        assert _hangul_problems(page, _hangul_families()) == []
        assert not page.foreign, page.foreign
        assert not page.errors, page.errors
        page.goto(page.base + "run/h:nope")  # an error page speaks Korean too
        assert page.locator("h1").inner_text() == "찾을 수 없습니다" and _english_left(page) == []
    finally:
        context.close()
        browser.close()
        running.stop()
