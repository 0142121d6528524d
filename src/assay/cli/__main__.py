"""``python -m assay.cli``: the ``assay`` command (as the console script runs it)."""

from . import main

main()
