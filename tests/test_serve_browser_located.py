"""``ragexam serve --review`` in real headless Chromium on the sets that are not generated: a located set
(``ragexam locate-evidence``, issue 36 done-when) and sampled traces (``ragexam traces sample``, issue 38 done-when).

Located: with the keyboard only, accept a question without evidence (it takes the proposed span), pick the runner-up of
another (``u``), try an edit whose evidence is in no document (refused with the reason, nothing written), fix it by
selecting a sentence in the document (``s``) and save it (``Ctrl+Enter``); then ``review apply`` and ``validate``
accept the result and ``run`` grades it by evidence.  Traces: each candidate with its frequency, the traced answer
and contexts and the located evidence; accept, a refused accept (no evidence), out of corpus (``o``), reject, the
uncertain one's proposal; then ``review apply`` -> ``validate`` -> ``run``.  Both pages read by a Korean browser
speak Korean outside data and names.  Screenshots go to tests/_artifacts/.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from test_report_browser import ARTIFACTS, _hangul_families, _hangul_problems, playwright  # noqa: F401
from test_serve_browser import _browse, _english_left
from test_serve_review_located import by_status, located, located_dir, records, traced, traced_dir  # noqa: F401


def _serve(path):
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import start

    opts = ServeOptions(port=0)
    catalog = Catalog.of([path])
    catalog.warm().join(120)
    return start(create_app(catalog, opts), opts)


@contextmanager
def _browsing(playwright, path, locale="en-US"):  # noqa: F811
    """A headless Chromium page (:func:`test_serve_browser._browse`) on a server reviewing ``path``."""
    running = _serve(path)
    browser, context, page = _browse(playwright, running.url, locale=locale)
    try:
        yield page
    finally:
        context.close()
        browser.close()
        running.stop()


@pytest.fixture
def located_page(playwright, located):  # noqa: F811
    with _browsing(playwright, located) as page:
        yield page


@pytest.fixture
def traced_page(playwright, traced):  # noqa: F811
    with _browsing(playwright, traced) as page:
        yield page


def _select(page, text):
    """Select ``text`` in the first passage that holds it (as a reviewer's mouse would), with no field focused."""
    page.evaluate("""(good) => {
        for (const box of document.querySelectorAll('.passage .text')) {
            const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
            let node;
            while ((node = walker.nextNode())) {
                const at = node.textContent.indexOf(good);
                if (at < 0) continue;
                const range = document.createRange();
                range.setStart(node, at);
                range.setEnd(node, at + good.length);
                document.activeElement.blur();
                window.getSelection().removeAllRanges();
                window.getSelection().addRange(range);
                return;
            }
        }
        throw new Error('not in a passage: ' + good);
    }""", text)


def _run(corpus, exam):
    from ragexam import api

    report = api.validate(corpus, exam)
    assert report.ok, report
    run = api.run_exam({"corpus": corpus, "qa": str(exam), "retrievers": ["bm25"]}, record=False, progress=False)
    assert run.result is not None and run.result.summary.config.relevance == "evidence"
    return run


def test_review_a_located_set_with_the_keyboard_then_apply_and_run(located_page, located, tmp_path):  # noqa: F811
    from ragexam.data.loaders import load_corpus
    from ragexam.questions import apply_review

    page = located_page
    recs = records(located)
    confident = by_status(located, "located")
    # the set's order, the flow below: q01 and q02 without evidence (q01 unlocated: its paraphrased key's best span
    # holds under a fifth of the key's own words; still proposed), q03 located
    without = [q for q, r in recs.items() if not r.get("evidence")]
    assert without[:2] == ["q01", "q02"] and "q03" in confident
    assert recs["q01"]["metadata"]["located"]["status"] == "unlocated"
    sheet = located.with_name("located.review.csv")
    page.goto(page.base)
    page.get_by_role("link", name="located.jsonl").click()
    page.locator("#start").click()
    page.wait_for_url("**key=q01**")
    span = recs["q01"]["metadata"]["located"]["spans"][0]
    assert page.locator("#evidence-status").inner_text() == "not located"
    assert "(threshold 0.6)" in page.locator("#confidence").inner_text()
    assert page.locator("#method").inner_text() == "offline" and page.locator("#located-reason").is_visible()
    assert page.locator("mark.proposed").first.inner_text() == span["best"]["text"]
    assert page.locator("mark.runner").first.inner_text() == span["runner_up"]["text"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "serve_review_located.png"), full_page=True)

    page.keyboard.press("a")  # no evidence: accepting takes the proposed span (checked first)
    page.wait_for_url("**key=q02**")
    assert "q01: accepted" in page.locator("#flash").inner_text()
    runner = recs["q02"]["metadata"]["located"]["spans"][0]["runner_up"]["text"]
    assert page.locator("#runner-up").is_visible()
    page.keyboard.press("u")  # the runner-up, one key away
    page.wait_for_url("**key=q03**")
    assert "runner-up checked and accepted" in page.locator("#flash").inner_text()

    # an edit whose evidence is in no document: refused with the reason, nothing written
    page.keyboard.press("e")
    page.locator("textarea.e-evidence").first.fill("문서 어디에도 없는 근거 문장입니다")
    before = sheet.read_bytes()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#refused")
    page.wait_for_load_state()  # serve.js (deferred) reads keys once loaded
    assert "occurs in no document of the corpus" in page.locator("#refused").inner_text()
    assert sheet.read_bytes() == before and page.locator("#status").inner_text() == "pending"
    # the fix: select the document's first sentence, s, Ctrl+Enter
    doc = recs["q03"]["relevant_doc_ids"][0]
    good = load_corpus("ai_concepts")[doc].content.split(". ")[0]
    page.locator("textarea.e-evidence").first.focus()
    _select(page, good)
    page.keyboard.press("s")
    assert page.locator("textarea.e-evidence").first.input_value() == good
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#flash")
    assert "edit checked and saved (accepted)" in page.locator("#flash").inner_text()
    assert page.locator("#status").inner_text() == "accepted" and page.locator("mark.ev").first.inner_text() == good
    assert not page.foreign, page.foreign
    assert not page.errors, page.errors

    exam = tmp_path / "reviewed.jsonl"
    res = apply_review(located, None, exam, pending="drop")
    final = records(exam)
    assert list(final) == ["q01", "q02", "q03"] and res.counts["accepted"] == 3
    assert [final[q]["metadata"]["located"]["choice"] for q in final] == ["proposed", "runner_up", "edited"]
    assert final["q01"]["evidence"] == [span["best"]["text"]] and final["q02"]["evidence"] == [runner]
    assert final["q03"]["evidence"] == [good]
    run = _run("ai_concepts", exam)
    assert run.result.summary.dataset.n_scored == 3


