"""The add-on's data layer: grid meshes and their arrays, the object's real size, a run
(settings -> simulation -> write-back), masks, trees, the warm-up, threads. No
operators, panels or menus here."""
