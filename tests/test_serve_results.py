"""``ragexam serve``'s results pages over HTTP (Starlette's test client): the runs list over the history and the
named folders, a run's page (the static report's own sections), a missed question, a score's page with its answers
and the attribution matrix linked to them, and two runs compared; only named folders and history records are
reachable.  The browser clicks through them in tests/test_serve_browser.py."""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest

from serve_results_fixtures import build
from test_report_fixtures import make_run


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two runs, a judged score and its run, and a history of the three records (made once per session)."""
    base = tmp_path_factory.getbasetemp() / "serve-results"
    marker = base / "built.json"
    if not marker.exists():
        shutil.rmtree(base, ignore_errors=True)
        b = build(base)
        marker.write_text(json.dumps({k: str(v) for k, v in b.__dict__.items()}), encoding="utf-8")
    from pathlib import Path

    from serve_results_fixtures import Built

    return Built(**{k: Path(v) for k, v in json.loads(marker.read_text(encoding="utf-8")).items()})


def client(built, *folders, **options):
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    folders = folders or (built.run_a, built.run_b, built.score, built.scored_run)
    opts = ServeOptions(port=8765, **{"lang": "en", **options})  # English pages (test_serve_i18n.py: Korean)
    c = TestClient(create_app(Catalog.of([], None, list(folders), built.history), opts),
                   base_url="http://127.0.0.1:8765")
    c.csrf = opts.csrf
    return c


def text(page):
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page.text)))


def section(page_html, sid):
    m = re.search(rf'<section id="{sid}">.*?</section>', page_html, re.S)
    assert m is not None, sid
    return m.group(0)


def test_the_runs_list_shows_folders_and_history_with_headline_intervals(built):
    c = client(built)
    page = c.get("/runs")
    assert page.status_code == 200
    t = text(page)
    assert str(built.run_a) in t and str(built.score) in t
    for rid in ("20261130T144005Z-aaaaaa", "20261201T090000Z-bbbbbb"):
        assert f'href="/run/h:{rid}"' in page.text
    summary = json.loads((built.run_a / "summary.json").read_text(encoding="utf-8"))
    res = summary["results"]["dense | paragraphs:400"]
    lo, hi = res["ci95"]["hit@5"]
    assert f"{res['metrics']['hit@5']:.3f}</b> <span class=\"ci2\">[{lo:.3f}–{hi:.3f}]" in page.text
    # filter, sort and kind
    only_b = c.get("/runs?q=bbbbbb")
    assert "/run/h:20261201T090000Z-bbbbbb" in only_b.text and "/run/h:20261130T144005Z-aaaaaa" not in only_b.text
    scores = c.get("/runs?kind=score")
    assert "/run/h:score-" in scores.text and "/run/h:2026" not in scores.text
    by_head = c.get("/runs?kind=run&sort=headline&order=desc").text
    assert by_head.index("h:20261130T144005Z-aaaaaa") < by_head.index("h:20261201T090000Z-bbbbbb")  # .838 > .811
    asc = c.get("/runs?kind=run&sort=headline&order=asc").text
    assert asc.index("h:20261201T090000Z-bbbbbb") < asc.index("h:20261130T144005Z-aaaaaa")
    assert "No record matches" in c.get("/runs?q=nothing-like-this").text
    past = c.get("/runs?page=999&page=x")  # past the end: the last page
    assert past.status_code == 200 and "/run/h:20261130T144005Z-aaaaaa" in past.text


def test_the_history_pages_in_sql(tmp_path):
    from ragexam.storage.history import History

    h = History(tmp_path / "h.sqlite3")
    assert h.page_runs().total == 0 and not (tmp_path / "h.sqlite3").exists()  # reading creates nothing
    for i in range(23):
        summary = {"format": "ragexam-run/3", "run_id": f"r{i:03d}", "created": f"2026-01-{i + 1:02d}T00:00:00Z",
                   "config": {"corpus": "c", "qa": "a" if i % 2 else "b", "miss_k": 5},
                   "pipelines": [{"name": "p"}, {"name": "q"}],
                   "results": {"p": {"metrics": {"hit@5": i / 100}, "ci95": {"hit@5": [i / 100 - .1, i / 100 + .1]}},
                               "q": {"metrics": {"hit@5": 0.9 if i == 3 else 0.0}, "ci95": {"hit@5": [0.4, 0.6]}}}}
        h.record_run(summary, [])
    page = h.page_runs(limit=10)
    assert page.total == 23 and [e.run_id for e in page.entries] == [f"r{i:03d}" for i in range(22, 12, -1)]
    assert page.intervals["r022"]["p"] == pytest.approx((0.12, 0.32)) and page.intervals["r022"]["q"] == (0.4, 0.6)
    assert page.datasets == {"c / a": 11, "c / b": 12}
    last = h.page_runs(offset=20, limit=10)
    assert [e.run_id for e in last.entries] == ["r002", "r001", "r000"]
    assert [e.run_id for e in h.page_runs(dataset="c / a", sort="id", descending=False, limit=3).entries] == \
        ["r001", "r003", "r005"]
    # sorted by the best pipeline's headline (r003's q is 0.9, the others' best is p's i / 100)
    assert [e.run_id for e in h.page_runs(sort="headline", limit=3).entries] == ["r003", "r022", "r021"]
    assert [e.run_id for e in h.page_runs(sort="headline", descending=False, limit=3).entries] == \
        ["r000", "r001", "r002"]
    from ragexam.storage import history  # an SQLite without JSON functions sorts from the results table

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(history._SORTS, "headline", "(SELECT MAX(value) FROM json_each_missing(runs.headline))")
        assert [e.run_id for e in h.page_runs(sort="headline", limit=3).entries] == ["r003", "r022", "r021"]
    assert h.page_runs(text="r01", limit=50).total == 10
    assert h.page_runs(text="%").total == 0 and h.page_runs(text="_").total == 0  # LIKE's wildcards are text
    from ragexam.errors import InputError

    with pytest.raises(InputError, match="expected one of"):
        h.page_runs(sort="summary; DROP TABLE runs")


def test_a_run_page_is_the_reports_sections(built):
    from ragexam.report import sections
    from ragexam.report.html import render_report
    from ragexam.report.views import RunView
    from ragexam.storage.runfolder import read_run_folder

    c = client(built)
    page = c.get("/run/f1")
    assert page.status_code == 200
    run = read_run_folder(built.run_a)
    report = render_report(run.summary, run.per_question)
    view = RunView.of(run.summary, run.per_question)
    for sid in ("scores", "dataset", "settings"):  # the same fragment, byte for byte
        assert section(page.text, sid) == section(report, sid) == getattr(sections, sid)(view)
    assert section(page.text, "plots") == section(report, "plots")
    for plot in ("sweep-p", "fbeta-1", "by-type", "first-rank"):
        assert f'data-plot="{plot}"' in page.text
    assert "style=" not in page.text and "<script>" not in page.text  # the CSP forbids inline style and script
    missed = sum(len(v) for v in run.summary.missed.values())
    assert page.text.count('class="miss-row"') == missed and f"{missed} in all" in page.text
    # the same run from the history is the same page
    record = c.get("/run/h:20261130T144005Z-aaaaaa")
    assert section(record.text, "scores") == section(page.text, "scores")


def test_missed_questions_are_paginated_and_filtered(built, monkeypatch):
    from ragexam.serve import results_pages

    monkeypatch.setattr(results_pages, "MISSED_PAGE", 10)
    c = client(built)
    first = c.get("/run/f1")
    n = int(re.search(r"(\d+) in all", first.text).group(1))
    assert first.text.count('class="miss-row"') == 10 and f"questions 1–10 of {n}" in first.text
    last_page = -(-n // 10)
    last = c.get(f"/run/f1?page={last_page}")
    assert last.text.count('class="miss-row"') == n - 10 * (last_page - 1)
    assert c.get("/run/f1?page=999").text.count('class="miss-row"') == n - 10 * (last_page - 1)
    dense = c.get("/run/f1?pipeline=dense+%7C+paragraphs%3A400&type=meaning")
    rows = re.findall(r'<tr class="miss-row">.*?</tr>', dense.text, re.S)
    assert rows and all("dense | paragraphs:400" in r and ">meaning<" in r for r in rows)


def test_a_missed_question_shows_its_chunks_with_the_evidence_marked(built):
    from ragexam.storage.runfolder import read_run_folder

    run = read_run_folder(built.run_a)
    pipe = "bm25 | paragraphs:400"
    entry = next(e for e in run.summary.missed[pipe] if e.first_rank is not None and e.first_rank <= 10)
    c = client(built)
    listing = c.get("/run/f1")
    link = re.search(r'href="(/run/f1/missed\?[^"]*qid=' + entry.query_id + r'[^"]*)"', listing.text).group(1)
    page = c.get(html.unescape(link))
    assert page.status_code == 200
    assert html.escape(entry.question) in page.text and page.text.count('<li class=hit>') >= 1
    assert "<mark>" in page.text and html.escape(entry.evidence[0][:20]) in page.text
    assert page.text.count("<li") >= len(entry.top)
    assert 'id="next"' in page.text or 'id="prev"' in page.text
    assert c.get("/run/f1/missed?pipeline=nope&qid=hq_001").status_code == 404


def test_a_score_page_has_answers_verdicts_reasoning_and_linked_attribution(built):
    c = client(built)
    page = c.get("/run/f3")
    assert page.status_code == 200
    t = text(page)
    assert "LLM judge" in t and "stub-judge" in t and "맞음" in t  # the judge's reasoning
    assert "공용 와이파이에서 UDP 4500 포트가 막혀서" in t  # an answer (per_answer.csv)
    assert "VPN 619 오류는 왜 나요?" in t  # the question, from the set the score names
    assert "generation_miss" in t and "incorrect" in t  # P2's q3 was tagged incorrect for the stub
    cells = re.findall(r'<a class="cell-link" href="([^"]+)">.*?<text class="cell"[^>]*>(\d+)</text></a>', page.text,
                       re.S)
    assert cells
    for href, count in cells[:6]:
        opened = c.get(html.unescape(href).split("#")[0])
        assert opened.text.count('class="answer-row"') == int(count), href
    gm = next(h for h, _ in cells if "label=generation_miss" in h)
    assert "q3" in c.get(html.unescape(gm).split("#")[0]).text
    assert "5/5" in t or "6/6" in t  # coverage
    # the score's run shows the attribution, with links into the score
    run = c.get("/run/f4")
    assert 'data-plot="attribution"' in run.text and "/run/f3?" in run.text and "scores of this run" in run.text
    # a score recorded in the history: verdicts without answer texts, said so
    rid = re.search(r'href="/run/(h:score-[^"]+)"', c.get("/runs?kind=score").text).group(1)
    record = c.get(f"/run/{rid}")
    assert record.status_code == 200 and "the history keeps the verdicts only" in record.text
    assert record.text.count('class="answer-row"') == page.text.count('class="answer-row"')


def _traced_score(folder, qa, records):
    """A score folder of traced answers (each line its own ``question``; analysis/answers/traffic.py) written
    without a judge, and its answers file."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.analysis.answers.scoring import save_score, score_answers
    from ragexam.data.loaders import load_qa

    folder.mkdir(parents=True, exist_ok=True)
    answers = folder / "traced.jsonl"
    answers.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    report = score_answers(load_qa(qa) if qa else None, load_answers(answers), answers_source=str(answers), seed=1)
    return save_score(report, folder / "score"), answers


