# covers: unguarded-domain
import math


def perplexity(total_nll: float, num_tokens: int) -> float:
    return math.exp(total_nll / num_tokens)


def bits_per_char(total_nll: float, num_chars: int) -> float:
    return total_nll / (num_chars * math.log(2))
