"""Prefect flows: thin orchestration over `pipeline` (docs/design-notes.md, "Orchestration")."""
