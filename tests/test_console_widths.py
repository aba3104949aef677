"""Every console table stays readable at 80, 100 and 150 columns: every row named (the pipeline,
or its label ``P1`` with a legend line giving the full name), no metric column dropped, no number cut.

Before: at 80 and 100 columns the headline table of ``ragexam run``/``demo`` lost its pipeline column
(rows of numbers with no names); with a long pipeline name (``dense:openai:...?base_url=...``) the
last columns were cut to ``0.6…`` even at 150 columns.
"""

from __future__ import annotations

import copy
import io
import re

import pytest
from rich.cells import cell_len
from rich.console import Console

from ragexam import fmt
from ragexam.report import console_run
from ragexam.analysis.exam.compare import compare_runs
from ragexam.report.console import print_comparison, print_runs, print_score_summary
from ragexam.storage.runfolder import read_run_folder as load_run_dir
from ragexam.report.tables import Column, Keys, print_fitted
from test_report_fixtures import make_run, real_demo_dir, write_run

from ragexam.storage.summary import RunSummary

WIDTHS = (80, 100, 150)
LONG = "dense:openai:text-embedding-3-small?base_url=http://127.0.0.1:8080/v1&dimensions=512"
LABEL = re.compile(r"^\s*(P\d+)\b")


def _console(width):
    return Console(width=width, record=True, file=io.StringIO(), soft_wrap=False, highlight=False,
                   color_system=None)


def _render(fn, width, *args, **kw):
    con = _console(width)
    fn(con, *args, **kw)
    return con.export_text()


def _rename(summary, mapping):
    """The summary with pipelines renamed (names, retriever fields and every key/value naming them)."""
    s = copy.deepcopy(summary.to_dict())
    for p in s["pipelines"]:
        old = p["name"]
        p["name"] = mapping.get(old, old)
        retriever, _, chunker = p["name"].partition(" | ")
        p["retriever"] = retriever
    for key in ("results", "missed"):
        s[key] = {mapping.get(k, k): v for k, v in (s.get(key) or {}).items()}
    for c in s.get("comparisons") or []:
        c["pipeline"] = mapping.get(c["pipeline"], c["pipeline"])
        c["baseline"] = mapping.get(c["baseline"], c["baseline"])
    return s


@pytest.fixture(scope="module")
def demo():
    return load_run_dir(real_demo_dir()).summary


@pytest.fixture(scope="module", params=["demo", "long names", "nine pipelines"])
def summary(request, demo):
    if request.param == "demo":
        return demo
    if request.param == "long names":
        names = [p["name"] for p in demo["pipelines"]]
        return RunSummary.from_dict(_rename(demo, {names[1]: f"{LONG} | paragraphs:400",
                                                   names[2]: f"hybrid:bm25+{LONG}?k=60 | paragraphs:400"}))
    pipes = tuple(f"{r} | {c}" for c in ("paragraphs:400", "sentences:300", "chars:800:100")
                  for r in ("bm25", "dense:st:intfloat/multilingual-e5-large", "hybrid:bm25+dense"))
    s, _ = make_run(n_questions=20, pipelines=pipes, skills=(0.5, 0.6, 0.7, 0.8), seed=3, n_resamples=50,
                    n_permutations=50)
    for p in s["pipelines"]:
        p["chunker"] = p["name"].split(" | ")[1]
    s["main_metrics"] = list(next(iter(s["results"].values()))["metrics"])
    s["context_k"] = 5
    return RunSummary.from_dict(s)


def _labels(summary):
    return {p["name"]: f"P{i + 1}" for i, p in enumerate(summary["pipelines"])}


def _squeeze(text):
    """``text`` without whitespace (a title that names a long pipeline wraps inside the name)."""
    return re.sub(r"\s", "", text)


def _check_table_text(text, width):
    assert "…" not in text, "a cell was cut"
    too_wide = [line for line in text.splitlines() if cell_len(line.rstrip()) > width]
    assert not too_wide, too_wide


def _named_row_lines(text, summary):
    """{label: the text of every line that starts a row of that pipeline (by label or by full name)}."""
    labels = _labels(summary)
    rows = {lab: [] for lab in labels.values()}
    for line in text.splitlines():
        m = LABEL.match(line)
        if m and m.group(1) in rows:
            rows[m.group(1)].append(line)
    return rows


