from tensorflow.keras import backend as K


def euclidean_distance(vects):
    """Distance layer of the Keras siamese-network example, without its epsilon."""
    x, y = vects
    sum_square = K.sum(K.square(x - y), axis=1, keepdims=True)
    return K.sqrt(sum_square)  # expect: sqrt/unguarded-domain
