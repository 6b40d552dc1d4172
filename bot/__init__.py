"""The GitHub-facing side of numcheck: the command line today, the App's web and worker next."""
