# covers: unguarded-domain
def evaluate(model, loader, criterion):
    """Average loss over a validation loader; divisors are plain Python numbers."""
    total, count = 0.0, 0
    for inputs, targets in loader:
        total += criterion(model(inputs), targets).item() * len(inputs)
        count += len(inputs)
    mean_loss = total / count
    batches = len(loader)
    return mean_loss, total / batches
