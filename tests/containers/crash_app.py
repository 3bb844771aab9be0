"""An app module that fails at import, like a server that exits at once."""

raise SystemExit("crash_app: refusing to start (deliberate test failure)")
