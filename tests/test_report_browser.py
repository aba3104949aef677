"""The HTML report in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

The browser runs with the network disabled (every host name resolves to nothing, and any request
that is not the report file itself is aborted and recorded): the plots must render, a missed
question must open to show its evidence, the filters must work, and the page must not raise a
JavaScript error.  Screenshots go to tests/_artifacts/ (gitignored).

Skipped when Chromium or Playwright is missing, except under CI (env ``CI`` set), where that is a
failure: .ci/run installs Chromium.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ragexam.report.html import write_report
from ragexam.storage.runfolder import read_run_folder
from test_report_fixtures import make_run, real_demo_dir

ARTIFACTS = Path(__file__).parent / "_artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic",
                  "--host-resolver-rules=MAP * ~NOTFOUND"]


def _chromium_path():
    for cand in (os.environ.get("RAGEXAM_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and Path(cand).exists():
            return cand
    return None


def _unavailable(why):
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI must run the browser test (.ci/run installs Chromium, the test extra Playwright)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[test]')")
    exe = _chromium_path()
    if exe is None:
        _unavailable("Chromium is not installed (apt-get install chromium chromium-driver)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=exe, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1300, "height": 900}, offline=True)
        try:
            yield context
        finally:
            context.close()


def _open(context, path):
    """Open ``path`` with every other request aborted; returns (page, foreign requests, JS errors)."""
    page = context.new_page()
    foreign, errors = [], []
    target = path.resolve().as_uri()

    def route(r):
        if r.request.url == target:
            r.continue_()
        else:
            foreign.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(target)
    page.wait_for_load_state("load")
    return page, foreign, errors


def _plot_boxes(page):
    return page.eval_on_selector_all(
        "svg.chart",
        """els => els.map(e => { const r = e.getBoundingClientRect();
              const marks = Array.from(e.querySelectorAll('polyline, rect.bar, circle, rect'));
              const drawn = marks.filter(m => { const b = m.getBoundingClientRect(); return b.width > 0 || b.height > 0; });
              return {plot: e.getAttribute('data-plot'), metric: e.getAttribute('data-metric'),
                      w: r.width, h: r.height, marks: drawn.length}; })""")


def test_demo_report_in_chromium(browser, tmp_path):
    run = read_run_folder(real_demo_dir())
    path = write_report(run.summary, run.per_question, tmp_path / "report.html")
    page, foreign, errors = _open(browser, path)

    # plots rendered: every visible chart has a size and drawn marks
    boxes = _plot_boxes(page)
    visible = [b for b in boxes if b["w"] > 0]
    kinds = {b["plot"] for b in visible}
    assert {"sweep-p", "sweep-r", "sweep-f1", "fbeta-0.5", "fbeta-1", "fbeta-2", "by-type", "first-rank"} <= kinds
    for b in visible:
        assert b["w"] > 100 and b["h"] > 100 and b["marks"] > 0, b
    # only the selected metric's per-type chart is shown; switching shows another
    assert [b["metric"] for b in visible if b["plot"] == "by-type"] == ["hit@5"]
    page.select_option("#type-metric", "mrr")
    shown = [b["metric"] for b in _plot_boxes(page) if b["plot"] == "by-type" and b["w"] > 0]
    assert shown == ["mrr"]
    assert page.locator("text=No stage attribution in this run").is_visible()

    # a missed question opens to its evidence
    pipe, entry = next((p, es[0]) for p, es in run.summary["missed"].items() if es)
    row = page.locator("tr.miss").first
    detail_id = row.get_attribute("data-detail")
    detail = page.locator(f"#{detail_id}")
    evidence = entry["evidence"][0]
    assert not detail.is_visible()
    assert not page.get_by_text(evidence, exact=False).first.is_visible()
    row.locator("button.expand").click()
    assert detail.is_visible()
    ev = detail.locator(".evidence").first
    assert ev.is_visible() and ev.inner_text().strip() == evidence
    assert detail.get_by_text(entry["question"]).first.is_visible()
    assert detail.locator(".chunks li").count() == len(entry["top"]) + ("first_correct" in entry)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report_demo.png"), full_page=True)
    row.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "report_demo_missed.png"))

    # filters: by type, then by pipeline
    n_all = page.locator("tr.miss").count()
    page.select_option("#f-type", "lexical")
    shown_types = page.eval_on_selector_all("tr.miss", "rs => rs.filter(r => !r.hidden).map(r => r.dataset.type)")
    assert shown_types and set(shown_types) == {"lexical"}
    assert page.locator("#missed-count").inner_text() == str(len(shown_types))
    page.select_option("#f-type", "")
    page.select_option("#f-pipeline", pipe)
    shown_pipes = page.eval_on_selector_all("tr.miss", "rs => rs.filter(r => !r.hidden).map(r => r.dataset.pipeline)")
    assert set(shown_pipes) == {pipe} and len(shown_pipes) == len(run.summary["missed"][pipe]) < n_all
    assert not foreign, f"the report asked for other resources: {foreign}"
    assert not errors, errors
    page.close()


def test_fixture_report_marks_evidence_and_draws_attribution(browser, tmp_path):
    summary, rows = make_run(n_questions=30, seed=5, attribution=True)
    path = write_report(summary, rows, tmp_path / "fixture.html",
                        answers={"hq_004": {"answer": "답변", "reasoning": "판정 근거", "verdict": "wrong"}})
    page, foreign, errors = _open(browser, path)
    heat = [b for b in _plot_boxes(page) if b["plot"] == "attribution"]
    assert len(heat) == len(summary["results"]) and all(b["w"] > 0 and b["h"] > 0 and b["marks"] for b in heat)
    # open a missed question whose evidence chunk is in its listed top chunks: the mark is visible
    idx = next(i for i, (p, e) in enumerate((p, e) for p, es in summary["missed"].items() for e in es)
               if e["first_rank"] is not None and e["first_rank"] <= 10)
    row = page.locator("tr.miss").nth(idx)
    row.locator("button.expand").click()
    mark = page.locator(f"#{row.get_attribute('data-detail')} mark").first
    mark.scroll_into_view_if_needed()
    assert mark.is_visible() and len(mark.inner_text()) >= 10
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report_fixture_marked.png"))
    assert not foreign and not errors, (foreign, errors)
    page.close()
