"""The flags of the commands that run on a dask cluster (``sweep``, ``tile``)."""

from __future__ import annotations

import argparse


def add_cluster_flags(q: argparse.ArgumentParser) -> None:
    q.add_argument("--workers", type=int, default=2,
                   help="worker processes of the local dask cluster (2)")
    q.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running dask scheduler (e.g. tcp://10.0.0.5:8786) instead of a "
                   "local cluster")
    q.add_argument("--threads", type=int, default=1,
                   help="numba threads per local worker (1)")
    q.add_argument("--quiet", action="store_true", help="no progress on stderr")
