"""``multimsd studio PATH [--host H] [--port N] [--annotator NAME] [--gold FILE]``.

Every check runs before anything is written: a PATH with no alignments, a malformed gold file or journal,
a port in use, a bad annotator name are each one ``error: …`` line on stderr and exit status 2. The socket is
bound here (then handed to uvicorn), so "port in use" is found out before the journal is touched, and
``--port 0`` takes a free port (the printed URL says which). The last check is the annotator's lock
(:mod:`multimsd.runlock`): a second studio of the same annotator on the same run is refused the same way.
The options after ``--gold`` are the registered views' own (:mod:`multimsd.studio.registry`), parsed and listed in
``--help`` from the registry, as each view's checks (``prepare``) run from it.

Stopping the server (Ctrl-C, SIGTERM: ``kill``, ``systemctl stop``, a SLURM job's end) is its normal end: uvicorn
finishes the requests in flight, the studio prints ``studio: stopped (SIGTERM)`` and exits with status 0; every
action was journalled when it was answered, so there is nothing to resume.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import secrets
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from multimsd.errors import MultimsdError

if TYPE_CHECKING:
    from multimsd.studio.journal import Journal
    from multimsd.studio.registry import Studio

USAGE = """\
usage: multimsd studio PATH [--host 127.0.0.1] [--port 8765] [--annotator NAME] [--gold FILE]
                       [--plugin MODULE ...] {synopsis}

A local web app over the alignments in PATH (a `multimsd run` directory or a `multimsd align` output directory):
each article pair's sentences side by side with the aligner's alignments, ranked candidates from the cached
embeddings, and gold alignments written as you go to STUDIO/gold-NAME.jsonl (the format of
`multimsd align mode=gold gold.path=…`), every action journalled in STUDIO/journal-NAME.jsonl first. STUDIO is
PATH/studio for a run directory, PATH-studio beside a `multimsd align` output (which a re-run replaces whole).
A run directory with test predictions also gets the outputs view: every system's outputs per test row, rated
1-5 (blind if you like) into STUDIO/ratings-NAME.jsonl, which the run's report summarises. A run directory with
a system that can simplify also gets the simplify view: a paragraph you type, simplified by a system you pick,
with the safety flags of `multimsd simplify` (nothing written); a run still running or interrupted offers the
systems whose training finished. A view with nothing to show here says why on its button.
Sentences are numbered from 1 on the page and in every message; the gold file counts positions from 0.
Ctrl-C or SIGTERM stops the server: `studio: stopped (SIGTERM)`, exit status 0.

  --host H          address to listen on (default 127.0.0.1); any other needs the token printed in the URL
  --port N          port (default 8765; 0 picks a free one)
  --annotator NAME  whose journal and gold file (default: $USER, else "annotator"); letters, digits, - and _;
                    one studio per annotator and run (a second is refused), other annotators side by side
  --gold FILE       a gold file to start from (read only; recorded in the journal on the first start)
  --plugin MODULE   import MODULE first: the views it registers (multimsd.studio.registry) join the page,
                    with their options; repeatable (installed multimsd.plugins entry points are imported too)
{options}
Errors in the input print one line and exit with status 2.
"""


def usage() -> str:
    """``--help``: the core options and every registered view's."""
    from multimsd.studio.views import all_views

    opts = [o.usage() for v in all_views() for o in v.options]
    return USAGE.format(synopsis=" ".join(a for a, _ in opts), options="\n".join(b for _, b in opts))


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise MultimsdError(message)


def parse(argv: list[str]) -> argparse.Namespace:
    """The arguments, checked (an unknown option or a bad name is a MultimsdError: one line)."""
    import getpass

    p = _Parser(prog="multimsd studio", add_help=False)
    p.add_argument("path")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--annotator", default=None)
    p.add_argument("--gold", default=None)
    p.add_argument("--plugin", action="append", default=[])  # imported already: load_views()
    from multimsd.studio.views import all_views

    for view in all_views():  # each view's own options (multimsd.studio.registry.Option)
        for option in view.options:
            option.add_to(p)
    args = p.parse_args(argv)
    if args.annotator is None:
        try:
            user = getpass.getuser()
        except Exception:  # no user name in a bare container
            user = ""
        args.annotator = user if NAME.match(user or "") else "annotator"
    if not NAME.match(args.annotator):
        # The name is part of two file names: nothing that could leave PATH/studio.
        raise MultimsdError(f"--annotator {args.annotator!r}: letters, digits, - and _ only (at most 64)")
    if not 0 <= args.port <= 65535:
        raise MultimsdError(f"--port {args.port}: a port number 0..65535")
    return args


