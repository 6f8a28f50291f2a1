"""``python -m agentab`` runs the command-line interface."""

from agentab.cli._main import main

raise SystemExit(main())
