"""Orchestration, by capability (imports go down this list; ``tests/test_import_layers.py``):

* :mod:`.judging`: how far a judge can be trusted (agreement, ``judge-check``);
* :mod:`.answers`: the answers file, answering with a model, scoring answers, stage attribution, pairwise;
* :mod:`.exam`: a retrieval run, its stages, settings and tables, run-vs-run comparison;
* :mod:`.gating`: the history record and the CI gate.

Question sets are made in :mod:`ragexam.questions` (generation, review), the layer below.
"""