@pytest.mark.parametrize("width", WIDTHS)
def test_metric_table(summary, width):
    text = _render(console_run._metric_table, width, summary)
    _check_table_text(text, width)
    main = summary["main_metrics"]
    headers = " ".join(line for line in text.splitlines() if "hit@1" in line or main[-1] in line)
    for m in main:
        assert re.search(rf"(^|\s){re.escape(m)}(\s|$)", headers), f"metric column {m} missing"
    # every line with a mean on it belongs to a named row, and each row carries all its numbers
    rows = _named_row_lines(text, summary)
    for line in text.splitlines():
        if re.search(r"\b\d\.\d{3}\b", line):
            assert LABEL.match(line), f"a row of numbers with no name: {line!r}"
    for p in summary["pipelines"]:
        label = _labels(summary)[p["name"]]
        got = " ".join(rows[label])
        res = summary["results"][p["name"]]
        for m in main:
            assert fmt.num(res["metrics"][m]) in got.split(), (label, m)
        # the interval is on the line below, in the same column
        assert all(fmt.ci(res["ci95"][m]) in text for m in main)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("section", ["_sweep_table", "_type_table", "_comparisons"])
def test_other_run_tables(summary, width, section):
    text = _render(getattr(console_run, section), width, summary)
    _check_table_text(text, width)
    rows = _named_row_lines(text, summary)
    names = [p["name"] for p in summary["pipelines"]]
    if section == "_comparisons":
        for name in names[1:]:
            assert _squeeze(f"{_labels(summary)[name]} {name}") in _squeeze(text), name
        for col in ("diff", "95% CI of diff", "p (Holm)", "MDD", "reading"):
            assert col in text
        for c in summary["comparisons"]:
            assert fmt.signed_ci(c["ci95"]) in text and c.get("reading", "") in text
    else:
        assert all(rows[lab] for lab in _labels(summary).values()), "a pipeline has no row"
        cols = ("P@K", "R@K", "F1@K", "F0.5@K", "F2@K") if section == "_sweep_table" else ("type", "n", "hit@1")
        for col in cols:
            assert col in text


@pytest.mark.parametrize("width", WIDTHS)
def test_legend_names_every_pipeline_in_full(summary, width):
    text = _render(lambda con, s: console_run.render_run(s, con), width, summary)
    lines = text.splitlines()
    for name, label in _labels(summary).items():
        assert f"  {label:<4}{name}" in lines, (label, name)
    # the legend comes before the first table that uses the labels
    assert text.index("Pipelines") < text.index("Retrieval metrics")


def test_full_names_when_they_fit(demo):
    text = _render(console_run._metric_table, 150, demo)
    for p in demo["pipelines"]:
        assert f"{_labels(demo)[p['name']]} {p['retriever']}" in text


def test_print_fitted_splits_columns_and_repeats_keys():
    keys = [Keys([Column("name", "left")], [["a-rather-long-row-name-" * 2], ["short"]]),
            Keys([Column("", "left")], [["R1"], ["R2"]])]
    cols = [Column(f"metric{i:02d}") for i in range(12)]
    values = [[f"{i / 100:.3f}" for i in range(12)], [f"{(i + 50) / 100:.3f}" for i in range(12)]]
    wide = _console(200)
    assert print_fitted(wide, title="t", keys=keys, value_columns=cols, values=values) == 1
    assert "a-rather-long-row-name-" in wide.export_text()
    narrow = _console(60)
    n = print_fitted(narrow, title="t", keys=keys, value_columns=cols, values=values)
    text = narrow.export_text()
    assert n >= 2 and text.count("R1") == n and text.count("R2") == n
    assert all(f"metric{i:02d}" in text for i in range(12)) and "…" not in text
    assert max(cell_len(line.rstrip()) for line in text.splitlines()) <= 60


# --- report/console.py ------------------------------------------------------------------------


