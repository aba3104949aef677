"""Issue 37's "done when", in real headless Chromium against the real server: a person audits 20 questions of a
generated set with the keyboard only (Enter draws the sample; ``g`` good, ``1``-``6`` bad for a reason, ``u`` undo),
and the set's card, the review home page, ``review apply``'s output and a run's dataset card (console and HTML
report) all show the same estimate; ``review apply --max-junk`` refuses and accepts as it should.  A Korean browser
reads the audit page in Korean.  Screenshots go to tests/_artifacts/."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from audit_sets import make_generated_set, truth
from test_report_browser import ARTIFACTS, _hangul_families, _hangul_problems, playwright  # noqa: F401
from test_serve_browser import _browse, _english_left


@pytest.fixture
def served(tmp_path):
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import start

    qa = make_generated_set(tmp_path / "set", 60, risky=True)
    opts = ServeOptions(port=0)
    running = start(create_app(Catalog.of([qa], corpus="it_helpdesk"), opts), opts)
    yield qa, running.url
    running.stop()


def _shown(page, selector):
    """Wait for the page that shows ``selector``, loaded (its script listening for keys)."""
    page.wait_for_selector(selector)
    page.wait_for_load_state("load")


def _audit_by_keyboard(page, qa, n):
    """Label the sample page by page with keys: the truth of each shown question (bad: wrong key, ``1``); one undo."""
    bad = truth(qa)
    undone = False
    for i in range(1, n + 1):
        assert page.locator("#audit-position").inner_text().startswith(f"question {i} of the {n} sampled")
        key = page.locator("input[name=key]").input_value()
        page.keyboard.press("1" if bad[key] else "g")
        if i == 3 and not undone:  # undo the third label: the same question comes back
            _shown(page, f"#audit-position:has-text('question {i + 1} of')")
            page.keyboard.press("u")
            _shown(page, "#flash")
            assert page.locator("#flash").inner_text() == f"Undone: {key}"
            assert page.locator("input[name=key]").input_value() == key
            page.keyboard.press("1" if bad[key] else "g")
            undone = True
        if i < n:
            _shown(page, f"#audit-position:has-text('question {i + 1} of')")
    _shown(page, "#audit-done")


def test_audit_20_by_keyboard_and_the_same_estimate_everywhere(playwright, served, tmp_path, monkeypatch):  # noqa: F811
    from ragexam.cli import app
    from ragexam.questions.audit import audit_status

    qa, base = served
    browser, context, page = _browse(playwright, base)
    try:
        page.goto(base)
        assert page.locator("#audit-1").inner_text() == "not audited"
        page.goto(base + "review/1/audit")
        page.wait_for_load_state("load")
        page.keyboard.press("Enter")  # the focused button: draw the sample (20 by default)
        _shown(page, "#audit-position")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "serve_audit.png"), full_page=True)
        _audit_by_keyboard(page, qa, 20)
        text = audit_status(qa).text()
        assert text.startswith("junk ") and text.endswith(", 20 of 60 audited")
        assert page.locator("#audit-status").inner_text() == text
        page.goto(base)
        assert page.locator("#audit-1").inner_text() == text  # the review home page
        page.goto(base + "review/1")
        assert page.locator("#audit-status").inner_text() == text
        assert "n = 20 audited" in page.locator("#signals").inner_text()
        page.locator("#queue-order").click()
        page.locator("#start").click()  # review in queue order: the likely junk first
        page.wait_for_url("**order=queue**")
        assert truth(qa)[page.locator(".qid").first.inner_text()]
        assert not page.foreign, page.foreign
        assert not page.errors, page.errors
    finally:
        context.close()
        browser.close()

    card = json.loads(qa.with_name("qa.card.json").read_text(encoding="utf-8"))
    assert card["audit"]["text"] == text  # the card
    run = CliRunner().invoke
    out = tmp_path / "reviewed.jsonl"
    high = audit_status(qa).junk_high
    res = run(app, ["review", "apply", "--qa", str(qa), "--out", str(out), "--max-junk", f"{high - 0.01:.2f}"])
    assert res.exit_code == 1 and not out.exists()  # refuses: its upper bound is above the ceiling
    assert f"the set's audit: {text}" in res.output and "refused:" in res.output
    res = run(app, ["review", "apply", "--qa", str(qa), "--out", str(out), "--max-junk", f"{high + 1e-4:.4f}"])
    assert res.exit_code == 0 and out.exists() and f"the set's audit: {text}" in res.output  # review apply
    monkeypatch.setenv("COLUMNS", "250")
    res = run(app, ["run", "--corpus", "it_helpdesk", "--qa", str(qa), "-r", "bm25", "--out", str(tmp_path / "run"),
                    "--report", str(tmp_path / "report.html")])
    assert res.exit_code == 0, res.output
    assert f"audit     {text}" in res.output  # a run's dataset card
    assert text in (tmp_path / "report.html").read_text(encoding="utf-8")  # and its report


def test_the_audit_page_in_korean(playwright, served):  # noqa: F811
    from ragexam.questions.audit import audit_status

    qa, base = served
    browser, context, page = _browse(playwright, base, locale="ko-KR")
    try:
        page.goto(base + "review/1/audit")
        assert page.locator("h1").inner_text() == "검수: qa.jsonl" and _english_left(page) == []
        page.wait_for_load_state("load")
        page.keyboard.press("Enter")
        _shown(page, "#audit-position")
        assert page.locator("#audit-position").inner_text() == "표본 20개 중 1번째 질문"
        assert page.locator("#audit-good").inner_text().endswith("좋음")
        assert page.locator("#audit-bad-3").inner_text().endswith("모호함")
        assert _english_left(page) == []
        page.keyboard.press("3")
        _shown(page, "#audit-position:has-text('2번째')")
        assert page.locator("#audit-status").inner_text() == audit_status(qa).text("ko")
        assert "60개 중 1개 검수" in page.locator("#audit-status").inner_text()
        assert _english_left(page) == [] and _hangul_problems(page, _hangul_families()) == []
        page.screenshot(path=str(ARTIFACTS / "serve_audit_ko.png"), full_page=True)
        page.goto(base)
        assert page.locator("#audit-1").inner_text() == audit_status(qa).text("ko") and _english_left(page) == []
        page.goto(base + "review/1")
        assert _english_left(page) == []
        assert not page.foreign, page.foreign
        assert not page.errors, page.errors
    finally:
        context.close()
        browser.close()
