"""Helpers shared by the test tiers (imported as ``tests.helpers.<module>``); fixtures stay
in the ``conftest.py`` files."""
