"""What a terrain is measured and shown by: landform figures, the realism report,
display values for the arrays, rivers and lakes as data. Reads terrains; never changes
one."""
