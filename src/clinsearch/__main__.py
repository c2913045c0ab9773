"""``python -m clinsearch`` runs the CLI."""

from clinsearch.cli import main

if __name__ == "__main__":  # not when a worker process re-imports this module
    main()
