#!/usr/bin/env python
"""Print llama-cpp-python's CMAKE_ARGS for this machine (ragkit/extras.py: ``cmake_args``), before ragkit is
installed: the README's second line builds the llm extra with them.

    CMAKE_ARGS="$(python scripts/llm_build_flags.py)" pip install -e ".[test]"
"""

import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("extras", Path(__file__).resolve().parent.parent / "ragkit" / "extras.py")
extras = importlib.util.module_from_spec(spec)
sys.modules["extras"] = extras  # dataclasses look their module up
spec.loader.exec_module(extras)
print(extras.cmake_args())
