"""An MCP tool server over stdio: list, read and write the text files of the folder it runs in (the
task's sandbox). Paths that leave the folder are refused."""

from pathlib import Path

from mcp.server.mcpserver import MCPServer

ROOT = Path.cwd().resolve()
server = MCPServer("files")


def _inside(path: str) -> Path:
    target = (ROOT / path).resolve()
    if not target.is_relative_to(ROOT):
        raise ValueError(f"{path!r} is outside the workspace")
    return target


@server.tool()
def list_files() -> list[str]:
    """The files of the workspace, relative to it."""
    return sorted(
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )


@server.tool()
def read_file(path: str) -> str:
    """The text of a workspace file."""
    return _inside(path).read_text(encoding="utf-8")


@server.tool()
def write_file(path: str, content: str) -> str:
    """Replace (or create) a workspace file with `content`."""
    target = _inside(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return f"wrote {len(content)} characters to {path}"


if __name__ == "__main__":
    server.run("stdio")
