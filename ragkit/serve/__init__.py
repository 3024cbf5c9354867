"""``ragkit serve``: one warm index per server, over HTTP and MCP, for one person or a team.

- http.py: the FastAPI app and ``serve()``; guard.py: body size, tokens, rate and in-flight limits in front of
  every route; access.py: the tokens file, the limits, the loopback rule;
- workers.py: the worker processes that answer side by side, each with its own reader; ops.py: each operation
  once (query, documents, sections, outline, stats), with a token's scoping;
- mcp_tools.py: the MCP tools, over stdio (``--mcp``) and streamable HTTP (``/mcp``); web.py: the search page
  (``GET /``, its files in web/);
- client.py: what ``ragkit query`` uses to reach a running server; models_http.py: ``ragkit models serve``.

A running server writes ``server.json`` (pid, host, port, whether it needs a token) into its index folder and
removes it when it stops; ``ragkit query --json`` finds it there and asks the server instead of loading the
index itself (a server with tokens only when ``RAGKIT_TOKEN`` is set), falling back to answering in process
when the server is gone or does not answer its health check within ``client.HEALTH_TIMEOUT``. The server
answers with the same ``ragkit.query/1`` object the CLI prints.
"""

PORT_FILE = "server.json"
TOKEN_VARIABLE = "RAGKIT_TOKEN"  # the token `ragkit query` sends to a server with tokens
EARLY = "\x00"  # a streamed piece that is a whole JSON line (the passages, sent before the answer), not answer text
