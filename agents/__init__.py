"""Agent tools: the MCP server (``python manage.py mcp``) over the same functions the API's views call."""
