"""Whose prices a session's bill uses by default: a Claude session is billed as Anthropic bills
it (its prompt cache, its model's prices), a Gemini session at Google's prices, any other as
the playground always did (`Pricing()`, OpenAI's cache at gpt-4o's prices).

A Claude session is one in an Anthropic format (Claude Code, Anthropic Messages) or naming a
claude-* model; a Gemini session one in a Gemini format or naming a gemini-* model. Prices are
US dollars per million tokens from LiteLLM's model_prices_and_context_window_backup.json
(litellm 1.110.2: input_cost_per_token, output_cost_per_token, cache_read_input_token_cost),
matched by the longest prefix as the windows are (counting/windows.py). Gemini's implicit
cache has no rule this playground models; its bill takes the closest, OpenAI's automatic
prefix cache, at Google's price for a cached token, and says so."""

from __future__ import annotations

from dataclasses import dataclass

from ..counting.windows import LITELLM, longest_prefix, model_key
from ..i18n import N_
from ..model import Scenario
from .pricing import Pricing

ANTHROPIC_FORMATS = frozenset({"claude-code", "anthropic-messages"})
GOOGLE_FORMATS = frozenset({"gemini-cli", "gemini-api"})


@dataclass(frozen=True)
class ModelPrices:
    prefix: str
    input: float  # US dollars per million input tokens
    output: float  # per million output tokens
    cache_read: float  # per million input tokens read from the cache


# litellm 1.110.2; an entry without a provider's own key names the key it was read from.
ANTHROPIC_PRICES = (
    ModelPrices("claude-3-haiku", 0.25, 1.25, 0.03),  # vercel_ai_gateway/anthropic/claude-3-haiku
    ModelPrices("claude-3-5-haiku", 0.80, 4.0, 0.08),  # anthropic.claude-3-5-haiku-20241022-v1:0
    ModelPrices("claude-3-5-sonnet", 3.0, 15.0, 0.30),  # anthropic.claude-3-5-sonnet-20241022-v2:0
    ModelPrices("claude-3-7-sonnet", 3.0, 15.0, 0.30),  # anthropic.claude-3-7-sonnet-20250219-v1:0
    ModelPrices("claude-3-opus", 15.0, 75.0, 1.50),  # anthropic.claude-3-opus-20240229-v1:0
    ModelPrices("claude-sonnet-4", 3.0, 15.0, 0.30),  # anthropic.claude-sonnet-4-20250514-v1:0
    ModelPrices("claude-sonnet-4-5", 3.0, 15.0, 0.30),
    ModelPrices("claude-sonnet-4-6", 3.0, 15.0, 0.30),
    ModelPrices("claude-opus-4", 15.0, 75.0, 1.50),  # anthropic.claude-opus-4-20250514-v1:0
    ModelPrices("claude-opus-4-1", 15.0, 75.0, 1.50),  # anthropic.claude-opus-4-1-20250805-v1:0
    ModelPrices("claude-opus-4-5", 5.0, 25.0, 0.50),
    ModelPrices("claude-opus-4-6", 5.0, 25.0, 0.50),
    ModelPrices("claude-opus-4-7", 5.0, 25.0, 0.50),
    ModelPrices("claude-haiku-4-5", 1.0, 5.0, 0.10),
)
GOOGLE_PRICES = (
    ModelPrices("gemini-2.5-pro", 1.25, 10.0, 0.125),
    ModelPrices("gemini-2.5-flash", 0.30, 2.50, 0.03),
    ModelPrices("gemini-2.5-flash-lite", 0.10, 0.40, 0.01),
    ModelPrices("gemini-3-pro", 2.0, 12.0, 0.20),  # vertex_ai/gemini-3-pro-preview
    ModelPrices("gemini-3-flash", 0.50, 3.0, 0.05),  # gemini-3-flash-preview
    ModelPrices("gemini-3.1-pro", 2.0, 12.0, 0.20),  # gemini-3.1-pro-preview
    ModelPrices("gemini-3.1-flash-lite", 0.25, 1.50, 0.025),
)

BILLED_AT_MODEL = {
    "anthropic": N_("Billed at Anthropic's prices for %(model)s, with its prompt cache; prices from %(source)s."),
    "google": N_(
        "Billed at Google's prices for %(model)s, from %(source)s. Gemini's implicit cache is "
        "reckoned as OpenAI's automatic prefix cache, the closest rule the playground has."
    ),
}
# The session's provider, at the playground's default prices: for a model the table has no
# prices for, and for a session that names none.
BILLED_AT_DEFAULT = {
    "anthropic": N_("Billed with Anthropic's prompt cache, at the playground's default prices: the table of prices has none for %(model)s."),
    "google": N_("Billed at the playground's default prices, with OpenAI's automatic prefix cache: the table of prices has none for %(model)s."),
    "openai": N_("Billed at gpt-4o's prices, with OpenAI's automatic prompt cache."),
}
BILLED_NO_MODEL = {
    "anthropic": N_("Billed with Anthropic's prompt cache, at the playground's default prices: the session names no model."),
    "google": N_("Billed at the playground's default prices, with OpenAI's automatic prefix cache: the session names no model."),
    "openai": BILLED_AT_DEFAULT["openai"],
}
BILLED_AS_SET = N_("Billed at the prices set for this page, not those of the session's provider.")


@dataclass(frozen=True)
class Basis:
    """The bill a session gets by default: whose prices, for which model, and what it says."""

    provider: str  # "anthropic", "google" or "openai"
    pricing: Pricing
    model: str | None  # the model whose prices these are; None: the playground's defaults
    message: str  # a catalog message
    values: dict


def provider(scenario: Scenario) -> str:
    """The provider whose bill a session gets: by its format, else the model it names."""
    origin = scenario.origin
    if origin is None:
        return "openai"
    name = model_key(origin.model) if origin.model else ""
    if origin.format in ANTHROPIC_FORMATS or name.startswith("claude"):
        return "anthropic"
    if origin.format in GOOGLE_FORMATS or name.startswith("gemini"):
        return "google"
    return "openai"


def session_basis(scenario: Scenario) -> Basis:
    """The default bill of `scenario`, computed once (a scenario never changes once read)."""
    found = scenario.derived.get(session_basis)
    if found is None:
        found = scenario.derived[session_basis] = _basis(scenario)
    return found


def _basis(scenario: Scenario) -> Basis:
    who = provider(scenario)
    model = scenario.origin.model if scenario.origin else None
    cache = "anthropic" if who == "anthropic" else "openai"
    table = {"anthropic": ANTHROPIC_PRICES, "google": GOOGLE_PRICES}.get(who, ())
    prices = longest_prefix(model, table)
    if prices is None:
        message = BILLED_AT_DEFAULT[who] if model else BILLED_NO_MODEL[who]
        return Basis(who, Pricing(cache=cache), None, message, {"model": model} if model and who != "openai" else {})
    pricing = Pricing(
        cache=cache, price=prices.input, output_price=prices.output, cached_share=round(prices.cache_read / prices.input, 4)
    )
    return Basis(who, pricing, model, BILLED_AT_MODEL[who], {"model": model, "source": LITELLM})


def bill_basis(scenario: Scenario, pricing: Pricing) -> tuple[str, dict]:
    """What a page says of the bill it shows: the session's basis, or that its prices were set."""
    basis = session_basis(scenario)
    if pricing != basis.pricing:
        return BILLED_AS_SET, {}
    return basis.message, basis.values
