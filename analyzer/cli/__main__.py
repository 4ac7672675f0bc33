"""`python -m analyzer.cli` runs the command line, as `postmortem` does."""

from analyzer.cli import main

main()
