"""Grid algorithms the processes and front ends share: the drainage core (receivers,
depressions routed over their spill points, lake levels), distances to the shore, and
the helpers that turn painted masks into inputs. Imports the model and the kernels."""
