"""The HTML report in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

The browser runs with the network disabled (every host name resolves to nothing, and any request
that is not the report file itself is aborted and recorded): the plots must render, a missed
question must open to show its evidence, the filters must work, and the page must not raise a
JavaScript error.  Screenshots go to tests/_artifacts/ (gitignored).

**Korean must be readable**, not empty boxes: :func:`_hangul_problems` draws every Hangul syllable of
the page with the font its element uses and compares it with the glyph of a character no font has
(U+10FFFD): a syllable drawn like that is a missing glyph ("tofu").  Where ``fc-list`` exists it also
asks Chromium (DevTools ``CSS.getPlatformFontsForNode``) which fonts drew the Korean text and requires one
that fontconfig says covers Hangul.  :func:`test_hangul_check_fails_without_a_korean_font` runs the same
check in a Chromium that sees only one Latin font (``FONTCONFIG_FILE``), where it must fail — so the check
can fail.  Chart labels must not overlap each other or stick out of their chart (:func:`_label_problems`).

Skipped when Chromium or Playwright is missing, except under CI (env ``CI`` set), where that is a
failure: .ci/run installs Chromium and a Korean font (fonts-nanum).
"""

from __future__ import annotations

import os
import shutil
import subprocess
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


def _playwright_and_chromium():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[test]')")
    exe = _chromium_path()
    if exe is None:
        _unavailable("Chromium is not installed (apt-get install chromium chromium-driver)")
    return sync_playwright, exe


@pytest.fixture(scope="module")
def playwright():
    """(the running Playwright, the Chromium executable): one per module (Playwright's sync API runs once
    per thread)."""
    sync_playwright, exe = _playwright_and_chromium()
    with sync_playwright() as pw:
        yield pw, exe


@pytest.fixture(scope="module")
def browser(playwright, tmp_path_factory):
    pw, exe = playwright
    profile = tmp_path_factory.mktemp("chromium-profile")
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


# --- Korean glyphs -----------------------------------------------------------------------------

_HANGUL_JS = r"""
() => {
  const HANGUL = /[\uAC00-\uD7A3]/g;
  const byFont = new Map();
  const probes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const chars = node.nodeValue.match(HANGUL);
    const el = node.parentElement;
    if (!chars || !el) continue;
    const cs = getComputedStyle(el);
    const font = `${cs.fontStyle} ${cs.fontWeight} 28px ${cs.fontFamily}`;
    if (!byFont.has(font)) byFont.set(font, new Set());
    chars.forEach(c => byFont.get(font).add(c));
    const r = el.getBoundingClientRect();
    // DevTools reports the fonts of HTML text (not of SVG tspans, which the glyph check covers)
    const shown = el.checkVisibility ? el.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true})
                                     : (r.width > 0 && r.height > 0);
    if (shown && probes.length < 12 && !(el instanceof SVGElement) && !el.hasAttribute('data-hangul-probe')) {
      el.setAttribute('data-hangul-probe', String(probes.length));
      probes.push(el.tagName + ': ' + el.textContent.slice(0, 40));
    }
  }
  const canvas = document.createElement('canvas');
  canvas.width = 56; canvas.height = 56;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  function glyph(font, ch) {
    ctx.clearRect(0, 0, 56, 56);
    ctx.font = font; ctx.fillStyle = '#000'; ctx.textBaseline = 'top';
    ctx.fillText(ch, 6, 6);
    return canvas.toDataURL();
  }
  const missing = [], fonts = [];
  let checked = 0;
  for (const [font, set] of byFont) {
    const tofu = glyph(font, '\u{10FFFD}');
    const seen = new Set();
    const chars = Array.from(set).slice(0, 60);
    for (const ch of chars) {
      const g = glyph(font, ch);
      checked++;
      seen.add(g);
      if (g === tofu) missing.push(ch);
    }
    // distinct syllables must not all look the same (a font drawing every missing glyph alike)
    if (chars.length > 3 && seen.size === 1) missing.push(...chars);
    fonts.push(font);
  }
  return {checked, missing: Array.from(new Set(missing)), fonts, probes};
}
"""


def _hangul_families():
    """Font families fontconfig says cover Hangul (U+AC00), or None without fc-list."""
    fc = shutil.which("fc-list")
    if fc is None:
        return None
    out = subprocess.run([fc, ":charset=ac00", "family"], capture_output=True, text=True, check=True,
                         env=os.environ).stdout
    return {name.strip() for line in out.splitlines() for name in line.split(",") if name.strip()}


