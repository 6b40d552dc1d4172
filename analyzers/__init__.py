"""numcheck's numerics: the op catalogue, the static pass, the result model and reports.

Imports run one way (docs/architecture.md): bot -> runners -> analyzers; nothing here imports those.
"""

__version__ = "0.1.0"
