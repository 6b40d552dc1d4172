"""Report pages: the picture behind each review (the analysis, its plots, reproducers, patches).

`signing` (imported by the settings) has no dependencies; the Flask routes live in `routes`
and the page models in `pages`, imported only by the web process.
"""


def finding_anchor(fingerprint: str) -> str:
    """The id of a finding's section on the analysis page, which review comments link to."""
    return f"finding-{fingerprint}"
