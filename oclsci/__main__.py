"""``python -m oclsci`` runs the command-line interface."""

from oclsci.cli import main

main()
