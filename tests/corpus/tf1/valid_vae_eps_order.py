# covers: eps-absorbed, unguarded-domain
import tensorflow.compat.v1 as tf


def vae_loss(x, z_mean, z_log_sigma_sq, decoder_logits):
    x_reconstr_mean = tf.nn.sigmoid(decoder_logits)
    reconstr = x * tf.log(x_reconstr_mean + 1e-10)
    reconstr += (1 - x) * tf.log(1 - x_reconstr_mean + 1e-10)
    reconstr_loss = -tf.reduce_sum(reconstr, 1)
    log_var = tf.clip_by_value(z_log_sigma_sq, -10.0, 10.0)
    latent_loss = -0.5 * tf.reduce_sum(1 + log_var - tf.square(z_mean) - tf.exp(log_var), 1)
    return tf.reduce_mean(reconstr_loss + latent_loss)
