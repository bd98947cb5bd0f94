"""The test suite's layout (docs/development.md, "Where a test file goes"): grouped like the package."""

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def test_every_test_file_is_in_a_documented_group_and_names_are_unique():
    assert not list(TESTS.glob("test_*.py"))  # none left at the top
    groups = {p.parent.name for p in TESTS.glob("*/test_*.py")}
    documented = set(re.findall(r"\| `tests/(\w+)/` \|", (ROOT / "docs" / "development.md").read_text()))
    assert groups and groups <= documented, groups - documented
    assert not list(TESTS.glob("*/*/test_*.py"))  # one level: a group, not a tree
    names = [p.name for p in TESTS.glob("*/test_*.py")]
    assert len(names) == len(set(names))  # imported by module name: unique across the groups