def _score_summary(names):
    text = {n: {"n": 65, "bleu": 0.41, "chrf": 0.46, "rouge_l": 0.59} for n in names}
    by_type = {n: {"lexical": {"n": 31, "bleu": 0.43, "chrf": 0.47, "rouge_l": 0.61},
                   "meaning": {"n": 34, "bleu": 0.39, "chrf": 0.44, "rouge_l": 0.57}} for n in names}
    labels = ["ok", "retrieval_miss", "generation_miss", "lucky", "abstained_ok", "hallucinated", "unjudged"]
    att = {"labels": labels, "by_type": {n: {"lexical": {lab: 3 for lab in labels},
                                             "meaning": {lab: 2 for lab in labels}} for n in names},
           "counts": {n: {lab: 5 for lab in labels} for n in names}, "signature": "att:x|version:0"}
    judge = {"model": "gpt-4o-mini", "repeat": 1,
             "summary": {n: {"answer_correctness": {"mean": 3.9, "n_judged": 60, "n": 65},
                             "faithfulness": {"mean": 0.81, "n_judged": 65, "n": 65}} for n in names}}
    return {"run_id": "score-1", "kind": "score", "created": "2026-12-01T00:00:00Z",
            "config": {"qa": "it_helpdesk", "answers": "a.jsonl"}, "text": text, "text_by_type": by_type,
            "results": {n: {"metrics": {"ok_share": 0.5}} for n in names}, "judge": judge, "attribution": att}


@pytest.mark.parametrize("width", WIDTHS)
def test_score_summary(width):
    names = ["bm25 | paragraphs:400", f"{LONG} | paragraphs:400"]
    text = _render(lambda con, s: print_score_summary(s, con), width, _score_summary(names))
    tables = text[text.index("Text metrics"):text.index("signature:")]
    _check_table_text(tables, width)
    for i, name in enumerate(names):
        assert f"  P{i + 1}  {name}" in text.splitlines()
        assert _squeeze(f"Stage attribution: {name}") in _squeeze(text)
    for col in ("BLEU", "chrF", "ROUGE-L", "ok share", "mean", "coverage", "lexical", "meaning", "total",
                "retrieval_miss", "generation_miss"):
        assert col in tables, col
    assert "0.810" in tables and "65/65" in tables and "60/65" in tables


@pytest.mark.parametrize("width", WIDTHS)
def test_comparison(tmp_path, width):
    pipe = f"{LONG} | paragraphs:400"
    a = make_run(n_questions=20, pipelines=("bm25 | paragraphs:400", pipe), seed=1, n_resamples=50,
                 n_permutations=50)
    b = make_run(n_questions=20, pipelines=("bm25 | paragraphs:400", pipe), seed=2, run_id="run-b",
                 n_resamples=50, n_permutations=50)
    res = compare_runs(load_run_dir(write_run(tmp_path / "a", *a)), load_run_dir(write_run(tmp_path / "b", *b)),
                       pipeline=pipe)
    text = _render(lambda con, r: print_comparison(r, con, max_flips=3), width, res)
    table = text[text.index(" metric "):text.index("Holm's correction")]
    _check_table_text(table, width)
    assert _squeeze(pipe) in _squeeze(text)
    for m in res.pipelines[0].metrics:
        assert fmt.signed_ci((m.ci_low, m.ci_high)) in table and fmt.num(m.mean_b) in table
        assert m.metric in text[text.index("Holm's correction"):]  # its verdict in words
    assert "…" not in text.replace("… and", "")


@pytest.mark.parametrize("width", WIDTHS)
def test_runs_list(width):
    class E:
        def __init__(self, rid, pipes):
            self.run_id, self.created, self.recorded, self.kind = rid, "2026-12-01T03:25:51Z", None, "run"
            self.dataset, self.pipelines, self.headline_metric = "it_helpdesk", pipes, "hit@5"
            self.headline = {p: 0.8 + i / 100 for i, p in enumerate(pipes)}

    pipes = ["bm25 | paragraphs:400", f"{LONG} | paragraphs:400"]
    text = _render(lambda con, e: print_runs(e, con), width, [E("20261201T032551Z-310339", pipes)])
    lines = text.splitlines()
    assert "20261201T032551Z-310339" in text
    for i, p in enumerate(pipes):
        assert any(line.strip() == f"hit@5 {0.8 + i / 100:.3f}  {p}" for line in lines), p
