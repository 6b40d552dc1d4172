"""TF1 graph-mode MNIST MLP with a hand-rolled batch norm, written as a flat script."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

BATCH_SIZE = 128
LEARNING_RATE = 0.01

x = tf.placeholder(tf.float32, [None, 784], name="x")
y_ = tf.placeholder(tf.float32, [None, 10], name="labels")

W1 = tf.Variable(tf.truncated_normal([784, 256], stddev=0.1))
b1 = tf.Variable(tf.zeros([256]))
h1 = tf.matmul(x, W1) + b1

batch_mean, batch_var = tf.nn.moments(h1, axes=[0])
scale = tf.Variable(tf.ones([256]))
shift = tf.Variable(tf.zeros([256]))
h1_bn = scale * (h1 - batch_mean) / tf.sqrt(batch_var) + shift  # expect: sqrt/unguarded-domain, div/unguarded-domain
h1_act = tf.nn.relu(h1_bn)

W2 = tf.Variable(tf.truncated_normal([256, 10], stddev=0.1))
b2 = tf.Variable(tf.zeros([10]))
y = tf.nn.softmax(tf.matmul(h1_act, W2) + b2)

cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))  # expect: log/log-softmax
train_step = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(cross_entropy)

correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

if __name__ == "__main__":
    images = np.random.rand(1024, 784).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[np.random.randint(0, 10, 1024)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(200):
            idx = np.random.choice(len(images), BATCH_SIZE)
            _, loss_val = sess.run([train_step, cross_entropy], feed_dict={x: images[idx], y_: labels[idx]})
            if step % 50 == 0:
                print("step %d loss %.4f" % (step, loss_val))
        print("accuracy", sess.run(accuracy, feed_dict={x: images, y_: labels}))
