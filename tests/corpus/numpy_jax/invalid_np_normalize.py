import numpy as np


def cosine_similarity_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Retrieval evaluation: cosine similarity between query and gallery embeddings."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)  # expect: div/manual-normalize
    b = b / np.linalg.norm(b, axis=1, keepdims=True)  # expect: div/manual-normalize
    return a @ b.T
