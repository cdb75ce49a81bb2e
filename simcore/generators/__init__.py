"""Terrains made from nothing: fractal noise, DLA ridges, drained uplands."""
