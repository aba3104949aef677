"""Question generation: a question set from the user's own corpus, every answer key verified in the corpus.

=====================  ===================================================================================
module                 what it holds
=====================  ===================================================================================
:mod:`.engine`         :func:`generate`, :class:`GenerateConfig`, the passes, the checks' order, selection
:mod:`.prompts`        the versioned prompt files (Korean, English), the reply schema, ``<passage>`` blocks
:mod:`.replies`        the reply contract: from raw text to candidate items
:mod:`.checks`         the verification steps (pure functions) and the rejection reasons
:mod:`.measure`        overlap, anchors, type, near-duplicates, copies, language, references to the passage
:mod:`.sampling`       sections, coverage order, the mix, related sections for two-document questions
:mod:`.output`         the set, rejects, card and review sheet
:mod:`.review`         applying a reviewed sheet (``ragexam review apply``)
:mod:`.audit`          a set's audited junk rate: the sample, the labels, the sidecar, the one status reader
:mod:`.auditing`       doing an audit: drawing, labelling, undo, the audit sheet (``ragexam review audit``)
:mod:`.risk`           the review queue by predicted risk, its AUC on the audit, where to stop, what a review leaves
=====================  ===================================================================================

The package sits just above ``metrics``: it uses ``data`` (corpus, normalisation, evidence locator, Kiwi),
``retrieval`` (related sections, the out-of-corpus search), ``metrics`` (the judge's contracts, the abstention
phrases) and ``llm`` (every call), and nothing in ``analysis`` -- which may use it.  See
``docs/generate.md``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["generate", "plan", "GenerateConfig", "GenerateResult", "GeneratePlan", "apply_review", "ReviewResult",
           "audit_status", "open_audit", "label_question"]

_WHERE = {"generate": "api", "plan": "api", "GenerateConfig": "engine", "GenerateResult": "engine",
          "GeneratePlan": "engine", "apply_review": "review", "ReviewResult": "review", "audit_status": "audit",
          "open_audit": "auditing", "label_question": "auditing"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        from importlib import import_module

        return getattr(import_module(f"ragexam.questions.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ragexam.questions' has no attribute {name!r}")
