"""TF1 seq2seq training graph: masked token loss, per-sentence loss, perplexity, clipped grads."""
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

VOCAB = 32000
EMBED = 256
HIDDEN = 512
MAX_GRAD_NORM = 5.0

src = tf.placeholder(tf.int32, [None, None], name="src")
tgt_in = tf.placeholder(tf.int32, [None, None], name="tgt_in")
tgt_out = tf.placeholder(tf.int32, [None, None], name="tgt_out")
tgt_len = tf.placeholder(tf.int32, [None], name="tgt_len")

embedding = tf.get_variable("embedding", [VOCAB, EMBED])
with tf.variable_scope("encoder"):
    enc_cell = tf.nn.rnn_cell.LSTMCell(HIDDEN)
    _, enc_state = tf.nn.dynamic_rnn(enc_cell, tf.nn.embedding_lookup(embedding, src), dtype=tf.float32)
with tf.variable_scope("decoder"):
    dec_cell = tf.nn.rnn_cell.LSTMCell(HIDDEN)
    dec_out, _ = tf.nn.dynamic_rnn(dec_cell, tf.nn.embedding_lookup(embedding, tgt_in), initial_state=enc_state)
logits = tf.layers.dense(dec_out, VOCAB)

mask = tf.sequence_mask(tgt_len, tf.shape(tgt_out)[1], dtype=tf.float32)
xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tgt_out, logits=logits)
token_count = tf.reduce_sum(mask)
loss = tf.div(tf.reduce_sum(xent * mask), token_count)  # expect: div/unguarded-domain
per_sentence = tf.reduce_sum(xent * mask, axis=1) * tf.reciprocal(tf.reduce_sum(mask, axis=1))  # expect: reciprocal/unguarded-domain
perplexity = tf.exp(loss)  # expect: exp/unguarded-domain

params = tf.trainable_variables()
grads = tf.gradients(loss, params)
clipped, global_norm = tf.clip_by_global_norm(grads, MAX_GRAD_NORM)
train_op = tf.train.AdamOptimizer(1e-3).apply_gradients(zip(clipped, params))

tf.summary.scalar("loss", loss)
tf.summary.scalar("perplexity", perplexity)
tf.summary.scalar("grad_norm", global_norm)
tf.summary.histogram("sentence_loss", per_sentence)
merged = tf.summary.merge_all()
