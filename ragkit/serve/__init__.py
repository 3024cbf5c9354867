"""``ragkit serve``: one warm process per index, over HTTP (``http.py``; FastAPI on uvicorn), and the client
side that ``ragkit query`` uses to reach it (``client.py``).

A running server writes ``server.json`` (pid, host, port) into its index folder and removes it when it stops;
``ragkit query --json`` finds it there and asks the server instead of loading the index itself, falling back
to answering in process when the server is gone or does not answer its health check within
``client.HEALTH_TIMEOUT``. The server answers with the same ``ragkit.query/1`` object the CLI prints.
"""

PORT_FILE = "server.json"
