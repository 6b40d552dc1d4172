"""TF-IDF features for a bag-of-words text classifier (data preprocessing)."""

import torch


def tfidf(counts: torch.Tensor) -> torch.Tensor:
    """counts: [documents, vocabulary] term counts of one batch of documents.

    Returns L2-normalised tf-idf rows.
    """
    counts = counts.to(torch.float32)
    n_docs = counts.shape[0]
    doc_len = counts.sum(dim=1, keepdim=True).clamp_min(1.0)
    term_freq = counts / doc_len
    doc_freq = (counts > 0).sum(dim=0).to(torch.float32)
    idf = torch.log(n_docs / doc_freq)  # numcheck-bug: div
    features = term_freq * idf
    norm = features.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return features / norm
