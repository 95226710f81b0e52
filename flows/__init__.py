"""Prefect flows: thin orchestration over `pipeline` (DESIGN.md, "Orchestration")."""
