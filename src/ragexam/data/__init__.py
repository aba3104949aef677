"""ragexam.data: question sets (schema, loaders, validation), chunking, evidence matching, judging.

Importing this package is cheap: the names below load their modules on first use (kiwipiepy is
only imported by the ``sentences`` chunker, numpy only when offsets are computed).

- ``load_corpus``, ``load_qa``: strict loaders (JSONL; CSV for the corpus; bundled names)
- ``validate``: every problem of a corpus + QA set, as a ``ValidationReport``
- ``list_datasets``, ``dataset_info``, ``resolve``: the bundled sets ``it_helpdesk``, ``ai_concepts``
- ``parse_chunker``, ``chunk_corpus``: chunkers ``whole``, ``chars:SIZE:OVERLAP``,
  ``sentences[:SIZE]``, ``paragraphs[:SIZE]``
- ``normalize``: the one text normalization used for evidence matching
- ``CorpusText``, ``EvidenceIndex``, ``evidence_coverage``: where evidence occurs, which chunks
  cover it, which chunk boundaries cut it
- ``judge_ranking``, ``judge_rankings``: ranked chunks -> ``qrels``/``run`` (doc or evidence mode)
"""

from __future__ import annotations

from ragexam._lazy import by_module, lazy_exports

_LAZY = by_module({
    ".schema": "Document Corpus Question QASet Chunk",
    ".loaders": "load_corpus load_qa",
    ".validation": "validate ValidationReport",
    ".problems": "Problem",
    ".catalog": "list_datasets dataset_info DatasetInfo",
    ".datasets": "resolve BUNDLED",
    ".chunking": "parse_chunker chunk_corpus Chunker Chunking",
    ".normalization": "normalize normalize_with_offsets",
    ".evidence": "CorpusText EvidenceIndex EvidenceCoverage BoundaryCut evidence_coverage",
    ".relevance": "judge_ranking judge_rankings Judgment Judgments",
})

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
