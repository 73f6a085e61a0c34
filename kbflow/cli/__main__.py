"""``python -m kbflow.cli``: the ``kbflow`` command."""

from kbflow.cli import main

main()
