"""Real NaN/Inf bugs of public repositories, reviewed as the pull requests that introduced them.

`bugs.tsv` lists each bug: the repository, the commit that fixed it, the commit that introduced
it (blame on the fix's parent), the file, the line and the op. This benchmark reviews
`intro^...intro` with `numcheck review` exactly as a user would (a child process, JSON out),
then measures what a reviewer of that pull request would have seen:

* recall at the line: a finding covers the bug's line;
* proven: that finding is `confirmed` (and whether its fix was validated);
* inline comments per PR under the publishing policy (`comment_on = "proven"`), next to what
  commenting on every finding would have posted;
* of the inline comments: the share proven or definite, and the noise by hand reading;
* of the other findings: real, borderline or noise, for those read by hand (`judgements.tsv`).

Repositories are not vendored: the benchmark reads full-history clones from a mirrors folder
(`--mirrors`, default `$NUMCHECK_MIRRORS` or `bench/out/mirrors`), as `owner+name/` holding a
git directory (or `owner+name/repo`, or `owner/name.git`). A bug whose repository is missing
is reported as missing, not as a miss. See bench/realworld/README.md.
"""
