"""TF and JAX code whose guards stop at zero: the boundary is still outside the domain."""
import tensorflow as tf
from jax import numpy as jnp


def stft_power(signal, frame_length=512, frame_step=128):
    stft = tf.signal.stft(signal, frame_length=frame_length, frame_step=frame_step)
    return tf.square(tf.abs(stft))


def log_spectrogram(signal):
    power = tf.maximum(stft_power(signal), 0.0)
    return tf.math.log(power)  # expect: log/unguarded-domain


def adam_update(m, v, grads, step, b1=0.9, b2=0.999):
    m = b1 * m + (1 - b1) * grads
    v = b2 * v + (1 - b2) * jnp.square(grads)
    m_hat = m / (1 - b1 ** step)
    v_hat = jnp.clip(v / (1 - b2 ** step), 0.0, None)
    return m_hat / jnp.sqrt(v_hat), m, v  # expect: sqrt/unguarded-domain, div/unguarded-domain


def apply_adam(params, grads, state, lr=1e-3):
    new_params, new_state = {}, {}
    for name, p in params.items():
        m, v, step = state[name]
        update, m, v = adam_update(m, v, grads[name], step + 1)
        new_params[name] = p - lr * update
        new_state[name] = (m, v, step + 1)
    return new_params, new_state
