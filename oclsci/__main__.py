"""``python -m oclsci`` runs the command-line interface."""

from .cli import main

main()
