"""`python -m esbench.cli`: the esbench command without its console script (tests, images)."""

from esbench.cli.main import main

main()
