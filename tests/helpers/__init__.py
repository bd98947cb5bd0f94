"""Code the tests share that is not a fixture: imported as ``helpers.<module>`` (tests/ is on the path)."""
