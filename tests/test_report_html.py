"""The HTML report: contents, escaping, self-containment and size (browser checks are in
test_report_browser.py)."""

from __future__ import annotations

import json
import re
from html import escape

import pytest

from ragexam import fmt
from ragexam.errors import InputError
from ragexam.analysis.answers.files import answers_for_report, load_answers
from ragexam.report.html import FONT_STACK, render_report, write_report
from ragexam.storage.runfolder import read_run_folder
from test_report_fixtures import make_run, real_demo_dir

RESOURCE_URL = re.compile(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", re.I)
CSS_URL = re.compile(r"""url\(\s*["']?\s*(?:https?:)?//|@import""", re.I)


def _sections(html):
    return set(re.findall(r'<section id="([a-z-]+)"', html))


@pytest.fixture(scope="module")
def fixture_run():
    return make_run(n_questions=30, seed=5, attribution=True)


def test_report_has_every_part(fixture_run):
    summary, rows = fixture_run
    html = render_report(summary, rows)
    assert html.startswith("<!DOCTYPE html>")
    assert '<meta charset="utf-8">' in html[:200]
    assert {"scores", "plots", "missed", "dataset", "settings"} <= _sections(html)
    # metric table: every pipeline and metric with its CI
    for pipe, res in summary["results"].items():
        assert pipe.replace("|", "|") in html
        for m, (lo, hi) in res["ci95"].items():
            assert f"{lo:.3f}–{hi:.3f}" in html
            assert f'<span class="v">{res["metrics"][m]:.3f}</span>' in html
    # comparison cells: diff, its interval, p and the Holm-adjusted p of every comparison
    for c in summary["comparisons"]:
        cell = f"{escape(fmt.p_value(c['p_value']))} / {escape(fmt.p_value(c['p_holm']))}</td>"
        assert cell in html, cell
        assert fmt.signed_ci(c["ci95"]) in html and fmt.signed(c["diff"]) in html
    assert html.count("<td class=\"verdict") == len(summary["comparisons"])
    # plots: P/R/F1 by K, F-beta per beta, per-type bars for every metric, first ranks, attribution
    for plot in ("sweep-p", "sweep-r", "sweep-f1", "fbeta-0.5", "fbeta-1", "fbeta-2", "first-rank"):
        assert f'data-plot="{plot}"' in html
    assert html.count('data-plot="by-type"') == len(summary["results"][next(iter(summary["results"]))]["metrics"])
    assert html.count('data-plot="attribution"') == len(summary["results"])
    assert html.count('class="whisker"') > 0
    # missed rows: one per missed entry, each with a hidden detail row
    n_missed = sum(len(v) for v in summary["missed"].values())
    assert html.count('<tr class="miss"') == n_missed
    assert html.count('<tr class="detail"') == n_missed
    # dataset card and settings
    assert "Unmatched evidence (1)" in html
    assert summary["pipelines"][0]["signature"] in html
    assert '"n_permutations"' in html or "n_permutations" in html
    assert FONT_STACK in html


def test_attribution_absent_gives_a_note():
    summary, rows = make_run(n_questions=12, seed=2)
    html = render_report(summary, rows)
    assert 'data-plot="attribution"' not in html
    assert "No stage attribution in this run" in html


def test_everything_user_provided_is_escaped():
    evil = '<script>alert("x")</script>'
    summary, rows = make_run(n_questions=12, seed=2, pipelines=(f"bm25 | {evil}", "dense & <b> | x"))
    pipe = summary["pipelines"][0]["name"]
    summary["missed"][pipe][0]["question"] = f"질문 {evil}"
    summary["missed"][pipe][0]["top"][0]["text"] = f"chunk {evil} text"
    summary["config"]["note"] = evil
    summary["dataset"]["types"][evil] = 1
    answers = {summary["missed"][pipe][0]["query_id"]: {"answer": evil, "reasoning": evil, "verdict": evil}}
    html = render_report(summary, rows, answers)
    assert "<script>alert" not in html
    assert html.count("<script>") == 1  # the page's own
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "dense &amp; &lt;b&gt; | x" in html


def test_no_network_resources_and_a_single_file(tmp_path, fixture_run):
    summary, rows = fixture_run
    path = write_report(summary, rows, tmp_path / "sub" / "r.html")
    html = path.read_text(encoding="utf-8")
    assert not RESOURCE_URL.search(html), RESOURCE_URL.search(html)
    assert not CSS_URL.search(html)
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html and "<img" not in html and "<iframe" not in html
    assert list((tmp_path / "sub").iterdir()) == [path]  # no side files, no temp file left


def test_answers_and_ground_truth_in_details(fixture_run):
    summary, rows = fixture_run
    pipe = next(p for p in summary["missed"] if summary["missed"][p])
    qid = summary["missed"][pipe][0]["query_id"]
    answers = {pipe: {qid: {"answer": "생성된 답변 ABC", "reasoning": "판정 근거 XYZ", "verdict": "wrong"}}}
    html = render_report(summary, rows, answers)
    assert "생성된 답변 ABC" in html and "판정 근거 XYZ" in html
    from html import escape

    from ragexam.analysis.gating.history import with_ground_truth
    from ragexam.data import load_qa

    truth = escape(load_qa("it_helpdesk")[qid].ground_truth)
    # the report renders what it is given and reads no file: this ragexam-run/1 summary has no ground truth
    assert truth not in html and "<dt>ground truth</dt><dd><i>not available</i></dd>" in html
    # ragexam run stores it in the missed entries; an older summary gets it from its config.qa set
    enriched = with_ground_truth(summary)
    assert all(e["ground_truth"] for entries in enriched["missed"].values() for e in entries)
    assert "ground_truth" not in summary["missed"][pipe][0]  # a copy, the input is unchanged
    assert truth in render_report(enriched, rows, answers)


def test_evidence_is_marked_in_the_chunks(fixture_run):
    summary, rows = fixture_run
    html = render_report(summary, rows)
    # the fixture puts the evidence chunk at the first rank when it is within the top 10
    found = [(p, e) for p, es in summary["missed"].items() for e in es
             if e["first_rank"] is not None and e["first_rank"] <= 10]
    assert found
    assert html.count("<mark>") >= len(found)
    assert "contains evidence" in html


def test_report_answers_come_from_the_one_answers_reader(tmp_path):
    def read_answers(path):
        return answers_for_report(load_answers(path))

    (tmp_path / "a.jsonl").write_text('{"query_id": "q1", "answer": "가"}\n\n{"query_id": "q2", "answer": "나"}\n',
                                      encoding="utf-8")
    assert read_answers(tmp_path / "a.jsonl") == {"q1": {"query_id": "q1", "pipeline": None, "answer": "가"},
                                                  "q2": {"query_id": "q2", "pipeline": None, "answer": "나"}}
    (tmp_path / "b.jsonl").write_text('{"query_id": "q1", "pipeline": "p", "answer": "가", "reasoning": "r"}\n',
                                      encoding="utf-8")
    assert read_answers(tmp_path / "b.jsonl") == {"p": {"q1": {"query_id": "q1", "pipeline": "p", "answer": "가",
                                                               "reasoning": "r"}}}
    (tmp_path / "d.jsonl").write_text('{"answer": "x"}\n{"answer": "y"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="query_id"):
        read_answers(tmp_path / "d.jsonl")
    # the bundled answers file works as is
    from ragexam.data.datasets import resolve

    assert len(read_answers(resolve("it_helpdesk", "answers"))) == 71


def test_bad_summary_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="format"):
        render_report({"format": "something-else"}, [])
    with pytest.raises(InputError, match="first_rank"):
        summary, rows = make_run(n_questions=5, seed=1)
        rows[0] = dict(rows[0], first_rank="x")
        render_report(summary, rows)


def test_demo_report_is_small_and_complete(tmp_path):
    """A real run of the bundled demo: the report is under 2 MB and has every part."""
    run = read_run_folder(real_demo_dir())
    path = write_report(run.summary, run.per_question, tmp_path / "demo.html")
    size = path.stat().st_size
    assert size < 2 * 1024 * 1024, size
    html = path.read_text(encoding="utf-8")
    assert not RESOURCE_URL.search(html) and not CSS_URL.search(html)
    assert {"scores", "plots", "missed", "dataset", "settings"} <= _sections(html)
    assert html.count('<tr class="miss"') == sum(len(v) for v in run.summary["missed"].values())
    assert html.count("<svg") >= 8


def test_font_stack_covers_korean_on_every_system():
    """The first Korean face of each system is in the stack, before any generic family (which may have no
    Hangul); the stack ends in a generic family."""
    faces = [f.strip().strip('"') for f in FONT_STACK.split(",")]
    generic = faces.index("system-ui")
    for system, names in {"Windows": ["Malgun Gothic"], "macOS": ["Apple SD Gothic Neo"],
                          "Linux (fonts-noto-cjk)": ["Noto Sans CJK KR"], "Linux (fonts-nanum)": ["NanumGothic"],
                          "web/Android": ["Noto Sans KR"]}.items():
        assert any(n in faces[:generic] for n in names), system
    assert faces[-1] == "sans-serif"


def test_attribution_labels_are_whole():
    """The heatmap's column labels wrap at '_' (retrieval_ / miss) and are never cut."""
    from ragexam.analysis.answers.diagnosis import LABELS

    summary, rows = make_run(n_questions=12, seed=2, attribution=True,
                             pipelines=("bm25 | paragraphs:400", "dense:openai:text-embedding-3-small?base_url="
                                                                 "http://127.0.0.1:8080/v1 | 문단:400"))
    html = render_report(summary, rows)
    for chart in re.findall(r'<svg class="chart heat".*?</svg>', html):
        cols = [re.sub(r"<[^>]+>", "", t) for t in re.findall(r'<text class="tick col-label"[^>]*>(.*?)</text>', chart)]
        assert cols == list(LABELS)
        assert "retrieval_</tspan>" in chart  # wrapped at the underscore, not cut at 14 characters
        title = re.sub(r"<[^>]+>", "", re.search(r'<text class="ctitle"[^>]*>(.*?)</text>', chart).group(1))
        assert title in [escape(p) for p in summary["attribution"]]


def test_a_chunking_study_shows_budgets_the_size_warning_and_evidence_split(tmp_path):
    """A run comparing chunkers of different size: the table at an equal context budget (its columns from the
    summary's ``budget_metrics``), the comparisons at that budget, the size warning, each chunking's sizes in the
    dataset card, and every ``evidence_split`` miss named in the list and explained in its details."""
    import ragexam
    from ragexam.report import sections
    from ragexam.report.views import RunView

    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25"], ["paragraphs:200", "chars:120:0"], progress=False,
                      n_resamples=200, n_permutations=200)
    s = res.summary
    html = render_report(s, res.per_question)
    budget = re.search(r'<h3 id="budget">.*?</table>', html, re.S).group(0)
    assert s.budget_metrics and all(f'<th class="num">{m}</th>' in budget for m in s.budget_metrics)
    for p, r in s.results.items():
        lo, hi = r.ci95[s.budget_metrics[0]]
        assert f"{r.metrics[s.budget_metrics[0]]:.3f}</span><span class=\"ci\">{lo:.3f}–{hi:.3f}" in budget
        assert f"{s.chunk_sizes(p).mean_chars:.0f}</td>" in budget
    assert escape(s.chunking.size_warning) in html and 'id="size-warning"' in html
    assert "Comparisons at an equal context budget" in html
    assert html.count('<td class="verdict') == len(s.comparisons) + len(s.budget_comparisons)
    split = [e for es in s.missed.values() for e in es if e.evidence_split is not None]
    assert split and html.count('title="the chunking cut the evidence">evidence split</span>') == len(split)
    assert html.count("<dt>evidence split</dt>") == len(split)
    assert html.count("holds part of the evidence: split") == sum(
        1 for e in split if any(c.chunk_id == e.evidence_split.chunk_id for c in e.top))
    n_split = s.results["bm25 | chars:120:0"].n_evidence_split
    assert n_split and f"{n_split} missed questions evidence_split" in html
    assert "paragraphs:200: 154 chunks" in html and "chars:120:0: 211 chunks" in html
    view = RunView.of(s, res.per_question)
    assert sections.scores(view) in html and sections.dataset(view) in html


