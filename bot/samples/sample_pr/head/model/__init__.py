"""A tiny model package used by `numcheck demo`."""
