"""Learning from labels: the answer scorer's fitting (``answers.py``) and, from users' feedback, the learned
ranker with its held-out guard."""