def test_a_traced_answer_shows_its_own_question_and_the_exam_question_it_matched(built, tmp_path):
    from ragexam.data.loaders import load_qa

    exam = {q.query_id: q for q in load_qa("it_helpdesk")}
    asked = {"trace-a": exam["hq_001"].question, "trace-b": exam["hq_002"].question + "  "}  # exact after normalising
    records = [{"query_id": t, "question": q, "answer": "답변 " + t, "contexts": ["x"]} for t, q in asked.items()]
    records.append({"query_id": "hq_003", "answer": "답변", "contexts": ["x"]})  # joined to the set by id
    score, answers = _traced_score(tmp_path / "qa", "it_helpdesk", records)
    c = client(built, score)
    pages = lambda c, lang="en": " ".join(text(c.get(f"/run/f1?page={n}&lang={lang}")) for n in (1, 2))  # noqa: E731
    t = pages(c)  # the set's 70 questions (unanswered ones too) and the 2 traced answers: 2 pages
    assert "not available" not in t
    for tid, q in asked.items():
        assert q.strip() in t
    assert f"exam question hq_001 (the same question): {exam['hq_001'].question}" in t
    assert exam["hq_003"].question in t and exam["hq_001"].ground_truth in t  # the exam's reference answer
    ko = pages(c, "ko")
    assert "볼 수 없음" not in ko and "시험 문항 hq_002 (같은 질문)" in ko
    # the answers file gone: the traced questions are not available, and the page says why; the exam match stays
    answers.unlink()
    t = pages(client(built, score))
    assert t.count(f"not available: the answers file {answers}, whose traced answers carry their questions, "
                   "is not at hand") == 2
    assert "exam question hq_002 (the same question)" in t and exam["hq_003"].question in t
    assert "question set" not in t.split("not available")[1][:200]  # the set is at hand: not blamed
    # without a question set: the answer's own question, no exam question
    score, _ = _traced_score(tmp_path / "noqa", None, records[:2])
    page = client(built, score).get("/run/f1")
    assert "not available" not in text(page) and "<dt>exam question</dt>" not in page.text
    assert asked["trace-a"] in text(page)


