"""Errors raised for bad user input, and the warning for input adjusted on its own.

Every message names what is wrong (file, line, field) and how to fix it; the
command line prints it without a traceback.
"""


class JaxcontamError(Exception):
    """Bad input or configuration, reported to the user with a fix."""


class DataError(JaxcontamError):
    """A benchmark, paraphrase or corpus file that cannot be read as expected."""


class ModelError(JaxcontamError):
    """A model checkpoint or config that cannot be loaded."""


class IndexMismatchError(JaxcontamError):
    """A saved index or count file that does not match the requested settings or is corrupted."""


class ClusterError(JaxcontamError):
    """The processes of a multi-host run could not join (JAX's connect thread may still be waiting: exit at once)."""


class JaxcontamWarning(UserWarning):
    """Input jaxcontam adjusted or skipped on its own (a split chosen, a metadata file left out); says what to do."""
