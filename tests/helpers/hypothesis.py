"""Example counts for property tests: thorough by default, a tenth with ``--hypothesis-profile=quick``.

The README's test command runs every property with its full count. While editing,
``pytest tests/unit --hypothesis-profile=quick`` runs the unit tier in seconds: each
``@settings(max_examples=examples(n))`` then runs n/10 examples (at least 10). The
profile is registered in tests/conftest.py; this reads which one is loaded.
"""

from __future__ import annotations

from hypothesis import settings

QUICK_MAX_EXAMPLES = 10  # the quick profile's max_examples; the default profile has Hypothesis' 100


def examples(n: int) -> int:
    """``n`` under the default profile, n/10 (at least 10) under the quick one."""
    return n if settings.default.max_examples != QUICK_MAX_EXAMPLES else max(QUICK_MAX_EXAMPLES, n // 10)
