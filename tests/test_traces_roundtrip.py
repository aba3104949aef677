"""The import's round trip (issue 38, item 1): the bundled it_helpdesk answers, with contexts and every trace field,
written as each vendor's export (:mod:`ragexam.data.traces.writers`) and imported back identically.

What a format cannot carry is mapped, not dropped silently: OTLP and Phoenix trace ids are 32 hex digits (the
query id becomes ``hex_trace_id(query_id)``); OTLP evaluation events carry no source (read back as
``evaluation``).  User and session ids come back hashed.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ragexam.analysis.answers.files import AnswerRecord, load_answers
from ragexam.analysis.answers.traces import import_traces
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.traces import writers
from ragexam.data.traces.mapping import MappedTrace
from ragexam.data.traces.meta import Feedback, RetrievedDoc, TraceMeta, hash_id

FORMATS = ("langfuse", "langfuse-blob", "phoenix", "phoenix-parquet", "otel")


def bundled_traces():
    """The bundled answers as mapped traces: two or three documents as contexts (the relevant ones first), ranks
    and scores, and a timestamp, latency, model, tokens, user, session, tags and feedback each."""
    qa = {q.query_id: q for q in load_qa("it_helpdesk").questions}
    docs = {d.doc_id: d.content for d in load_corpus("it_helpdesk").documents}
    ids = sorted(docs)
    out = []
    for i, a in enumerate(load_answers("it_helpdesk")):
        q = qa[a.query_id]
        chosen = list(dict.fromkeys(list(q.relevant_doc_ids) + [ids[i % len(ids)], ids[(i * 7) % len(ids)]]))[:3]
        note = a.metadata.get("note", "")
        fb = (Feedback("thumbs", 1.0 if note == "correct" else 0.0, "up" if note == "correct" else "thumbs_down",
                       "HUMAN", f"note: {note}"),) if i % 3 else ()
        meta = TraceMeta("langfuse", a.query_id, f"2025-03-{1 + i % 28:02d}T0{i % 10}:{i % 60:02d}:07.{i:06d}Z",
                         round(1000.0 + i * 12.345, 3), "gpt-4o-mini" if i % 2 else "qwen2.5-7b", 300 + i, 40 + i,
                         340 + 2 * i,
                         f"user{i % 9}@daon.example", f"session-{i // 4}" if i % 5 else None,
                         ("prod", f"v{i % 3}") if i % 4 else (), fb,
                         tuple(RetrievedDoc(d, r, round(1.0 / r, 4)) for r, d in enumerate(chosen, 1)),
                         (("retrieval", "retrieve"), ("generation", "generate")))
        out.append(MappedTrace(a.query_id, q.question, a.answer, None, tuple(docs[d] for d in chosen), tuple(chosen),
                               meta))
    return out


def write_export(fmt, traces, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / ("export.parquet" if fmt == "phoenix-parquet" else "export.jsonl")
    if fmt == "phoenix-parquet":
        rows = [s for m in traces for s in writers.phoenix_spans(m, flat=True) if "span_kind" in s]
        notes = [s for m in traces for s in writers.phoenix_spans(m) if "span_kind" not in s]
        keys = list(dict.fromkeys(k for r in rows for k in r))  # from_pylist takes the columns of the first row only
        pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows]), path)
        (tmp_path / "annotations.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in notes),
                                                    encoding="utf-8")
        return [path, tmp_path / "annotations.jsonl"]
    with open(path, "w", encoding="utf-8") as fh:
        if fmt == "otel":  # the collector's file exporter: one request per batch of spans
            for i in range(0, len(traces), 20):
                fh.write(json.dumps(writers.otlp_request(traces[i:i + 20]), ensure_ascii=False) + "\n")
        else:
            for m in traces:
                for rec in (writers.langfuse_records(m, style="blob" if fmt == "langfuse-blob" else "api")
                            if fmt.startswith("langfuse") else writers.phoenix_spans(m)):
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return [path]


def expected(fmt, m: MappedTrace) -> AnswerRecord:
    source = fmt.split("-")[0]
    qid = m.query_id if source == "langfuse" else writers.hex_trace_id(m.query_id)
    meta = replace(m.meta, source=source, trace_id=qid, user=hash_id(m.meta.user) if m.meta.user else None,
                   session=hash_id(m.meta.session) if m.meta.session else None)
    if source == "otel":
        meta = replace(meta, feedback=tuple(replace(f, source="evaluation") for f in meta.feedback))
    return AnswerRecord(qid, m.answer, None, m.contexts, m.context_ids, None, None, None, {}, None, m.question, meta)


@pytest.mark.parametrize("fmt", FORMATS)
def test_bundled_answers_round_trip_identically(fmt, tmp_path):
    traces = bundled_traces()
    files = write_export(fmt, traces, tmp_path)
    out = tmp_path / "answers.jsonl"
    res = import_traces(files, out)
    assert (res.imported, res.skipped, res.problems, res.unreadable) == (71, {}, {}, {})
    got = load_answers(out)
    assert got == [expected(fmt, m) for m in traces]
    # every field the score wing segments by survived
    assert {r.trace.model for r in got} == {"gpt-4o-mini", "qwen2.5-7b"} and len({r.trace.day for r in got}) == 28
    assert sum(r.trace.negative for r in got) == sum(1 for m in traces if any(f.value == 0 for f in m.meta.feedback))


def test_scoring_imported_traces_gives_the_numbers_of_the_file_they_came_from(tmp_path):
    from ragexam import api

    files = write_export("langfuse", bundled_traces(), tmp_path)
    import_traces(files, tmp_path / "imported.jsonl")
    got = api.score("it_helpdesk", tmp_path / "imported.jsonl", record=False).report.to_dict()
    want = api.score("it_helpdesk", "it_helpdesk", record=False).report.to_dict()
    assert want["text"] and got["text"] == want["text"] and got["text_by_type"] == want["text_by_type"]
    assert got["results"] == want["results"]
