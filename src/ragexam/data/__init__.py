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

from ragexam._lazy import lazy_exports


_LAZY = {
    "Document": "ragexam.data.schema",
    "Corpus": "ragexam.data.schema",
    "Question": "ragexam.data.schema",
    "QASet": "ragexam.data.schema",
    "Chunk": "ragexam.data.schema",
    "load_corpus": "ragexam.data.loaders",
    "load_qa": "ragexam.data.loaders",
    "validate": "ragexam.data.validation",
    "ValidationReport": "ragexam.data.validation",
    "Problem": "ragexam.data.problems",
    "list_datasets": "ragexam.data.catalog",
    "dataset_info": "ragexam.data.catalog",
    "DatasetInfo": "ragexam.data.catalog",
    "resolve": "ragexam.data.datasets",
    "BUNDLED": "ragexam.data.datasets",
    "parse_chunker": "ragexam.data.chunking",
    "chunk_corpus": "ragexam.data.chunking",
    "Chunker": "ragexam.data.chunking",
    "Chunking": "ragexam.data.chunking",
    "normalize": "ragexam.data.normalization",
    "normalize_with_offsets": "ragexam.data.normalization",
    "CorpusText": "ragexam.data.evidence",
    "EvidenceIndex": "ragexam.data.evidence",
    "EvidenceCoverage": "ragexam.data.evidence",
    "BoundaryCut": "ragexam.data.evidence",
    "evidence_coverage": "ragexam.data.evidence",
    "judge_ranking": "ragexam.data.relevance",
    "judge_rankings": "ragexam.data.relevance",
    "Judgment": "ragexam.data.relevance",
    "Judgments": "ragexam.data.relevance",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
