# covers: log-softmax, unguarded-domain
"""TF1 graph-mode CNN on MNIST with fused batch norm and logits-space losses (flat script)."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BN_EPS = 1e-3

images = tf.placeholder(tf.float32, [None, 28, 28, 1])
labels = tf.placeholder(tf.int64, [None])

conv_w = tf.get_variable("conv_w", [5, 5, 1, 32])
conv = tf.nn.conv2d(images, conv_w, strides=[1, 1, 1, 1], padding="SAME")
mean, variance = tf.nn.moments(conv, axes=[0, 1, 2])
gamma = tf.get_variable("gamma", [32], initializer=tf.ones_initializer())
beta = tf.get_variable("beta", [32], initializer=tf.zeros_initializer())
normed = tf.nn.batch_normalization(conv, mean, variance, beta, gamma, BN_EPS)
pooled = tf.nn.max_pool(tf.nn.relu(normed), ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
flat = tf.reshape(pooled, [-1, 14 * 14 * 32])
logits = tf.layers.dense(flat, 10)
probs = tf.nn.softmax(logits)
log_probs = tf.nn.log_softmax(logits)

loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
entropy = -tf.reduce_mean(tf.reduce_sum(probs * log_probs, axis=1))
confidence = tf.reduce_mean(tf.reduce_max(probs, axis=1))
train_op = tf.train.AdamOptimizer(1e-3).minimize(loss - 0.01 * entropy)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))

if __name__ == "__main__":
    data = np.random.rand(512, 28, 28, 1).astype(np.float32)
    targets = np.random.randint(0, 10, 512)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(5):
            for start in range(0, len(data), 64):
                feed = {images: data[start:start + 64], labels: targets[start:start + 64]}
                sess.run(train_op, feed_dict=feed)
            acc, conf = sess.run([accuracy, confidence], feed_dict={images: data, labels: targets})
            print("epoch", epoch, "acc", acc, "confidence", conf)
