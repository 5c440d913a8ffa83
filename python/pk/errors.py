"""The exceptions pk errors are raised as."""

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


class PkValueError(PkError, ValueError):
    """A ``pk.ops`` argument with a value, shape or parameter the op does
    not take (``PK53xx``); a ``ValueError`` too, as JAX raises for such
    arguments."""


class PkTypeError(PkError, TypeError):
    """A ``pk.ops`` argument of a dtype the op does not take, or a traced
    value where the kernel needs a constant (``PK53xx``); a ``TypeError``
    too, as JAX raises for such arguments."""
