"""Where untrusted PR code runs (sandboxed runners and the in-sandbox harness).

Nothing in numcheck executes repository code yet: the static pass only parses it. The dynamic
confirmation pass (issue 3) and the sandboxes (issue 6) land here; `analyzers/` never imports
this package and this package never imports `bot/`.
"""
