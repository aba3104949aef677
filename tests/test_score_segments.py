"""``ragexam score --by``: production traffic graded without re-running, in segments (issue 38, item 2).

The traffic is tests/segments_traffic.py's: four days of requests with a model switch and a prompt change, stored as
the answers file the application logged (tests/data/traces/segments_answers.jsonl) and as Langfuse's export of the
same requests (tests/data/traces/segments_langfuse.jsonl).  The judge is the loopback stub
(:class:`ragexam.testing.stub.StubEndpoint`): its numbers measure overlap, not quality -- these tests check that
every number is computed from what it says and reported with its n, not what a model thinks.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from segments_traffic import ANSWERS, LANGFUSE, MODELS, NEAR, OFF_TOPIC, OTHER_DIGITS, answers_text, langfuse_text, \
    traces

from ragexam.cli import main


def _cli(argv):
    """Run the command line; its exit status."""
    try:
        main([str(a) for a in argv])
    except SystemExit as e:
        return e.code or 0
    return 0


@pytest.fixture(scope="module")
def stub():
    from ragexam.testing.stub import StubEndpoint

    with StubEndpoint() as ep:
        yield ep


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("segments")


@pytest.fixture(scope="module")
def imported(folder):
    """``ragexam traces import`` of the Langfuse fixture."""
    out = folder / "imported.jsonl"
    assert _cli(["traces", "import", LANGFUSE, "--out", out]) == 0
    return out


def _judge(stub):
    return ["--judge-model", "stub", "--base-url", stub.base_url, "--api-key", "unused"]


_SCORED = {}


def score(answers, folder, stub, *options, judge=True):
    """``score --answers ANSWERS OPTIONS --out DIR`` (with the stub judge): the folder's score.json and its
    per_answer.csv rows (computed once per set of arguments)."""
    key = (str(answers), options, judge)
    if key not in _SCORED:
        out = folder / f"score{len(_SCORED)}"
        code = _cli(["score", "--answers", answers, *options, *(_judge(stub) if judge else ()), "--out", out,
                     "--no-history"])
        assert code == 0
        with open(out / "per_answer.csv", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        _SCORED[key] = (json.loads((out / "score.json").read_text(encoding="utf-8")), rows)
    return _SCORED[key]


def test_the_fixture_files_are_what_the_builder_makes():
    assert ANSWERS.read_text(encoding="utf-8") == answers_text()
    assert LANGFUSE.read_text(encoding="utf-8") == langfuse_text()


# -- the Done-when: imported traces give the numbers of the answers file they were made from ---------------------


def _numbers(sec):
    """The section without the failed requests' error texts (the import says "the traced request failed: ...")."""
    sec = json.loads(json.dumps(sec))
    for w in sec["worst"]:
        w.pop("error", None)
    return sec


@pytest.mark.parametrize("options", [("--by", "model"), ("--by", "day", "--baseline", "2025-03-03"),
                                     ("--by", "tag"), ("--by", "model", "--qa", "it_helpdesk")])
def test_score_by_on_imported_traces_gives_the_numbers_of_the_answers_file(imported, folder, stub, options):
    logged, _ = score(ANSWERS, folder, stub, *options)
    again, _ = score(imported, folder, stub, *options)
    assert _numbers(logged["segments"]) == _numbers(again["segments"])
    assert logged["segments"]["segments"] and logged["segments"]["comparisons"]
    assert logged["judge"]["summary"] == again["judge"]["summary"]


