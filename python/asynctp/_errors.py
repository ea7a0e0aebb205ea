"""The exceptions asynctp raises: one class per error kind of the library
(asynctp::ErrorCode), all under :class:`Error`. The message names the argument
and the rule it broke."""


class Error(RuntimeError):
    """Any asynctp failure. ``code`` is the library's error kind
    ("invalid_argument", "unsupported", "timeout", "mismatch", "backend",
    "internal")."""

    code = "internal"

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    """An argument broke a documented rule (this rank's own)."""

    code = "invalid_argument"


class MismatchError(Error, ValueError):
    """The ranks disagreed on a collective call, or a peer rejected its own
    arguments (the message names that rank and its rule)."""

    code = "mismatch"


class UnsupportedError(Error):
    """Valid, but this build or the requested path cannot run it."""

    code = "unsupported"


class WaitTimeoutError(Error, TimeoutError):
    """A bounded wait expired; the message says what was waited for (a peer
    rank that never came, a chunk that never arrived)."""

    code = "timeout"


_BY_CODE = {
    cls.code: cls for cls in (InvalidArgumentError, MismatchError, UnsupportedError, WaitTimeoutError)
}


def error_for(code, message):
    """The exception for a library error kind and its message."""
    cls = _BY_CODE.get(code, Error)
    return cls(message, code) if cls is Error else cls(message)
