"""The OpenAI-compatible proposer: the same prompts and steps as the Anthropic one, sent to any
server that speaks the chat-completions API (vLLM, Ollama, llama.cpp, hosted gateways).

One request is `POST {base_url}/chat/completions` over plain httpx, with the stable system
blocks joined into one system message (servers with automatic prefix caching, such as vLLM's,
reuse it). Cost is 0 unless a price is given. httpx is imported when a proposer is made.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import prompts
from ..model import ProposalError
from ._llm import LLMProposer, Price, ProposerStopped, Reply, TransientError

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAICompatibleProposer"]

_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _error_detail(response: httpx.Response) -> str:
    """The server's error message (`{"error": {"message": ...}}` or `{"error": "..."}`)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    if isinstance(body, dict) and body.get("detail"):
        return str(body["detail"])
    return response.reason_phrase


class OpenAICompatibleProposer(LLMProposer):
    """Proposes kernels with a model behind an OpenAI-compatible endpoint.

    Args:
        base_url: the API root, e.g. `http://localhost:8000/v1` (vLLM) or
            `http://localhost:11434/v1` (Ollama).
        model: the model name the server knows.
        api_key: sent as a bearer token; default `OPENAI_API_KEY` from the environment; local
            servers usually need none.
        max_tokens: the most output tokens a tuner or proposer answer may use.
        reviser_max_tokens: the most output tokens of the reviser's short answer.
        temperature: sampling temperature; None leaves the server's default.
        spending_cap_usd: no request is sent once this much has been spent (None: no cap).
        price: USD per million tokens; None counts every call as free.
        timeout_s: the wall-clock limit of one request.
        max_retries: retries after a rate limit, server error, timeout or refused connection.
        reviser: make the reviser call before the tuner's in a refine step.
        backoff_base_s: the first retry waits 0.5-1 x this; each later one twice as long.
        backoff_cap_s: no pause is longer than this.
        sleep: how to pause between retries (tests pass a recorder).
        client: an `httpx.Client` to send with (tests pass one with a `MockTransport`).
    """

    _provider = "the model server"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        max_tokens: int = 16_384,
        reviser_max_tokens: int = 1024,
        temperature: float | None = None,
        spending_cap_usd: float | None = None,
        price: Price | None = None,
        timeout_s: float = 600.0,
        max_retries: int = 4,
        reviser: bool = True,
        backoff_base_s: float = 2.0,
        backoff_cap_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        client: httpx.Client | None = None,
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
        import httpx

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai:{model}"
        self._provider = f"the model server at {self.base_url}"
        self.timeout_s = timeout_s
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        self._secrets = (key,) if key else ()
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._price = price
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client()

    def close(self) -> None:
        """Close the HTTP client if this proposer made it."""
        if self._owns_client:
            self._client.close()

    def _body(self, prompt: prompts.Prompt, max_tokens: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": prompt.system_text},
                {"role": "user", "content": prompt.user},
            ],
            "max_tokens": max_tokens,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def _send(self, prompt: prompts.Prompt, max_tokens: int) -> Reply:
        import httpx

        url = f"{self.base_url}/chat/completions"
        try:
            response = self._client.post(
                url, json=self._body(prompt, max_tokens), headers=self._headers,
                timeout=self.timeout_s,
            )
        except httpx.TimeoutException:
            raise TransientError(f"no answer within {self.timeout_s:g} s") from None
        except httpx.TransportError as exc:
            raise TransientError(f"could not reach {url} ({type(exc).__name__})") from None
        status = response.status_code
        if status >= 400:
            detail = _error_detail(response)
            retry_after = _retry_after(response.headers)
            if status == 429:
                raise TransientError(f"rate limited (429): {detail}", retry_after)
            if status >= 500 or status in (408, 409):
                raise TransientError(f"server error ({status}): {detail}", retry_after)
            if status in (401, 403):
                raise ProposerStopped(f"the server rejected the API key ({status}: {detail})")
            if status == 404:
                raise ProposerStopped(
                    f"{url} answered 404 ({detail}): check the base URL (it usually ends in /v1) "
                    f"and the model name {self.model!r}"
                )
            raise ProposalError(f"the model server answered {status}: {detail}")
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ProposalError("the model server's answer is not a chat completion") from None
        finish = choice.get("finish_reason")
        if message.get("refusal") or finish == "content_filter":
            finish = "refusal"
        text = _THINKING.sub("", message.get("content") or "")
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        return Reply(
            text=text,
            stop_reason=finish,
            input_tokens=max(0, prompt_tokens - cached),
            output_tokens=int(usage.get("completion_tokens") or 0),
            cache_read_tokens=cached,
        )
