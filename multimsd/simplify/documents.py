"""INPUT of ``multimsd simplify``: the documents to simplify, streamed from a file or stdin, each one checked.

* ``NAME.txt``: one document, its id the file's stem, its language ``--lang``;
* ``NAME.jsonl``: one document a line, ``{"id": ..., "lang": ..., "text": ...}`` (``complex`` instead of
  ``text`` works too: a test split's rows read as they are), its language the record's, else ``--lang``;
  blank lines are skipped;
* ``-``: stdin, JSONL when its first non-blank character is ``{``, else one text document (id ``stdin``).

Why streamed twice: every record is checked (UTF-8, JSON, an id, a non-empty text, a language of
:data:`multimsd.LANGUAGES`, ids unique) in a first pass before the model is loaded, so a bad line 90,000 is one
``error:`` line after a second, not after an hour of decoding with half an output file written; the second
pass feeds the decoding. Neither holds more than one line in memory (the ids aside). stdin cannot be read
twice, so it is copied to a temporary file first (on disk, not in memory).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError

STDIN_ID = "stdin"  # the id of a text document read from stdin


@dataclass(frozen=True)
class Document:
    id: str
    lang: str
    text: str


def check_lang(lang: str | None, where: str) -> str:
    """``lang`` when it is one of the corpus languages; else one error line naming ``where`` it came from."""
    if lang not in LANGUAGES:
        raise MultimsdError(f"{where}: lang {lang!r} is not one of {' '.join(LANGUAGES)}")
    return lang


class Input:
    """The documents of INPUT (``spec``: a path or ``-``); ``lang``: ``--lang``, the language of a record that
    names none. Opening checks that INPUT exists and is a .txt / .jsonl file; :meth:`check` reads it all."""

    def __init__(self, spec: str, lang: str | None = None) -> None:
        self.spec, self.lang = spec, lang
        if lang is not None:
            check_lang(lang, "--lang")
        self._spool: IO[bytes] | None = None
        if spec == "-":
            self._spool = tempfile.TemporaryFile(prefix="multimsd-simplify-")  # noqa: SIM115 (closed by close())
            shutil.copyfileobj(sys.stdin.buffer, self._spool)
            self.name = "stdin"
            self.jsonl = self._first_char() == "{"
            self.stem = STDIN_ID
            return
        path = Path(spec).expanduser()
        self.name = str(path)
        if not path.exists():
            raise MultimsdError(f"INPUT {path}: no such file")
        if not path.is_file():
            raise MultimsdError(f"INPUT {path}: not a file (a .txt or .jsonl file, or - for stdin)")
        if path.suffix.lower() not in (".txt", ".jsonl"):
            raise MultimsdError(
                f"INPUT {path}: use a .txt file (one document) or a .jsonl file, or - for stdin"
            )
        self.path, self.jsonl, self.stem = path, path.suffix.lower() == ".jsonl", path.stem

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def __enter__(self) -> Input:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ reading
    def _open(self) -> IO[bytes]:
        if self._spool is not None:
            self._spool.seek(0)
            return _Unclosed(self._spool)  # type: ignore[return-value]
        try:
            return open(self.path, "rb")
        except OSError as e:
            raise MultimsdError(f"INPUT {self.path}: cannot be read: {e.strerror or e}") from None

    def _first_char(self) -> str:
        with self._open() as f:
            for raw in f:
                text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
                if text:
                    return text[0]
        return ""

    def _lines(self) -> Iterator[tuple[int, str]]:
        """(line number, text) of each line, decoded as UTF-8 (a byte-order mark at the start dropped)."""
        with self._open() as f:
            for n, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise MultimsdError(
                        f"{self.name} line {n}: not UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})"
                    ) from None
                yield n, line.lstrip("\ufeff") if n == 1 else line

    def documents(self) -> Iterator[Document]:
        """Every document, in order, each checked; one line at a time from a JSONL."""
        if not self.jsonl:
            text = "".join(line for _, line in self._lines())
            if not text.strip():
                raise MultimsdError(f"{self.name}: the document is empty")
            yield Document(self.stem, self._lang(None, self.name), text)
            return
        for n, line in self._lines():
            if line.strip():
                yield self._record(line, f"{self.name} line {n}")

    def check(self) -> set[str]:
        """Read every document (the first pass, before any model is loaded): their ids, or the first problem
        as one error line. Ids must be unique: the output and a resume go by id. The documents' languages are
        kept in ``langs`` (the system must know them, :func:`multimsd.training.system.check_languages`)."""
        seen: dict[str, int] = {}
        self.langs: set[str] = set()
        for k, doc in enumerate(self.documents(), 1):
            if doc.id in seen:
                raise MultimsdError(
                    f"{self.name}: id {doc.id!r} appears twice (documents {seen[doc.id]} and {k})"
                )
            seen[doc.id] = k
            self.langs.add(doc.lang)
        if not seen:
            raise MultimsdError(f"{self.name}: no documents")
        return set(seen)

    def _lang(self, lang: object, where: str) -> str:
        if lang is None or lang == "":
            if self.lang is None:
                raise MultimsdError(f'{where}: no lang (give the record a "lang", or pass --lang)')
            return self.lang
        return check_lang(lang if isinstance(lang, str) else repr(lang), where)  # type: ignore[arg-type]

    def _record(self, line: str, where: str) -> Document:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise MultimsdError(f"{where}: not a JSON record ({e.msg}, column {e.colno})") from None
        if not isinstance(rec, dict):
            raise MultimsdError(f'{where}: not a JSON object ({{"id", "lang", "text"}})')
        doc_id = rec.get("id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or str(doc_id).strip() == "":
            raise MultimsdError(f'{where}: no "id" (a non-empty string or a number)')
        key = "text" if "text" in rec else "complex" if "complex" in rec else None
        if key is None:
            raise MultimsdError(f'{where}: no "text" (or "complex") in the record of id {doc_id!r}')
        text = rec[key]
        if not isinstance(text, str):
            raise MultimsdError(f'{where}: "{key}" of id {doc_id!r} is not a string')
        if not text.strip():
            raise MultimsdError(f"{where}: the text of id {doc_id!r} is empty")
        return Document(str(doc_id), self._lang(rec.get("lang"), where), text)


class _Unclosed:
    """The spooled stdin as a ``with`` file that the block does not close (it is read twice)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f

    def __enter__(self) -> IO[bytes]:
        return self.f

    def __exit__(self, *exc) -> None:
        pass