@pytest.mark.parametrize("fmt", ["phoenix", "otel"])
def test_other_exports_give_the_same_numbers_under_their_trace_ids(folder, stub, fmt):
    """Phoenix and OTLP trace ids are 32 hex digits: the same numbers, the answers named by those ids."""
    from ragexam.data.traces import writers

    made = traces()
    path = folder / f"{fmt}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        if fmt == "otel":
            fh.write(json.dumps(writers.otlp_request(made), ensure_ascii=False) + "\n")
        else:
            for m in made:
                for rec in writers.phoenix_spans(m):
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    out = folder / f"{fmt}-answers.jsonl"
    assert _cli(["traces", "import", path, "--out", out]) == 0
    options = ("--by", "day", "--baseline", "2025-03-03", "--qa", "it_helpdesk")
    logged, _ = score(ANSWERS, folder, stub, *options)
    again, _ = score(out, folder, stub, *options)
    hexed = {writers.hex_trace_id(m.query_id): m.query_id for m in made}
    logged, again = _numbers(logged["segments"]), _numbers(again["segments"])
    for w in again["worst"]:
        w["query_id"] = hexed[w["query_id"]]
    assert logged == again


# -- segments by model, day and tag --------------------------------------------------------------------------------


def _records():
    return [json.loads(line) for line in ANSWERS.read_text(encoding="utf-8").splitlines()]


def _utc_day(ts):
    return datetime.fromisoformat(ts).astimezone(timezone.utc).strftime("%Y-%m-%d")


def test_segments_by_model_recompute_from_the_answers(folder, stub):
    from ragexam import stats
    from ragexam.questions.traces_sample import question_key

    s, rows = score(ANSWERS, folder, stub, "--by", "model")
    sec = s["segments"]
    assert sec["by"] == "model" and s["settings"]["by"] == "model" and not sec["overlapping"]
    assert list(sec["segments"]) == [MODELS[1], MODELS[0]] or list(sec["segments"]) == list(MODELS)
    recs = {r["query_id"]: r for r in _records()}
    for name, seg in sec["segments"].items():
        mine = [r for r in rows if r["segment"] == name]
        assert seg["n_answers"] == len(mine) == sum(1 for r in recs.values() if r["trace"]["model"] == name)
        assert seg["n_failed"] == sum(1 for r in mine if recs[r["query_id"]]["answer"] is None)
        for metric, st in seg["judge"].items():
            vals = [float(r[f"{metric}_score"]) for r in mine if r[f"{metric}_status"] == "judged"]
            assert st["n_judged"] == len(vals)
            if not vals:
                assert st["mean"] is None
                continue
            assert st["mean"] == pytest.approx(np.mean(vals))
            ci = stats.bootstrap_ci(vals, seed=12345)
            assert st["ci95"] == pytest.approx([ci.low, ci.high])
    # the model switch asked the same questions: paired on them, each question's mean over its answers
    base, other = sec["baseline"], next(n for n in sec["segments"] if n != sec["baseline"])
    cmp = next(c for c in sec["comparisons"] if c["metric"] == "faithfulness")
    assert cmp["design"] == "paired" and (cmp["a"], cmp["b"]) == (base, other)
    per = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["faithfulness_status"] == "judged":
            per[r["segment"]][question_key(recs[r["query_id"]]["question"])].append(float(r["faithfulness_score"]))
    shared = sorted(set(per[base]) & set(per[other]))
    assert cmp["n"] == len(shared) >= 5
    a = [np.mean(per[base][k]) for k in shared]
    b = [np.mean(per[other][k]) for k in shared]
    ref = stats.compare(a, b, names=(base, other), seed=12345)
    assert cmp["diff"] == pytest.approx(ref.diff) and cmp["ci95"] == pytest.approx([ref.ci_low, ref.ci_high])
    assert cmp["p_value"] == pytest.approx(ref.p_value)
    assert cmp["p_holm"] >= cmp["p_value"] and cmp["signature"].startswith("ci:percentile")
    assert cmp["left_out"] == sum(len(v) for seg in (base, other) for k, v in per[seg].items() if k not in shared)


