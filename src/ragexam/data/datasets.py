"""Bundled question sets, addressable by name wherever a path is accepted.

Each bundled set lives in the package data ``ragexam/data/samples/<name>/``:

- ``corpus.jsonl`` -- the documents,
- ``qa.jsonl``     -- the questions,
- ``answers.jsonl`` -- reference generated answers (``it_helpdesk`` only).

Resolution rule (:func:`resolve`): an argument that names an existing file is that file;
otherwise, if it is a bundled name, it is that set's file of the requested kind; otherwise
``InputError`` (listing the bundled names).  So ``--corpus it_helpdesk --qa it_helpdesk`` works,
and a local file that happens to be called ``it_helpdesk`` wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Union

from ragexam.errors import InputError

__all__ = ["BUNDLED", "DatasetInfo", "bundled_path", "resolve", "is_bundled", "list_datasets",
           "dataset_info"]

#: name -> the kinds of file it ships
BUNDLED: Dict[str, tuple] = {
    "it_helpdesk": ("corpus", "qa", "answers"),
    "ai_concepts": ("corpus", "qa"),
}

PathLike = Union[str, Path]


def _samples_dir():
    from importlib.resources import files

    return files("ragexam.data").joinpath("samples")


def is_bundled(name: object) -> bool:
    """True when ``name`` is the name of a bundled set."""
    return isinstance(name, str) and name in BUNDLED


def bundled_path(name: str, kind: str) -> Path:
    """The package-data path of bundled set ``name``'s ``kind`` file (it may not exist yet)."""
    if name not in BUNDLED:
        raise InputError(f"unknown bundled dataset {name!r}; expected one of {', '.join(BUNDLED)}",
                         source="dataset")
    if kind not in BUNDLED[name]:
        raise InputError(f"bundled dataset {name!r} has no {kind} file; it ships "
                         f"{', '.join(BUNDLED[name])}", source="dataset")
    return Path(str(_samples_dir().joinpath(name, f"{kind}.jsonl")))


def resolve(path_or_name: PathLike, kind: str) -> Path:
    """The file for ``path_or_name`` (a path, or a bundled name) of ``kind`` (corpus, qa, answers)."""
    p = Path(path_or_name)
    if p.exists():
        return p
    if is_bundled(str(path_or_name)):
        bp = bundled_path(str(path_or_name), kind)
        if not bp.exists():
            raise InputError(f"the bundled dataset {str(path_or_name)!r} is not installed: {bp} is "
                             "missing; reinstall ragexam", source=str(path_or_name))
        return bp
    raise InputError(f"no such file; expected a path to a {kind} file or a bundled dataset name "
                     f"({', '.join(BUNDLED)})", source=str(path_or_name))


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
    from ragexam.data.loaders import load_corpus, load_qa

    files = {k: str(bundled_path(name, k)) for k in BUNDLED[name]}
    if not all(Path(f).exists() for f in files.values()):
        return DatasetInfo(name, False, files=files)
    corpus = load_corpus(files["corpus"])
    qa = load_qa(files["qa"], corpus=corpus)
    return DatasetInfo(name, True, len(corpus), len(qa), qa.type_counts(), files)


def list_datasets(names: Optional[List[str]] = None) -> List[DatasetInfo]:
    """:func:`dataset_info` for every bundled set (or the given names), in registry order."""
    return [dataset_info(n) for n in (names if names is not None else list(BUNDLED))]
