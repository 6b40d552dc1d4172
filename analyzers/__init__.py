"""numcheck's numerics: the op catalogue, the static pass, the result model and reports.

Imports run one way (DESIGN.md): bot -> runners -> analyzers; nothing here imports the others.
"""

__version__ = "0.1.0"
