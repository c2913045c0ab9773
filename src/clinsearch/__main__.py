"""``python -m clinsearch`` runs the CLI."""

from clinsearch.cli import main

main()
