# covers: unguarded-domain
from dataclasses import dataclass


@dataclass
class TrainConfig:
    global_batch: int = 1024
    micro_batch: int = 8
    world_size: int = 8
    hidden: int = 4096
    heads: int = 32

    @property
    def grad_accum(self) -> int:
        return self.global_batch // (self.micro_batch * self.world_size)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def attn_scale(self) -> float:
        return self.head_dim ** -0.5
