"""``ragexam traces import``: Langfuse, Phoenix and OTLP exports into the answers file (issue 38, item 1).

The fixtures in tests/data/traces/ were written from each vendor's published schema: Langfuse's public API
(``TraceWithFullDetails``) and its blob-storage export field reference (traces/, observations/, scores/, snake_case),
Phoenix's span JSON and spans data frame (OpenInference semantic conventions), and OTLP's JSON encoding with the
OpenTelemetry GenAI conventions (``gen_ai.retrieval.*``, ``gen_ai.input/output.messages``, evaluation events).  They
hold the malformed cases on purpose: no retrieval span, documents without ids, nested JSON in ``input.value``, a
JSON input with no question field, failed requests, a span without ids; non-UTF-8 bytes and unreadable lines are
made here from them.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.answers.traces import import_traces
from ragexam.data.traces.meta import hash_id
from ragexam.errors import InputError

DATA = Path(__file__).parent / "data" / "traces"


def by_id(path):
    return {r.query_id: r for r in load_answers(path)}


def test_langfuse_api_export(tmp_path):
    out = tmp_path / "a.jsonl"
    res = import_traces([DATA / "langfuse_api.jsonl"], out)
    assert (res.traces, res.imported, res.failed) == (5, 4, 1)
    assert res.skipped == {"no_question": 1}  # the healthcheck trace has no input
    assert res.problems == {"no_retrieval_span": 2, "documents_without_ids": 1}
    recs = by_id(out)
    r = recs["lf-trace-001"]
    assert r.question == "호텔 와이파이에서 VPN-ERR-619가 떠요. 어떻게 하죠?"
    assert r.answer.startswith("공용 와이파이에서 UDP 4500")
    assert r.context_ids == ("hd_01", "hd_01") and r.contexts[0].startswith("VPN-ERR-619는")
    t = r.trace
    assert (t.source, t.model, t.input_tokens, t.output_tokens, t.total_tokens) == ("langfuse", "gpt-4o-mini", 412, 58,
                                                                                    470)
    assert t.timestamp == "2025-03-04T05:06:07.123000Z" and t.day == "2025-03-04" and t.latency_ms == 2345.0
    assert t.user == hash_id("kim.minsu@daon.example") and "kim.minsu" not in out.read_text(encoding="utf-8")
    assert t.session == hash_id("sess-9f2") and t.tags == ("prod", "vpn")
    assert [(d.id, d.rank, d.score) for d in t.documents] == [("hd_01", 1, 0.83), ("hd_01", 2, 0.61)]
    assert t.feedback[0].name == "user-feedback" and t.feedback[0].negative  # 0 on a feedback scale
    assert dict(t.spans) == {"retrieval": "vector-search", "generation": "answer"}
    # the chat-format input: the last user message
    assert recs["lf-trace-003"].question == "계정이 잠기면 얼마나 기다려야 해요?"
    no_ids = recs["lf-trace-003"]
    assert no_ids.context_ids is None and no_ids.trace.problems == ("documents_without_ids",)
    failed = recs["lf-trace-004"]
    assert failed.answer is None and failed.error == "the traced request failed: Request timed out after 30 s"
    assert recs["lf-trace-002"].contexts is None and recs["lf-trace-002"].trace.problems == ("no_retrieval_span",)
    assert not recs["lf-trace-002"].trace.negative  # faithfulness 0.4 is a score, not a thumb


def test_langfuse_blob_export_joins_its_three_files(tmp_path):
    out = tmp_path / "a.jsonl"
    files = [DATA / f"langfuse_blob_{n}.jsonl" for n in ("scores", "observations", "traces")]
    res = import_traces(files, out)
    assert res.imported == 1 and [f for _, f in res.files] == ["langfuse"] * 3
    r = by_id(out)["blob-1"]
    assert r.question == "VPN-ERR-619 해결법?" and r.answer == "TCP 443 모드로 바꾸세요."  # JSON-encoded payloads
    assert r.context_ids == ("hd_01#3",)  # a SPAN named like a retrieval whose output is documents
    assert r.trace.timestamp == "2025-03-06T09:00:00.000000Z" and r.trace.latency_ms == 1250.0
    assert (r.trace.model, r.trace.total_tokens) == ("claude-3-5-haiku", 312)
    assert r.trace.feedback[0].label == "True" and not r.trace.negative


def test_phoenix_span_json(tmp_path):
    out = tmp_path / "a.jsonl"
    res = import_traces([DATA / "phoenix_spans.jsonl"], out)
    assert (res.traces, res.imported) == (4, 3) and res.skipped == {"no_question": 1}
    recs = by_id(out)
    r = recs["0af7651916cd43dd8448eb211c80319c"]
    assert r.context_ids == ("hd_01", "hd_02") and [d.score for d in r.trace.documents] == [0.91, 0.42]
    assert (r.trace.model, r.trace.total_tokens, r.trace.latency_ms) == ("gpt-4o-2024-08-06", 543, 1500.0)
    assert r.trace.tags == ("prod", "ko") and r.trace.user == hash_id("park@daon.example")
    fb = r.trace.feedback[0]  # the span annotation, matched to the trace by its span id
    assert (fb.name, fb.label, fb.source, fb.comment) == ("user_feedback", "thumbs_down", "HUMAN", "not helpful")
    assert r.trace.negative
    nested = recs["1bf7651916cd43dd8448eb211c80319c"]  # nested JSON in input.value and output.value
    assert nested.question == "사원증을 잃어버렸는데 건물에 어떻게 들어가요?"
    assert nested.answer == "1층 안내데스크에서 임시 출입증을 받으세요."
    no_ids = recs["3df7651916cd43dd8448eb211c80319c"]
    assert no_ids.contexts and no_ids.context_ids is None and no_ids.trace.problems == ("documents_without_ids",)
    assert "JSON object with keys 'payload', 'lang'" in res.skipped_examples["no_question"][0]


def test_phoenix_parquet_data_frame(tmp_path):
    from datetime import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(x) for x in (DATA / "phoenix_dataframe.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in rows:  # the data frame holds timestamps, not text
        for k in ("start_time", "end_time"):
            r[k] = datetime.fromisoformat(r[k])
    keys = list(dict.fromkeys(k for r in rows for k in r))
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows]), tmp_path / "spans.parquet")
    out = tmp_path / "a.jsonl"
    res = import_traces([tmp_path / "spans.parquet"], out, fmt="phoenix")
    assert res.imported == 1
    r = by_id(out)["4ef7651916cd43dd8448eb211c80319c"]
    assert r.question == "스캔해서 메일 보내면 SCAN-E12가 나와요" and r.context_ids == ("hd_05",)
    assert (r.trace.model, r.trace.latency_ms, r.trace.timestamp) == ("qwen2.5-7b-instruct", 900.0,
                                                                      "2025-03-08T08:00:00.000000Z")
    same = import_traces([DATA / "phoenix_dataframe.jsonl"], tmp_path / "b.jsonl")  # the same rows as JSON lines
    assert same.imported == 1 and by_id(tmp_path / "b.jsonl") == by_id(out)


def test_otlp_genai_and_openinference(tmp_path):
    out = tmp_path / "a.jsonl"
    res = import_traces([DATA / "otel_genai.jsonl"], out)
    assert (res.imported, res.failed) == (2, 1)
    assert res.unreadable == {"span_without_ids": 1} and res.unreadable_examples["span_without_ids"][0].endswith(":2")
    recs = by_id(out)
    r = recs["5b8efff798038103d269b633813fc60c"]
    assert r.question == "BitLocker 복구 키를 입력하라고 나와요"  # gen_ai.retrieval.query.text
    assert r.answer == "서비스데스크에 전화해 복구 키를 받으세요."  # gen_ai.output.messages
    assert r.context_ids == ("hd_08", "hd_16") and [d.score for d in r.trace.documents] == [0.87, 0.52]
    assert (r.trace.model, r.trace.input_tokens, r.trace.output_tokens, r.trace.total_tokens) == (
        "gpt-4o-mini-2024-07-18", 380, 44, 424)
    assert r.trace.session == hash_id("conv_5j66UpCpwteGg4YSxUnt7lPY") and r.trace.user == hash_id("jung@daon.example")
    fb = r.trace.feedback[0]
    assert (fb.name, fb.value, fb.label) == ("relevance", 0.25, "irrelevant") and fb.negative is False
    failed = recs["6c9f0008a9149214e37ac744924ad71d"]
    assert failed.answer is None and "RateLimitError: 429" in failed.error


def test_malformed_lines_are_counted_never_silently_skipped(tmp_path):
    src = (DATA / "phoenix_spans.jsonl").read_bytes().splitlines(keepends=True)
    bad_utf8 = src[0].replace("VPN-ERR-619 뜨면".encode("utf-8"), b"VPN-ERR-619 \xff\xfe")
    surrogate = src[6].replace("계정 잠기면".encode("utf-8"), b"\\ud800 \xea\xb3\x84\xec\xa0\x95")
    f = tmp_path / "mixed.jsonl"
    f.write_bytes(bad_utf8 + b"".join(src[1:6]) + surrogate + src[7] + b"{not json\n" + b'{"hello": 1}\n'
                  + json.dumps({"resourceSpans": []}).encode() + b"\n" + src[8])
    res = import_traces([f], tmp_path / "a.jsonl")
    assert res.skipped == {"non_utf8_text": 2, "no_question": 1}
    assert sorted(x.split(" ")[0] for x in res.skipped_examples["non_utf8_text"]) == [
        "0af7651916cd43dd8448eb211c80319c", "3df7651916cd43dd8448eb211c80319c"]
    assert res.unreadable == {"unreadable_json": 1, "unrecognized_record": 1, "other_format": 1}
    assert res.unreadable_examples["unreadable_json"] == [f"{f}:9"]
    assert res.imported == 1  # the nested-JSON trace


def test_mapping_overrides_and_explain(tmp_path):
    out = tmp_path / "a.jsonl"
    res = import_traces([DATA / "phoenix_spans.jsonl"], out, mapping=["question=payload.text"], explain=10)
    assert res.imported == 4 and not res.skipped
    assert by_id(out)["2cf7651916cd43dd8448eb211c80319c"].question == "복합기에 PRN-0x4E가 떠요"
    ex = {e.trace_id: e for e in res.explanations}
    assert ex["2cf7651916cd43dd8448eb211c80319c"].question_from == "handler (path 'payload.text')"
    assert ex["0af7651916cd43dd8448eb211c80319c"].retrieval == "retrieve"
    # a retrieval span chosen by name: the LLM span is not a retrieval, so the trace has none
    res2 = import_traces([DATA / "phoenix_spans.jsonl"], tmp_path / "b.jsonl", mapping=["retrieval=nothing*"])
    assert res2.problems["no_retrieval_span"] == 3
    with pytest.raises(InputError, match="KEY=VALUE"):
        import_traces([DATA / "phoenix_spans.jsonl"], tmp_path / "c.jsonl", mapping=["span=x"])


@pytest.mark.parametrize("memory_chars", [1, 200])
def test_spilling_to_disk_gives_the_same_file(tmp_path, memory_chars):
    files = [DATA / n for n in ("langfuse_api.jsonl", "phoenix_spans.jsonl", "otel_genai.jsonl",
                                "langfuse_blob_traces.jsonl", "langfuse_blob_observations.jsonl",
                                "langfuse_blob_scores.jsonl")]
    import_traces(files, tmp_path / "mem.jsonl")
    res = import_traces(files, tmp_path / "disk.jsonl", memory_chars=memory_chars)
    assert res.spilled
    assert (tmp_path / "disk.jsonl").read_bytes() == (tmp_path / "mem.jsonl").read_bytes()


def test_exports_are_only_read_and_outputs_checked_first(tmp_path):
    f = tmp_path / "export.jsonl"
    shutil.copy(DATA / "langfuse_api.jsonl", f)
    before = hashlib.sha256(f.read_bytes()).hexdigest()
    import_traces([f], tmp_path / "a.jsonl", redact=True)
    assert hashlib.sha256(f.read_bytes()).hexdigest() == before
    with pytest.raises(InputError, match="--out"):
        import_traces([f], f)
    assert hashlib.sha256(f.read_bytes()).hexdigest() == before
    with pytest.raises(InputError, match="no such file"):
        import_traces([tmp_path / "missing.jsonl"], tmp_path / "b.jsonl")


def test_nothing_imported_writes_nothing_and_exits_1(tmp_path):
    from ragexam.cli import main

    f = tmp_path / "junk.jsonl"
    f.write_text('{"a": 1}\n', encoding="utf-8")
    out = tmp_path / "a.jsonl"
    with pytest.raises(SystemExit) as e:
        main(["traces", "import", str(f), "--out", str(out)])
    assert e.value.code == 1 and not out.exists() and not list(tmp_path.glob(".a.jsonl*"))


@pytest.mark.parametrize("name, text", [
    ("log.csv", "question,answer,contexts\n호텔에서 VPN이 안 돼요,TCP 443 모드로 바꾸세요,[]\n"),
    ("chat.jsonl", '{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"message": {"role": '
                   '"assistant", "content": "네"}}]}\n'),
])
def test_nothing_imported_names_the_formats_read_and_the_plain_answers_file(tmp_path, capsys, monkeypatch, name,
                                                                               text):
    """A CSV or an OpenAI chat-completions log: the message says which exports are read, and that a plain answers
    JSONL needs no import (traces sample and score read it), with the doc's section."""
    from ragexam.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        main(["traces", "import", str(f), "--out", str(tmp_path / "a.jsonl")])
    shown = " ".join(capsys.readouterr().out.split())
    assert e.value.code == 1
    assert "reads Langfuse, Phoenix (OpenInference) and OpenTelemetry (OTLP JSON) exports" in shown
    assert "plain answers JSONL" in shown and "query_id, question, answer" in shown
    assert "`ragexam traces sample` and `ragexam score --answers` read" in shown
    assert "docs/traces.md#the-three-formats" in shown
    assert "## The three formats" in (Path(__file__).parents[1] / "docs" / "traces.md").read_text(encoding="utf-8") \
        .replace("### The", "## The")


