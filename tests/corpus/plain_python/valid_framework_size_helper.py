# covers: unguarded-domain
import torch
from torch.onnx import symbolic_helper


def chunk_count(g, self, dim):
    size = symbolic_helper._get_tensor_dim_size(self, dim)
    return (size + 1) // size
