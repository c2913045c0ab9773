"""The base of every JSON request body: text that is no Unicode (a lone surrogate from a
``"\\ud800"`` escape) is refused with 422 naming the field, before any route stores it in the
workbench or writes it to the audit chain (neither can encode it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, model_validator

from clinsearch.text_checks import surrogate_in


class RequestBody(BaseModel):
    """A request body whose every string (keys too, at any depth) is Unicode text."""

    @model_validator(mode="before")
    @classmethod
    def _unicode_text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if surrogate_in(key) or surrogate_in(value):
                    raise ValueError(f"field {key!r} is not UTF-8 text (a \\ud800-style"
                                     " escape that is no character)")
        return data