def test_segments_by_day_are_utc_days_in_order_paired_or_not(folder, stub):
    s, rows = score(ANSWERS, folder, stub, "--by", "day", "--baseline", "2025-03-03")
    sec = s["segments"]
    days = [_utc_day(r["trace"]["timestamp"]) for r in _records()]
    assert list(sec["segments"]) == sorted(set(days))
    assert "2025-03-02" in sec["segments"]  # 08:xx in Korea on the 3rd is the 2nd in UTC
    assert {d: sec["segments"][d]["n_answers"] for d in sec["segments"]} == {d: days.count(d) for d in set(days)}
    assert sec["baseline"] == "2025-03-03"
    designs = {c["design"] for c in sec["comparisons"]}
    assert designs == {"paired", "unpaired", "too_few"}
    assert all(c["design"] == "paired" for c in sec["comparisons"] if c["b"] == "2025-03-05")  # same questions
    un = next(c for c in sec["comparisons"] if c["design"] == "unpaired")
    assert un["n"] == 0 and un["left_out"] == 0
    from ragexam.stats.unpaired import unpaired_compare

    m = un["metric"]
    va = [float(r[f"{m}_score"]) for r in rows if r["segment"] == un["a"] and r[f"{m}_status"] == "judged"]
    vb = [float(r[f"{m}_score"]) for r in rows if r["segment"] == un["b"] and r[f"{m}_status"] == "judged"]
    ref = unpaired_compare(va, vb, seed=12345)
    assert (un["n_a"], un["n_b"]) == (len(va), len(vb)) and un["diff"] == pytest.approx(ref.diff)
    assert un["ci95"] == pytest.approx([ref.ci_low, ref.ci_high]) and un["p_value"] == pytest.approx(ref.p_value)
    small = sec["segments"]["2025-03-02"]
    assert small["too_few"] == (small["n_answers"] < sec["min_n"])
    tiny = [c for c in sec["comparisons"] if c["design"] == "too_few"]
    assert all(c["diff"] is None and c["p_value"] is None and "too few" in c["verdict"] for c in tiny)


def test_segments_by_tag_count_an_answer_in_every_tag(folder, stub):
    s, rows = score(ANSWERS, folder, stub, "--by", "tag")
    sec = s["segments"]
    tags = [r["trace"]["tags"] for r in _records()]
    assert sec["overlapping"] and any("an answer is counted in every tag" in n for n in sec["notes"])
    assert {n: seg["n_answers"] for n, seg in sec["segments"].items()} == \
        {t: sum(1 for ts in tags if t in ts) for t in ("prompt-v1", "prompt-v2", "vpn")}
    assert sum(seg["n_answers"] for seg in sec["segments"].values()) > len(tags)
    assert any(r["segment"] == "prompt-v2|vpn" for r in rows)
    vpn = [c for c in sec["comparisons"] if c["b"] == "vpn" and c["a"] == "prompt-v2"]
    assert vpn and all(c["in_both"] > 0 for c in vpn)  # the answers in both are not compared with themselves


def test_latency_and_token_percentiles_are_numpys(folder, stub):
    s, _ = score(ANSWERS, folder, stub, "--by", "model")
    for name, seg in s["segments"]["segments"].items():
        traced = [r["trace"] for r in _records() if r["trace"]["model"] == name]
        lat = [t["latency_ms"] for t in traced]
        assert seg["latency_ms"]["n"] == len(lat)
        assert seg["latency_ms"]["p50"] == pytest.approx(np.percentile(lat, 50))
        assert seg["latency_ms"]["p90"] == pytest.approx(np.percentile(lat, 90))
        assert seg["latency_ms"]["p99"] is None and seg["latency_ms"]["too_few"] == {"p99": 100}
        out = [t["tokens"]["output"] for t in traced]
        assert seg["tokens"]["output"]["p50"] == pytest.approx(np.percentile(out, 50))
        total = [t["tokens"]["total"] for t in traced]
        assert seg["tokens"]["total"]["p90"] == pytest.approx(np.percentile(total, 90))


# -- exam matching -------------------------------------------------------------------------------------------------


