"""`python -m redundax.cli`: the `redundax` command."""

from . import main

raise SystemExit(main())
