"""Benchmark: evidence matching and judging on a synthetic Korean-ish corpus.

Default size: 2,500 documents of ~1,600 characters, chunked ``chars:400:0`` -> ~10,000 chunks;
1,000 questions with 1-3 evidence strings each (~2 on average, quoted from a random document),
each judged on a ranked list of 10 chunks.  Everything is generated with
``numpy.random.default_rng(seed)``.

    python benchmarks/bench_evidence.py [--docs 2500] [--questions 1000] [--seed 0]

Prints the time of each stage (normalizing the corpus, chunking, locating + mapping every
evidence string to its covering chunks, the same under the overlap policy, the boundary-cut
report, and judging all rankings in evidence and doc mode), then the longest common piece of two
texts (``ragexam.data.evidence.longest_common_piece``): the text-level ``overlap>=0.5`` cover of
every question's first evidence string in its 10 ranked chunks, and one 950,000-character string
(what a pasted file in ``serve``'s evidence editor is) against a 10,000-character document.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def make_corpus(rng, n_docs: int):
    """Documents of 1-4-syllable words drawn from 600 Hangul syllables, with . , and line breaks."""
    from ragexam.data import Document

    syll = np.array([chr(c) for c in rng.choice(np.arange(0xAC00, 0xD7A4), size=600, replace=False)])
    seps = np.array([" ", " ", " ", ". ", ", ", "\n"])
    sep_p = np.array([0.30, 0.30, 0.30, 0.06, 0.03, 0.01])
    docs = []
    for d in range(n_docs):
        n_words = int(rng.integers(300, 500))
        lens = rng.integers(1, 5, size=n_words)
        chars = syll[rng.integers(0, len(syll), size=int(lens.sum()))]
        cuts = np.cumsum(lens)[:-1]
        words = ["".join(w) for w in np.split(chars, cuts)]
        glue = rng.choice(seps, size=n_words, p=sep_p)
        docs.append(Document(f"doc_{d:05d}", "".join(w + g for w, g in zip(words, glue)).strip()))
    return docs


def make_questions(rng, docs):
    from ragexam.data import Question

    qs = []
    for i in range(args.questions):
        doc = docs[int(rng.integers(len(docs)))]
        words = doc.content.split(" ")
        evidence = []
        for _ in range(int(rng.integers(1, 4))):
            a = int(rng.integers(0, len(words) - 6))
            evidence.append(" ".join(words[a:a + int(rng.integers(3, 7))]))
        qs.append(Question(f"q{i:04d}", "질문", relevant_doc_ids=(doc.doc_id,), evidence=tuple(dict.fromkeys(evidence))))
    return qs


def main() -> None:
    from ragexam.data import CorpusText, EvidenceIndex, chunk_corpus, evidence_coverage, judge_rankings

    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    docs = make_corpus(rng, args.docs)
    qs = make_questions(rng, docs)
    evidence = [e for q in qs for e in q.evidence]
    t_gen = time.perf_counter() - t0
    chars = sum(len(d.content) for d in docs)
    print(f"corpus: {len(docs)} docs, {chars:,} chars; {len(qs)} questions, {len(evidence)} evidence strings"
          f" (generated in {t_gen:.2f}s)")

    timings = {}
    t = time.perf_counter()
    chunking = chunk_corpus(docs, args.chunker)
    timings["chunk corpus (" + args.chunker + f", {len(chunking)} chunks)"] = time.perf_counter() - t

    t = time.perf_counter()
    ct = CorpusText(docs)
    timings["normalize corpus with offsets"] = time.perf_counter() - t

    t = time.perf_counter()
    index = EvidenceIndex.build(ct, chunking, evidence=evidence)
    timings["locate evidence + map to covering chunks (whole)"] = time.perf_counter() - t

    t = time.perf_counter()
    EvidenceIndex.build(ct, chunking, min_fraction=0.5, evidence=evidence)
    timings["covering chunks, overlap>=0.5 (occurrences cached)"] = time.perf_counter() - t

    t = time.perf_counter()
    rows = evidence_coverage(qs, index)
    timings["boundary-cut report"] = time.perf_counter() - t

    # rankings: 10 chunks each, a covering chunk at a random position for ~70% of questions
    all_chunks = chunking.chunks
    rankings = {}
    for q in qs:
        picks = [all_chunks[int(i)] for i in rng.integers(len(all_chunks), size=10)]
        cover = sorted(index.covering(q.evidence[0]))
        if cover and rng.random() < 0.7:
            picks[int(rng.integers(10))] = chunking[cover[0]]
        rankings[q.query_id] = picks

    t = time.perf_counter()
    ev = judge_rankings(qs, rankings, "evidence", index=index)
    timings["judge 1 ranking per question, evidence mode"] = time.perf_counter() - t
    t = time.perf_counter()
    judge_rankings(qs, rankings, "doc")
    timings["judge 1 ranking per question, doc mode"] = time.perf_counter() - t

    from ragexam.data.evidence import EvidenceMatcher, longest_common_substring

    matcher = EvidenceMatcher(min_fraction=0.5)
    t = time.perf_counter()
    covered = sum(matcher.covers(c.text, q.evidence[0]) for q in qs for c in rankings[q.query_id])
    timings[f"text-level overlap>=0.5 cover, {10 * len(qs):,} (evidence, chunk) pairs"] = time.perf_counter() - t
    document = "".join(d.content for d in docs)[:10_000]
    pasted = "".join(d.content for d in docs[::-1])[:950_000]
    t = time.perf_counter()
    longest = longest_common_substring(pasted, document)
    timings["longest common piece: 950,000 chars vs a 10,000-char document"] = time.perf_counter() - t

    width = max(map(len, timings))
    for k, v in timings.items():
        print(f"  {k:<{width}}  {v:7.3f} s")
    total = sum(v for k, v in timings.items() if not k.startswith("chunk corpus"))
    findable = sum(r.findable for r in rows)
    hits = sum(any(x.startswith("ev") for x in run) for run in ev.run.values())
    print(f"evidence matching + judging total: {total:.2f} s "
          f"({findable}/{len(rows)} evidence strings inside one chunk; {hits}/{len(ev.run)} rankings hit; "
          f"{covered} pairs covered at overlap>=0.5; longest common piece of the long pair {longest} chars)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2500)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--chunker", default="chars:400:0")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    main()
