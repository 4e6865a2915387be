"""An MCP server on the official Python SDK (the `mcp` package), for switchboard's tests.

`python py_server.py` serves stdio; `python py_server.py streamable-http PORT` and
`python py_server.py sse PORT` serve HTTP on 127.0.0.1 (paths /mcp and /sse).
"""
import sys

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
    if len(sys.argv) >= 3 and sys.argv[1] in ("streamable-http", "sse"):
        mcp.run(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("stdio")
