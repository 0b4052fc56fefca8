"""What the LLM proposers share: the refine and regenerate steps, retries with backoff, token
and cost accounting, and the spending cap.

A subclass only sends one prompt and translates its client's errors:

    LLMProposer                 refine (reviser + tuner calls), regenerate, cost, cap, retries
    ├── AnthropicProposer       the `anthropic` SDK's messages API, prompt caching
    └── OpenAICompatibleProposer  POST {base_url}/chat/completions over httpx

Errors a subclass raises from `_send`:

    TransientError              worth retrying after a pause (429, 529, 5xx, timeouts)
    ProposalError               this step failed (the model's answer, a 400)
    └── ProposerStopped         no later step can succeed either (no key, key rejected, cap)
        └── MissingAPIKeyError  also a ConfigError: the user has to set a key

Nothing here imports an SDK or httpx: `tritonsmith.search.proposers` imports without the `[llm]`
extra, and the server imports none of this at startup.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ...errors import ConfigError
from .. import prompts
from ..model import Edit, Outcome, ProposalError, ProposerStopped, StepContext, apply_edits

__all__ = [
    "LLMProposer",
    "MissingAPIKeyError",
    "Price",
    "ProposerStopped",
    "Reply",
    "TransientError",
    "Usage",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class MissingAPIKeyError(ProposerStopped, ConfigError):
    """No API key is set for a proposer that needs one."""


class TransientError(Exception):
    """A failure worth retrying after a pause (rate limit, overload, server error, timeout)."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        self.reason = reason
        self.retry_after = retry_after
        super().__init__(reason)


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float | None = None  # default 1.25 x input (Anthropic's 5-minute cache write)
    cache_read: float | None = None  # default 0.1 x input

    def cost(self, reply: Reply) -> float:
        write = self.cache_write if self.cache_write is not None else 1.25 * self.input
        read = self.cache_read if self.cache_read is not None else 0.1 * self.input
        return (
            reply.input_tokens * self.input
            + reply.output_tokens * self.output
            + reply.cache_creation_tokens * write
            + reply.cache_read_tokens * read
        ) / 1e6


@dataclass(frozen=True)
class Reply:
    """One model answer: its text, why it stopped, and the tokens it was billed for.

    `input_tokens` excludes the cached ones (Anthropic's convention; the OpenAI-compatible
    proposer subtracts `cached_tokens` from `prompt_tokens`).
    """

    text: str
    stop_reason: str | None = None  # "end_turn", "max_tokens", "refusal", "stop", "length", ...
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


