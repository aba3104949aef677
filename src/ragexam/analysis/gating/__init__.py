"""After a run or a score: the history record and the CI gate (``ragexam check``)."""
