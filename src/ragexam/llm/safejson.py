"""Moved to :mod:`ragexam.storage.safejson` (the lowest layer, so the readers of ragexam's own files use it too);
this name stays for the modules that import it from here."""

from ragexam.storage.safejson import (MAX_DEPTH, SURROGATE_HELP, TooDeep, check_depth, decode,  # noqa: F401
                                      describe_error, loads, may_hold_surrogates, raw_decode, unencodable)

__all__ = ["MAX_DEPTH", "TooDeep", "loads", "decode", "raw_decode", "check_depth", "unencodable",
           "may_hold_surrogates", "SURROGATE_HELP", "describe_error"]