def test_explain_counts_the_spans_used_and_duplicates_apart(tmp_path):
    """An export written twice (in part): the spans by role are those used, the second copies are duplicate_span."""
    lines = (DATA / "phoenix_spans.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    once = import_traces([DATA / "phoenix_spans.jsonl"], None, explain=1)
    twice = tmp_path / "twice.jsonl"
    twice.write_text("".join(lines) + "".join(lines[:4]), encoding="utf-8")
    res = import_traces([twice], None, explain=1)
    assert res.roles == once.roles and sum(res.roles.values()) == sum(once.roles.values())
    assert res.unreadable["duplicate_span"] == 4 and res.imported == once.imported


def test_redact_removes_personal_data_before_writing(tmp_path):
    out = tmp_path / "a.jsonl"
    res = import_traces([DATA / "langfuse_api.jsonl"], out, redact=True)
    text = out.read_text(encoding="utf-8")
    assert "010-1234-5678" not in text and "[phone]" in text
    assert res.redacted == {"phone": 1}
    r = by_id(out)["lf-trace-001"]
    assert r.trace.feedback[0].comment == "틀렸어요 [phone]로 전화 주세요" and dict(r.trace.redacted) == {"phone": 1}


def test_cli_explain_without_out_writes_nothing(tmp_path, capsys, monkeypatch):
    from ragexam.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as e:
        main(["traces", "import", str(DATA / "otel_genai.jsonl"), "--explain"])
    assert e.value.code in (0, None)
    shown = capsys.readouterr().out
    assert "retrieval: retrieval helpdesk-kb (documents); generation: chat gpt-4o-mini" in shown
    assert "question from: retrieval helpdesk-kb (retrieval query)" in shown
    assert "span_without_ids" in shown and not list(tmp_path.iterdir())
    with pytest.raises(SystemExit) as e:
        main(["traces", "import", str(DATA / "otel_genai.jsonl")])
    assert e.value.code == 2 and "--out" in capsys.readouterr().err


def test_answers_files_without_trace_fields_read_as_before_and_bad_ones_are_named(tmp_path):
    old = load_answers("it_helpdesk")
    assert all(r.question is None and r.trace is None for r in old)
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"query_id": "t1", "answer": "x", "question": "q?",
                             "trace": {"source": "langfuse", "trace_id": "t1", "tokens": {"input": -3}}}) + "\n",
                 encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.jsonl:1: field 'trace\.tokens\.input'"):
        load_answers(f)
    f.write_text(json.dumps({"query_id": "t1", "answer": "x", "trace": {"source": "datadog", "trace_id": "t1"}}) + "\n",
                 encoding="utf-8")
    with pytest.raises(InputError, match="trace.source"):
        load_answers(f)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                         st.sampled_from(["id", "traceId", "trace_id", "type", "name", "input", "output", "context",
                                          "span_id", "attributes", "resourceSpans", "scopeSpans", "spans", "result",
                                          "observations", "timestamp", "span_kind", "value", "documents"]) | st.text(
                             max_size=5), kids, max_size=5), max_leaves=20)