def test_two_runs_compared_with_holm_and_flips_both_ways(built):
    from ragexam.analysis.exam.compare import compare_runs
    from ragexam.storage.runfolder import read_run_folder

    c = client(built)
    page = c.get("/compare?a=f1&b=f2")
    assert page.status_code == 200
    want = compare_runs(read_run_folder(built.run_a), read_run_folder(built.run_b))
    t = text(page)
    for pc in want.pipelines:
        assert f"B − A on {pc.n_shared} shared questions" in t
        for m in pc.metrics:
            assert f"{m.metric} {m.mean_a:.3f} {m.mean_b:.3f}" in t and m.verdict in t
        assert f"Lost in B: found in A, missed in B (k = {pc.k}): {len(pc.lost)}" in t
        assert f"Gained in B: missed in A, found in B (k = {pc.k}): {len(pc.gained)}" in t
    n_flips = sum(len(pc.flips) for pc in want.pipelines)
    assert page.text.count("<tr><td><code>") == n_flips
    link = re.search(r'class="open-flip" href="([^"]+)"', page.text).group(1)
    assert c.get(html.unescape(link)).status_code == 200
    one = c.get("/compare?a=f1&b=f2&pa=bm25+%7C+paragraphs%3A400&pb=dense+%7C+paragraphs%3A400")
    assert one.text.count('<section class="pair">') == 1 and "(B) vs bm25 | paragraphs:400 (A)" in one.text
    bad = c.get("/compare?a=f1&b=f3")  # a run against a score: no metric in common
    assert bad.status_code == 422 and "Cannot compare" in bad.text and "Traceback" not in bad.text
    assert "Pick two runs" in c.get("/compare").text


