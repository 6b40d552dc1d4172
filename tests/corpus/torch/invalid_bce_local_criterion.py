import torch
import torch.nn as nn


def train_step(model: nn.Module, batch, optimizer: torch.optim.Optimizer) -> float:
    crit = nn.BCELoss()
    inputs, labels = batch
    out = model(inputs)
    loss = crit(torch.sigmoid(out), labels.float())  # expect: binary_cross_entropy/bce-sigmoid
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
