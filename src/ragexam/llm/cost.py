"""Token estimates and cost estimates for LLM calls.

Estimate before a run (``--dry-run``)
-------------------------------------
``estimate_tokens(text) = ceil(len(text) / 3)``: one token per three characters of the whole
prompt (system + user messages).  It is a deliberately simple rule for mixed Korean/English
text, not a tokenizer: BPE tokenizers of current OpenAI models spend roughly one token per
~4 characters of English and per ~1-2 characters of Hangul, so the rule over-estimates English
and under-estimates dense Hangul; for this project's helpdesk data it is within tens of percent.
Completion tokens are estimated with a fixed allowance per task (:data:`COMPLETION_ALLOWANCE`; a judge
metric owns its own, :attr:`ragexam.metrics.judge.metric.JudgeMetric.allowance`).  After a run, the
real numbers come from the endpoint's ``usage`` fields and are reported instead.

Accounting after a run
----------------------
:class:`Usage` sums what a batch of calls spent: calls made, results read from the cache,
HTTP requests, and the tokens the endpoint reported (a reply without ``usage`` counts 0 tokens
and is counted in ``usage_missing``, so a total is never silently low).

Cost
----
:data:`PRICES` holds USD per million input / output tokens of a few OpenAI models, as listed
by OpenAI in 2025 (check the current price list before relying on it).  A price is used only
when the endpoint is the OpenAI API and the model is in the table (a dated snapshot such as
``gpt-4o-mini-2024-07-18`` counts as its family); otherwise the cost is ``"unknown"`` (local
servers, other providers).  ``--price IN,OUT`` overrides both.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union

from ragexam.errors import InputError

__all__ = ["PRICES", "PRICE_SOURCE", "COMPLETION_ALLOWANCE", "estimate_tokens", "price_for", "cost_usd",
           "parse_price", "Usage"]

#: USD per 1M (input, output) tokens.
PRICES: Dict[str, Tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}
PRICE_SOURCE = "OpenAI list prices (2025), USD per 1M tokens"

#: completion-token allowance per call of a task that is not a judge metric (those own theirs).
COMPLETION_ALLOWANCE: Dict[str, int] = {"answer": 250}

_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def estimate_tokens(text: str) -> int:
    """``ceil(len(text) / 3)`` (see the module docstring)."""
    return math.ceil(len(text) / 3)


def price_for(model: str, endpoint: str, override: Optional[Tuple[float, float]] = None
              ) -> Optional[Tuple[float, float]]:
    """USD per 1M (input, output) tokens, or ``None`` when unknown."""
    if override is not None:
        return override
    from ragexam.llm.settings import DEFAULT_BASE_URL

    if endpoint != DEFAULT_BASE_URL:
        return None
    return PRICES.get(_SNAPSHOT.sub("", model))


def cost_usd(prompt_tokens: int, completion_tokens: int, price: Optional[Tuple[float, float]]
             ) -> Union[float, str]:
    """The cost in USD, or ``"unknown"`` without a price."""
    if price is None:
        return "unknown"
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def parse_price(text: Optional[str], *, option: str = "--price") -> Optional[Tuple[float, float]]:
    """``"IN,OUT"`` (USD per 1M input and output tokens) as a pair; ``None`` stays ``None``."""
    if text is None:
        return None
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise InputError(f"received {text!r}; expected IN,OUT in USD per 1M tokens, e.g. 0.15,0.6",
                         source=option, field="price") from None
    if not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b < 0:
        raise InputError(f"received {text!r}; prices must be finite numbers >= 0", source=option, field="price")
    return (a, b)


@dataclass
class Usage:
    """What a batch of calls spent (see the module docstring).

    :ivar calls: distinct calls made in this run; :ivar cached: tasks answered from the cache
        (including ``waited``); :ivar waited: results another process was computing when this
        run needed them, read when it finished; :ivar took_over: calls another process had
        claimed that this run then made itself (that process stored no result: its call failed,
        it died, or it outlasted ``claim_wait``); :ivar requests: HTTP requests (retries
        included); :ivar prompt_tokens, completion_tokens: as reported by the endpoint;
        :ivar usage_missing: replies that reported no token usage.
    """

    calls: int = 0
    cached: int = 0
    waited: int = 0
    took_over: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_missing: int = 0

    def cost(self, price: Optional[Tuple[float, float]]) -> Union[float, str]:
        """:func:`cost_usd` of the tokens."""
        return cost_usd(self.prompt_tokens, self.completion_tokens, price)

    def to_dict(self, price: Optional[Tuple[float, float]] = None) -> Dict[str, Any]:
        return {"calls": self.calls, "cached": self.cached, "waited": self.waited, "took_over": self.took_over,
                "requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "usage_missing": self.usage_missing,
                "cost_usd": self.cost(price)}
