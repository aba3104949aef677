"""The docs' links and paths lead somewhere a reader has: every relative link of README.md and docs/ names a file of
the repository (and a heading of it, with ``#``), and no link or code span points outside the repository (docs/judge.md
and docs/llm.md named ``../shared/tools/local-llm``, a folder of the developers' machines that no clone has)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, code marks and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set:
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _links() -> List[Tuple[Path, str]]:
    out = []
    for doc in DOCS:
        text = FENCE.sub("", doc.read_text(encoding="utf-8"))
        out += [(doc, m.group(1)) for m in LINK.finditer(text)]
    return out


@pytest.mark.parametrize("doc, target", [(d, t) for d, t in _links() if not re.match(r"[a-z]+:", t)],
                         ids=lambda v: v if isinstance(v, str) else v.name)
def test_a_relative_link_names_a_file_and_heading_of_the_repository(doc, target):
    path, _, anchor = target.partition("#")
    file = (doc.parent / path).resolve() if path else doc
    assert file.is_relative_to(ROOT) and file.exists(), f"{doc.relative_to(ROOT)}: {target} leads nowhere"
    if anchor and file.suffix == ".md":
        assert anchor in _anchors(file), f"{doc.relative_to(ROOT)}: {target}: no such heading in {file.name}"


def test_a_path_up_from_a_doc_names_something_of_the_repository():
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for target in [m.group(1) for m in LINK.finditer(text)] + [m.group(1) for m in SPAN.finditer(text)]:
            for word in target.split():
                path = (doc.parent / word.partition("#")[0].rstrip(".,;:)")).resolve()
                if word.startswith("../") and not (path.is_relative_to(ROOT) and path.exists()):
                    out.append(f"{doc.relative_to(ROOT)}: {word}")
    assert not out, "\n".join(out)
