"""``python -m mcplab ...`` is the same as the ``mcplab`` command."""

from .cli import main

raise SystemExit(main())
