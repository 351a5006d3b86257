"""Reading pydantic-settings from a given mapping of environment variables (the server's `Settings` and the runner's
`RunnerConfig` both do): pydantic-settings' environment source, over that mapping rather than `os.environ`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_settings import BaseSettings, EnvSettingsSource
from pydantic_settings.sources.utils import parse_env_vars


class _Environment(EnvSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)


def environment_values(settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> dict[str, Any]:
    """The values `settings_cls`'s fields read from `environ`, keyed by the variables they name."""
    return _Environment(settings_cls, environ)()
