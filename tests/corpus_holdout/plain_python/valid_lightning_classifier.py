# covers: unguarded-domain
"""PyTorch Lightning classifier: metrics go through self.log, the warm-up schedule uses plain numbers."""
import math

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn


def noam_lambda(d_model: int, warmup: int):
    def fn(step):
        step = max(step, 1)
        return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
    return fn


class LitClassifier(pl.LightningModule):
    def __init__(self, backbone: nn.Module, num_classes: int, lr: float = 3e-4, warmup: int = 4000):
        super().__init__()
        self.save_hyperparameters(ignore=["backbone"])
        self.backbone = backbone
        self.head = nn.Linear(512, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().sum() / y.size(0)
        self.log("train_loss", loss, prog_bar=True)
        self.log("train_acc", acc)
        self.log("log_lr", math.log(self.hparams.lr))
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y, reduction="sum")
        self.log("val_loss", loss / len(y), sync_dist=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, noam_lambda(512, self.hparams.warmup))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
