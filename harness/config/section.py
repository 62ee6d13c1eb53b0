"""The base of every config section: unknown keys are refused and assignments validated.

Every section of the model tree (:mod:`harness.config.schema`, and the sections it keeps in
:mod:`harness.config.context_section` and :mod:`harness.config.mcp_section`) derives from
:class:`Section`, so a typo fails at start with the dotted key path instead of being
silently ignored, and a value set after loading is checked like one read from YAML.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Section"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
