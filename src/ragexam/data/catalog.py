"""The bundled question sets with their sizes (``ragexam datasets``): each set is loaded strictly and
counted.  Where the files are is :mod:`ragexam.data.datasets`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from ragexam.data.datasets import BUNDLED, bundled_path
from ragexam.data.loaders import load_corpus, load_qa

__all__ = ["DatasetInfo", "dataset_info", "list_datasets"]


@dataclass(frozen=True)
class DatasetInfo:
    """Sizes of one bundled set; ``available`` is False when its files are not installed."""

    name: str
    available: bool
    docs: int = 0
    questions: int = 0
    types: Dict[str, int] = field(default_factory=dict)
    files: Dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, object]:
        return {"name": self.name, "available": self.available, "docs": self.docs,
                "questions": self.questions, "types": dict(self.types), "files": dict(self.files)}


def dataset_info(name: str) -> DatasetInfo:
    """Load bundled set ``name`` strictly and count its documents, questions and question types."""
    files = {k: str(bundled_path(name, k)) for k in BUNDLED[name]}
    if not all(Path(f).exists() for f in files.values()):
        return DatasetInfo(name, False, files=files)
    corpus = load_corpus(files["corpus"])
    qa = load_qa(files["qa"], corpus=corpus)
    return DatasetInfo(name, True, len(corpus), len(qa), qa.type_counts(), files)


def list_datasets(names: Optional[List[str]] = None) -> List[DatasetInfo]:
    """:func:`dataset_info` for every bundled set (or the given names), in registry order."""
    return [dataset_info(n) for n in (names if names is not None else list(BUNDLED))]
