"""Terrain Erosion simulation core: numpy + numba, no Blender.

Inside the Blender extension this package is vendored as a subpackage, so every
import in it is relative.
"""

__version__ = "0.1.0"
