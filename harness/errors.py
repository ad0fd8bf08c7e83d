"""Exceptions that the CLI turns into one-line messages instead of tracebacks."""


class HarnessError(Exception):
    """Base class of errors that carry a message meant for the user."""

    exit_code = 1


class UserInputError(HarnessError):
    """Bad input: unknown name, bad override, malformed case string. Exit code 2."""

    exit_code = 2


class UnavailableError(HarnessError):
    """The requested vendor/framework cannot run on this machine. Exit code 2."""

    exit_code = 2


def first_validation_error(exc) -> tuple[str, str, object]:
    """(dotted location, message, offending input) of a pydantic ValidationError's first error,
    for the one-line messages bad input gets."""
    first = exc.errors()[0]
    return ".".join(str(part) for part in first["loc"]), first["msg"], first.get("input")


def did_you_mean(name: str, choices) -> str:
    """A short 'valid choices are ...' suffix for error messages."""
    import difflib

    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(choices[:40]) + (" ..." if len(choices) > 40 else "")
    return f"Valid choices: {shown}.{hint}"


class StorageError(HarnessError):
    """A result (or part of it) could not be written: a full disk, a read-only folder.
    Exit code 1. ``report`` is what was recorded where there was room, if anything."""

    exit_code = 1

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report
