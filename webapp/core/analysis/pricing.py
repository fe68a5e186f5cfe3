"""How the bill is computed: the price of input, cached, cache-written and output tokens.

The defaults are the ones every page, the command line and the JSON twins share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .cache import CACHE_MODELS, CacheModel
from ..settings import SettingsError, invalid


class Pricing(BaseModel):
    """How the bill is computed. Defaults: gpt-4o's launch prices for prompt caching
    (https://openai.com/index/api-prompt-caching/): $2.50 per million input tokens, $10.00 per
    million output tokens (the summarizer's replies)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cache: Literal["openai", "anthropic"] = Field("openai", description="the prompt-cache model")
    price: float = Field(2.5, ge=0, le=1000, description="US dollars per million input tokens")
    cached_share: float | None = Field(
        None, ge=0, le=1, description="price of a cached token as a share of the full price (default: the cache model's)"
    )
    output_price: float = Field(10.0, ge=0, le=1000, description="US dollars per million output tokens")

    @property
    def model(self) -> CacheModel:
        return CACHE_MODELS[self.cache]

    @property
    def share(self) -> float:
        return self.model.cached_share if self.cached_share is None else self.cached_share


PRICING_ACCEPTS = {
    "cache": "one of " + ", ".join(CACHE_MODELS),
    "price": "a number from 0 to 1000 (US dollars per million input tokens)",
    "cached_share": "a number from 0 to 1 (0.1 bills a cached token at 10%)",
    "output_price": "a number from 0 to 1000 (US dollars per million output tokens)",
}


def parse_pricing(values: dict[str, object], defaults: Pricing | None = None) -> Pricing:
    """Pricing from loose values (query strings, CLI flags); empty values take the default,
    `defaults` (a session's provider's: provider_prices.py) or `Pricing()`.
    Raises SettingsError naming each bad field, what it got and what it accepts."""
    unknown = sorted(set(values) - set(PRICING_ACCEPTS))
    if unknown:
        raise SettingsError([f"unknown pricing setting {name!r}; accepted: {', '.join(PRICING_ACCEPTS)}" for name in unknown])
    given = {name: value for name, value in values.items() if value not in (None, "")}
    try:
        return Pricing(**{**(defaults.model_dump() if defaults else {}), **given})
    except ValidationError as error:
        raise invalid(error, PRICING_ACCEPTS) from None


@dataclass(frozen=True)
class Bill:
    """Tokens by how they are billed, and their cost in US dollars."""

    uncached: int  # input tokens at the full price (includes the summarizer's input)
    cached: int  # input tokens read from the cache
    written: int  # input tokens written to the cache at the write price
    output: int  # the summarizer's output tokens
    cost: float


def bill(pricing: Pricing, sent: int, cached: int, written: int, output: int) -> Bill:
    uncached = sent - cached - written
    cost = (
        pricing.price * (uncached + cached * pricing.share + written * pricing.model.write_share)
        + pricing.output_price * output
    ) / 1_000_000
    return Bill(uncached, cached, written, output, cost)
