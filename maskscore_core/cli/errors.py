"""How the command line reports a failure: one line on stderr and an exit code that tells the truth.

Every subcommand runs under `MaskScoreGroup`, so this is decided once: a usage error (a bad
option, an unknown name) prints one line and exits 2; any other failure prints one line and
exits 1 -- the project's own errors by their message, which says what to fix, anything else by
its type and message with a pointer to the traceback. `maskscore --debug` or `MASKSCORE_DEBUG=1`
lets the exception through, traceback and all.
"""

from __future__ import annotations

import os

import click

DEBUG_ENV = "MASKSCORE_DEBUG"
USAGE_EXIT, FAILURE_EXIT = 2, 1
DEBUG_HINT = f"rerun with --debug (or {DEBUG_ENV}=1) for the traceback"
_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())  # `maskscore` alone prints its help


def debug_from_env() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def one_line(text: str) -> str:
    """`text` with its lines joined, so a multi-line library message stays one line."""
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _ours(err: BaseException) -> bool:
    """Errors the project raises on purpose (their message says what to fix) and the system's
    file errors (which name the file)."""
    return type(err).__module__.split(".")[0].startswith("maskscore") or isinstance(err, OSError)


def describe(err: BaseException) -> str:
    message = one_line(str(err))
    if _ours(err) and message:
        return message
    return f"{type(err).__name__}: {message or '(no message)'}; {DEBUG_HINT}"


class CommandFailed(click.ClickException):
    """A failure, shown as 'Error: <one line>' with exit code 1."""

    exit_code = FAILURE_EXIT

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def _one_line_usage(err: click.UsageError, ctx: click.Context) -> click.UsageError:
    """`err` as one line (no usage block) that points to the command's --help; exit code 2."""
    where = err.ctx.command_path if err.ctx is not None else ctx.command_path
    usage = click.UsageError(f"{one_line(err.format_message())} (see '{where} --help')")
    usage.exit_code = USAGE_EXIT
    return usage


class MaskScoreGroup(click.Group):
    """The `maskscore` group: maps every failure of a subcommand to one line and its exit code."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:  # the group's own options (`maskscore --bogus`)
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            if debug_from_env() or isinstance(err, _HELP):
                raise
            raise _one_line_usage(err, ctx) from None

    def invoke(self, ctx: click.Context):
        debug = bool(ctx.params.get("debug")) or debug_from_env()
        try:
            return super().invoke(ctx)
        except click.UsageError as err:
            if debug or isinstance(err, _HELP):
                raise
            raise _one_line_usage(err, ctx) from None
        except click.ClickException as err:
            message = err.format_message()
            if debug or one_line(message) == message:
                raise
            failed = CommandFailed(message)
            failed.exit_code = err.exit_code
            raise failed from None
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as err:  # noqa: BLE001 - every failure becomes one line and exit code 1
            if debug:
                raise
            raise CommandFailed(describe(err)) from None
