"""`python -m killtest`: the command line by another name."""

from killtest.harness.cli import main

main()
