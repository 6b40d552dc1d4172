"""Whole training programs, reviewed in script mode the way a new user would configure it.

`programs.tsv` lists published training programs with a known NaN/Inf bug: where they live
(repository, commit, folder), the script to run, the buggy line(s) and the op. For each, the
benchmark builds a small repository (the program's folder at the repository root), adds a
one-line `[tool.numcheck.script] command = "<script>"` and nothing else, reviews the commit
that adds the program with `numcheck review` (dynamic pass, in the sandbox, a child process),
and measures:

* confirmed at the line: a `confirmed` finding on a buggy line, for the op;
* the time to trigger (the search's own clock) and the wall time of the whole review;
* the evaluations the search needed, against random mutation of the same external values
  under the same budget, measured in the same run (`baseline.py`, a child process).

Programs are not vendored: they are read from a mirrors folder, as for bench.realworld.
See bench/programs/README.md.
"""
