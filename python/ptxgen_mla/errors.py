"""The one exception type of the package."""


class PtxgenMLAError(ValueError):
    """A bad argument, manifest, folder or configuration, or a CUDA driver failure.

    The message names the bad value and what is accepted. It subclasses ValueError so
    that code catching FlashMLA's argument errors as ValueError keeps working, and so
    that one ``except`` covers everything this package refuses.
    """
