"""`python -m grammask.bench`: see `grammask.bench.cli`."""

from grammask.bench.cli import main

raise SystemExit(main())
