"""Runs on dask.distributed for the command line only (the extension never imports
these): the cluster client, preset sweeps, seamless tiled runs into a Zarr store."""