@dataclass
class Usage:
    """What a proposer has used so far (one proposer per search, so: per search)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, reply: Reply, cost: float) -> None:
        self.calls += 1
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cache_read_tokens += reply.cache_read_tokens
        self.cache_creation_tokens += reply.cache_creation_tokens
        self.cost_usd += cost

    def summary(self) -> str:
        """One line for progress reports, e.g. `12 calls, 84,000 tokens in (60,000 cached), ...`."""
        read_in = self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens
        return (
            f"{self.calls} calls, {read_in:,} tokens in ({self.cache_read_tokens:,} cached), "
            f"{self.output_tokens:,} out, ${self.cost_usd:.2f}"
        )


def _all_wrong(context: StepContext) -> bool:
    return all(evaluation.outcome is not Outcome.CORRECT for _, evaluation in context.chain)


class LLMProposer:
    """The refine and regenerate steps over a model that answers one prompt at a time.

    Subclasses implement `_send` and set `name`, `_provider`, `_price` and `_secrets`.
    """

    name: str = "llm"
    _provider: str = "the model"

    def __init__(
        self,
        *,
        max_tokens: int,
        reviser_max_tokens: int = 1024,
        temperature: float | None,
        spending_cap_usd: float | None,
        max_retries: int,
        reviser: bool,
        backoff_base_s: float = 1.0,
        backoff_cap_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_tokens = max_tokens
        self.reviser_max_tokens = reviser_max_tokens
        self.temperature = temperature
        self.spending_cap_usd = spending_cap_usd
        self.max_retries = max(0, max_retries)
        self.reviser = reviser
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self._sleep = sleep
        self._usage = Usage()
        self._context: StepContext | None = None  # the last step's, for the guardian's repair
        self._lock = threading.Lock()
        self._price: Price | None = None
        self._secrets: tuple[str, ...] = ()

    # -- the Proposer protocol ------------------------------------------------------------------

    @property
    def cost_usd(self) -> float:
        """USD spent so far by this proposer (0 when the model has no known price)."""
        with self._lock:
            return self._usage.cost_usd

    @property
    def usage(self) -> Usage:
        """A copy of the token and cost totals so far."""
        with self._lock:
            return Usage(**vars(self._usage))

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        """AdaExplore's small step: a reviser call (1-3 improvements), then the tuner's edits.

        When no kernel in the chain is correct, the fixed "fix or improve" text replaces the
        reviser call; with `reviser=False` the tuner goes without advice.
        """
        if not context.chain:
            raise ProposalError("a refine step needs a kernel to refine (the chain is empty)")
        self._context = context
        advice: str | None = None
        if _all_wrong(context):
            advice = prompts.FIX_OR_IMPROVE
        elif self.reviser:
            reply = self._ask(prompts.reviser_prompt(context), "reviser", self.reviser_max_tokens)
            advice = reply.text.strip() or None
        reply = self._ask(prompts.tuner_prompt(context, advice), "tuner", self.max_tokens)
        edits = self._parse(reply, prompts.parse_edits)
        return apply_edits(context.chain[-1][0], edits), edits

    def regenerate(self, context: StepContext) -> str:
        """AdaExplore's large step: a complete new file that should beat the kernel pool."""
        self._context = context
        reply = self._ask(prompts.regenerate_prompt(context), "proposer", self.max_tokens)
        return self._parse(reply, prompts.parse_file)

    def repair(self, source: str, violations: list[str]) -> str:
        """The guardian's one chance for a candidate whose rule violations have no mechanical
        fix: the violations listed, a complete fixed file back."""
        if self._context is None:
            raise ProposalError("nothing to repair against: no step has run")
        reply = self._ask(prompts.repair_prompt(self._context, source, violations), "repair", self.max_tokens)
        return self._parse(reply, prompts.parse_file)

    def ask(self, system: str, user: str, *, purpose: str, max_tokens: int | None = None) -> str:
        """One prompt outside a search step (rule induction, matcher proposals): the answer's
        text, with the same retries, spending cap and cost accounting as the search's calls."""
        prompt = prompts.Prompt(system=(system,), user=user)
        return self._ask(prompt, purpose, max_tokens or self.max_tokens).text

    # -- what subclasses implement ---------------------------------------------------------------

    def _send(self, prompt: prompts.Prompt, max_tokens: int) -> Reply:
        """Send one prompt; raise TransientError, ProposalError or ProposerStopped."""
        raise NotImplementedError

    # -- shared machinery ------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        """`text` without any secret this proposer holds (keys never reach messages or logs)."""
        for secret in self._secrets:
            if secret:
                text = text.replace(secret, "[redacted]")
        return text

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter: attempt 0 waits 0.5-1 x base, attempt 1 1-2 x, ..."""
        if retry_after is not None and retry_after > 0:
            return min(retry_after, self.backoff_cap_s)
        ceiling = min(self.backoff_cap_s, self.backoff_base_s * 2.0**attempt)
        return random.uniform(ceiling / 2, ceiling)

    def _check_cap(self) -> None:
        if self.spending_cap_usd is None:
            return
        spent = self.cost_usd
        if spent >= self.spending_cap_usd:
            raise ProposerStopped(
                f"spending cap of ${self.spending_cap_usd:.2f} reached (${spent:.2f} spent)"
            )

    def _ask(self, prompt: prompts.Prompt, purpose: str, max_tokens: int) -> Reply:
        """One call with retries; the spending cap is checked before each call is sent."""
        self._check_cap()
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                reply = self._send(prompt, max_tokens)
            except TransientError as exc:
                reason = self._scrub(exc.reason)
                if attempt + 1 >= attempts:
                    raise ProposalError(
                        f"{self._provider} ({purpose} call): {reason}; gave up after "
                        f"{attempts} attempt{'s' if attempts != 1 else ''}"
                    ) from None
                delay = self._delay(attempt, exc.retry_after)
                log.warning(
                    "%s (%s call): %s; retry %d of %d in %.1f s",
                    self._provider, purpose, reason, attempt + 1, self.max_retries, delay,
                )
                self._sleep(delay)
                continue
            except ProposalError as exc:
                raise type(exc)(self._scrub(str(exc))) from None
            self._account(reply)
            if reply.stop_reason == "refusal":
                raise ProposalError(f"{self._provider} refused the {purpose} request")
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _account(self, reply: Reply) -> None:
        cost = self._price.cost(reply) if self._price is not None else 0.0
        with self._lock:
            self._usage.add(reply, cost)
            total = self._usage.cost_usd
        log.info("%s: %s", self.name, f"${total:.4f} spent after this call")

    def _parse(self, reply: Reply, parser: Callable[[str], T]) -> T:
        try:
            return parser(reply.text)
        except ProposalError as exc:
            if reply.stop_reason in ("max_tokens", "length"):
                raise ProposalError(
                    f"the answer was cut off at max_tokens ({self.max_tokens}): {exc}"
                ) from None
            raise


def secrets_of(*values: str | None) -> tuple[str, ...]:
    """The non-empty values among `values`, for `LLMProposer._secrets`."""
    return tuple(value for value in values if value)

