# covers: log-sigmoid, bce-sigmoid
"""TF1 DCGAN losses computed from logits, as a module-level graph definition."""
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BATCH = 64
Z_DIM = 64

real_images = tf.placeholder(tf.float32, [BATCH, 64, 64, 3])
z = tf.random_uniform([BATCH, Z_DIM], -1.0, 1.0)


def generator(noise, reuse=False):
    with tf.variable_scope("generator", reuse=reuse):
        h = tf.layers.dense(noise, 4 * 4 * 256)
        h = tf.nn.relu(tf.reshape(h, [-1, 4, 4, 256]))
        for filters in (128, 64, 32):
            h = tf.nn.relu(tf.layers.conv2d_transpose(h, filters, 5, strides=2, padding="same"))
        return tf.tanh(tf.layers.conv2d_transpose(h, 3, 5, strides=2, padding="same"))


def discriminator(images, reuse=False):
    with tf.variable_scope("discriminator", reuse=reuse):
        h = images
        for filters in (64, 128, 256):
            h = tf.nn.leaky_relu(tf.layers.conv2d(h, filters, 5, strides=2, padding="same"))
        features = tf.layers.flatten(h)
        return tf.layers.dense(features, 1), features


fake_images = generator(z)
d_logits_real, feat_real = discriminator(real_images)
d_logits_fake, feat_fake = discriminator(fake_images, reuse=True)
d_prob_fake = tf.nn.sigmoid(d_logits_fake)

d_loss_real = tf.reduce_mean(
    tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(d_logits_real), logits=d_logits_real))
d_loss_fake = tf.reduce_mean(
    tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros_like(d_logits_fake), logits=d_logits_fake))
d_loss = d_loss_real + d_loss_fake
g_loss = -tf.reduce_mean(tf.log_sigmoid(d_logits_fake))
feature_matching = tf.reduce_mean(tf.square(tf.reduce_mean(feat_real, 0) - tf.reduce_mean(feat_fake, 0)))
d_fooled = tf.reduce_mean(tf.cast(d_prob_fake > 0.5, tf.float32))

t_vars = tf.trainable_variables()
d_vars = [v for v in t_vars if v.name.startswith("discriminator")]
g_vars = [v for v in t_vars if v.name.startswith("generator")]
d_opt = tf.train.AdamOptimizer(2e-4, beta1=0.5).minimize(d_loss, var_list=d_vars)
g_opt = tf.train.AdamOptimizer(2e-4, beta1=0.5).minimize(g_loss + 0.1 * feature_matching, var_list=g_vars)
