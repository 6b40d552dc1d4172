"""TF1 vanilla GAN on MNIST, written as a flat graph-mode script."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

Z_DIM = 100
X = tf.placeholder(tf.float32, shape=[None, 784])
Z = tf.placeholder(tf.float32, shape=[None, Z_DIM])

init = tf.glorot_uniform_initializer()
D_W1 = tf.Variable(init([784, 128]))
D_b1 = tf.Variable(tf.zeros([128]))
D_W2 = tf.Variable(init([128, 1]))
D_b2 = tf.Variable(tf.zeros([1]))
G_W1 = tf.Variable(init([Z_DIM, 128]))
G_b1 = tf.Variable(tf.zeros([128]))
G_W2 = tf.Variable(init([128, 784]))
G_b2 = tf.Variable(tf.zeros([784]))
theta_D = [D_W1, D_W2, D_b1, D_b2]
theta_G = [G_W1, G_W2, G_b1, G_b2]


def generator(z):
    g_h1 = tf.nn.relu(tf.matmul(z, G_W1) + G_b1)
    return tf.nn.sigmoid(tf.matmul(g_h1, G_W2) + G_b2)


def discriminator_logit(x):
    d_h1 = tf.nn.relu(tf.matmul(x, D_W1) + D_b1)
    return tf.matmul(d_h1, D_W2) + D_b2


G_sample = generator(Z)
D_logit_real = discriminator_logit(X)
D_logit_fake = discriminator_logit(G_sample)
D_real = tf.nn.sigmoid(D_logit_real)
D_fake = tf.nn.sigmoid(D_logit_fake)

D_loss = -tf.reduce_mean(tf.log(D_real) + tf.log(1.0 - D_fake))  # expect: log/log-sigmoid
G_loss = -tf.reduce_mean(tf.log(D_fake))  # expect: log/log-sigmoid

D_solver = tf.train.AdamOptimizer().minimize(D_loss, var_list=theta_D)
G_solver = tf.train.AdamOptimizer().minimize(G_loss, var_list=theta_G)


def sample_z(m, n):
    return np.random.uniform(-1.0, 1.0, size=[m, n])


if __name__ == "__main__":
    data = np.random.rand(5000, 784).astype(np.float32)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for it in range(10000):
        batch = data[np.random.randint(0, len(data), 128)]
        _, d_val = sess.run([D_solver, D_loss], feed_dict={X: batch, Z: sample_z(128, Z_DIM)})
        _, g_val = sess.run([G_solver, G_loss], feed_dict={Z: sample_z(128, Z_DIM)})
        if it % 1000 == 0:
            print("iter {}: D {:.4f} G {:.4f}".format(it, d_val, g_val))