def test_traced_questions_that_are_exam_questions_are_graded_on_its_evidence(folder, stub):
    from ragexam.data.loaders import load_qa

    s, rows = score(ANSWERS, folder, stub, "--by", "model", "--qa", "it_helpdesk")
    exam = s["segments"]["exam"]
    by_text = {q.question: q for q in load_qa("it_helpdesk")}
    recs = _records()
    verbatim = [r for r in recs if r["question"] in by_text]
    assert exam["n_traced"] == len(recs) and exam["n_exact"] == len(verbatim)
    near = [m for m in exam["matches"] if m["match"] == "near"]
    assert [(m["question"], m["exam_id"], m["answers"]) for m in near] == [(NEAR[1], NEAR[0], 4)]  # once a day
    assert near[0]["cosine"] >= exam["threshold"] == 0.92 and exam["n_near"] == 4
    assert sum(m["answers"] for m in exam["matches"]) == exam["n_exact"] + exam["n_near"]
    matched = {m["question"]: m for m in exam["matches"]}
    assert OTHER_DIGITS not in matched and OFF_TOPIC not in matched
    csv_match = {r["query_id"]: (r["exam_id"], r["exam_match"], r["exam_cosine"]) for r in rows}
    for r in recs:
        m = matched.get(r["question"])
        want = (m["exam_id"], m["match"], "" if m["cosine"] is None else str(m["cosine"])) if m else ("", "", "")
        assert csv_match[r["query_id"]] == want
    # each segment's exam evidence is measured on its matched answers' contexts
    from ragexam.analysis.answers.rows import evidence_per_context

    by_id = {q.query_id: q for q in load_qa("it_helpdesk")}
    exam_of = {r["query_id"]: matched[r["question"]]["exam_id"] for r in recs if r["question"] in matched}
    for name, seg in s["segments"]["segments"].items():
        hits = [evidence_per_context(by_id[exam_of[r["query_id"]]].evidence, r["contexts"])["evidence_hit"]
                for r in recs if r["trace"]["model"] == name and r["query_id"] in exam_of
                and by_id[exam_of[r["query_id"]]].answerable and r["contexts"]]
        assert seg["n_exam"] == len(hits) and seg["evidence"]["evidence_hit"]["mean"] == pytest.approx(np.mean(hits))
    # the judge beside the evidence counts questions, not answers: traced answers of one exam question are one
    # question, resampled together (review T2: "50 questions" for 54 answers of 22)
    assert any(t.get("evidence") for t in s["judge"]["trust"].values())
    for metric, trust in s["judge"]["trust"].items():
        ev = trust.get("evidence")
        if ev:
            assert ev["n_questions"] <= len(set(exam_of.values())), metric
            assert "answers of" in ev["text"] or ev["n_questions"] == len(exam_of), metric


def test_an_exact_match_is_the_same_question_after_normalisation_and_a_near_one_needs_the_same_numbers():
    from ragexam.analysis.answers.files import AnswerRecord
    from ragexam.analysis.answers.traffic import split
    from ragexam.data.loaders import load_qa

    qa = load_qa("it_helpdesk")
    q1 = next(q for q in qa if q.query_id == NEAR[0])
    recs = [AnswerRecord("t1", "a", question="  " + q1.question.replace(" ", "  ").rstrip("?") + " ?? "),
            AnswerRecord("t2", "a", question=NEAR[1]), AnswerRecord("t3", "a", question=OTHER_DIGITS),
            AnswerRecord("t4", "a", question=OFF_TOPIC)]
    parts = split(qa, recs)
    got = {m.question: (m.exam_id, m.match) for m in parts.matching.matches}
    assert got == {recs[0].question: (NEAR[0], "exact"), NEAR[1]: (NEAR[0], "near")}
    q = {r.query_id: q for r, q in parts.traced}
    assert q["t2"].evidence == q1.evidence and q["t2"].question == NEAR[1] and q["t2"].query_id == "t2"
    assert q["t4"].evidence == () and q["t4"].ground_truth is None
    # above 0.99 the paraphrase is no longer a near duplicate
    strict = split(qa, recs, threshold=0.999)
    assert [m.match for m in strict.matching.matches] == ["exact"]


# -- what a score of traffic is, and its errors --------------------------------------------------------------------


