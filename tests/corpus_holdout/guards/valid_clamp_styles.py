# covers: unguarded-domain
"""Guards written in several styles: reassigned clamps, in-place clamps, tensor maximum, eps defaults."""
import torch as th
import torch.nn.functional as F


def cosine_matrix(a: th.Tensor, b: th.Tensor) -> th.Tensor:
    dots = a @ b.t()
    norms = a.norm(dim=-1, keepdim=True) * b.norm(dim=-1, keepdim=True).t()
    return dots / th.maximum(norms, th.tensor(1e-8))


def angle_between(u: th.Tensor, v: th.Tensor) -> th.Tensor:
    cos = F.cosine_similarity(u, v, dim=-1)
    cos = cos.clamp(-1.0 + 1e-6, 1.0 - 1e-6)
    return th.acos(cos)


def log_ratio(p: th.Tensor, q: th.Tensor) -> th.Tensor:
    p = p.clamp(min=1e-6)
    q = q.clone()
    q.clamp_(min=1e-6)
    return th.log(p) - th.log(q)


def inverse_frequency_weights(counts: th.Tensor, eps=1e-3) -> th.Tensor:
    counts = counts.clamp(min=0)
    return 1.0 / (counts + eps)


def pairwise_distance(x: th.Tensor) -> th.Tensor:
    sq = (x.unsqueeze(1) - x.unsqueeze(0)).pow(2).sum(-1)
    return th.sqrt(sq.clamp_min(1e-12))


def knn_weights(x: th.Tensor, k: int = 8) -> th.Tensor:
    d = pairwise_distance(x)
    knn_d, knn_i = d.topk(k + 1, largest=False)
    w = inverse_frequency_weights(knn_d[:, 1:])
    return w, knn_i[:, 1:]
