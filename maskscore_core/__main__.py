"""`python -m maskscore_core` is the `maskscore` command."""

from maskscore_core.cli import main

main()