def _hangul_problems(page, families=None):
    """Why the Korean text on ``page`` is not readable ([] when it is); fails when the page has none."""
    res = page.evaluate(_HANGUL_JS)
    assert res["checked"] > 0, "the page has no Hangul to check"
    problems = [f"{len(res['missing'])} Hangul syllables drawn as missing glyphs, e.g. "
                f"{''.join(res['missing'][:12])!r} (fonts: {res['fonts']})"] if res["missing"] else []
    if families is not None:
        cdp = page.context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
        ids = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-hangul-probe]"})["nodeIds"]
        drawn = 0
        for nid, text in zip(ids, res["probes"]):
            used = [f["familyName"] for f in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": nid})["fonts"]]
            drawn += bool(used)  # [] : laid out but not painted (e.g. inside a closed <details>)
            if used and not any(u in families for u in used):
                problems.append(f"{text!r} was drawn with {used}, none of which has Hangul")
        cdp.detach()
        assert drawn >= 2, f"Chromium reported the fonts of {drawn} Korean elements only: {res['probes']}"
    return problems


# --- chart labels ------------------------------------------------------------------------------

_LABELS_JS = r"""
() => Array.from(document.querySelectorAll('svg.chart')).filter(s => s.getBoundingClientRect().width > 0).map(svg => {
  const box = svg.getBoundingClientRect();
  const texts = Array.from(svg.querySelectorAll('text')).map(t => ({r: t.getBoundingClientRect(), s: t.textContent}))
    .filter(t => t.r.width > 0 && t.s.trim());
  const problems = [];
  const tol = 0.5;
  for (const a of texts) {
    if (a.r.left < box.left - tol || a.r.right > box.right + tol || a.r.top < box.top - tol ||
        a.r.bottom > box.bottom + tol) problems.push(`outside the chart: ${a.s}`);
  }
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const a = texts[i].r, b = texts[j].r;
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    // side by side on one line, two labels need a gap of 3 px (else they read as one word)
    if (w > -3 && h > 2) problems.push(`overlap or touching: ${texts[i].s} / ${texts[j].s}`);
  }
  return {plot: svg.getAttribute('data-plot'), metric: svg.getAttribute('data-metric'), problems};
})
"""


def _label_problems(page):
    """``{plot: [problem, ...]}`` for the visible charts whose labels overlap or stick out."""
    return {f"{c['plot']}/{c['metric']}": c["problems"] for c in page.evaluate(_LABELS_JS) if c["problems"]}


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
    # Korean is drawn with a Hangul font, and no chart label overlaps another or is cut by its chart
    assert _hangul_problems(page, _hangul_families()) == []
    page.select_option("#type-metric", "hit@5")
    assert _label_problems(page) == {}
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
    assert _hangul_problems(page, _hangul_families()) == []
    page.close()


def test_chart_labels_do_not_overlap_or_clip(browser, tmp_path):
    """Long and Korean names: the attribution heatmaps (column labels such as retrieval_miss and
    generation_miss side by side), the per-type bars and every other chart keep each label whole and apart."""
    long = "dense:openai:text-embedding-3-small?base_url=http://127.0.0.1:8080/v1 | 문단:400"
    summary, rows = make_run(n_questions=30, seed=5, attribution=True, pipelines=("bm25 | paragraphs:400", long))
    types = {"meaning": "의미 (말을 바꾼 질문)", "lexical": "어휘_코드와_이름이_그대로_나오는_질문"}
    for res in summary["results"].values():
        for key in ("by_type", "by_type_ci95", "by_type_n"):
            res[key] = {types.get(t, t): v for t, v in res[key].items()}
    summary["attribution"] = {p: {types.get(t, t): v for t, v in m.items()} for p, m in summary["attribution"].items()}
    path = write_report(summary, rows, tmp_path / "labels.html")
    page, foreign, errors = _open(browser, path)
    heat = page.eval_on_selector_all('svg[data-plot="attribution"] text.col-label', "ts => ts.map(t => t.textContent)")
    assert "retrieval_miss" in heat and "generation_miss" in heat
    for metric in page.eval_on_selector_all("#type-metric option", "os => os.map(o => o.value)")[:3]:
        page.select_option("#type-metric", metric)
        assert _label_problems(page) == {}, metric
    # the report's own errors, before the font check: its DevTools session makes Chromium 150 log "Unsafe attempt
    # to load URL file://..." for the page itself
    assert not foreign and not errors, (foreign, errors)
    assert _hangul_problems(page, _hangul_families()) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator('svg[data-plot="attribution"]').last.screenshot(path=str(ARTIFACTS / "report_attribution.png"))
    page.close()


def _latin_only_fontconfig(tmp_path):
    """A fontconfig file that knows one font without Hangul (DejaVu Sans when present)."""
    fc = shutil.which("fc-list")
    if fc is None:
        _unavailable("fc-list (fontconfig) is not installed")
    files = subprocess.run([fc, "--format", "%{file}\n", ":lang=en"], capture_output=True, text=True).stdout.split()
    korean = set(subprocess.run([fc, "--format", "%{file}\n", ":charset=ac00"], capture_output=True,
                                text=True).stdout.split())
    latin = sorted((f for f in files if f not in korean and f.endswith((".ttf", ".otf"))),
                   key=lambda f: (Path(f).name != "DejaVuSans.ttf", f))
    if not latin:
        _unavailable("no Latin-only font file to build a fontconfig without Korean")
    fonts = tmp_path / "fonts"
    fonts.mkdir()
    shutil.copy(latin[0], fonts)
    conf = tmp_path / "fonts.conf"
    conf.write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{fonts}</dir><cachedir>{tmp_path / "cache"}</cachedir></fontconfig>
""", encoding="utf-8")
    return conf


def test_hangul_check_fails_without_a_korean_font(playwright, tmp_path):
    """The Korean check can fail: in a Chromium whose fontconfig holds only a Latin font, the demo report's
    Hangul is tofu and :func:`_hangul_problems` says so (both the glyph and the font check)."""
    pw, exe = playwright
    conf = _latin_only_fontconfig(tmp_path)
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    run = read_run_folder(real_demo_dir())
    path = write_report(run.summary, run.per_question, tmp_path / "report.html")
    b = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_FLAGS, env=env)
    try:
        page, _, _ = _open(b.new_context(offline=True, viewport={"width": 1300, "height": 900}), path)
        problems = _hangul_problems(page, families=_hangul_families())
        assert any("missing glyphs" in p for p in problems), problems
        assert any("none of which has Hangul" in p for p in problems), problems
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report_tofu.png"))
    finally:
        b.close()
