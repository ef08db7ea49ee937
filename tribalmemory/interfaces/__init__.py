"""Thin interfaces over tribalmemory.api: HTTP (Starlette), MCP and the CLI."""
