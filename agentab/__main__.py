"""``python -m agentab`` runs the command-line interface."""

from agentab.cli import main

raise SystemExit(main())
