"""User-facing errors.

Anything the user can fix (bad input, a model that cannot be loaded offline, a bad option) is raised as
:class:`MultimsdError`; the CLI entry points print its message as one line and exit with status 2, instead
of a traceback. Programming errors stay ordinary exceptions. A write that fails for want of space (a full
disk, a quota, a file-size limit, a read-only remount) or at a place that cannot be written (no permission, a
file where a directory should be, ``/proc``) is the user's to fix too: :func:`multimsd.fsutil.writing` turns it
into one, naming the output and the cause.
"""


class MultimsdError(Exception):
    """An error caused by user input or environment, reported as one line by the CLIs."""
