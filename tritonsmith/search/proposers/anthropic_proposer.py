"""The Anthropic proposer: AdaExplore's proposer, reviser and tuner calls through the `anthropic`
SDK's messages API.

The system blocks (Triton guidance; pitfalls, demonstrations and the task) carry
`cache_control: {"type": "ephemeral"}`, so every call after the first in a search reads them from
the prompt cache. Retries are ours, not the SDK's (its `max_retries` is set to 0), so that the
pause between attempts is injectable and the spending cap is checked before every request.

The SDK is imported when a proposer is made, never when this module is imported.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import prompts
from ..model import ProposalError
from ._llm import (
    LLMProposer,
    MissingAPIKeyError,
    Price,
    ProposerStopped,
    Reply,
    TransientError,
    secrets_of,
)

if TYPE_CHECKING:
    import anthropic

__all__ = ["DEFAULT_MODEL", "PRICES", "AnthropicProposer", "price_for"]

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The model used when none is given (the `model` setting normally names one). Known to the
SDK's `anthropic.types.Model` and not in its deprecated list."""

NO_KEY_MESSAGE = (
    "no Anthropic API key: set ANTHROPIC_API_KEY (in VS Code: Tritonsmith: Set API key)"
)

PRICES: dict[str, Price] = {
    # USD per million tokens: input, output, 5-minute cache write, cache read. Keys are model
    # name prefixes; the longest prefix that matches wins. Source: Anthropic's pricing page
    # (platform.claude.com/docs/en/about-claude/pricing), read for this table in 2026.
    "claude-fable-5": Price(10.0, 50.0, 12.5, 1.0),
    "claude-fable-5-1": Price(10.0, 50.0, 12.5, 0.25),
    "claude-mythos-5": Price(10.0, 50.0, 12.5, 1.0),
    "claude-mythos-5-1": Price(10.0, 50.0, 12.5, 0.25),
    "claude-opus-5": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-5-5": Price(4.0, 20.0, 5.0, 0.2),
    "claude-opus-4": Price(15.0, 75.0, 18.75, 1.5),  # Opus 4 and 4.1
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-6": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-7": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-8": Price(5.0, 25.0, 6.25, 0.5),
    "claude-sonnet-5": Price(2.0, 10.0, 2.5, 0.2),
    "claude-sonnet-5-5": Price(2.0, 10.0, 2.5, 0.1),
    "claude-sonnet-4": Price(3.0, 15.0, 3.75, 0.3),  # Sonnet 4, 4.5, 4.6
    "claude-3-7-sonnet": Price(3.0, 15.0, 3.75, 0.3),
    "claude-haiku-5-5": Price(0.1, 0.5, 0.125, 0.01),  # prompts up to 100k tokens
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.1),
    "claude-3-5-haiku": Price(0.8, 4.0, 1.0, 0.08),
    "claude-3-haiku": Price(0.25, 1.25, 0.3, 0.03),
}
"""Prices per model family; update this dict when Anthropic changes its prices."""


def price_for(model: str) -> Price | None:
    """The price of `model`: the entry of `PRICES` whose key is its longest prefix."""
    matches = [key for key in PRICES if model == key or model.startswith(key + "-")]
    return PRICES[max(matches, key=len)] if matches else None


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return float(value) * scale
            except ValueError:
                continue
    return None


