"""ragkit in Python: ``ragkit.open()`` gives an ``Index``, and its methods do what the commands do.

    import ragkit

    ragkit.index(["docs/"], "handbook")            # like `ragkit index docs/ --index handbook`
    with ragkit.open("handbook") as ix:             # a name, a folder or an s3:// URI
        result = ix.query("How much overtime may I work?", k=5, log=True)
        for p in result.passages:
            print(p.rank, p.path, p.section, p.location)
        print(ix.answer("How much overtime may I work?").text)
        ix.feedback(result.query_id, good=True, rank=1)

``Index`` (engine.py) is the engine: the CLI, the server, MCP, ``ragkit eval`` and the scripts call it, never
the modules beside it, which are its private parts: asking.py (retrieve, passages, the query log), answering.py
(the answer), writing.py (indexing runs, watching) and learning.py (feedback, learning). ``Models`` (models.py)
are the models a caller hands the CLI (click's context object), which it hands ``open`` and ``index``. Results
are the records the CLI, the server and MCP print (``QueryResult``, ``Answer``, ``IndexSummary``; ``Answered``,
results.py), and errors ``ragkit.errors`` types.
"""

from ragkit.library.engine import Index, check, flush_log, index, open, watch
from ragkit.library.models import Models
from ragkit.library.results import Answered

__all__ = ["Answered", "Index", "Models", "check", "flush_log", "index", "open", "watch"]
