"""The exception every pk error is raised as."""

from __future__ import annotations


class PkError(Exception):
    """A pk diagnostic: compile errors, package verification failures,
    argument mismatches and CPU reference failures.

    ``str(e)`` is the rendered diagnostic, as ``pkc`` prints it (code,
    message, source lines with carets, help); ``e.code`` is its stable
    code, such as ``"PK0301"`` (``pkc explain PK0301`` describes it), or
    ``None`` for the few errors without one.
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
