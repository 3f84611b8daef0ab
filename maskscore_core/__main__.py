"""`python -m maskscore_core` is the `maskscore` command."""

from .cli import main

main()