def test_without_an_exam_the_judge_grades_the_reference_free_metrics(folder, stub):
    from ragexam.analysis.answers.traffic import reference_free_metrics

    s, rows = score(ANSWERS, folder, stub, "--by", "model")
    assert s["settings"]["qa"] is None
    metrics = s["settings"]["judge"]["metrics"]
    assert metrics == reference_free_metrics() and "answer_correctness" not in metrics
    assert {"context_relevance", "faithfulness", "answer_relevancy", "abstention"} <= set(metrics)
    assert s["segments"]["exam"] is None and any("no question set" in n for n in s["segments"]["notes"])
    assert s["segments"]["worst"][0]["negative"]  # thumbs down first
    failed = [w for w in s["segments"]["worst"] if "failed request" in w["why"]]
    assert failed and failed[0]["answer"] is None and failed[0]["error"] == "timeout after 30 s"
    lowest = [w for w in s["segments"]["worst"] if "lowest judged score" in w["why"]]  # which metric, said
    assert lowest and all(re.search(r"lowest judged score: (\w+) [0-9.]+ \(on a 0-1 scale\)", w["why"]).group(1)
                          in metrics for w in lowest)


def test_without_a_judge_the_segments_still_count_feedback_and_latency(folder, stub):
    s, _ = score(ANSWERS, folder, stub, "--by", "model", judge=False)
    for seg in s["segments"]["segments"].values():
        assert seg["judge"] == {} and seg["latency_ms"]["n"] == seg["n_answers"]
        assert seg["feedback"]["n"] >= seg["feedback"]["negative"]
    assert s["segments"]["comparisons"] == []


def test_a_score_without_by_writes_no_segments(tmp_path):
    assert _cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--out", tmp_path / "s",
                 "--no-history"]) == 0
    s = json.loads((tmp_path / "s" / "score.json").read_text(encoding="utf-8"))
    assert "segments" not in s and "by" not in s["settings"]


def test_the_summary_reads_back_typed(folder, stub):
    from ragexam.storage.score_summary import ScoreSummary, SegmentsSection

    s, _ = score(ANSWERS, folder, stub, "--by", "tag")
    typed = ScoreSummary.from_dict(s)
    assert isinstance(typed.segments, SegmentsSection) and typed.to_dict() == s
    assert typed.segments.segments["vpn"].judge["faithfulness"].n_judged >= 1
    # no question set: the dataset is named by the answers file (history and serve's home page showed '?')
    assert typed.dataset_label == f"answers {s['settings']['answers']}" and "?" not in typed.dataset_label


@pytest.mark.parametrize("argv, field, needle", [
    (["--answers", "it_helpdesk"], "question", "has no 'question' field"),
    (["--answers", ANSWERS, "--by", "colour"], "by", "expected a field the answers have: model, day, tag"),
    (["--answers", ANSWERS, "--by", "model", "--baseline", "claude"], "baseline", "gpt-4o-mini"),
    (["--answers", ANSWERS, "--baseline", "gpt-4o-mini"], "baseline", "pass --by FIELD too"),
    (["--answers", ANSWERS, "--qa", "it_helpdesk", "--match-threshold", "1.5"], "match_threshold", "(0, 1]"),
])
def test_errors_name_the_field_and_exit_2(argv, field, needle, capsys, tmp_path):
    assert _cli(["score", *argv, "--no-history"]) == 2
    err = capsys.readouterr().err
    assert field in err and needle in err


def test_the_console_shows_the_segments(imported, stub, capsys):
    assert _cli(["score", "--answers", imported, "--by", "model", *_judge(stub), "--no-history", "--list", "3"]) == 0
    out = capsys.readouterr().out
    assert "Segments by model" in out and "paired, " in out and "Answers to read first" in out
    assert "questions to read" not in out  # the traced answers' list replaces the exam's
    assert "and judge metrics (mean [95% CI] n judged)" in out and "(1 answers of others" not in out
    assert _cli(["score", "--answers", imported, "--by", "model", "--no-history"]) == 0
    out = capsys.readouterr().out  # no judge: the table is not titled by the judge metrics it does not have
    assert "answers, failed requests and feedback (no judge metric)" in out and "judge metrics (mean" not in out