def test_only_named_folders_and_history_records_are_served(built, tmp_path):
    c = client(built)
    for path in ("/run/f0", "/run/f9", "/run/h:nope", "/run/h:", "/run/..%2F..%2Fetc%2Fpasswd", "/run/%2Fetc%2Fpasswd",
                 f"/run/{built.run_a}", "/run/f1/missed?pipeline=x&qid=../../etc/passwd",
                 "/compare?a=f1&b=h:does-not-exist", f"/compare?a=f1&b={built.run_b}", "/run/h:20261130T144005Z"):
        r = c.get(path)
        assert r.status_code == 404, (path, r.status_code)
        assert "Traceback" not in r.text and "root:" not in r.text
    # a folder whose files are bad is a page with the reason, never a stack trace
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text('{"format": "ragexam-run/1", "results": {"p": {"n": "many"}}}',
                                         encoding="utf-8")
    c = client(built, built.run_a, broken)
    r = c.get("/run/f2")
    t = text(r)
    assert r.status_code == 422 and str(broken) in t and "results['p'].n" in t and "expected an integer" in t
    assert "Traceback" not in r.text
    listing = c.get("/runs")
    assert listing.status_code == 200 and 'class="bad"' in listing.text


def test_the_command_checks_the_named_folders_and_history_before_listening(tmp_path, capsys):
    from ragexam.cli import main

    (tmp_path / "qa.jsonl").write_text("{}\n", encoding="utf-8")
    fix = "check the path, or leave it out: the history's runs are shown without it"
    for argv, words in (([str(tmp_path / "missing")], (f"{tmp_path / 'missing'}: no such folder; expected a run or "
                                                       "score folder", fix)),
                        ([str(tmp_path)], (f"{tmp_path}: has no summary.json or score.json", fix)),
                        ([str(tmp_path / "qa.jsonl")], ("qa.jsonl: is a file;", "goes after --review")),
                        (["--history", str(tmp_path)], (f"--history {tmp_path}: is a folder; expected the history "
                                                        "database file", "leave --history out")),
                        (["--review", str(tmp_path / "nope.jsonl")], (f"--review {tmp_path / 'nope.jsonl'}: no such "
                                                                      "file; expected a question set (JSONL)",
                                                                      "check the path"))):
        with pytest.raises(SystemExit) as ei:
            main(["serve", *argv, "--port", "0"])
        err = capsys.readouterr().err
        assert ei.value.code == 2 and all(w in " ".join(err.split()) for w in words), err
        assert "field '" not in err, err


def test_korean_pipeline_names_and_escaping(tmp_path, built):
    from test_report_fixtures import write_run

    evil = '<script>alert("x")</script>'
    summary, rows = make_run(n_questions=12, seed=2, pipelines=(f"bm25 | 문단:{evil}", "dense | 문단:400"))
    pipe = summary["pipelines"][0]["name"]
    summary["missed"][pipe][0]["question"] = f"질문 {evil}"
    folder = write_run(tmp_path / "evil", summary, rows)
    c = client(built, folder)
    for path in ("/runs", "/run/f1",
                 "/run/f1/missed?" + __import__("urllib.parse").parse.urlencode(
                     {"pipeline": pipe, "qid": summary["missed"][pipe][0]["query_id"]})):
        r = c.get(path)
        assert r.status_code == 200 and "<script>alert" not in r.text and "문단:" in r.text, path


def test_warming_loads_the_named_folders(built):
    from ragexam.serve.app import Catalog

    catalog = Catalog.of([], None, [built.run_a, built.score], built.history)
    catalog.warm().join(120)
    assert [k for k in catalog.results._kept] == ["f1", "f2"]
