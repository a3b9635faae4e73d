"""``python -m memlab``: the ``memlab`` command (for scripts that run it with one interpreter)."""

from memlab.cli import main

raise SystemExit(main())