def _records_of(line):
    """How many records a JSON line holds: an array's items, an API page's ``data`` items, else one."""
    if isinstance(line, list) and line:
        return len(line)
    if isinstance(line, dict) and isinstance(line.get("data"), list) and line["data"] and "resourceSpans" not in line:
        return len(line["data"])
    return 1


@settings(max_examples=60)
@given(st.lists(_json, min_size=1, max_size=8))
def test_any_json_is_read_or_counted_never_a_crash(tmp_path_factory, records):
    d = tmp_path_factory.mktemp("fuzz")
    f = d / "export.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    res = import_traces([f], d / "a.jsonl")
    assert res.records == sum(map(_records_of, records))
    assert res.imported + sum(res.skipped.values()) == res.traces
    if res.imported:
        assert len(load_answers(d / "a.jsonl")) == res.imported


def test_langfuse_blob_export_as_parquet_reads_like_its_json_lines(tmp_path):
    """Parquet is the blob-storage export's default file format for new integrations."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    maps = {"usage_details": pa.map_(pa.string(), pa.int64()), "cost_details": pa.map_(pa.string(), pa.float64())}
    files = []
    for name in ("traces", "observations", "scores"):
        rows = [json.loads(x) for x in (DATA / f"langfuse_blob_{name}.jsonl").read_text("utf-8").splitlines()]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        columns = {}
        for k in keys:
            values = [r.get(k) for r in rows]
            if k in maps:  # object columns are Parquet maps (read back as key-value pairs)
                columns[k] = pa.array([list(v.items()) if v else [] for v in values], type=maps[k])
            elif k == "metadata":
                columns[k] = pa.array([json.dumps(v) for v in values])
            else:
                columns[k] = pa.array(values)
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table(columns), path)
        files.append(path)
    import_traces(files, tmp_path / "a.jsonl")
    import_traces([DATA / f"langfuse_blob_{n}.jsonl" for n in ("traces", "observations", "scores")],
                  tmp_path / "b.jsonl")
    assert by_id(tmp_path / "a.jsonl") == by_id(tmp_path / "b.jsonl")


@pytest.mark.parametrize("gz", [False, True])
def test_a_bad_first_line_or_a_bom_loses_no_trace(tmp_path, gz):
    """The format sniffing does not give up on the first line: it is counted with its line number and the rest
    read; a UTF-8 byte-order mark is read past and named (as the corpus and question readers name it)."""
    import gzip

    lines = (DATA / "langfuse_api.jsonl").read_bytes()
    first_bad, bom = b"hello\n" + lines, b"\xef\xbb\xbf" + lines
    for name, data in (("first_bad.jsonl", first_bad), ("bom.jsonl", bom)):
        f = tmp_path / (name + (".gz" if gz else ""))
        f.write_bytes(gzip.compress(data) if gz else data)
        res = import_traces([f], tmp_path / f"{name}.out.jsonl")
        assert (res.traces, res.imported) == (5, 4), name
        if name == "bom.jsonl":
            assert res.unreadable == {"bom": 1} and res.unreadable_examples["bom"] == [f"{f}:1"]
            from rich.console import Console

            from ragexam.report.console_traces import print_import

            console = Console(record=True, width=200)
            print_import(res, console)
            text = console.export_text()  # a note on the file, not a record that was not used
            assert "note: 1 file: files that start with a UTF-8 byte-order mark" in text
            assert "records not used" not in text
        else:
            assert res.unreadable == {"unreadable_json": 1} and res.unreadable_examples["unreadable_json"] == [f"{f}:1"]
    # a document over many lines whose text is broken is read as lines, each counted where it is
    f = tmp_path / "broken.json"
    f.write_bytes(b"[\n" + lines.splitlines()[0] + b",\n")
    res = import_traces([f], tmp_path / "broken.out.jsonl")
    assert res.imported == 0 and res.unreadable_examples["unreadable_json"] == [f"{f}:1", f"{f}:2"]
    # a pretty-printed document is still one document
    f = tmp_path / "pretty.json"
    f.write_text(json.dumps([json.loads(x) for x in lines.splitlines()], indent=2, ensure_ascii=False), "utf-8")
    assert import_traces([f], tmp_path / "pretty.out.jsonl").imported == 4


def test_a_utf16_export_is_named_with_its_fix(tmp_path):
    f = tmp_path / "u16.jsonl"
    f.write_bytes((DATA / "langfuse_api.jsonl").read_text("utf-8").encode("utf-16"))
    with pytest.raises(InputError, match=r"u16\.jsonl:1: the file is UTF-16.*iconv"):
        import_traces([f], tmp_path / "a.jsonl")


def test_broken_gzip_exports_are_named_input_errors_and_nothing_is_written(tmp_path, capsys):
    import gzip

    from ragexam.cli import main

    data = b"".join((DATA / n).read_bytes() for n in ("langfuse_api.jsonl", "phoenix_spans.jsonl", "otel_genai.jsonl"))
    truncated = tmp_path / "t.jsonl.gz"
    truncated.write_bytes(gzip.compress(data)[:3000])
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_bytes(data)
    out = tmp_path / "a.jsonl"
    for f, said in ((truncated, r"truncated gzip stream: the file ends after \d+ lines read"),
                    (plain, r"not a gzip file .*rename it without '\.gz'")):
        with pytest.raises(InputError, match=said):
            import_traces([f], out)
        with pytest.raises(SystemExit) as e:
            main(["traces", "import", str(f), "--out", str(out)])
        err = capsys.readouterr().err
        assert e.value.code == 2 and str(f) in err and "Traceback" not in err and "Aborted" not in err
        assert not out.exists() and not list(tmp_path.glob(".a.jsonl*"))


def test_a_map_override_that_finds_nothing_is_counted_per_trace(tmp_path):
    """A mistyped ``--map`` is no longer used silently: every imported trace it found nothing in says so."""
    out = tmp_path / "a.jsonl"
    res = import_traces([DATA / "langfuse_api.jsonl"], out, mapping=["question=no.such.path", "answer=zzz",
                                                                     "doc_id=nope", "retrieval=vector-search"])
    assert res.imported == 4
    # the failed request has no answer to find; only lf-trace-001 has a span named vector-search (and so documents)
    assert {k: v for k, v in res.problems.items() if k.startswith("map_")} == {
        "map_question_unmatched": 4, "map_answer_unmatched": 3, "map_doc_id_unmatched": 1,
        "map_retrieval_unmatched": 3}
    r = by_id(out)["lf-trace-001"]
    assert r.question == "호텔 와이파이에서 VPN-ERR-619가 떠요. 어떻게 하죠?"  # the default place, counted
    assert set(r.trace.problems) == {"map_question_unmatched", "map_answer_unmatched", "map_doc_id_unmatched"}
    # an override is counted only in the traces it found nothing in (lf-trace-003's documents have no ids)
    res = import_traces([DATA / "langfuse_api.jsonl"], tmp_path / "b.jsonl", mapping=["doc_id=doc_id"])
    assert {k: v for k, v in res.problems.items() if k.startswith("map_")} == {"map_doc_id_unmatched": 1}
    assert res.problem_examples["map_doc_id_unmatched"] == ["lf-trace-003"]


def test_a_map_path_is_taken_before_the_default_answer_of_another_span(tmp_path):
    rec = {"id": "t1", "timestamp": "2025-03-04T05:06:07Z", "input": "VPN이 안 돼요", "output": "root says",
           "observations": [{"id": "g1", "traceId": "t1", "type": "GENERATION", "name": "llm",
                             "startTime": "2025-03-04T05:06:07Z", "endTime": "2025-03-04T05:06:08Z",
                             "output": {"result": {"final": "the model's final answer"}}}]}
    f = tmp_path / "lf.jsonl"
    f.write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
    res = import_traces([f], tmp_path / "a.jsonl", mapping=["answer=result.final"])
    assert by_id(tmp_path / "a.jsonl")["t1"].answer == "the model's final answer"
    assert res.problems == {"no_retrieval_span": 1}  # and no map_answer_unmatched


def test_trace_fields_are_read_sensibly_or_counted_with_what_was_received(tmp_path):
    """A number of seconds, ms, µs or ns is a time by its magnitude (2000-2100: the ranges do not overlap); a
    number that is none (12345), text that is no time, a latency that is no number and tags that are no text are
    counted per trace with what was received, and the trace takes its time from its spans."""
    obs = [{"id": "g", "traceId": "?", "type": "GENERATION", "name": "llm", "startTime": "2025-03-04T05:06:07.5Z",
            "endTime": "2025-03-04T05:06:08Z", "output": "답"}]
    cases = {"ms": {"timestamp": 1741341600123, "tags": "prod"},
             "s": {"timestamp": 1741341600.5, "latency": "1.5"},
             "us": {"timestamp": "1741341600000001", "tags": ["a", {"b": 1}]},
             "tiny": {"timestamp": 12345, "latency": "slow"},
             "text": {"timestamp": "not a date", "tags": {"x": 1}}}
    f = tmp_path / "lf.jsonl"
    f.write_text("".join(json.dumps({"id": k, "input": "질문", "output": "답", **v,
                                     "observations": [dict(obs[0], traceId=k)]}) + "\n" for k, v in cases.items()),
                 encoding="utf-8")
    res = import_traces([f], tmp_path / "a.jsonl")
    recs = {k: r.trace for k, r in by_id(tmp_path / "a.jsonl").items()}
    assert recs["ms"].timestamp == "2025-03-07T10:00:00.123000Z" and recs["ms"].tags == ("prod",)
    assert recs["s"].timestamp == "2025-03-07T10:00:00.500000Z" and recs["s"].latency_ms == 1500.0
    assert recs["us"].timestamp == "2025-03-07T10:00:00.000001Z" and recs["us"].tags == ("a",)
    assert recs["tiny"].timestamp == recs["text"].timestamp == "2025-03-04T05:06:07.500000Z"  # the span's start
    assert recs["tiny"].day == "2025-03-04"  # not a 1970 segment
    assert res.problems == {"time_unreadable": 2, "tags_unreadable": 2, "latency_unreadable": 1,
                            "no_retrieval_span": 5}
    assert res.problem_examples["time_unreadable"] == ["tiny (timestamp 12345)", 'text (timestamp "not a date")']
    assert res.problem_examples["tags_unreadable"] == ['us (tags ["a", {"b": 1}])', 'text (tags {"x": 1})']
    assert res.problem_examples["latency_unreadable"] == ['tiny (latency "slow")']
    assert recs["tiny"].problems == ("no_retrieval_span", "time_unreadable", "latency_unreadable")


def test_each_record_of_a_line_is_named_once(tmp_path):
    """A line holding an array is one record per item (as a JSON document's array is), each named ``file:LINE#I``:
    the examples no longer repeat ``file:4; file:4`` for a count that seemed to exceed the lines."""
    lines = (DATA / "langfuse_api.jsonl").read_text("utf-8").splitlines(keepends=True)
    f = tmp_path / "mixed.jsonl"
    f.write_text("".join(lines[:2]) + "hello not json\n[1,2]\n{\"foo\":1}\nnull\n" + "".join(lines[2:4]), "utf-8")
    res = import_traces([f], tmp_path / "a.jsonl")
    assert res.unreadable == {"unreadable_json": 1, "unrecognized_record": 4}
    assert res.unreadable_examples["unrecognized_record"] == [f"{f}:4#1", f"{f}:4#2", f"{f}:5", f"{f}:6"]
    assert res.unreadable_examples["unreadable_json"] == [f"{f}:3"] and res.imported == 4


def test_an_import_that_read_nothing_prints_no_row_of_zeros(tmp_path):
    from rich.console import Console

    from ragexam.report.console_traces import print_import

    f = tmp_path / "junk.jsonl"
    f.write_text("hello\nworld\n", encoding="utf-8")
    res = import_traces([f], tmp_path / "out.jsonl")
    console = Console(record=True, width=200)
    print_import(res, console)
    text = console.export_text()
    assert "no record was read" in text and "0 records" not in text and "0 spans" not in text


def test_an_output_that_is_an_input_names_the_command_that_reads_it(tmp_path):
    """It said '... that FILE reads' (the synopsis' placeholder)."""
    f = tmp_path / "t.jsonl"
    f.write_bytes((DATA / "langfuse_api.jsonl").read_bytes())
    with pytest.raises(InputError, match="that `traces import` reads"):
        import_traces([f], f)
