"""How far a judge can be trusted: agreement with itself and with people, and ``ragexam judge-check``."""