def _server_message(exc: Any) -> str:
    """The API's own error message (`{"error": {"message": ...}}`), else the exception's text."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", "") or exc)


class AnthropicProposer(LLMProposer):
    """Proposes kernels with Claude.

    Args:
        model: the model name (the `model` setting).
        api_key: the key; default `ANTHROPIC_API_KEY` from the environment. Without one the
            constructor raises `MissingAPIKeyError` (unless `client` is given).
        max_tokens: the most output tokens a tuner or proposer answer may use.
        reviser_max_tokens: the most output tokens of the reviser's short answer.
        temperature: sampling temperature; None leaves the model's default.
        spending_cap_usd: no request is sent once this much has been spent (None: no cap).
        timeout_s: the wall-clock limit of one request.
        max_retries: retries after a rate limit, overload, server error or timeout.
        reviser: make the reviser call before the tuner's in a refine step.
        price: overrides the `PRICES` entry (e.g. from a setting for a model it lacks).
        backoff_base_s: the first retry waits 0.5-1 x this; each later one twice as long.
        backoff_cap_s: no pause is longer than this.
        sleep: how to pause between retries (tests pass a recorder).
        client: an `anthropic.Anthropic` client to use instead of making one (tests pass one
            whose HTTP transport replays written responses).
    """

    _provider = "Anthropic"

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        max_tokens: int = 16_384,
        reviser_max_tokens: int = 1024,
        temperature: float | None = None,
        spending_cap_usd: float | None = 10.0,
        timeout_s: float = 600.0,
        max_retries: int = 4,
        reviser: bool = True,
        price: Price | None = None,
        backoff_base_s: float = 2.0,
        backoff_cap_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        super().__init__(
            max_tokens=max_tokens,
            reviser_max_tokens=reviser_max_tokens,
            temperature=temperature,
            spending_cap_usd=spending_cap_usd,
            max_retries=max_retries,
            reviser=reviser,
            backoff_base_s=backoff_base_s,
            backoff_cap_s=backoff_cap_s,
            sleep=sleep,
        )
        self.model = model
        self.name = f"anthropic:{model}"
        self.timeout_s = timeout_s
        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        import anthropic

        if client is None:
            if not key:
                raise MissingAPIKeyError(NO_KEY_MESSAGE)
            client = anthropic.Anthropic(api_key=key)
        self._secrets = secrets_of(key, getattr(client, "api_key", None),
                                   getattr(client, "auth_token", None))
        # Our loop retries (injectable pauses, the cap checked before each request).
        self._client = client.with_options(max_retries=0, timeout=timeout_s)
        self._price = price or price_for(model)
        if self._price is None:
            log.warning(
                "no price known for model %r: its cost counts as $0 and the spending cap "
                "cannot stop it; add it to PRICES or pass a price", model,
            )

    def _request(self, prompt: prompts.Prompt, max_tokens: int) -> dict[str, Any]:
        """The messages API arguments: cached system blocks, then the step's user message."""
        system = [
            {"type": "text", "text": block, "cache_control": {"type": "ephemeral"}}
            for block in prompt.system
            if block
        ]
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": prompt.user}],
        }
        if self.temperature is not None:
            # The 2.x SDK's `messages.create` has no `temperature` parameter; the API still takes
            # it for models that allow it, so it goes in the body.
            request["extra_body"] = {"temperature": self.temperature}
        return request

    def _send(self, prompt: prompts.Prompt, max_tokens: int) -> Reply:
        import anthropic

        try:
            message = self._client.messages.create(**self._request(prompt, max_tokens))
        except anthropic.APITimeoutError:
            raise TransientError(f"no answer within {self.timeout_s:g} s") from None
        except anthropic.APIConnectionError as exc:
            raise TransientError(f"could not reach the API ({_server_message(exc)})") from None
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            detail = _server_message(exc)
            retry_after = _retry_after(getattr(exc.response, "headers", None))
            if status == 429:
                raise TransientError(f"rate limited (429): {detail}", retry_after) from None
            if status == 529:
                raise TransientError(f"overloaded (529): {detail}", retry_after) from None
            if status >= 500 or status in (408, 409):
                raise TransientError(f"server error ({status}): {detail}", retry_after) from None
            if status in (401, 403):
                raise ProposerStopped(
                    f"Anthropic rejected the API key ({status}: {detail}); check "
                    "ANTHROPIC_API_KEY (in VS Code: Tritonsmith: Set API key)"
                ) from None
            if status == 404:
                raise ProposerStopped(f"model {self.model!r} not found (404: {detail})") from None
            raise ProposalError(f"Anthropic API error ({status}): {detail}") from None
        except anthropic.AnthropicError as exc:
            raise ProposalError(f"Anthropic client error: {exc}") from None
        text = "".join(
            getattr(block, "text", "") for block in message.content if block.type == "text"
        )
        usage = message.usage
        return Reply(
            text=text,
            stop_reason=message.stop_reason,
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_tokens=usage.cache_creation_input_tokens or 0,
        )
