"""A stdio MCP server on the official Python SDK (the `mcp` package), for switchboard's tests."""
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("python-peer", instructions="A Python server used by switchboard's tests.")


@mcp.tool()
def multiply(a: float, b: float) -> float:
    """Multiplies two numbers."""
    return a * b


@mcp.tool()
def shout(text: str) -> str:
    """Upper-cases the text."""
    return text.upper()


@mcp.resource("py://greeting")
def greeting() -> str:
    """A fixed greeting."""
    return "hello from python"


@mcp.prompt()
def review(code: str) -> str:
    """Asks for a code review."""
    return f"Please review:\n{code}"


if __name__ == "__main__":
    mcp.run("stdio")
