import tensorflow.compat.v1 as tf


def vae_loss(x, z_mean, z_log_sigma_sq, decoder_logits):
    """Loss of the TF1 VAE example in the GRIST benchmark."""
    x_reconstr_mean = tf.nn.sigmoid(decoder_logits)
    reconstr = x * tf.log(1e-10 + x_reconstr_mean)
    reconstr += (1 - x) * tf.log(1e-10 + 1 - x_reconstr_mean)  # expect: log/eps-absorbed
    reconstr_loss = -tf.reduce_sum(reconstr, 1)
    latent_loss = -0.5 * tf.reduce_sum(1 + z_log_sigma_sq - tf.square(z_mean) - tf.exp(z_log_sigma_sq), 1)  # expect: exp/unguarded-domain
    return tf.reduce_mean(reconstr_loss + latent_loss)
