"""Numeric primitives every process shares: the counter-based random numbers, material
moves between layered cells, the protect mask (``primitives``); threads (``parallel``);
scratch kept between batches (``scratch``); numba's on-disk cache (``numba_cache``).
Imports only the model (``simcore.errors``, ``simcore.params``, ``simcore.fields``)."""
