"""Adapter settings read from a :class:`ModelConfig`: typed options and the API key.

``model.options`` is a free mapping in the shared config tree; each HTTP adapter reads it
through a pydantic model that forbids unknown keys, so ``retry_base`` instead of
``retry_base_s`` fails at start naming ``model.options.retry_base``. The API key is read
from the environment variable the config names, and only its *name* is ever shown.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.config import ModelConfig, format_validation_error
from harness.errors import ConfigError
from harness.providers.retry import RetryPolicy

__all__ = ["AdapterOptions", "ApiKey", "parse_options", "resolve_api_key"]

OptionsT = TypeVar("OptionsT", bound="AdapterOptions")


class AdapterOptions(BaseModel):
    """``model.options`` understood by every HTTP adapter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Merged into the request body (server-specific fields, e.g. vLLM's
    ``chat_template_kwargs``)."""
    extra_headers: dict[str, str] = Field(default_factory=dict)
    retry_base_s: float = Field(1.0, gt=0)
    """First backoff wait; doubles on every retry (with jitter) up to ``retry_max_s``."""
    retry_max_s: float = Field(30.0, gt=0)
    retry_after_max_s: float = Field(120.0, ge=0)
    """A rate limit asking for a longer wait than this fails at once instead of stalling."""

    def retry_policy(self, config: ModelConfig) -> RetryPolicy:
        return RetryPolicy(
            max_retries=config.max_retries,
            base_s=self.retry_base_s,
            max_s=max(self.retry_max_s, self.retry_base_s),
            retry_after_max_s=self.retry_after_max_s,
        )


def parse_options(config: ModelConfig, options_type: type[OptionsT]) -> OptionsT:
    """Validate ``model.options`` for one adapter; errors name ``model.options.KEY``."""
    try:
        return options_type.model_validate(config.options)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = "model.options." + ".".join(str(part) for part in first["loc"])
        message = format_validation_error(exc, source=f"model.options of {config.provider}")
        raise ConfigError(message, key=key, value=first.get("input")) from None


class ApiKey(BaseModel):
    """The key to send (None when the server needs none) and the variable it came from."""

    model_config = ConfigDict(frozen=True)

    value: str | None = Field(default=None, repr=False)
    env_var: str | None = None


def resolve_api_key(config: ModelConfig, *, default_env: str | None, required: bool) -> ApiKey:
    """Read the API key from ``model.api_key_env`` (or the provider's usual variable).

    A key is required for hosted providers and whenever ``model.api_key_env`` is set
    explicitly; a local OpenAI-compatible server with no ``api_key_env`` gets no key, so a
    real key is never sent to a server that did not ask for one.
    """
    env_var = config.api_key_env or default_env
    if env_var is None:
        return ApiKey()
    value = os.environ.get(env_var, "").strip()
    if value:
        return ApiKey(value=value, env_var=env_var)
    if required or config.api_key_env:
        where = f" at {config.base_url}" if config.base_url else ""
        raise ConfigError(
            f"model.api_key_env: the environment variable {env_var} is not set, and the "
            f"{config.provider} model {config.name!r}{where} needs an API key; export "
            f"{env_var}=... or set model.api_key_env to the variable that holds the key",
            key="model.api_key_env",
            value=env_var,
        )
    return ApiKey(env_var=env_var)