# -- where else the segments go -------------------------------------------------------------------------------


def test_the_page_of_a_score_without_a_run(folder, stub, tmp_path):
    page = tmp_path / "segments.html"
    assert _cli(["score", "--answers", ANSWERS, "--by", "day", *_judge(stub), "--no-history", "--report", page]) == 0
    text = page.read_text(encoding="utf-8")
    assert '<section id="segments">' in text and "2025-03-05" in text and "Against the baseline" in text
    assert re.search(r"Latency and tokens", text) and "p99 100" in text


def test_serve_shows_the_segments_in_korean_and_english(folder, stub):
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    score(ANSWERS, folder, stub, "--by", "model")
    out = next(p for p in sorted(folder.glob("score*")) if (p / "score.json").is_file()
               and json.loads((p / "score.json").read_text(encoding="utf-8"))["settings"].get("by") == "model")
    for lang, words in (("en", ("Segments by", "Against the baseline")), ("ko", ("별 구간", "기준 구간과 비교"))):
        opts = ServeOptions(port=8765, lang=lang)
        c = TestClient(create_app(Catalog.of([], None, [out], None), opts), base_url="http://127.0.0.1:8765")
        home = c.get("/runs")
        key = re.search(r'href="/run/([^"?#]+)"', home.text).group(1)
        page = c.get(f"/run/{key}")
        assert page.status_code == 200 and 'id="segments"' in page.text
        assert all(w in page.text for w in words), lang


def test_check_gates_on_a_segment(folder, stub, capsys):
    score(ANSWERS, folder, stub, "--by", "day", "--baseline", "2025-03-03")
    out = next(p for p in sorted(folder.glob("score*")) if json.loads((p / "score.json").read_text("utf-8"))
               ["settings"].get("by") == "day")
    assert _cli(["check", out, "--min", "faithfulness=0", "--segment", "2025-03-05"]) == 0
    assert "[day=2025-03-05]" in capsys.readouterr().out
    assert _cli(["check", out, "--min", "faithfulness_pass=0", "--segment", "2025-03-02"]) == 1  # too few
    assert "no interval: n = " in capsys.readouterr().out
    assert _cli(["check", out, "--min", "faithfulness=0", "--segment", "2025-03-02", "--point"]) == 0
    assert _cli(["check", out, "--min", "faithfulness=0", "--segment", "2025-01-01"]) == 2


def test_the_korean_score_page_has_no_english_outside_data_in_the_browser(folder, stub, tmp_path):
    """The segments of serve's score page in Korean, read by Chromium: every label Korean (names, verdicts and
    notes computed in English are data), as the other Korean pages (tests/test_serve_browser.py)."""
    from test_report_browser import CHROMIUM_FLAGS, _playwright_and_chromium
    from test_serve_browser import _ENGLISH_LEFT, NAMES_AND_DATA

    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    score(ANSWERS, folder, stub, "--by", "tag")
    out = next(p for p in sorted(folder.glob("score*")) if json.loads((p / "score.json").read_text("utf-8"))
               ["settings"].get("by") == "tag")
    c = TestClient(create_app(Catalog.of([], None, [out], None), ServeOptions(port=8765, lang="ko")),
                   base_url="http://127.0.0.1:8765")
    key = re.search(r'href="/run/([^"?#]+)"', c.get("/runs").text).group(1)
    html = re.search(r'<section id="segments">.*?</section>', c.get(f"/run/{key}").text, re.S).group(0)
    sync_playwright, exe = _playwright_and_chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_FLAGS[:-1])
        try:
            page = browser.new_page()
            page.set_content(f'<!DOCTYPE html><html lang="ko"><body>{html}</body></html>')
            assert page.locator("#segments h2").inner_text() == "tag별 구간"
            assert page.locator("#segments table.segments tbody tr").count() == 3  # prompt-v2, prompt-v1, vpn
            assert page.evaluate(_ENGLISH_LEFT, sorted(NAMES_AND_DATA)) == []
        finally:
            browser.close()


