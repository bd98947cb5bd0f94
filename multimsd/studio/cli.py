"""``multimsd studio PATH [--host H] [--port N] [--annotator NAME] [--gold FILE]``.

Every check runs before anything is written: a PATH with no alignments, a malformed gold file or journal,
a port in use, a bad annotator name are each one ``error: …`` line on stderr and exit status 2. The socket is
bound here (then handed to uvicorn), so "port in use" is found out before the journal is touched, and
``--port 0`` takes a free port (the printed URL says which). The last check is the annotator's lock
(:mod:`multimsd.runlock`): a second studio of the same annotator on the same run is refused the same way.
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
    from multimsd.studio.corpus import Corpus
    from multimsd.studio.journal import Journal

USAGE = """\
usage: multimsd studio PATH [--host 127.0.0.1] [--port 8765] [--annotator NAME] [--gold FILE]
                       [--aligner METHOD[:THETA] ...]

A local web app over the alignments in PATH (a `multimsd run` directory or an align.py output directory):
each article pair's sentences side by side with the aligner's alignments, ranked candidates from the cached
embeddings, and gold alignments written as you go to STUDIO/gold-NAME.jsonl (the format of
`align.py mode=gold gold.path=…`), every action journalled in STUDIO/journal-NAME.jsonl first. STUDIO is
PATH/studio for a run directory, PATH-studio beside an align.py output (which a re-run replaces whole).
A run directory with test predictions also gets the outputs view: every system's outputs per test row, rated
1-5 (blind if you like) into STUDIO/ratings-NAME.jsonl, which the run's report summarises.

  --host H          address to listen on (default 127.0.0.1); any other needs the token printed in the URL
  --port N          port (default 8765; 0 picks a free one)
  --annotator NAME  whose journal and gold file (default: $USER, else "annotator"); letters, digits, - and _;
                    one studio per annotator and run (a second is refused), other annotators side by side
  --gold FILE       a gold file to start from (read only; recorded in the journal on the first start)
  --aligner M[:θ]   also show aligner M's alignments (symmetric, asymmetric, margin, nm, lexical; θ: its
                    default), computed from the cached vectors; repeatable
Errors in the input print one line and exit with status 2.
"""

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
    p.add_argument("--aligner", action="append", default=[])
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


def prepare(args: argparse.Namespace) -> tuple[Corpus, Journal, list[dict] | None]:
    """Corpus and journal, every check done; nothing written yet. Returns (corpus, journal, base records)."""
    from multimsd.studio.corpus import Corpus, find_align_dir
    from multimsd.studio.journal import Journal, read_base_gold
    from multimsd.studio.scorers import parse_aligners

    root = Path(args.path).expanduser().resolve()
    align_dir = find_align_dir(root)
    corpus = Corpus(align_dir)
    corpus.others = parse_aligners(args.aligner, corpus.cfg)
    texts = {k: (a.complex, a.simple) for k, a in corpus.articles.items()}
    base = read_base_gold(Path(args.gold).expanduser(), texts) if args.gold else None
    # A run directory keeps the studio's files beside its stages (a re-run leaves them alone); an align.py
    # output directory is replaced whole when it is aligned again, so its studio files go beside it.
    studio_dir = root / "studio" if align_dir != root else root.parent / f"{root.name}-studio"
    journal = Journal(
        studio_dir / f"journal-{args.annotator}.jsonl",
        studio_dir / f"gold-{args.annotator}.jsonl",
        args.annotator,
        texts,
    )
    return corpus, journal, base


def prepare_review(args: argparse.Namespace):
    """The outputs view's :class:`~multimsd.studio.review.Review` of a run directory with test predictions, else
    None; every check done (references the same for every system, ratings journal readable), nothing written."""
    from multimsd.studio.corpus import find_align_dir
    from multimsd.studio.review import load_review

    root = Path(args.path).expanduser().resolve()
    if find_align_dir(root) == root:  # an align.py output: no system outputs
        return None
    return load_review(root, root / "studio", args.annotator)


def main(argv: list[str]) -> None:
    """``multimsd studio …`` (``argv`` without the command name)."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return
    import logging

    logging.getLogger("multimsd").setLevel(logging.WARNING)
    try:
        args = parse(argv)
        corpus, journal, base = prepare(args)
        review = prepare_review(args)
        sock = bind(args.host, args.port)
        # One studio per annotator (multimsd.runlock): the last check and the first write. The journal and
        # ratings are read again under it: another studio of this annotator may have written until just now.
        lock = annotator_lock(journal, sock.getsockname()[1]).acquire()
        journal, review = journal.reread(), prepare_review(args)
    except MultimsdError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    try:
        serve(args, corpus, journal, base, sock, review)
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


def serve(
    args: argparse.Namespace,
    corpus: Corpus,
    journal: Journal,
    base: list[dict] | None,
    sock: socket.socket,
    review=None,
) -> None:
    """Write the journal's start (the first write of all), print the URL, serve until Ctrl-C."""
    import uvicorn

    from multimsd.studio.app import create_app

    token = None if is_loopback(args.host) else secrets.token_urlsafe(24)
    journal.start(base)  # the first write: every check has passed
    if review is not None:
        review.start()
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
    if review is not None:
        print(f"  outputs of {len(review.systems)} systems; ratings file {review.ratings_path}", flush=True)
    app = create_app(corpus, journal, token, check_host=token is None, review=review)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        corpus.close()