def test_review_sampled_traces_with_the_keyboard_then_apply_validate_and_run(traced_page, traced,  # noqa: F811
                                                                            tmp_path):
    from ragexam.questions import apply_review

    page = traced_page
    recs = records(traced)
    order = list(recs)
    status = {q: r["metadata"]["generation"]["evidence_status"] for q, r in recs.items()}
    first, second = order[0], order[1]
    assert (status[first], status[second]) == ("located", "unlocated")  # the set's order: the flow below
    page.goto(page.base + f"review/1/item?key={first}")
    t = recs[first]["metadata"]["trace"]
    assert page.locator("#frequency").inner_text().startswith(f"asked {t['frequency']} times")
    assert page.locator("#contexts li").count() == len(t["contexts"])
    assert page.locator("#evidence-status").inner_text() == "located with confidence"
    assert page.locator("mark.ev").first.inner_text() == recs[first]["evidence"][0]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "serve_review_traces.png"), full_page=True)
    page.keyboard.press("a")
    page.wait_for_url(f"**key={second}**")
    page.keyboard.press("a")  # no evidence and nothing proposed: refused, with the way out
    page.wait_for_selector("#refused")
    page.wait_for_load_state()  # serve.js (deferred) reads keys once loaded
    assert "no proposed span" in page.locator("#refused").inner_text()
    page.keyboard.press("o")  # the documents do not answer it: out of corpus
    page.wait_for_url(f"**key={order[2]}**")
    assert "out of corpus" in page.locator("#flash").inner_text()
    page.keyboard.press("r")
    page.wait_for_url(f"**key={order[3]}**")
    uncertain = next(q for q in order if status[q] == "uncertain")
    page.goto(page.base + f"review/1/item?key={uncertain}")
    assert page.locator("#evidence-status").inner_text() == "uncertain" and page.locator("mark.proposed").count()
    page.keyboard.press("a")  # takes the proposed span, checked
    page.wait_for_url("**done=**")
    assert f"{uncertain}: accepted" in page.locator("#flash").inner_text()
    assert not page.foreign, page.foreign
    assert not page.errors, page.errors

    exam = tmp_path / "exam.jsonl"
    res = apply_review(traced, None, exam, pending="drop")
    final = records(exam)
    assert sorted(final) == sorted([first, second, uncertain]) and res.rejected == [order[2]]
    assert final[second]["answerable"] is False and final[second]["type"] == "out_of_corpus"
    assert final[uncertain]["metadata"]["generation"]["evidence_choice"] == "proposed"
    assert all(r["metadata"]["source"] == "trace" and r["metadata"]["frequency"] >= 1 for r in final.values())
    _run("it_helpdesk", exam)


@pytest.mark.parametrize("which", ["located", "traced"])
def test_located_and_traced_screens_speak_korean(playwright, located, traced, which):  # noqa: F811
    with _browsing(playwright, located if which == "located" else traced, "ko-KR") as page:
        page.goto(page.base + "review/1")
        assert _english_left(page) == []
        page.locator("#start").click()
        page.wait_for_selector("#located")
        assert page.locator("#located h2").inner_text() == "근거를 찾은 결과"
        assert _english_left(page) == []
        if which == "traced":
            assert page.locator("#trace h2").inner_text() == "사용자들이 물은 것"
        assert _hangul_problems(page, _hangul_families()) == []
        page.screenshot(path=str(ARTIFACTS / f"serve_review_{which}_ko.png"), full_page=True)
        assert not page.foreign, page.foreign
        assert not page.errors, page.errors
