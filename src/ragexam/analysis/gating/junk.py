"""``ragexam check --max-junk RATE``: a gate on a question set's audited junk rate.

The gate passes when the **95 % upper bound** of the set's junk rate is at most ``RATE`` -- the upper end of the
exact, finite-population interval of its audit (:mod:`ragexam.questions.audit`), or, for a set ``review apply``
wrote, the bound of what the review left unread (:func:`ragexam.questions.risk.pending_bound`).  A set nobody
audited, or one changed since its audit, fails: nothing is known of its junk, so nothing passes.

``--qa QA`` gates on the set file as it is now; ``RUN`` (a run folder or a recorded run) on the set the run read:
the audit of those very bytes (the run's ``qa_sha256``), or what the run recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Union

from ragexam import fmt
from ragexam.errors import InputError, number_in
from ragexam.storage.runfolder import RunData
from ragexam.storage.summary import DatasetAudit, RunSummary

__all__ = ["JunkGate", "parse_max_junk", "check_set_junk", "check_run_junk"]


@dataclass(frozen=True)
class JunkGate:
    """One junk gate: the ``audit`` of the set named ``where`` against ``max_junk``."""

    where: str
    max_junk: float
    audit: DatasetAudit
    passed: bool
    #: the set file to audit, as the fix names it (``QA`` when it is not known)
    qa: str = "QA"

    def line(self) -> str:
        """``PASS junk <= 10%: 95% upper bound 9% (junk 3% [0–9%], 60 of 200 audited) [qa.jsonl]``."""
        head = f"{'PASS' if self.passed else 'FAIL'} junk <= {fmt.percent(self.max_junk)}"
        a = self.audit
        if a.junk_high is None:
            qa = _shell(self.qa)
            fix = (f"audit the set again: `ragexam review audit {qa}`" if a.state == "stale" else
                   f"audit it: `ragexam review audit {qa}` (or the audit page of `ragexam serve --review {qa}`)")
            return f"{head}: {a.text}, so nothing is known of its junk; {fix} [{self.where}]"
        line = f"{head}: 95% upper bound {fmt.percent(a.junk_high)} ({a.text}) [{self.where}]"
        return line if self.passed else f"{line}; {self.fix()}"

    def fix(self) -> str:
        """What lowers a bound above ``max_junk``, naming the set's file: a set ``review apply`` wrote, more of its
        pending questions read; an audited one, its bad questions repaired or rejected and more of it audited."""
        qa = _shell(self.qa)
        if self.audit.state == "reviewed":
            return (f"Fix: read more of the questions the review of {qa} left pending (in the sheet of the set it "
                    "was applied from), then `ragexam review apply` again, or audit it: "
                    f"`ragexam review audit {qa}`")
        bad = (f"repair or reject the {fmt.plural(self.audit.n_bad, 'question')} the audit labelled bad "
               f"(`ragexam review apply --qa {qa} --out FIXED.jsonl`, then gate FIXED.jsonl), and "
               if self.audit.n_bad else "")
        return f"Fix: {bad}audit more of its questions to narrow the bound: `ragexam review audit {qa}`"

def parse_max_junk(value: float) -> float:
    """``--max-junk`` checked: a share from 0 to 1."""
    return number_in(value, 0.0, 1.0, source="check", field="--max-junk", what="a share of questions",
                     fix="0.1 for 10%.")


def _shell(path: str) -> str:
    """``path`` as a word of a command line (quoted when it needs to be; ``QA`` as it is)."""
    import shlex

    return path if path == "QA" else shlex.quote(path)


def _gate(where: str, max_junk: float, audit: DatasetAudit, qa: str = "QA") -> JunkGate:
    return JunkGate(where, max_junk, audit, audit.junk_high is not None and audit.junk_high <= max_junk + 1e-12, qa)


def check_set_junk(qa: Union[str, Path], max_junk: float) -> JunkGate:
    """The gate on the set file ``qa`` as it is now."""
    from ragexam.questions.audit import audit_status

    path = Path(qa)
    if not path.is_file():
        raise InputError("no such file; expected a question set (JSONL)", source=str(qa), field="--qa")
    return _gate(str(qa), parse_max_junk(max_junk), DatasetAudit.from_dict(audit_status(path).to_dict()), str(qa))


def check_run_junk(run: RunData, max_junk: float) -> JunkGate:
    """The gate on the set a run read (its dataset card's audit)."""
    from ragexam.questions.audit import dataset_audit

    summary = run.summary
    if not isinstance(summary, RunSummary):
        raise InputError("a score does not record the hash of the set it scored; gate on the set itself: "
                         "`ragexam check --qa QA --max-junk RATE`", source=run.source, field="--max-junk")
    ds = summary.dataset
    audit = dataset_audit(ds.qa, ds.qa_sha256, ds.audit) or DatasetAudit(
        text=f"not audited (no audit of {ds.qa} is known: it is not a set file beside which an audit is kept)")
    return _gate(f"{ds.qa} of {run.source}", parse_max_junk(max_junk), audit,
                 str(ds.qa) if ds.qa and Path(ds.qa).is_file() else "QA")  # a bundled set's name is no file
