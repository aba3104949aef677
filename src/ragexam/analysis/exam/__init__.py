"""The exam: a retrieval run (``ragexam run`` / ``grade``), its stages, settings and tables, and run-vs-run
comparison (``ragexam compare``)."""
