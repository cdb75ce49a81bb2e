"""Front ends without Blender: ``python -m simcore`` (``main``) and the helper process
that compiles the core ahead of a run for the add-on (``prepare``)."""