def test_show_json_and_the_dry_run(stub, capsys):
    """``show`` prints a recorded score's segments again, ``--json`` holds them, and the dry run plans the
    reference-free metrics of the traffic."""
    assert _cli(["score", "--answers", ANSWERS, "--by", "model", *_judge(stub), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["segments"]["segments"]) and data["settings"]["by"] == "model"
    assert _cli(["show", "latest"]) == 0
    out = capsys.readouterr().out
    assert "Segments by model" in out and "Latency (ms) and tokens" in out
    assert _cli(["score", "--answers", ANSWERS, *_judge(stub), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "answer_relevancy" in out and "answer_correctness" not in out and "Nothing was sent" in out


def test_by_pipeline_on_an_exam_run_goes_into_the_runs_report(tmp_path, stub):
    """``--by`` on any answers file (here the pipelines of a run) and, with ``--run``, the segments in the run's
    report."""
    import ragexam

    ragexam.run("it_helpdesk", "it_helpdesk", ["bm25", "bm25:whitespace"], ["paragraphs:400"], progress=False,
                n_resamples=200, n_permutations=200, cache_dir=tmp_path / "cache").save(tmp_path / "run")
    from ragexam.analysis.answers.files import load_answers

    rows = [{"query_id": r.query_id, "pipeline": p, "answer": r.answer} for r in load_answers("it_helpdesk")
            for p in ("bm25 | paragraphs:400", "bm25:whitespace | paragraphs:400")]
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in rows[:-3]),
                                        encoding="utf-8")
    assert _cli(["score", "--qa", "it_helpdesk", "--answers", tmp_path / "two.jsonl", "--run", tmp_path / "run",
                 "--by", "pipeline", "--metric", "faithfulness", *_judge(stub), "--report", tmp_path / "r.html",
                 "--out", tmp_path / "s", "--no-history"]) == 0
    s = json.loads((tmp_path / "s" / "score.json").read_text(encoding="utf-8"))
    sec = s["segments"]
    assert list(sec["segments"]) == ["bm25 | paragraphs:400", "bm25:whitespace | paragraphs:400"]
    assert any("without an answer: in no segment" in n for n in sec["notes"])  # 2 questions of the second
    assert sec["comparisons"][0]["design"] == "paired"  # the same questions
    assert sec["segments"]["bm25 | paragraphs:400"]["evidence"]["evidence_hit"]["n"] > 0  # the exam's own questions
    report = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<section id="segments">' in report and '<section id="missed">' in report


def test_a_plain_answer_lines_model_key_segments_and_the_list_says_how_many_there_are(tmp_path, capsys):
    """T6: ``--by model`` reads a top-level ``model`` of a plain answers file (no trace), the field the error lists;
    T5: 25 failed requests with ``--list 30``: the heading says 20 of 25 and that score.json keeps 20."""
    from ragexam.report.segments_html import section

    lines = [{"query_id": f"t{i}", "question": f"질문 {i}번은 무엇인가요?", "answer": None if i < 25 else "x",
              "error": "timeout" if i < 25 else None, "model": "m1" if i % 2 else "m2"} for i in range(30)]
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    capsys.readouterr()
    assert _cli(["score", "--answers", answers, "--by", "model", "--list", "30", "--out", tmp_path / "s",
                 "--no-history"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    s = json.loads((tmp_path / "s" / "score.json").read_text(encoding="utf-8"))
    segs = s["segments"]["segments"]
    assert set(segs) == {"m1", "m2"} and segs["m1"]["n_answers"] == segs["m2"]["n_answers"] == 15
    assert "without model" not in text
    assert len(s["segments"]["worst"]) == 20 and s["segments"]["n_worst"] == 25
    assert "Answers to read first (20 of 25; score.json keeps the first 20;" in text
    from ragexam.storage.score_summary import SegmentsSection

    assert "the first 20 of 25" in section(SegmentsSection.from_dict(s["segments"]))
