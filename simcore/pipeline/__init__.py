"""The one run pipeline every front end shares (``erode``, ``sweep``, ``tile`` and the
add-on's batch command): arguments checked the same way (``arguments``) and the
starting terrain of a run made the same way from any input (``start``): a ``.npy``
heightmap scaled by ``--extent`` (or the preset's ``real_size``) and the vertical
exaggeration, a preset's ``[ridges]`` grown on it, or an ``.npz`` state resumed."""
