"""Progress and warning callbacks: library code reports, the CLI renders."""

from __future__ import annotations


class Reporter:
    """Default reporter: silent. The CLI passes one that draws rich progress."""

    def start(self, stage: str, total: int | None = None) -> None:
        pass

    def advance(self, stage: str, n: int = 1) -> None:
        pass

    def finish(self, stage: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass


class Collecting(Reporter):
    """Keeps warnings (tests, and callers that want them afterwards)."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.stages: list[str] = []

    def start(self, stage: str, total: int | None = None) -> None:
        self.stages.append(stage)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
