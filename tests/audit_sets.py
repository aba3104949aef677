"""A generated-looking question set over the bundled it_helpdesk corpus, for the audit tests.

Each question's evidence is a verbatim sentence of the corpus (so ``ragexam run`` grades it), its verification
record holds what the checks found, and every fourth question is "bad" (its key is its sentence backwards), which the
tests' person labels ``wrong_key``.  ``risky=True`` makes the checks' signals give the bad ones away (the critic's
1 of 3, a reader that declined), so the review queue can be ordered by risk.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List

from ragexam.questions.output import REVIEW_COLUMNS, _review_rows


def _sentences() -> List[tuple]:
    from ragexam.data.loaders import load_corpus

    out = []
    for d in load_corpus("it_helpdesk").documents:
        for s in re.split(r"(?<=다\.)\s+", d.content):
            s = s.strip()
            if 20 <= len(s) <= 200 and "\n" not in s:
                out.append((d.doc_id, d.title, s))
    return out


def is_bad(i: int) -> bool:
    return i % 4 == 0


def make_generated_set(folder: Path, n: int = 60, *, risky: bool = False, name: str = "qa.jsonl") -> Path:
    """Write ``name`` (``n`` questions), its card and its review sheet into ``folder``; returns the set's path."""
    folder.mkdir(parents=True, exist_ok=True)
    rows: List[Dict] = []
    for i, (doc, title, sentence) in enumerate(_sentences()[:n], 1):
        bad = is_bad(i)
        g = {"kind": "meaning", "overlap": 0.5, "anchors": [], "style": "meaning", "answer_check": {"method": "contained"},
             "critic": {"score": 1 if bad and risky else 3, "pass": True},
             "reader": {"answer": "모릅니다", "agreement": "declined"} if bad and risky else
             {"answer": sentence, "agreement": "contained"}, "review": "pending"}
        rows.append({"query_id": f"gen_{i:04d}", "question": f"{title}: 질문 {i}은 무엇인가요?",
                     "relevant_doc_ids": [doc], "evidence": [sentence],
                     "ground_truth": sentence[::-1] if bad else sentence, "type": "meaning", "answerable": True,
                     "metadata": {"generation": g}})
    qa = folder / name
    qa.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    stem = qa.name[:-len(qa.suffix)]
    card = {"format": "ragexam-questions-card/1", "n_kept": len(rows), "corpus": {"source": "it_helpdesk"}}
    (folder / f"{stem}.card.json").write_text(json.dumps(card), encoding="utf-8")
    (folder / f"{stem}.review.csv").write_text("\ufeff" + _review_rows(rows), encoding="utf-8")
    assert REVIEW_COLUMNS[0] == "query_id"
    return qa


def truth(qa: Path) -> Dict[str, bool]:
    """``{query_id: bad}`` as the tests' person reads the set."""
    rows = [json.loads(line) for line in qa.read_text(encoding="utf-8").splitlines()]
    return {r["query_id"]: is_bad(int(r["query_id"].split("_")[1])) for r in rows}
