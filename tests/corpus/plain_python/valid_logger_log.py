# covers: unguarded-domain
import logging

logger = logging.getLogger(__name__)


def report_epoch(epoch: int, total_loss: float, num_batches: int, seen: int, elapsed: float) -> None:
    avg = total_loss / num_batches
    throughput = seen / elapsed
    logger.log(logging.INFO, "epoch %d: loss %.4f, %.1f samples/s", epoch, avg, throughput)
