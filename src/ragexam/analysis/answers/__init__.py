"""Answers: the answers file, answering with a model (``ragexam answer``), scoring them (``ragexam score``: text
metrics, the judge, stage attribution) and pairwise judging."""