def test_report_answers_of_another_question_set_are_refused_and_some_missing_said(tmp_path, capsys):
    """``report RUN --answers FILE``: answers none of whose questions are the run's are an error naming --answers
    (it wrote the page without them, rc 0); answers only some of which are the run's are shown with a warning."""
    import json

    import ragexam
    from ragexam.cli import main
    from ragexam.data import load_qa
    from ragexam.data.datasets import resolve

    ragexam.run("ai_concepts", "ai_concepts", ["bm25"], ["paragraphs:400"], progress=False, n_resamples=20,
                n_permutations=20).save(tmp_path / "run")

    def report(answers, out):
        with pytest.raises(SystemExit) as ei:
            main(["report", str(tmp_path / "run"), "-o", str(out), "--answers", str(answers)])
        got = capsys.readouterr()
        return ei.value.code or 0, got.out, got.err

    helpdesk = resolve("it_helpdesk", "answers")
    code, _, err = report(helpdesk, tmp_path / "r1.html")
    assert code == 2 and not (tmp_path / "r1.html").exists()
    assert f"{helpdesk}: field '--answers': no answer matches the run: 0 of the 71 answers are of this run" in err
    assert "12 questions of ai_concepts" in err and "not in the run: 71 questions (hq_001, hq_002, hq_003, ...)" in err
    assert "Fix:" in err and "Traceback" not in err
    qids = [q.query_id for q in load_qa("ai_concepts")]
    rows = [{"query_id": q, "answer": "답"} for q in qids[:5]] + [{"query_id": "hq_001", "answer": "x"}]
    (tmp_path / "mix.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, err = report(tmp_path / "mix.jsonl", tmp_path / "r2.html")
    assert code == 0 and "wrote" in out and (tmp_path / "r2.html").exists()
    assert ("warning: --answers " + str(tmp_path / "mix.jsonl") + ": only 5 of the 6 answers are of this run") in err
    assert "not in the run: 1 question (hq_001); the others are not shown" in err
    named = [{"query_id": q, "pipeline": "nope", "answer": "답"} for q in qids[:2]]
    (tmp_path / "named.jsonl").write_text("".join(json.dumps(r) + "\n" for r in named), encoding="utf-8")
    code, _, err = report(tmp_path / "named.jsonl", tmp_path / "r3.html")
    assert code == 2 and "pipelines not in the run: 'nope' (the run's: bm25 | paragraphs:400)" in err
