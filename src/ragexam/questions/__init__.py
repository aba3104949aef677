"""Question generation: a question set from the user's own corpus, every answer key verified in the corpus.

The public entry is :func:`ragexam.generate` (and :func:`ragexam.generate_plan`, the dry run); this package holds
the stages it composes.

=====================  ===================================================================================
module                 what it holds
=====================  ===================================================================================
:mod:`.config`         :class:`GenerateConfig`, the defaults, the checks that can be switched off, ``resolve``
:mod:`.setup`          the *prepare* stage: :class:`~.setup.Setup`, what every stage reads
:mod:`.stages`         the stages composed: sample → ask → parse → verify → llm-check → select → write
:mod:`.products`       the typed products between the stages (task, reply, candidate, ledger, result, plan)
:mod:`.tasks`          *sample*: which calls a pass makes (sections, focus sentences, messages, cache keys)
:mod:`.calls`          *ask*: the generation calls within the spending limits, the dry run's estimate
:mod:`.verify`         *parse* and *verify*: candidates from replies, the deterministic checks in order
:mod:`.llm_checks`     *llm-check*: the critic, the reader, the answer checks through the judge
:mod:`.prompts`        the versioned prompt files (Korean, English), the reply schema, ``<passage>`` blocks
:mod:`.replies`        the reply contract: from raw text to candidate items
:mod:`.checks`         the verification steps (pure functions) and the rejection reasons
:mod:`.measure`        overlap, anchors, type, near-duplicates, copies, language, references to the passage
:mod:`.sampling`       sections, coverage order, the mix, related sections for two-document questions
:mod:`.output`         *write*: the set, rejects, card and review sheet
:mod:`.review`         applying a reviewed sheet (``ragexam review apply``)
:mod:`.locate`         evidence located from a question's answer key (``ragexam locate-evidence``)
:mod:`.locate_set`     a located set: every question's outcome, its card and review sheet
:mod:`.locate_llm`     a model's confirmation of a located span
:mod:`.locate_review`  the review of a located set (its sheet's columns, ``review apply`` on it)
:mod:`.traces_sample`  production traffic sampled into exam candidates (``ragexam traces sample``)
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

from ragexam._lazy import lazy_exports

_LAZY = {"GenerateConfig": ".config", "GenerateResult": ".output", "GeneratePlan": ".products",
         "apply_review": ".review", "ReviewResult": ".review", "audit_status": ".audit", "open_audit": ".auditing",
         "label_question": ".auditing"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
__all__ = sorted(_LAZY)
