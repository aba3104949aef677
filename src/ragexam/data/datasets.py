"""Bundled question sets, addressable by name wherever a path is accepted.

Each bundled set lives in the package data ``ragexam/data/samples/<name>/``:

- ``corpus.jsonl`` -- the documents,
- ``qa.jsonl``     -- the questions,
- ``answers.jsonl`` -- reference generated answers (``it_helpdesk`` only).

Resolution rule (:func:`resolve`): an argument that names an existing file is that file;
otherwise, if it is a bundled name, it is that set's file of the requested kind; otherwise
``InputError`` (listing the bundled names).  So ``--corpus it_helpdesk --qa it_helpdesk`` works,
and a local file that happens to be called ``it_helpdesk`` wins.  Their sizes are in
:mod:`ragexam.data.catalog` (which loads them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Union

from ragexam.errors import InputError, one_of

__all__ = ["BUNDLED", "bundled_path", "resolve", "is_bundled"]

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
    one_of(name, BUNDLED, source="dataset", what="bundled dataset")
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
