"""The agent tools over MCP."""
