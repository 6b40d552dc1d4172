"""Count likelihoods for a TF2 single-cell autoencoder (scVI-style negative-binomial decoder)."""
import tensorflow as tf


class CountDecoder(tf.keras.layers.Layer):
    def __init__(self, n_genes, hidden=128, **kwargs):
        super().__init__(**kwargs)
        self.hidden = tf.keras.layers.Dense(hidden, activation="relu")
        self.log_mu_head = tf.keras.layers.Dense(n_genes)
        self.dispersion = tf.keras.layers.Dense(n_genes)

    def call(self, z):
        h = self.hidden(z)
        return self.log_mu_head(h), self.dispersion(h)


def nb_log_likelihood(x, log_mu, raw_dispersion):
    log_mu = tf.clip_by_value(log_mu, -20.0, 15.0)
    theta = tf.nn.softplus(raw_dispersion) + 1e-4
    log_theta = tf.math.log(theta)
    log_theta_mu = tf.math.reduce_logsumexp(tf.stack([log_theta, log_mu], axis=0), axis=0)
    ll = theta * (log_theta - log_theta_mu) + x * (log_mu - log_theta_mu)
    ll += tf.math.lgamma(x + theta)  # expect: lgamma/unguarded-domain
    ll -= tf.math.lgamma(theta)
    ll -= tf.math.lgamma(x + 1.0)  # expect: lgamma/unguarded-domain
    return tf.reduce_sum(ll, axis=-1)


def nb_variance_penalty(log_mu, raw_dispersion):
    mu = tf.exp(tf.clip_by_value(log_mu, -20.0, 15.0))
    theta = tf.nn.softplus(raw_dispersion) + 1e-4
    return tf.reduce_mean(tf.math.log(1.0 + mu / theta))  # expect: log/log1p


def train_step(decoder, optimizer, x, z, penalty_weight=0.01):
    with tf.GradientTape() as tape:
        log_mu, raw_disp = decoder(z)
        loss = -tf.reduce_mean(nb_log_likelihood(x, log_mu, raw_disp))
        loss += penalty_weight * nb_variance_penalty(log_mu, raw_disp)
    grads = tape.gradient(loss, decoder.trainable_variables)
    optimizer.apply_gradients(zip(grads, decoder.trainable_variables))
    return loss
