"""The query's config, the strategies and their search context import no circle, even counting the imports made
for types alone (``if TYPE_CHECKING:``): the strategies' knobs and names stand apart from both
(ragkit/retrieve/strategy_settings.py)."""

from ragkit.retrieve.strategies import STRATEGIES
from ragkit.retrieve.strategy_settings import SETTINGS
from tests.test_layers import Import, cycles, imports


def test_no_circle_in_retrieve_counting_type_only_imports():
    every = [Import(i.source, i.target, i.line, i.in_function, type_only=False) for i in imports()]
    assert [c for c in cycles(every) if any(m.startswith("ragkit.retrieve") for m in c)] == []


def test_the_registry_and_the_settings_name_the_same_strategies():
    assert {name: s.settings for name, s in STRATEGIES.items()} == SETTINGS
    assert list(STRATEGIES) == list(SETTINGS)
