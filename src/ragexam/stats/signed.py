"""What every statistic's result shares: its fields and the ``signature`` of how it was measured, as one plain dict."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Dict

from ragexam.signature import Signature

__all__ = ["Signed"]


class Signed:
    """A frozen dataclass of a statistic's result with a ``signature`` property (the settings that produced it)."""

    #: the settings that produced the result (each result defines it, as a property)
    signature: Signature

    def to_dict(self) -> Dict[str, Any]:
        """Plain JSON-ready dict of the fields (tuples as lists) plus ``signature``."""
        fields = asdict(self)  # type: ignore[call-overload]
        d: Dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
        d["signature"] = self.signature
        return d