def is_loopback(host: str) -> bool:
    """Whether ``host`` only reaches this machine (then no token is needed)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one error line before anything is written."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart right after a kill may rebind
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise MultimsdError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def prepare(args: argparse.Namespace) -> Studio:
    """The corpus, the journal and every view's state (:mod:`multimsd.studio.registry`), every check done;
    nothing written yet."""
    from multimsd.studio.corpus import Corpus, find_align_dir
    from multimsd.studio.journal import Journal, read_base_gold
    from multimsd.studio.registry import Studio

    root = Path(args.path).expanduser().resolve()
    align_dir = find_align_dir(root)
    corpus = Corpus(align_dir)
    texts = {k: (a.complex, a.simple) for k, a in corpus.articles.items()}
    base = read_base_gold(Path(args.gold).expanduser(), texts) if args.gold else None
    # A run directory keeps the studio's files beside its stages (a re-run leaves them alone); an align
    # output directory is replaced whole when it is aligned again, so its studio files go beside it.
    studio_dir = root / "studio" if align_dir != root else root.parent / f"{root.name}-studio"
    journal = Journal(
        studio_dir / f"journal-{args.annotator}.jsonl",
        studio_dir / f"gold-{args.annotator}.jsonl",
        args.annotator,
        texts,
    )
    studio = Studio(args, root, corpus, journal, base)
    return prepare_views(studio)


def prepare_views(studio: Studio) -> Studio:
    """Each registered view's state (its checks run; None: nothing to show for this PATH, and why)."""
    from multimsd.studio.views import all_views

    for view in all_views():
        studio.prepare(view)
    return studio


def start(studio: Studio) -> list[str]:
    """The first writes, every check passed: the journal's start, then each view's; the lines they print."""
    from multimsd.studio.views import all_views

    studio.journal.start(studio.base)
    lines = []
    for view in all_views():
        state = studio.states.get(view.name)
        if view.start is not None and state is not None:
            line = view.start(state)
            if line:
                lines.append(line)
    return lines


def load_views(argv: list[str]) -> None:
    """Views of your own, registered before the arguments are parsed (so that their options are known): every
    installed ``multimsd.plugins`` entry point and every module named with ``--plugin MODULE``."""
    from importlib.metadata import entry_points

    from multimsd.commands.plugins import ENTRY_POINT_GROUP, load_plugins

    names = [v for k, v in zip(argv, argv[1:]) if k == "--plugin"]
    names += [a.split("=", 1)[1] for a in argv if a.startswith("--plugin=")]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        ep.load()
    load_plugins(names)


def main(argv: list[str]) -> None:
    """``multimsd studio …`` (``argv`` without the command name)."""
    if not argv or "-h" in argv or "--help" in argv:
        try:
            load_views(argv)  # the views of --plugin MODULE list their options too
        except MultimsdError as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)
        print(usage())
        return
    import logging

    from multimsd import interrupts
    from multimsd.console import quiet_console

    logging.getLogger("multimsd").setLevel(logging.WARNING)
    quiet_console()  # a model the simplify view loads: no library deprecation warnings, no bars in a log file
    try:
        load_views(argv)
        args = parse(argv)
        studio = prepare(args)
        sock = bind(args.host, args.port)
        # One studio per annotator (multimsd.runlock): the last check and the first write. The journal and
        # the views (ratings) are read again under it: another studio of this annotator may have written
        # until just now.
        lock = annotator_lock(studio.journal, sock.getsockname()[1]).acquire()
        studio.journal = studio.journal.reread()
        prepare_views(studio)
    except MultimsdError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    try:
        serve(studio, sock)
    except BaseException as e:
        # Ctrl-C / SIGTERM: uvicorn shuts down, then raises the signal again, which arrives here
        if not interrupts.is_interrupt(e):
            raise
        interrupts.exit_stopped(e, "studio")
    finally:
        lock.release()


def annotator_lock(journal: Journal, port: int):
    """The lock of the annotator's journal (``STUDIO/.journal-NAME.jsonl.lock``): held while a studio serves;
    it covers the annotator's gold and ratings files too. Other annotators' studios have their own."""
    from multimsd.runlock import WriterLock, lock_path

    return WriterLock(
        lock_path(journal.path),
        f"annotator {journal.annotator}'s journal {journal.path}",
        f"multimsd studio on port {port}",
        "use that studio (one per annotator) or stop it, or start this one with another --annotator",
    )


def serve(studio: Studio, sock: socket.socket) -> None:
    """Write the journal's start (the first write of all) and the views', print the URL, serve until Ctrl-C."""
    import uvicorn

    from multimsd.studio.app import create_app

    args, corpus, journal = studio.args, studio.corpus, studio.journal
    token = None if is_loopback(args.host) else secrets.token_urlsafe(24)
    lines = start(studio)
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    n = len(corpus.articles)
    print(f"multimsd studio: {url}", flush=True)
    print(
        f"  {n} article pairs from {corpus.align_dir}; annotator {journal.annotator}; "
        f"gold file {journal.gold_path} (Ctrl-C stops)",
        flush=True,
    )
    for line in lines:
        print(f"  {line}", flush=True)
    app = create_app(studio, token, check_host=token is None)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        corpus.close()
