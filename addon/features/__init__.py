"""One module per feature, each with its operators, panels and properties: erosion
runs, the main tab, masks, bake, export and import, engine tiles, rivers and lakes as
data, ridges, the realism report, the terrain material, preferences, the batch
command."""
