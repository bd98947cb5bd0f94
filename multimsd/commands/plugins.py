"""The user's plugins: modules named by ``plugins=[pkg.mod]`` (or installed as a ``multimsd.plugins`` entry
point) whose import registers an aligner, a model kind or a metric. A command imports them before Hydra
composes its config, so the options they register are part of the schema that checks the command line."""

from __future__ import annotations

import re
import sys

PLUGIN_KEY = re.compile(r"^\+{0,2}(?:(?:align|train|evaluate)\.)?plugins=(?P<value>.*)$")
ENTRY_POINT_GROUP = "multimsd.plugins"


def load_plugins(names: list[str]) -> None:
    """Import the user's extension modules (``plugins=[pkg.mod]``): importing one runs its registrations.

    The one import of a module named at run time (tests/project/test_architecture.py allows it here by name): the
    names are the user's modules, never multimsd's own."""
    import importlib

    from multimsd.errors import MultimsdError

    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                raise MultimsdError(
                    f"plugins: cannot import {name!r} (is its directory on PYTHONPATH, or the package installed?)"
                ) from None
            raise


def plugins_on_command_line(argv: list[str]) -> list[str]:
    """The modules named by ``plugins=[…]`` (also ``+plugins``, and ``align.plugins`` … of ``multimsd run``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    names: list[str] = []
    for arg in argv:
        m = PLUGIN_KEY.match(arg)
        if not m:
            continue
        try:
            value = OverridesParser.create().parse_overrides([f"plugins={m['value']}"])[0].value()
        except Exception:  # Hydra reports a malformed value itself, in its own words
            continue
        names += [str(v) for v in (value if isinstance(value, list) else [value]) if v]
    return names


def preload_plugins(argv: list[str] | None = None) -> None:
    """Import the plugins before Hydra composes the config, so the options they register (``aligner=<name>``,
    a model kind's ``model.*``) are part of the schema: the ones named on the command line and every installed
    ``multimsd.plugins`` entry point. A module that cannot be imported is one ``error:`` line, exit 2."""
    from importlib.metadata import entry_points

    from multimsd.errors import MultimsdError

    try:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            ep.load()
        load_plugins(plugins_on_command_line(sys.argv[1:] if argv is None else argv))
    except MultimsdError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
