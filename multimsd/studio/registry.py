"""The studio's views, registered: one :class:`View` per view, given once to :func:`register_view`.

A view is one Python module (its routes, what it adds to ``/api/info``, its command-line options, what it
checks and writes at start-up) and one JavaScript file (what it draws). It registers itself once, at the end of
its module::

    register_view(
        View(
            name="notes",                      # #notes in the URL, its entry in /api/info, studio.register("notes", …)
            title="notes",                     # its button in the header
            order=40,                          # its place among the buttons: number keys 1, 2, … follow it
            script="notes.js",                 # served as /static/notes.js, its <script> tag generated
            routes=lambda state: [Route("/api/notes", …)],
            info=lambda state: {"count": …},   # /api/info's "notes"
            options=(Option("--notes-file", "FILE", "where the notes go"),),
            prepare=lambda studio: …,          # checks (a MultimsdError: one line, exit 2), nothing written
        )
    )

Everything else follows from the registration: :mod:`multimsd.studio.app` serves the routes, the script and
the view's ``/api/info`` entry and writes the page's buttons and ``<script>`` tags, :mod:`multimsd.studio.cli`
parses the options and lists them in ``--help``. The built-in views are registered by importing
:mod:`multimsd.studio.views`; a view of your own is registered the same way before the studio starts.

A view's hooks get one argument, its *state*: what ``prepare(studio)`` returned (by default the
:class:`Studio` itself: the corpus, the journal, the command line). ``prepare`` returning
:class:`Unavailable` ``(why)`` means the view has nothing to show for this PATH (the outputs view of a run
without test predictions): its button says why (greyed, the reason on hover and, clicked, in the status
line), ``/api/info`` gives the reason, and each of its routes answers it as a JSON error (404). So
``routes(state)`` only builds the routes, their handlers use the state: the studio builds them with None to
learn their paths. (None from ``prepare`` is the same, with no reason given.)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from multimsd.errors import MultimsdError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from starlette.routing import BaseRoute

    from multimsd.studio.corpus import Corpus
    from multimsd.studio.journal import Journal


@dataclass(frozen=True)
class Option:
    """A command-line option of a view: ``multimsd studio PATH --flag VALUE``; ``repeat``: may be given several
    times (the value is then a list). ``args.<flag without -->`` holds it (``--notes-file``: ``notes_file``)."""

    flag: str
    metavar: str
    help: str
    default: Any = None
    repeat: bool = False

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        if self.repeat:
            parser.add_argument(self.flag, action="append", default=[], metavar=self.metavar)
        else:
            parser.add_argument(self.flag, default=self.default, metavar=self.metavar)

    def usage(self) -> tuple[str, str]:
        """(the synopsis part, the help line) of ``multimsd studio --help``."""
        more = " ..." if self.repeat else ""
        return f"[{self.flag} {self.metavar}{more}]", f"  {f'{self.flag} {self.metavar}':<18}{self.help}"


NOTHING_TO_SHOW = "nothing to show for this PATH"  # the reason of a view whose prepare gave None


@dataclass(frozen=True)
class Unavailable:
    """What a view's ``prepare`` returns when it has nothing to show for this PATH: why, in a line the page and
    the API show (``"the run has no test outputs yet"``)."""

    why: str


@dataclass
class Studio:
    """What every view starts from: the command line, PATH, the alignments, the annotator's journal, the
    ``--gold`` records to start from, each view's state (None: nothing to show here) and, for those, why."""

    args: argparse.Namespace
    root: Path
    corpus: Corpus
    journal: Journal
    base: list[dict] | None = None
    states: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # view name -> why it has nothing to show

    def prepare(self, view: View) -> None:
        """Run ``view``'s checks: its state, or why it is not available here."""
        state = view.prepare(self)
        if isinstance(state, Unavailable) or state is None:
            self.unavailable[view.name] = state.why if state else NOTHING_TO_SHOW
            state = None
        else:
            self.unavailable.pop(view.name, None)
        self.states[view.name] = state


def _the_studio(studio: Studio) -> Studio:
    return studio


@dataclass(frozen=True)
class View:
    """One view of the studio (see the module docstring)."""

    name: (
        str  # letters, digits, - and _: the URL's #name, the key of /api/info, the JS's studio.register(name)
    )
    title: str  # the header button's label
    script: str  # the view's JavaScript file, served as /static/<script>
    routes: Callable[[Any], list[BaseRoute]]  # state -> its API routes
    order: int = 100  # the buttons' order, which the number keys 1, 2, … follow (ties: registration order)
    info: Callable[[Any], dict] | None = None  # state -> /api/info's entry under `name`
    options: tuple[Option, ...] = ()
    prepare: Callable[[Studio], Any] = _the_studio  # checks, nothing written -> state (or Unavailable(why))
    start: Callable[[Any], str | None] | None = None  # the view's first writes -> a line to print, or None
    script_file: Path | Traversable | None = None  # where the script is; default: multimsd/studio/static/

    def script_text(self) -> str:
        if self.script_file is not None:
            return self.script_file.read_text(encoding="utf-8")
        from importlib import resources

        return (resources.files("multimsd.studio") / "static" / self.script).read_text(encoding="utf-8")


VIEWS: dict[str, View] = {}
CORE_FILES = ("index.html", "studio.css", "studio.js")  # the page, its styles and the views' frame
# /api/info's own keys (the corpus and the journal): a view's entry, under its name, must not hide one.
INFO_KEYS = (
    "annotator",
    "align_dir",
    "aligner",
    "embedder",
    "gold_file",
    "languages",
    "sentences_encoded",
    "views",
)


def register_view(view: View) -> View:
    """Add ``view`` to the studio (once: a name or a script registered twice is an error)."""
    import re

    if not re.match(r"^[A-Za-z][A-Za-z0-9_-]*$", view.name):
        raise MultimsdError(f"studio view {view.name!r}: a name of letters, digits, - and _")
    if view.name in INFO_KEYS:
        raise MultimsdError(
            f"studio view {view.name!r}: a name /api/info uses already ({', '.join(INFO_KEYS)})"
        )
    if not view.script.endswith(".js"):
        raise MultimsdError(f"studio view {view.name!r}: its script {view.script!r} is a .js file")
    if view.name in VIEWS:
        raise MultimsdError(f"studio view {view.name!r} is registered twice")
    if view.script in CORE_FILES or any(v.script == view.script for v in VIEWS.values()):
        raise MultimsdError(
            f"studio view {view.name!r}: script {view.script!r} is taken (the page's or a view's)"
        )
    VIEWS[view.name] = view
    return view


def registered() -> list[View]:
    """The registered views in their order (``order``, then registration): the order of the number keys."""
    ranked = sorted(enumerate(VIEWS.values()), key=lambda kv: (kv[1].order, kv[0]))
    return [v for _, v in ranked]


__all__ = [
    "CORE_FILES",
    "INFO_KEYS",
    "NOTHING_TO_SHOW",
    "VIEWS",
    "Option",
    "Studio",
    "Unavailable",
    "View",
    "register_view",
    "registered",
]
